"""Builds models/tiny_quant/model.onnx: a small quantized network with both quantization styles
(QDQ pairs around a Conv, QLinearConv, QLinearMatMul, DynamicQuantizeLinear + MatMulInteger), and
its test_data_set_0 (a seeded input, outputs from onnxruntime).

    .venv/bin/python models/tiny_quant/make_model.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tools"))
import golden  # noqa: E402  (tools/golden.py)


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(15)
    w = rng.integers(-20, 20, size=(4, 2, 3, 3), dtype=np.int8)
    wq = rng.integers(0, 255, size=(4, 4, 1, 1), dtype=np.uint8)
    m = rng.integers(0, 255, size=(16, 8), dtype=np.uint8)
    mi = rng.integers(-100, 100, size=(8, 5), dtype=np.int8)
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "x_zp"),
        numpy_helper.from_array(w, "w_q"),
        numpy_helper.from_array(np.array([0.02, 0.03, 0.01, 0.04], np.float32), "w_scale"),
        numpy_helper.from_array(np.zeros(4, np.int8), "w_zp"),
        numpy_helper.from_array(np.array(0.1, np.float32), "c_scale"),
        numpy_helper.from_array(np.array(100, np.uint8), "c_zp"),
        numpy_helper.from_array(wq, "wq"),
        numpy_helper.from_array(np.array(0.01, np.float32), "wq_scale"),
        numpy_helper.from_array(np.array(120, np.uint8), "wq_zp"),
        numpy_helper.from_array(np.array(0.2, np.float32), "y_scale"),
        numpy_helper.from_array(np.array(90, np.uint8), "y_zp"),
        numpy_helper.from_array(np.array([1, 16], np.int64), "flat"),
        numpy_helper.from_array(m, "m"),
        numpy_helper.from_array(np.array(0.02, np.float32), "m_scale"),
        numpy_helper.from_array(np.array(127, np.uint8), "m_zp"),
        numpy_helper.from_array(np.array(0.5, np.float32), "z_scale"),
        numpy_helper.from_array(np.array(60, np.uint8), "z_zp"),
        numpy_helper.from_array(mi, "mi"),
    ]
    nodes = [
        # QDQ style: Q -> DQ on the activation, DQ on the per-channel weight, float Conv.
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xdq"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["wdq"], axis=0),
        helper.make_node("Conv", ["xdq", "wdq"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["cr"]),
        # QLinear style: QLinearConv (1x1), global pool in float, QLinearMatMul.
        helper.make_node("QuantizeLinear", ["cr", "c_scale", "c_zp"], ["cq"]),
        helper.make_node("QLinearConv", ["cq", "c_scale", "c_zp", "wq", "wq_scale", "wq_zp",
                                         "y_scale", "y_zp"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "y_scale", "y_zp"], ["y"]),
        helper.make_node("MaxPool", ["y"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", "flat"], ["pf"]),
        helper.make_node("QuantizeLinear", ["pf", "y_scale", "y_zp"], ["pq"]),
        helper.make_node("QLinearMatMul", ["pq", "y_scale", "y_zp", "m", "m_scale", "m_zp",
                                           "z_scale", "z_zp"], ["zq"]),
        helper.make_node("DequantizeLinear", ["zq", "z_scale", "z_zp"], ["z"]),
        # Dynamic quantization: DynamicQuantizeLinear feeding MatMulInteger.
        helper.make_node("DynamicQuantizeLinear", ["z"], ["dq", "dq_scale", "dq_zp"]),
        helper.make_node("MatMulInteger", ["dq", "mi", "dq_zp"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["accf", "dq_scale"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_quant",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 5])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="onnxopt-make_model")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    x = np.random.default_rng(0).normal(size=(1, 2, 4, 4)).astype(np.float32)
    golden.save_with_golden(build(), HERE, {"x": x})


if __name__ == "__main__":
    main()
