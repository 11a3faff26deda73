#!/usr/bin/env bash
# The GPU test suite, on the GPU machine (a Linux machine with an NVIDIA GPU of compute capability
# 9.0, the CUDA toolkit and cuDNN 9, and no network), from the root of a copy of this tree that
# includes .gpu/ (tools/gpu/prepare.sh fills it here):
#   bash tools/gpu/test.sh [GROUP...]
# GROUPs (default: build unit):
#   build        nvidia-smi; unpacks the carried Debian packages (.gpu/debs) into $GPU_DEPS_DIR
#                (default /opt/deps) as the shared folder's gpu/deps.sh does; configures build-gpu for sm_90 with CUDA on; builds the
#                test binaries and opt. Always runs first when any other group is asked for
#                (incremental: seconds when build-gpu is up to date).
#   unit         the host-side CUDA tests, `ctest -L gpu` (ONNXOPT_REQUIRE_CUDA=1: a missing device
#                fails instead of skipping) and compute-sanitizer memcheck on every gpu test binary.
#   conformance  every ONNX node test case through `opt run --device cuda` (conformance_cuda.py).
#   models       every model of the corpus at -O2, `opt check --runner cuda --against reference`
#                (models_cuda.py).
#   precision    the models group's models converted with --precision fp16, then bf16, each
#                checked on the CUDA runtime against its float32 original on the reference kernels
#                (models_cuda.py --precision; issue 19); precision_fp16.json and precision_bf16.json.
#                Not part of all.
#   plugin       the example plugin (tools/plugins/swiglu) in the CUDA runtime: the Llama-style MLP
#                (models/llama_mlp) fused by it, without function bodies, run with --device cuda
#                (--stats: where each node ran) and checked against the original on the reference
#                kernels, with and without CUDA graphs, and at -O3 --target cuda; plugin_tests.
#                Not part of all (issue 20).
#   bench        `opt bench` on the bundled transformer and CNN models, with and without CUDA graphs
#                (bench_cuda.py); skipped with a message while opt has no bench command.
#   convalgos    the convolution node cases (Conv, ConvTranspose, ConvInteger, QLinearConv) through
#                conformance_cuda.py once with the default choice, once with every algorithm allowed
#                (ONNXOPT_CONV_ALGOS=all) and once with each cuDNN algorithm id 0..7 forced
#                (ONNXOPT_CONV_ALGOS=N), so a case that fails under one algorithm names it; its
#                reports in convalgos.log, a line per run in the summary. Not part of all.
#   all          all of the above.
#   gpubench     tools/bench/gpu_bench.py run: the four models exported from torch, optimized with
#                -O3 --target cuda, timed against torch eager / compile / compile+cudagraphs and
#                checked against torch, plus the kernel microbenchmarks; gpu_bench.json and its
#                log gpubench.log in $OUT (GPU_BENCH_ARGS: more arguments, e.g. --models bert).
#                Not part of all (it takes most of a call); `gpu_bench.py report` here makes
#                docs/gpu_benchmarks.md from the JSON.
#   zoo          tools/bench/zoo_bench.py run (issue 50): 30 models no kernel was tuned for (torchvision,
#                detectors, a diffusion UNet, transformers, RNNs, timm), each exported by both of
#                torch's exporters, at -O3 and -O2 --target cuda, checked against torch fp32 and
#                timed against torch eager and torch.compile+cudagraphs at batch 1 and 16, fp32 and
#                fp16; zoo_bench.json and its log zoo.log in $OUT. The whole zoo takes far more than
#                one call: ZOO_ARGS picks the subset (e.g. --models squeezenet1_1,rnn --precisions
#                fp16), and `zoo_bench.py report` here merges the calls' JSONs into
#                docs/gpu_benchmarks.md's zoo section. Not part of all.
#   python       the Python package's native module built in build-gpu with CUDA (nanobind from
#                the wheel prepare.sh carries in .gpu/wheels), the package put together in
#                build-gpu/python, and tests/python/package/test_cuda_session.py: onnxopt.cuda.Session
#                from numpy arrays and torch CUDA tensors (DLPack); its output in python.log; not
#                part of all (issue 21).
#   generate     tests/gpu/test_generate_cuda.py: `opt generate --device cuda` on the tiny decoders of
#                models/decoders, as exported and at -O3 --target cuda, against Hugging Face's greedy
#                ids (issue 49); its output in generate.log; not part of all.
#   pytest       tests/gpu (the models and node cases as one pytest item each; -k "$GPU_PYTEST_K"
#                when set), its output in unit.log; not part of all.
#   llm          tools/bench/llm_bench.py (issue 49): Llama 1B and 8B with random weights, fp16, exported
#                with the KV cache and optimized (cached in build-gpu/llm_bench, which a warm machine
#                keeps), prefill and decode timed on onnxopt.Generator against Hugging Face generate
#                with a static cache and torch.compile, and the bandwidth bound; the Python module built
#                first as the python group builds it (its log python.log); llm_bench.json,
#                llm_bench.md and llm.log in $OUT. LLM_ARGS: more arguments (e.g. --size 8b --phase
#                build: the 8B model's export and optimization take a call of their own). A call of
#                this group alone builds only opt and the module. Not part of all.
# GPU_TEST_DEVICE=reference runs the conformance, models and bench groups on the reference device
# instead (to test this script without a GPU); GPU_TEST_JOBS (default 12) is how many cases or
# models those run at once. Each step has a time limit, and the whole call a
# budget (TEST_BUDGET_S, default 570 s): a step gets at most what is left of it, and one with no
# time left is reported as skipped, so a run ends inside a 10-minute limit on one command with every
# log written. Files in $OUT (default build-gpu-out; 8 at most, so that a runner that returns a few
# files returns them all): summary.txt (one line per step,
# the totals, result: PASS or FAIL), one log per group (build.log, unit.log, conformance.log,
# models.log, bench.log) and the JSON results (conformance.json, models.json). The exit status is 1
# when any step failed or was skipped.
# shellcheck disable=SC2317  # the steps are functions run through `step`
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/build-gpu-out}
# Where the Debian packages of .gpu/debs are unpacked (the build's protobuf, LLVM lit, FileCheck).
export GPU_DEPS_DIR=${GPU_DEPS_DIR:-/opt/deps}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
failed=0
jobs=$(nproc 2>/dev/null || echo 16)
budget=${TEST_BUDGET_S:-570}
started=$(date +%s)

