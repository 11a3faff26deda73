#!/usr/bin/env bash
# The main job on a bundled model: set up, build, then optimize models/tiny_cnn/model.onnx and
# show what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
opt=${ONNXOPT_BUILD_DIR:-build}/bin/opt
in=models/tiny_cnn/model.onnx
out=${TMPDIR:-/tmp}/onnxopt-demo.onnx
echo "== $in"
"$opt" "$in" --stats
"$opt" "$in" -o "$out"
echo "== $out"
"$opt" "$out" --stats
echo "== text form (tensors elided)"
"$opt" "$out" --emit text --elide-constants
