"""Fusions on float16 and bfloat16 models, as torch's fp16 exports of BERT and GPT-2 showed them
(tools/bench/gpu_bench.py on the H200): their constants hold the exact values rounded to the type
(sqrt(2) is 1.4140625 in float16, 1.1e-4 away; 0.044715 is 1.5e-4 away), which a pattern's
tolerance for float32 constants refused, so GELU stayed written out; and their attention carries
an IsNaN guard fuse-attention refuses, whose Q and K^T scalings fuse-matmul-scale moves into the
projection weights. Built with onnx.helper (the textual format has no float16 literals); each
rewritten model is run against the original on onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import roundtrip_check

F16, BF16 = TensorProto.FLOAT16, TensorProto.BFLOAT16


def _const(name: str, value: float, elem: int) -> onnx.TensorProto:
    if elem == F16:
        return numpy_helper.from_array(np.array(value, np.float16), name)
    return helper.make_tensor(name, BF16, [], [value])  # onnx rounds the float to bfloat16


def _erf_gelu(elem: int, root2: float = 2 ** 0.5) -> onnx.ModelProto:
    """x * 0.5 * (1 + erf(x / sqrt(2))), as torch's dynamo exporter writes it."""
    nodes = [helper.make_node("Div", ["x", "root2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["x", "half"], ["h"]),
             helper.make_node("Mul", ["h", "a"], ["y"])]
    inits = [_const("root2", root2, elem), _const("one", 1.0, elem), _const("half", 0.5, elem)]
    return _model(nodes, inits, elem)


def _tanh_gelu(elem: int) -> onnx.ModelProto:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), GPT-2's gelu_new."""
    nodes = [helper.make_node("Pow", ["x", "three"], ["p"]), helper.make_node("Mul", ["p", "c"], ["pc"]),
             helper.make_node("Add", ["x", "pc"], ["s"]), helper.make_node("Mul", ["s", "k"], ["sk"]),
             helper.make_node("Tanh", ["sk"], ["t"]), helper.make_node("Add", ["t", "one"], ["a"]),
             helper.make_node("Mul", ["x", "half"], ["h"]), helper.make_node("Mul", ["h", "a"], ["y"])]
    inits = [_const("three", 3.0, elem), _const("c", 0.044715, elem), _const("k", (2 / np.pi) ** 0.5, elem),
             _const("one", 1.0, elem), _const("half", 0.5, elem)]
    return _model(nodes, inits, elem)


def _model(nodes, inits, elem: int) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "gelu", [helper.make_tensor_value_info("x", elem, [4, 64])],
                          [helper.make_tensor_value_info("y", elem, [4, 64])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    return m


def _optimize(opt, model: onnx.ModelProto, tmp_path) -> onnx.ModelProto:
    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, src)
    proc = roundtrip_check.run_opt(opt, str(src), "-O2", "-o", str(dst))
    assert proc.returncode == 0, proc.stderr
    return onnx.load(dst)


@pytest.mark.parametrize("form", ["erf", "tanh"])
def test_float16_gelu_fuses_and_matches_onnxruntime(opt, tmp_path, form: str) -> None:
    model = _erf_gelu(F16) if form == "erf" else _tanh_gelu(F16)
    fused = _optimize(opt, model, tmp_path)
    ops = [n.op_type for n in fused.graph.node]
    assert ops == ["Gelu"], ops
    want = "tanh" if form == "tanh" else None
    assert {a.name: a.s.decode() for a in fused.graph.node[0].attribute}.get("approximate") == want
    x = np.random.default_rng(5).uniform(-4, 4, (4, 64)).astype(np.float16)
    run = lambda m: ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(  # noqa: E731
        None, {"x": x})[0].astype(np.float32)
    # The written-out form rounds each step to float16; Gelu rounds once.
    np.testing.assert_allclose(run(fused), run(model), atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("form", ["erf", "tanh"])
def test_bfloat16_gelu_fuses(opt, tmp_path, form: str) -> None:
    model = _erf_gelu(BF16) if form == "erf" else _tanh_gelu(BF16)
    assert [n.op_type for n in _optimize(opt, model, tmp_path).graph.node] == ["Gelu"]


def test_a_float16_constant_off_by_more_than_its_rounding_does_not_fuse(opt, tmp_path) -> None:
    # 1.42 is 0.4% from sqrt(2): no rounding to float16 explains it (half an ulp is 0.05%).
    fused = _optimize(opt, _erf_gelu(F16, root2=1.42), tmp_path)
    assert "Gelu" not in [n.op_type for n in fused.graph.node]
    assert "Erf" in [n.op_type for n in fused.graph.node]


def _guarded_attention(elem_np=np.float16, elem=F16, heads: int = 2, d: int = 4, seq: int = 5,
                       batch: int = 2) -> onnx.ModelProto:
    """Attention as torch's dynamo exporter writes SDPA with a float mask: Q and K^T each scaled by
    sqrt(1/sqrt(d)) after the head split, and the probabilities guarded by Where(IsNaN(p), 0, p),
    which fuse-attention does not take."""
    hidden = heads * d
    rng = np.random.default_rng(11)
    w = {n: numpy_helper.from_array(rng.normal(0, 0.3, (hidden, hidden)).astype(elem_np), n)
         for n in ("wq", "wk", "wv")}
    root = numpy_helper.from_array(np.array((1 / np.sqrt(d)) ** 0.5, elem_np), "root")
    zero = numpy_helper.from_array(np.array(0, elem_np), "zero")
    split = numpy_helper.from_array(np.array([batch, seq, heads, d], np.int64), "split")
    merged = numpy_helper.from_array(np.array([batch, seq, hidden], np.int64), "merged")
    nodes = []
    for n in ("q", "k", "v"):
        nodes += [helper.make_node("MatMul", ["x", f"w{n}"], [f"{n}m"]),
                  helper.make_node("Reshape", [f"{n}m", "split"], [f"{n}r"]),
                  helper.make_node("Transpose", [f"{n}r"], [f"{n}t"],
                                   perm=[0, 2, 3, 1] if n == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("Mul", ["qt", "root"], ["qs"]), helper.make_node("Mul", ["kt", "root"], ["ks"]),
              helper.make_node("MatMul", ["qs", "ks"], ["s"]), helper.make_node("Add", ["s", "mask"], ["sm"]),
              helper.make_node("Softmax", ["sm"], ["p"], axis=-1), helper.make_node("IsNaN", ["p"], ["nan"]),
              helper.make_node("Where", ["nan", "zero", "p"], ["pg"]), helper.make_node("MatMul", ["pg", "vt"], ["o"]),
              helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "merged"], ["y"])]
    g = helper.make_graph(nodes, "attn", [helper.make_tensor_value_info("x", elem, [batch, seq, hidden]),
                                          helper.make_tensor_value_info("mask", elem, [batch, 1, 1, seq])],
                          [helper.make_tensor_value_info("y", elem, [batch, seq, hidden])],
                          [*w.values(), root, zero, split, merged])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    return m


def test_guarded_attention_scales_move_into_the_projection_weights(opt, tmp_path) -> None:
    model = _guarded_attention()
    fused = _optimize(opt, model, tmp_path)
    ops = [n.op_type for n in fused.graph.node]
    assert "Mul" not in ops and ops.count("MatMul") == 5, ops
    assert {"IsNaN", "Where", "Softmax"} <= set(ops)  # the attention itself stays written out
    rng = np.random.default_rng(3)
    feeds = {"x": rng.normal(0, 1, (2, 5, 8)).astype(np.float16),
             "mask": np.where(rng.uniform(size=(2, 1, 1, 5)) < 0.3, -65504, 0).astype(np.float16)}
    run = lambda m: ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(  # noqa: E731
        None, feeds)[0].astype(np.float32)
    np.testing.assert_allclose(run(fused), run(model), atol=1e-2, rtol=1e-2)
