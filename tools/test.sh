#!/usr/bin/env bash
# Runs every test: C++ unit tests, FileCheck textual tests and the install test (ctest), then the
# Python suite (round trips over the model corpus, malformed input, external data, the Python
# package, which this script builds as a wheel and installs into .venv first) with pytest.
#   bash tools/test.sh [--sanitize] [pytest args...]   (ONNXOPT_TEST_JOBS=N: pytest workers, default one per core)
# --sanitize builds everything with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/ and
# runs the same suite against it; a sanitizer report makes opt exit with 86/87 (never 0, 1 or 2, the
# codes the tests expect), so every finding fails a test. The instrumented pytest run takes one in eight
# of the corpus-marked cases (one per model of the 2018-model corpus, about 60% of the suite's time;
# a fixed choice, tests/python/conftest.py --corpus-sample) and every other test; the normal run takes all.
set -euo pipefail
cd "$(dirname "$0")/.."
pytest_args=()
if [ "${1:-}" = "--sanitize" ]; then
  shift
  pytest_args+=(--corpus-sample 8)
  export ONNXOPT_BUILD_DIR=${ONNXOPT_BUILD_DIR:-build-asan}
  export ONNXOPT_SANITIZE=address,undefined
  export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=1:abort_on_error=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=87:halt_on_error=1:print_stacktrace=1}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-exitcode=86}
fi
bash tools/setup.sh
build=${ONNXOPT_BUILD_DIR:-build}
if [ -z "${ONNXOPT_SANITIZE:-}" ]; then
  # The Python package (pyproject.toml, src/python): a wheel built in $build itself, so that
  # scikit-build-core reuses its configuration and objects (the native module and opt relink, the
  # rest is up to date), then installed into .venv for tests/python/package, which also installs
  # it into a fresh venv. The sanitizer run leaves the package out (see below).
  rm -rf "$build/dist"
  .venv/bin/python -m pip wheel -q --no-deps --no-build-isolation --disable-pip-version-check \
    -w "$build/dist" -C build-dir="$build" -C cmake.build-type=RelWithDebInfo \
    -C cmake.define.ONNXOPT_BUILD_TESTS=ON .
  .venv/bin/python -m pip install -q --no-deps --force-reinstall --disable-pip-version-check \
    "$build"/dist/onnxopt-*.whl
else
  # An instrumented module would need the sanitizer runtime preloaded into Python; the package's
  # C++ is the library's, which the rest of this run covers under the sanitizers.
  pytest_args+=(--ignore=tests/python/package)
fi
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
# pytest-xdist: one worker per core (each test runs opt in subprocesses and needs no other test);
# ONNXOPT_TEST_JOBS=0 runs in one process.
ONNXOPT_OPT="$PWD/$build/bin/opt" .venv/bin/python -m pytest -q -n "${ONNXOPT_TEST_JOBS:-auto}" tests/python "${pytest_args[@]}" "$@"
