#!/usr/bin/env bash
# On the GPU machine (through the device tool, from the repository root, after tools/gpu/prepare.sh
# here):   run(command="bash tools/gpu/test.sh", carry=[".gpu"], timeout_s=600)
# Unpacks the carried Debian packages (.gpu/debs) into /opt/deps as ../shared/gpu/deps.sh does,
# configures build-gpu for sm_90 with CUDA on, builds only the test binaries, runs the host-side
# CUDA tests, `ctest -L gpu` (ONNXOPT_REQUIRE_CUDA=1: a missing device fails instead of skipping)
# and compute-sanitizer memcheck on every gpu test binary. Every step's log goes to $OUT (8 files
# at most: summary.txt and one log per step), also when a step fails; the exit status is 1 when
# any step failed. Each step has a time limit, so that the whole stays well inside 10 minutes.
# shellcheck disable=SC2317  # the steps are functions run through `step`
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/build-gpu-out}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
failed=0
jobs=$(nproc 2>/dev/null || echo 16)

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in $out/NAME.log, and one line in the
# summary; a failure is recorded, not fatal, so that later steps' logs and the summary still exist.
step() {
  local name=$1 limit=$2
  shift 2
  local start rc=0
  start=$(date +%s)
  # The steps are functions: exported below, run in a bash of their own under the time limit.
  timeout --kill-after=10 "$limit" bash -c 'set -euo pipefail; "$@"' step "$@" \
    >"$out/$name.log" 2>&1 || rc=$?
  local took=$(($(date +%s) - start))
  if [ "$rc" -eq 0 ]; then
    echo "$name: ok (${took} s)" | tee -a "$summary"
  else
    [ "$rc" -eq 124 ] && rc="124, timed out after ${limit} s"
    echo "$name: FAILED (rc $rc, ${took} s; see $name.log)" | tee -a "$summary"
    failed=1
  fi
  return 0
}

gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  nvidia-smi
}

unpack_deps() {
  ls .gpu/debs/*.deb
  mkdir -p /opt/deps
  for f in .gpu/debs/*.deb; do dpkg -x "$f" /opt/deps; done
}

configure() {
  local p=/opt/deps/usr
  cmake -S . -B build-gpu -G Ninja \
    "-DCMAKE_PREFIX_PATH=$p;$p/lib/x86_64-linux-gnu/cmake" \
    "-DLIT_PY=$p/lib/llvm-14/build/utils/lit/lit.py" "-DFILECHECK=$p/lib/llvm-14/bin/FileCheck" \
    -DONNXOPT_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
  grep -q "^ONNXOPT_ENABLE_CUDA:STRING=ON" build-gpu/CMakeCache.txt
}

build() {
  cmake --build build-gpu -j"$jobs" --target cuda_host_tests cuda_kernel_tests \
    cuda_executor_host_tests cuda_executor_tests opt
}

gpu_ctest() {
  ONNXOPT_REQUIRE_CUDA=1 ctest --test-dir build-gpu -L gpu -V -j"$jobs" --timeout 300 \
    --output-on-failure
}

# The binaries of the tests labelled gpu, from ctest's own listing.
gpu_binaries() {
  ctest --test-dir build-gpu -L gpu --show-only=json-v1 | python3 -c '
import json, sys
seen = []
for t in json.load(sys.stdin).get("tests", []):
    cmd = t.get("command") or []
    if cmd and cmd[0] not in seen:
        seen.append(cmd[0])
print("\n".join(seen))'
}

memcheck() {
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ ! -x "$sanitizer" ]; then
    echo "compute-sanitizer not found: memcheck not run"
    return 0
  fi
  local rc=0 bin
  for bin in $(gpu_binaries); do
    echo "== memcheck $bin"
    # The out-of-memory test asks cudaMalloc for more than the card has on purpose; memcheck
    # would report that refused call as an error.
    ONNXOPT_REQUIRE_CUDA=1 "$sanitizer" --tool memcheck --error-exitcode 99 "$bin" \
      --gtest_brief=1 --gtest_filter=-*OutOfMemory* || rc=1
  done
  return "$rc"
}

export -f gpu_info unpack_deps configure build gpu_ctest gpu_binaries memcheck
export jobs
export PATH=/opt/deps/usr/bin:/opt/deps/usr/lib/llvm-14/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}

step gpu 30 gpu_info
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo none)" |
  tee -a "$summary"
step deps 60 unpack_deps
step configure 120 configure
step build 300 build
if [ -x build-gpu/bin/cuda_kernel_tests ]; then
  step host 60 build-gpu/bin/cuda_host_tests --gtest_brief=1
  step ctest 180 gpu_ctest
  step memcheck 240 memcheck
  grep -E "\[  PASSED  \]|\[  FAILED  \] [0-9]+ test" "$out/ctest.log" | sed 's/^[0-9]*: /gtest: /' |
    tee -a "$summary" || true
  grep -E "tests passed|tests failed" "$out/ctest.log" | tail -1 | sed 's/^/ctest: /' |
    tee -a "$summary" || true
  grep -E "ERROR SUMMARY" "$out/memcheck.log" | sed 's/^/memcheck: /' | tee -a "$summary" || true
else
  echo "tests: not run (the build failed)" | tee -a "$summary"
  failed=1
fi
echo "result: $([ "$failed" -eq 0 ] && echo PASS || echo FAIL)" | tee -a "$summary"
exit "$failed"
