"""Builds models/qdq/*.onnx: QDQ int8 models as onnxruntime's quantize_static writes them, the
corpus of `--precision` on quantized models (tests/python/test_convert_precision_qdq.py).

    .venv/bin/python models/qdq/make_models.py

Each float model is first brought to the opset named in the file (onnx's version converter),
then quantized with QuantFormat.QDQ on seeded calibration inputs: `cnn_*` from models/tiny_cnn
(Conv, Relu, MaxPool, Flatten, Gemm, Softmax), `resnet_*` from models/tf2onnx/resnet (NHWC
Transposes, residual Adds, AveragePool, ReduceMean) and `mlp_*`, built here (MatMul, Add, Relu,
Sigmoid, Softmax). `perchannel`: per-channel int8 weights; `pertensor`: per-tensor.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, version_converter
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

HERE = Path(__file__).resolve().parent
MODELS = HERE.parent

# (name, float source, opsets, per-channel)
CASES = [
    ("cnn_perchannel", "tiny_cnn", (13, 17, 19, 21), True),
    ("cnn_pertensor", "tiny_cnn", (17, 19), False),
    ("resnet_perchannel", "tf2onnx/resnet", (17, 21), True),
    ("mlp_pertensor", "mlp", (13, 17, 19, 21), False),
    ("mlp_perchannel", "mlp", (19,), True),
]


def mlp(opset: int) -> onnx.ModelProto:
    """Two dense layers with a residual Add, a Sigmoid gate and a Softmax head; batch dynamic."""
    rng = np.random.default_rng(51)

    def dense(name: str, k: int, n: int) -> list:
        return [numpy_helper.from_array((rng.standard_normal((k, n)) * 0.3).astype(np.float32), f"{name}_w"),
                numpy_helper.from_array((rng.standard_normal(n) * 0.1).astype(np.float32), f"{name}_b")]

    inits = dense("fc1", 16, 32) + dense("fc2", 32, 32) + dense("fc3", 32, 10)
    nodes = [
        helper.make_node("MatMul", ["x", "fc1_w"], ["h1m"]),
        helper.make_node("Add", ["h1m", "fc1_b"], ["h1a"]),
        helper.make_node("Relu", ["h1a"], ["h1"]),
        helper.make_node("MatMul", ["h1", "fc2_w"], ["h2m"]),
        helper.make_node("Add", ["h2m", "fc2_b"], ["h2a"]),
        helper.make_node("Sigmoid", ["h2a"], ["g"]),
        helper.make_node("Mul", ["h1", "g"], ["h2"]),
        helper.make_node("Add", ["h1", "h2"], ["h3"]),
        helper.make_node("MatMul", ["h3", "fc3_w"], ["om"]),
        helper.make_node("Add", ["om", "fc3_b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def float_model(source: str, opset: int) -> onnx.ModelProto:
    if source == "mlp":
        return mlp(opset)
    model = onnx.load(MODELS / source / "model.onnx")
    current = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset >= current:
        return version_converter.convert_version(model, opset)
    # The converter has no downgrade adapters for these ops (Identity-16, ...); their semantics
    # are the same at the lower opset, which the checker confirms.
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = opset
    onnx.checker.check_model(model, full_check=True)
    return model


class Reader(CalibrationDataReader):
    """Eight seeded batches of two, shaped from the model's input (dynamic dims as 2)."""

    def __init__(self, model: onnx.ModelProto):
        inp = model.graph.input[0]
        shape = [d.dim_value if d.dim_value > 0 else 2 for d in inp.type.tensor_type.shape.dim]
        rng = np.random.default_rng(7)
        self.batches = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.batches, None)


def quantized(model: onnx.ModelProto, per_channel: bool) -> onnx.ModelProto:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "qdq.onnx"
        onnx.save(model, src)
        quantize_static(src, dst, Reader(model), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        out = onnx.load(dst)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    got = next(o.version for o in out.opset_import if o.domain in ("", "ai.onnx"))
    assert got == opset, f"quantize_static moved the opset from {opset} to {got}"
    return out


def main() -> None:
    for name, source, opsets, per_channel in CASES:
        for opset in opsets:
            model = quantized(float_model(source, opset), per_channel)
            onnx.checker.check_model(model, full_check=True)
            path = HERE / f"{name}_opset{opset}.onnx"
            onnx.save(model, path)
            ops = [n.op_type for n in model.graph.node]
            print(f"{path.name}: {len(ops)} nodes, {ops.count('QuantizeLinear')} Q, "
                  f"{ops.count('DequantizeLinear')} DQ, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
