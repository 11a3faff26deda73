"""Constant folding does not grow stored weights unless asked (issue 47, item 9).

Weights stored as int8 and dequantized in the graph (Cast to float, Mul by a scale) stay so at -O2: the
file keeps its size. With `--fold-grow-weights` (fold-constants{grow-weights=true}) they fold into float
initializers, four times the bytes. Shape-like and parameter-built results (a Range of positions) still
fold, and the outputs match onnxruntime either way.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def _dequantized_mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(47)
    nodes, inits = [], []
    x = "x"
    for i in range(4):
        q = rng.integers(-127, 128, size=(256, 256), dtype=np.int8)
        inits += [numpy_helper.from_array(q, f"q{i}"),
                  numpy_helper.from_array(np.array(0.01 * (i + 1), np.float32), f"scale{i}")]
        nodes += [helper.make_node("Cast", [f"q{i}"], [f"wf{i}"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [f"wf{i}", f"scale{i}"], [f"w{i}"]),
                  helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"]),
                  helper.make_node("Relu", [f"h{i}"], [f"r{i}"])]
        x = f"r{i}"
    # Positions built from scalars: a result larger than its (tiny) inputs, still folded.
    inits += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
              (("start", 0), ("limit", 256), ("delta", 1))]
    nodes += [helper.make_node("Range", ["start", "limit", "delta"], ["pos"]),
              helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
              helper.make_node("Add", [x, "posf"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 256])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _optimize(opt: Path, src: Path, out: Path, *flags: str) -> onnx.ModelProto:
    if not any(f.startswith("--passes") for f in flags):
        flags = ("-O2", *flags)
    proc = subprocess.run([str(opt), str(src), "-o", str(out), *flags], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return onnx.load(str(out))


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def test_int8_weights_dequantized_in_the_graph_keep_their_size(opt, work_dir):
    src = work_dir / "in.onnx"
    onnx.save(_dequantized_mlp(), str(src))
    kept = _optimize(opt, src, work_dir / "kept.onnx")
    grown = _optimize(opt, src, work_dir / "grown.onnx", "--fold-grow-weights")

    size_in = os.path.getsize(src)
    assert os.path.getsize(work_dir / "kept.onnx") <= size_in * 1.03
    kept_ops = [n.op_type for n in kept.graph.node]
    assert kept_ops.count("Cast") == 4 and kept_ops.count("Mul") == 4
    assert "Range" not in kept_ops  # 2 KiB of positions from three scalars still fold

    grown_ops = [n.op_type for n in grown.graph.node]
    assert "Cast" not in grown_ops and "Mul" not in grown_ops
    assert os.path.getsize(work_dir / "grown.onnx") > size_in * 3

    x = np.random.default_rng(0).standard_normal((3, 256)).astype(np.float32)
    want = _run(src, x)
    for name in ("kept.onnx", "grown.onnx"):
        np.testing.assert_allclose(_run(work_dir / name, x), want, rtol=1e-4, atol=1e-4)


def test_grow_weights_is_a_pass_option(opt, work_dir):
    src = work_dir / "in.onnx"
    onnx.save(_dequantized_mlp(), str(src))
    out = _optimize(opt, src, work_dir / "out.onnx", "--passes=fold-constants{grow-weights=true},dce")
    assert [n.op_type for n in out.graph.node].count("Cast") == 0
    out = _optimize(opt, src, work_dir / "out2.onnx", "--passes=fold-constants,dce")
    assert [n.op_type for n in out.graph.node].count("Cast") == 4
