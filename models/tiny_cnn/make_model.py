"""Generates models/tiny_cnn: a small CNN with the redundancies the optimizer targets, and goldens.

Conv -> BatchNormalization -> Relu -> Identity -> MaxPool -> Cast(float->float) -> Flatten -> Gemm ->
Softmax, opset 17, seeded random weights. Goldens: test_data_set_0/input_0.pb and output_0.pb, from
onnxruntime on this (unoptimized) model.

    python models/tiny_cnn/make_model.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import golden  # noqa: E402  (tools/golden.py)


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(20261129)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    inits = [
        numpy_helper.from_array(f32(8, 3, 3, 3) * 0.3, "conv_w"),
        numpy_helper.from_array(f32(8) * 0.1, "conv_b"),
        numpy_helper.from_array(1 + 0.1 * f32(8), "bn_scale"),
        numpy_helper.from_array(0.1 * f32(8), "bn_bias"),
        numpy_helper.from_array(0.1 * f32(8), "bn_mean"),
        numpy_helper.from_array(np.abs(1 + 0.1 * f32(8)), "bn_var"),
        numpy_helper.from_array(f32(10, 8 * 4 * 4) * 0.1, "fc_w"),
        numpy_helper.from_array(f32(10) * 0.1, "fc_b"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                         ["bn"], name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("Identity", ["r"], ["r_id"], name="identity"),
        helper.make_node("MaxPool", ["r_id"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Cast", ["p"], ["p_cast"], name="noop_cast", to=TensorProto.FLOAT),
        helper.make_node("Flatten", ["p_cast"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="onnxopt models/tiny_cnn/make_model.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    x = np.random.default_rng(7).standard_normal((2, 3, 8, 8)).astype(np.float32)
    golden.save_with_golden(build(), HERE, {"x": x})


if __name__ == "__main__":
    main()
