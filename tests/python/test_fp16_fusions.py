"""Fusions on float16 and bfloat16 models: their constants hold the exact values rounded to the
type (sqrt(2) is 1.4140625 in float16, 1.1e-4 away; 0.044715 is 1.5e-4 away), which a pattern's
tolerance for float32 constants refused, so torch's fp16 exports of BERT and GPT-2 kept GELU
written out (found by tools/bench/gpu_bench.py on the H200). Built with onnx.helper (the textual
format has no float16 literals); each fused model is run against the original on onnxruntime."""

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
