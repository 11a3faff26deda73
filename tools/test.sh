#!/usr/bin/env bash
# Runs every test: C++ unit tests, FileCheck textual tests and the install test (ctest), then the
# Python suite (round trips over the model corpus, malformed input, external data) with pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
build=${ONNXOPT_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
ONNXOPT_OPT="$PWD/$build/bin/opt" .venv/bin/python -m pytest -q tests/python "$@"