groups=("$@")
[ "${#groups[@]}" -gt 0 ] || groups=(build unit)
for g in "${groups[@]}"; do
  case $g in
    build | unit | conformance | convalgos | models | precision | plugin | bench | pytest | gpubench | zoo | python | generate | llm) ;;
    all) groups=(build unit conformance models bench) && break ;;
    *)
      echo "test.sh: unknown group '$g' (build, unit, conformance, convalgos, models, precision, plugin, bench, all," \
        "pytest, gpubench, zoo, python, generate, llm)" >&2
      exit 2
      ;;
  esac
done
wants() {
  local g
  for g in "${groups[@]}"; do [ "$g" = "$1" ] && return 0; done
  return 1
}

# step GROUP NAME LIMIT_S COMMAND...: runs COMMAND with its output appended to $out/GROUP.log under
# a header, and writes one line in the summary; a failure is recorded, not fatal, so that later
# steps' logs and the summary still exist. The limit is cut to what is left of the budget.
step() {
  local group=$1 name=$2 limit=$3
  shift 3
  local log=$out/$group.log left
  left=$((budget - ($(date +%s) - started)))
  if [ "$left" -lt 20 ]; then
    echo "$name: SKIPPED (no time left of the ${budget} s budget)" | tee -a "$summary"
    echo "== $name: skipped, no time left of the ${budget} s budget" >>"$log"
    failed=1
    return 0
  fi
  [ "$limit" -le $((left - 10)) ] || limit=$((left - 10))
  echo "== $name (limit ${limit} s): $*" >>"$log"
  local start rc=0
  start=$(date +%s)
  # The steps are functions: exported below, run in a bash of their own under the time limit.
  STEP_LIMIT=$limit timeout --kill-after=10 "$limit" bash -c 'set -euo pipefail; "$@"' step "$@" \
    >>"$log" 2>&1 || rc=$?
  local took=$(($(date +%s) - start))
  if [ "$rc" -eq 0 ]; then
    echo "$name: ok (${took} s)" | tee -a "$summary"
  else
    [ "$rc" -eq 124 ] && rc="124, timed out after ${limit} s"
    echo "$name: FAILED (rc $rc, ${took} s; see $group.log)" | tee -a "$summary"
    failed=1
  fi
  echo "== $name: rc $rc, ${took} s" >>"$log"
  return 0
}

