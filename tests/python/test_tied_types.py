"""One type parameter, one type. torch's TorchScript exporter (torch 2.15, transformers 5.25) writes
a `.half()` DistilBERT whose LayerNormalization takes X as float32 (the attention-mask Add's type
promotion carries float32 through the attention output into the residual Add) while Scale and B
stay float16: invalid ONNX, which onnxruntime refuses to load. opt used to take it and carry the
mixed node through -O3 --target cuda, where the CUDA runtime ran it on the CPU (25x slower). It now
refuses it like onnxruntime: at import where the file types the values (here the output), else
before writing, once shape inference has typed them; the valid float16 form of the same block (the residual Add
and LayerNormalization, all float16) is fused and still matches onnxruntime on the original."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import roundtrip_check

HIDDEN = 16


def _residual_layernorm(x_type: int) -> onnx.ModelProto:
    """y = LayerNormalization(Add(a, Cast(h)), gamma, beta), gamma and beta float16 constants, as
    the exporter writes each layer's norm; with x_type float the Add and X are float32."""
    rng = np.random.default_rng(7)
    gamma = numpy_helper.from_array(rng.uniform(0.5, 1.5, HIDDEN).astype(np.float16), "gamma")
    beta = numpy_helper.from_array(rng.uniform(-0.5, 0.5, HIDDEN).astype(np.float16), "beta")
    nodes = [helper.make_node("Cast", ["h"], ["hc"], to=x_type),
             helper.make_node("Add", ["a", "hc"], ["s"]),
             helper.make_node("LayerNormalization", ["s", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-12,
                              name="/model/transformer/layer.0/sa_layer_norm/LayerNormalization")]
    g = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("a", x_type, [2, 8, HIDDEN]),
                                           helper.make_tensor_value_info("h", TensorProto.FLOAT16, [2, 8, HIDDEN])],
                          [helper.make_tensor_value_info("y", x_type, [2, 8, HIDDEN])], [gamma, beta])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_a_layernorm_mixing_float_and_float16_is_refused_like_onnxruntime(opt, tmp_path) -> None:
    model = _residual_layernorm(TensorProto.FLOAT)
    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, src)
    with pytest.raises(Exception, match="bound to different types"):
        ort.InferenceSession(src.read_bytes(), providers=["CPUExecutionProvider"])
    proc = roundtrip_check.run_opt(opt, str(src), "-O3", "--target", "cuda", "--target-opset", "23",
                                   "-o", str(dst))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    # s has no declared type (no value_info), so the float on the other side is the output's.
    assert lines[0].startswith("opt: error: ") and "in.onnx: node '/model/transformer/" in lines[0], lines[0]
    assert ("(LayerNormalization): output 0 'y' is float but input 1 'gamma' is float16; "
            "LayerNormalization binds them to one type") in lines[0], lines[0]
    assert not dst.exists()


def test_the_float16_block_fuses_with_one_type_and_matches_onnxruntime(opt, tmp_path) -> None:
    model = _residual_layernorm(TensorProto.FLOAT16)
    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, src)
    proc = roundtrip_check.run_opt(opt, str(src), "-O3", "--target", "cuda", "--target-opset", "23",
                                   "-o", str(dst))
    assert proc.returncode == 0, proc.stderr
    fused = onnx.load(dst)
    ops = [n.op_type for n in fused.graph.node]
    assert "SkipLayerNormalization" in ops, ops
    onnx.checker.check_model(fused, full_check=True)  # the function body types one T too
    rng = np.random.default_rng(3)
    feeds = {n: rng.normal(0, 1, (2, 8, HIDDEN)).astype(np.float16) for n in ("a", "h")}
    run = lambda m: ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(  # noqa: E731
        None, feeds)[0].astype(np.float32)
    np.testing.assert_allclose(run(fused), run(model), atol=1e-2, rtol=1e-2)
