"""Transposes of tf2onnx-style NHWC models around a Pad: `opt -O2` removes the two around the Pad, as onnxruntime's
transpose optimizer does, and computes the same outputs, at every opset form of Pad
(the pads attribute before 11, an input from 11, with an axes input from 18), with the Pad right before the
Transpose back to NCHW or an elementwise op between them. And a Shape read from a Transpose that stays for another
user does not make -O2 add a node."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


def _pad(opset: int, x: str, inits: list[onnx.TensorProto]) -> onnx.NodeProto:
    """Pad of H and W by one, NHWC, in the form `opset` takes."""
    if opset < 11:
        return helper.make_node("Pad", [x], ["padded"], pads=[0, 1, 1, 0, 0, 1, 1, 0], mode="reflect")
    if opset < 18:
        inits.append(numpy_helper.from_array(np.array([0, 1, 1, 0, 0, 1, 1, 0], np.int64), "pads"))
        return helper.make_node("Pad", [x, "pads"], ["padded"], mode="edge")
    inits.append(numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "pads"))
    inits.append(numpy_helper.from_array(np.array([1, -2], np.int64), "axes"))
    return helper.make_node("Pad", [x, "pads", "", "axes"], ["padded"])


def nhwc_model(opset: int, relu_after_pad: bool) -> onnx.ModelProto:
    """x (NHWC) -> Transpose -> Conv -> Transpose -> [Relu] -> Pad -> [Relu] -> Transpose -> Conv -> Transpose."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w1", (4, 3, 3, 3)), ("b1", (4,)), ("w2", (5, 4, 3, 3)))]
    nodes = [helper.make_node("Transpose", ["x"], ["x_nchw"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["x_nchw", "w1", "b1"], ["c1"]),
             helper.make_node("Transpose", ["c1"], ["c1_nhwc"], perm=[0, 2, 3, 1]),
             helper.make_node("Relu", ["padded" if relu_after_pad else "c1_nhwc"], ["r"]),
             _pad(opset, "c1_nhwc" if relu_after_pad else "r", inits),
             helper.make_node("Transpose", ["r" if relu_after_pad else "padded"], ["p_nchw"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["p_nchw", "w2"], ["c2"]),
             helper.make_node("Transpose", ["c2"], ["y"], perm=[0, 2, 3, 1])]
    if relu_after_pad:  # topological order: the Pad before the Relu that reads it
        nodes[3], nodes[4] = nodes[4], nodes[3]
    graph = helper.make_graph(nodes, "nhwc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 10, 10, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 8, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)
    onnx.checker.check_model(model, full_check=True)
    return model


def transposes(path: Path) -> int:
    return sum(n.op_type == "Transpose" for n in onnx.load(str(path)).graph.node)


def run(path: Path, x: np.ndarray, level: ort.GraphOptimizationLevel, saved: Path | None = None) -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    if saved is not None:
        options.optimized_model_filepath = str(saved)
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("relu_after_pad", [False, True], ids=["pad-transpose", "pad-relu-transpose"])
@pytest.mark.parametrize("opset", [10, 13, 18])
def test_nhwc_pad_loses_the_transposes_around_it(opset: int, relu_after_pad: bool, run_opt,
                                                            work_dir: Path) -> None:
    model, out, ort_out = work_dir / "in.onnx", work_dir / "out.onnx", work_dir / "ort.onnx"
    onnx.save(nhwc_model(opset, relu_after_pad), model)
    proc = run_opt(model, "-o", out, "-O2")
    assert proc.returncode == 0, proc.stderr
    x = np.random.default_rng(1).standard_normal((2, 10, 10, 3)).astype(np.float32)
    expected = run(model, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    assert transposes(model) == 4
    # The Transposes of the graph's input and output stay; the two around the Pad go.
    assert transposes(out) == 2
    if opset < 18:
        # onnxruntime leaves as many. With an axes input (opset 18) its rewrite of the Pad fails at run time
        # (a Gather of the pads past their end), so it is no reference there.
        run(model, x, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC, saved=ort_out)
        assert transposes(ort_out) == 2
    np.testing.assert_allclose(run(out, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL), expected, rtol=1e-4, atol=1e-5)


def test_shape_of_a_transpose_kept_for_another_user_adds_no_node(run_opt, work_dir: Path) -> None:
    # An LSTM decoder's pattern: the Transpose stays for the Neg, so Gather(Shape(x), perm) for its Shape would be
    # one node more.
    model, out = work_dir / "in.onnxtxt", work_dir / "out.onnx"
    model.write_text("""<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4,6,3] z) => (int64[4] sh, float[N,3,4,6] tz) {
  t = Transpose<perm = [0, 3, 1, 2]>(z)
  sh = Shape(t)
  tz = Neg(t)
}
""")
    proc = run_opt(model, "-o", out, "-O2")
    assert proc.returncode == 0, proc.stderr
    assert [n.op_type for n in onnx.load(str(out)).graph.node] == ["Transpose", "Shape", "Neg"]