# section GROUP NAME: the lines step NAME wrote into GROUP.log.
section() {
  awk -v name="$2" '$0 ~ "^== " name " \\(limit" {on = 1; next} $0 ~ "^== " name ": " {on = 0} on' \
    "$out/$1.log"
}

gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  nvidia-smi
}

unpack_deps() {
  ls .gpu/debs/*.deb
  mkdir -p "$GPU_DEPS_DIR"
  for f in .gpu/debs/*.deb; do dpkg -x "$f" "$GPU_DEPS_DIR"; done
}

configure() {
  local p=$GPU_DEPS_DIR/usr
  cmake -S . -B build-gpu -G Ninja \
    "-DCMAKE_PREFIX_PATH=$p;$p/lib/x86_64-linux-gnu/cmake" \
    "-DLIT_PY=$p/lib/llvm-14/build/utils/lit/lit.py" "-DFILECHECK=$p/lib/llvm-14/bin/FileCheck" \
    -DONNXOPT_ENABLE_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
  grep -q "^ONNXOPT_ENABLE_CUDA:STRING=ON" build-gpu/CMakeCache.txt
}

build() {
  # shellcheck disable=SC2086  # build_targets is a list of targets
  cmake --build build-gpu -j"$jobs" --target $build_targets
}

# The swiglu plugin's CUDA kernel inside the CUDA runtime (issue 20).
plugin_cuda() {
  local p=build-gpu/plugins/libonnxopt_swiglu.so m=models/llama_mlp/model.onnx t
  t=$(mktemp -d)
  build-gpu/bin/opt "$m" --plugin "$p" --no-function-bodies -o "$t/bare.onnx" --stats |
    grep -E "fuse-swiglu|example.SwiGLU"
  build-gpu/bin/opt run "$t/bare.onnx" --plugin "$p" --device cuda --stats
  build-gpu/bin/opt check "$m" "$t/bare.onnx" --plugin "$p" --runner cuda --against reference
  build-gpu/bin/opt check "$m" "$t/bare.onnx" --plugin "$p" --runner cuda --against reference \
    --no-cuda-graph
  build-gpu/bin/opt "$m" --plugin "$p" -O3 --target cuda -o "$t/o3.onnx" --stats |
    grep -E "fuse-swiglu|example.SwiGLU|ai.onnxopt"
  build-gpu/bin/opt check "$m" "$t/o3.onnx" --plugin "$p" --runner cuda --against reference
  build-gpu/bin/plugin_tests --gtest_brief=1
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

# The carried data (prepare.sh): the ONNX node tests and the shared real models, unpacked into
# .gpu/shared, which ONNXOPT_SHARED points the python scripts to; kept on a warm machine while the
# tarball is the same (a stamp of its size and time).
unpack_data() {
  mkdir -p .gpu/shared/models
  local name dest dir stamp
  for name in onnx-node-tests models-real; do
    if [ ! -f ".gpu/$name.tar.xz" ]; then
      echo "no .gpu/$name.tar.xz: run tools/gpu/prepare.sh before copying the tree to the GPU machine"
      return 1
    fi
    dest=.gpu/shared dir=onnx-node-tests
    [ "$name" = models-real ] && dest=.gpu/shared/models dir=real
    stamp=$(stat -c %s-%Y ".gpu/$name.tar.xz")
    if [ "$(cat ".gpu/shared/$name.stamp" 2>/dev/null)" = "$stamp" ]; then
      echo "$name: unpacked already"
      continue
    fi
    rm -rf "${dest:?}/${dir:?}" ".gpu/shared/$name.stamp"
    tar -C "$dest" -xJf ".gpu/$name.tar.xz"
    echo "$stamp" >".gpu/shared/$name.stamp"
  done
  echo "node test cases: $(find .gpu/shared/onnx-node-tests -name model.onnx | wc -l)"
  echo "real models: $(find .gpu/shared/models/real -name '*.onnx' | wc -l)"
  python3 -c 'import onnx, numpy; print("onnx", onnx.__version__, "numpy", numpy.__version__)'
}

# time_limit MARGIN: the seconds a python step may start cases in (its limit less MARGIN, at least 1).
time_limit() {
  local t=$((STEP_LIMIT - $1))
  echo $((t > 0 ? t : 1))
}

# The python steps stop starting cases before the step's limit (30 s: a node case takes seconds;
# 60 s: a model's reference side can take half a minute), so that their JSON is written.
conformance() {
  python3 tools/gpu/conformance_cuda.py --device "$device" --jobs "$py_jobs" \
    --json "$out/conformance.json" --time-limit "$(time_limit 30)"
}

convalgos() {
  local a
  for a in default all 0 1 2 3 4 5 6 7; do
    echo "== ONNXOPT_CONV_ALGOS=$a"
    ( [ "$a" = default ] || export ONNXOPT_CONV_ALGOS=$a
      python3 tools/gpu/conformance_cuda.py --device "$device" --jobs "$py_jobs" --cases 'conv' \
        --time-limit "$(time_limit 30)" ) || true
  done
}

models() {
  python3 tools/gpu/models_cuda.py --runner "$device" --against reference --jobs "$py_jobs" \
    --json "$out/models.json" --time-limit "$(time_limit 60)"
}

precision() {
  local p status=0
  for p in fp16 bf16; do
    python3 tools/gpu/models_cuda.py --runner "$device" --against reference --jobs "$py_jobs" \
      --precision "$p" --json "$out/precision_$p.json" --time-limit "$(time_limit 60)" || status=1
  done
  return "$status"
}

bench() {
  python3 tools/gpu/bench_cuda.py --device "$device" --time-limit "$(time_limit 20)"
}

gpubench() {
  # shellcheck disable=SC2086  # GPU_BENCH_ARGS is a list of arguments
  python3 tools/bench/gpu_bench.py run --opt build-gpu/bin/opt --out "$out" --work /tmp/gpu_bench \
    --time-limit "$(time_limit 20)" ${GPU_BENCH_ARGS:-}
}

zoo() {
  # shellcheck disable=SC2086  # ZOO_ARGS is a list of arguments
  python3 tools/bench/zoo_bench.py run --opt build-gpu/bin/opt --out "$out" --work /tmp/zoo_bench \
    --time-limit "$(time_limit 20)" ${ZOO_ARGS:-}
}

gpu_pytest() {
  local k=()
  [ -z "${GPU_PYTEST_K:-}" ] || k=(-k "$GPU_PYTEST_K")
  ONNXOPT_REQUIRE_CUDA=1 python3 -m pytest -q -n "$py_jobs" tests/gpu "${k[@]}"
}

# The LLM benchmark (issue 49) through the Python module python_module builds; its budget ends 20 s
# before the step's limit, so that its JSON and table are complete.
llm_bench() {
  # shellcheck disable=SC2086  # LLM_ARGS is a list of arguments
  PYTHONPATH=$PWD/build-gpu/python${PYTHONPATH:+:$PYTHONPATH} python3 tools/bench/llm_bench.py --device cuda \
    --opt build-gpu/bin/opt --work build-gpu/llm_bench --out "$out" --budget-s "$(time_limit 20)" ${LLM_ARGS:-}
}

gpu_generate() {
  ONNXOPT_REQUIRE_CUDA=1 python3 -m pytest -q -n "$py_jobs" -p no:cacheprovider tests/gpu/test_generate_cuda.py
}

# The Python package on the GPU (issue 21): the module against this python3, the package's Python
# files and opt beside it, then the CUDA session tests.
python_module() {
  local whl nb=/tmp/nanobind-pkg
  whl=$(find .gpu/wheels -name 'nanobind-*.whl' | head -1)
  rm -rf "$nb"
  python3 -m zipfile -e "$whl" "$nb"
  cmake build-gpu -DONNXOPT_PYTHON=ON "-DPython_EXECUTABLE=$(command -v python3)" \
    "-Dnanobind_DIR=$nb/nanobind/cmake"
  cmake --build build-gpu -j"$jobs" --target onnxopt_python opt
  # The CUDA provider beside the module, as the wheel ships it.
  cp src/python/onnxopt/*.py src/python/onnxopt/py.typed build-gpu/lib/libonnxopt_cuda.so \
    build-gpu/python/onnxopt/
  mkdir -p build-gpu/python/onnxopt/_bin
  cp build-gpu/bin/opt tools/opt/ort_runner.py build-gpu/python/onnxopt/_bin/
}

python_tests() {
  ONNXOPT_REQUIRE_CUDA=1 PYTHONPATH=$PWD/build-gpu/python python3 -m pytest -q -rs \
    -p no:cacheprovider tests/python/package/test_cuda_session.py
}

export -f gpu_info unpack_deps configure build plugin_cuda gpu_ctest gpu_binaries memcheck unpack_data \
  time_limit conformance convalgos models precision bench gpubench zoo gpu_pytest gpu_generate python_module \
  python_tests llm_bench
# GPU_TEST_DEVICE=reference runs the acceptance groups on the CPU: for testing this script.
device=${GPU_TEST_DEVICE:-cuda}
# Cases and models run at once by the python steps (each opt process makes its own CUDA context).
py_jobs=${GPU_TEST_JOBS:-12}
# A call of the llm group alone builds opt (and python_module the module) without the test binaries.
build_targets="cuda_host_tests cuda_kernel_tests cuda_executor_host_tests cuda_executor_tests opt onnxopt_swiglu plugin_tests"
only_llm=1
for g in "${groups[@]}"; do [ "$g" = llm ] || only_llm=0; done
[ "$only_llm" -eq 0 ] || build_targets=opt
export jobs out device py_jobs build_targets
export PATH=$GPU_DEPS_DIR/usr/bin:$GPU_DEPS_DIR/usr/lib/llvm-14/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$GPU_DEPS_DIR/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export ONNXOPT_OPT=$root/build-gpu/bin/opt ONNXOPT_SHARED=$root/.gpu/shared PYTHONUNBUFFERED=1

echo "groups: ${groups[*]} (budget ${budget} s)" | tee -a "$summary"
step build gpu 30 gpu_info
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo none)" |
  tee -a "$summary"
step build deps 60 unpack_deps
step build configure 120 configure
step build build 300 build
if [ ! -x build-gpu/bin/opt ] || { [ "$only_llm" -eq 0 ] && [ ! -x build-gpu/bin/cuda_kernel_tests ]; }; then
  echo "tests: not run (the build failed)" | tee -a "$summary"
  failed=1
else
  if wants unit; then
    step unit host 60 build-gpu/bin/cuda_host_tests --gtest_brief=1
    step unit ctest 180 gpu_ctest
    step unit memcheck 240 memcheck
    section unit ctest | grep -E "\[  PASSED  \]|\[  FAILED  \] [0-9]+ test" |
      sed 's/^[0-9]*: /gtest: /' | tee -a "$summary" || true
    section unit ctest | grep -E "tests passed|tests failed" | tail -1 | sed 's/^/ctest: /' |
      tee -a "$summary" || true
    section unit memcheck | grep -E "ERROR SUMMARY" | sed 's/^/memcheck: /' |
      tee -a "$summary" || true
  fi
  if wants conformance || wants convalgos || wants models || wants precision || wants pytest; then
    step build data 60 unpack_data
  fi
  if wants conformance; then
    step conformance conformance 300 conformance
    section conformance conformance | grep -E "^total: " | sed 's/^total/conformance/' |
      tee -a "$summary" || true
  fi
  if wants convalgos; then
    step convalgos convalgos 300 convalgos
    section convalgos convalgos | grep -E "^== |^total: " | paste -d' ' - - |
      sed 's/^== /convalgos: /' | tee -a "$summary" || true
  fi
  if wants models; then
    step models models 240 models
    section models models | grep -E "^total: " | sed 's/^total/models/' | tee -a "$summary" || true
  fi
  if wants precision; then
    step precision precision 300 precision
    section precision precision | grep -E "^total: " | sed 's/^total/precision/' |
      tee -a "$summary" || true
  fi
  if wants plugin; then
    step plugin plugin 120 plugin_cuda
    section plugin plugin | grep -E "^check: |example.SwiGLU|PASSED|FAILED" | sed 's/^/plugin: /' |
      tee -a "$summary" || true
  fi
  if wants gpubench; then
    step gpubench gpubench 590 gpubench
    section gpubench gpubench | grep -E "FAILED|: check|p50|TB/s|done:" | tee -a "$summary" || true
  fi
  if wants zoo; then
    step zoo zoo 590 zoo
    section zoo zoo | grep -E "FAILED|check FAIL|done:" | tee -a "$summary" || true
  fi
  if wants python || wants llm; then
    step python module 240 python_module
  fi
  if wants python; then
    step python tests 120 python_tests
    section python tests | grep -E "passed|failed|SKIPPED" | sed 's/^/python: /' |
      tee -a "$summary" || true
  fi
  if wants pytest; then
    step unit pytest 400 gpu_pytest
    section unit pytest | grep -E "^[0-9]+ [a-z]+.* in [0-9.]+s" | tail -1 | sed 's/^/pytest: /' |
      tee -a "$summary" || true
  fi
  if wants generate; then
    step generate generate 240 gpu_generate
    section generate generate | grep -E "^[0-9]+ [a-z]+.* in [0-9.]+s" | tail -1 | sed 's/^/generate: /' |
      tee -a "$summary" || true
  fi
  if wants llm; then
    step llm llm 590 llm_bench
    section llm llm | grep -E "FAILED|done:" | tee -a "$summary" || true
    grep -E "^### |^Goals: " "$out/llm_bench.md" 2>/dev/null | tee -a "$summary" || true
  fi
  if wants bench; then
    step bench bench 180 bench
    section bench bench | grep -E "^benchmark: " | tee -a "$summary" || true
  fi
fi
count=$(find "$out" -type f | wc -l)
[ "$count" -le 8 ] || echo "warning: $count files in \$OUT, more than the 8 a runner may return" |
  tee -a "$summary"
echo "time: $(($(date +%s) - started)) s" | tee -a "$summary"
echo "result: $([ "$failed" -eq 0 ] && echo PASS || echo FAIL)" | tee -a "$summary"
exit "$failed"
