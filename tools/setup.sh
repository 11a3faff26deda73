#!/usr/bin/env bash
# Installs what onnxopt needs on a fresh Debian machine, idempotently, then builds it.
#   Debian packages: compiler, CMake, protobuf, libonnx-dev, CLI11, fmt, GoogleTest, FileCheck/lit.
#   A Python venv (.venv) for tests and tools: onnx, onnxruntime, numpy, pytest.
#   The build: build/ (CMake + Ninja); `opt` lands in build/bin/opt.
# Usage: tools/setup.sh [TARGET...]: builds only those CMake targets (tools/demo.sh: opt), or every
# target when none is named (tools/test.sh: the tests need them all).
# Environment: ONNXOPT_BUILD_DIR (default build), ONNXOPT_WERROR=1 (warnings are errors, as in CI).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake ninja-build libprotobuf-dev protobuf-compiler libonnx-dev libcli11-dev
          libfmt-dev libgtest-dev llvm-14-tools python3-venv clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

stamp=.venv/.requirements.sha256
want=$(sha256sum tools/requirements.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: creating the Python venv (.venv) for tests and tools"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -r tools/requirements.txt
  echo "$want" > "$stamp"
fi

build=${ONNXOPT_BUILD_DIR:-build}
# Warnings-as-errors is set only when asked (CI sets ONNXOPT_WERROR=1); otherwise the cached value
# stays, so switching between the demo and the tests does not rebuild everything.
flags=()
[ -n "${ONNXOPT_WERROR:-}" ] && flags+=("-DONNXOPT_WERROR=$([ "$ONNXOPT_WERROR" = 1 ] && echo ON || echo OFF)")
# ONNXOPT_SANITIZE=address,undefined (tools/test.sh --sanitize) instruments every target.
[ -n "${ONNXOPT_SANITIZE:-}" ] && flags+=("-DONNXOPT_SANITIZE=$ONNXOPT_SANITIZE" "-DONNXOPT_ENABLE_CUDA=OFF")
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja "${flags[@]}" >/dev/null
elif ((${#flags[@]})); then
  cmake "$build" "${flags[@]}" >/dev/null
fi
targets=()
(($#)) && targets=(--target "$@")
cmake --build "$build" "${targets[@]}"
