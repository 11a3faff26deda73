#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in build-fuzz/ and runs each for SECONDS.
#   bash tools/fuzz.sh [SECONDS] [TARGET ...]      (default 60 s; targets: import text pipeline)
# Seed corpora: binary models from ../shared/models and models/ (import, pipeline; files up to 1 MiB)
# and the textual tests under tests/lit (text). Corpora grow in fuzz/corpus/<target>, crashes land in
# fuzz/artifacts/<target>/ (both ignored by git); every crash must become a regression test
# (tests/python/test_malformed.py or tests/fuzz/regressions/). Prints executions and coverage.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(import text pipeline)
shared=${ONNXOPT_SHARED:-../shared}
build=${ONNXOPT_FUZZ_BUILD_DIR:-build-fuzz}

if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DONNXOPT_FUZZ=ON -DONNXOPT_SANITIZE=address,undefined -DONNXOPT_ENABLE_CUDA=OFF \
    -DONNXOPT_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target fuzz_import fuzz_text fuzz_pipeline

seed() {  # seed <target> <dir>
  local dir=$2
  mkdir -p "$dir"
  [ -n "$(ls -A "$dir")" ] && return
  if [ "$1" = text ]; then
    find tests/lit -name '*.onnxtxt' -size -1024k -exec cp {} "$dir"/ \;
  else
    local i=0
    while IFS= read -r f; do
      cp "$f" "$dir/seed_$i.onnx"
      i=$((i + 1))
    done < <(find "$shared/models" models -name '*.onnx' -size -1024k | sort)
  fi
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
  corpus=fuzz/corpus/$t
  artifacts=fuzz/artifacts/$t/
  seed "$t" "$corpus"
  mkdir -p "$artifacts" "fuzz/logs"
  log=fuzz/logs/$t.log
  echo "fuzz: $t for ${seconds}s (corpus $corpus, log $log)"
  if ! "$build/bin/fuzz_$t" "$corpus" -max_total_time="$seconds" -timeout=20 \
      -rss_limit_mb=3072 -max_len=1048576 -print_final_stats=1 -artifact_prefix="$artifacts" \
      >"$log" 2>&1; then
    echo "fuzz: $t FOUND A FAILURE (see $log and $artifacts)"
    status=1
  fi
  grep -E '^#[0-9]+ *DONE|stat::number_of_executed_units|cov:' "$log" | tail -2 || true
done
exit $status
