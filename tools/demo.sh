#!/usr/bin/env bash
# The main job on a bundled model: set up, build opt (only opt: the tests and their CUDA kernels
# are tools/test.sh's), then optimize models/tiny_cnn/model.onnx and show what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh opt
opt=${ONNXOPT_BUILD_DIR:-build}/bin/opt
in=models/tiny_cnn/model.onnx
out=${TMPDIR:-/tmp}/onnxopt-demo.onnx
echo "== optimizing $in (-O2): statistics and per-pass times"
"$opt" "$in" -o "$out" --stats --time-passes
echo "== $out as text (tensors elided)"
"$opt" "$out" -O0 --emit text --elide-constants
