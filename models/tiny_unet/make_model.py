"""Generates models/tiny_unet: a small UNet-like segmenter with Resize, and goldens.

Encoder: Conv3x3+Relu (skip1) -> MaxPool -> Conv3x3+Relu (skip2) -> MaxPool -> Conv3x3+Relu.
Decoder: Resize nearest (scales 2x) -> Concat(skip2) -> Conv3x3+Relu -> Resize linear to the size of
skip1 (sizes computed at run time: Shape, Slice, Concat) -> Concat(skip1) -> Conv3x3+Relu ->
Conv1x1 -> Sigmoid. Input [N, 3, H, W] with dynamic N, H, W (H and W multiples of 4); opset 19,
seeded random weights. Goldens: test_data_set_0/input_0.pb and output_0.pb (N=1, 16x16), from
onnxruntime on this (unoptimized) model.

    python models/tiny_unet/make_model.py
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
    rng = np.random.default_rng(20261201)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    inits = []
    nodes = []

    def conv(name, x, cin, cout, k=3):
        inits.append(numpy_helper.from_array(f32(cout, cin, k, k) * float(1.0 / np.sqrt(cin * k * k)),
                                             f"{name}_w"))
        inits.append(numpy_helper.from_array(f32(cout) * 0.1, f"{name}_b"))
        pad = k // 2
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"], name=name,
                                      pads=[pad] * 4))
        return f"{name}_c"

    def relu(x):
        nodes.append(helper.make_node("Relu", [x], [x + "_r"], name=x + "_relu"))
        return x + "_r"

    def pool(x):
        nodes.append(helper.make_node("MaxPool", [x], [x + "_p"], name=x + "_pool",
                                      kernel_shape=[2, 2], strides=[2, 2]))
        return x + "_p"

    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up_scales"))
    inits.append(numpy_helper.from_array(np.array([2], np.int64), "hw_start"))
    inits.append(numpy_helper.from_array(np.array([4], np.int64), "hw_end"))
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "nc_start"))
    inits.append(numpy_helper.from_array(np.array([2], np.int64), "nc_end"))

    skip1 = relu(conv("enc1", "x", 3, 8))
    skip2 = relu(conv("enc2", pool(skip1), 8, 16))
    mid = relu(conv("mid", pool(skip2), 16, 16))
    nodes.append(helper.make_node("Resize", [mid, "", "up_scales"], ["up1"], name="up1",
                                  mode="nearest"))
    nodes.append(helper.make_node("Concat", ["up1", skip2], ["cat1"], name="cat1", axis=1))
    dec1 = relu(conv("dec1", "cat1", 32, 8))
    # The second upsampling resizes to skip1's spatial size, read at run time.
    nodes += [
        helper.make_node("Shape", [skip1], ["skip1_shape"], name="skip1_shape"),
        helper.make_node("Slice", ["skip1_shape", "hw_start", "hw_end"], ["skip1_hw"],
                         name="skip1_hw"),
        helper.make_node("Shape", [dec1], ["dec1_shape"], name="dec1_shape"),
        helper.make_node("Slice", ["dec1_shape", "nc_start", "nc_end"], ["dec1_nc"],
                         name="dec1_nc"),
        helper.make_node("Concat", ["dec1_nc", "skip1_hw"], ["up2_sizes"], name="up2_sizes",
                         axis=0),
        helper.make_node("Resize", [dec1, "", "", "up2_sizes"], ["up2"], name="up2", mode="linear",
                         coordinate_transformation_mode="half_pixel"),
        helper.make_node("Concat", ["up2", skip1], ["cat2"], name="cat2", axis=1),
    ]
    dec2 = relu(conv("dec2", "cat2", 16, 8))
    head = conv("head", dec2, 8, 2, k=1)
    nodes.append(helper.make_node("Sigmoid", [head], ["mask"], name="sigmoid"))
    graph = helper.make_graph(
        nodes, "tiny_unet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["N", 2, "H", "W"])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)],
                              producer_name="onnxopt models/tiny_unet/make_model.py")
    model.ir_version = 9
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    x = np.random.default_rng(7).standard_normal((1, 3, 16, 16)).astype(np.float32)
    golden.save_with_golden(build(), HERE, {"x": x})


if __name__ == "__main__":
    main()
