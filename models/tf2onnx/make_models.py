"""Generates models/tf2onnx: six CNNs in the layout tf2onnx gives Keras/TensorFlow models, and goldens.

TensorFlow computes in NHWC; ONNX's Conv, pools, BatchNormalization and Resize take NCHW, so tf2onnx
wraps each of them in Transpose<perm=[0, 3, 1, 2]> ... Transpose<perm=[0, 2, 3, 1]> and leaves the
elementwise ops (Relu, Clip, Add), Concat (axis 3, the channels) and reductions (ReduceMean over
axes [1, 2]) in NHWC between them. The transpose optimizers (ours: optimize-transposes; onnxruntime's
in ORT_ENABLE_BASIC) are measured on how many of those Transposes they remove
(tools/bench/transpose_counts.py, tools/results/node_counts.md). Input [N, 32, 32, 3] NHWC (N dynamic),
opset 17, seeded random weights; goldens from onnxruntime on these unoptimized models.

    plain      conv-bn-relu x 3 with a MaxPool, global ReduceMean, MatMul + Add
    resnet     a stem and two residual blocks (the second downsampling with a strided 1x1 conv)
    mobilenet  depthwise-separable blocks (Relu6 as Clip), an inverted residual, AveragePool
    unet       an encoder with MaxPool, a Resize x2 decoder, a Concat skip connection, Sigmoid
    inception  four parallel branches (1x1, 3x3, 5x5, MaxPool + 1x1) concatenated
    densenet   a dense block (each conv's output concatenated to its input), a transition pool

    python models/tf2onnx/make_models.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import golden  # noqa: E402  (tools/golden.py)

TO_NCHW = [0, 3, 1, 2]
TO_NHWC = [0, 2, 3, 1]


class Builder:
    """Nodes and initializers of one model; values are NHWC unless a name says otherwise."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.n = 0

    def name(self, base: str) -> str:
        self.n += 1
        return f"{base}_{self.n}"

    def const(self, array: np.ndarray, base: str) -> str:
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def nchw(self, op: str, x: str, extra: list[str] | None = None, **attrs) -> str:
        """op on NHWC x the tf2onnx way: Transpose to NCHW, op, Transpose back."""
        t = self.node("Transpose", [x], perm=TO_NCHW)
        y = self.node(op, [t, *(extra or [])], **attrs)
        return self.node("Transpose", [y], perm=TO_NHWC)

    def conv(self, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, group: int = 1,
             bias: bool = True) -> str:
        w = self.const(self.rng.standard_normal((cout, cin // group, k, k)) * (2.0 / (cin // group * k * k)) ** 0.5,
                       "w")
        extra = [w] + ([self.const(0.1 * self.rng.standard_normal(cout), "b")] if bias else [])
        return self.nchw("Conv", x, extra, kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride, stride],
                         group=group)

    def bn(self, x: str, c: int) -> str:
        r = self.rng
        params = [self.const(1 + 0.1 * r.standard_normal(c), "scale"), self.const(0.1 * r.standard_normal(c), "bias"),
                  self.const(0.1 * r.standard_normal(c), "mean"), self.const(1 + 0.1 * np.abs(r.standard_normal(c)), "var")]
        return self.nchw("BatchNormalization", x, params, epsilon=1e-3)

    def relu(self, x: str) -> str:
        return self.node("Relu", [x])

    def relu6(self, x: str) -> str:
        return self.node("Clip", [x, self.const(np.array(0.0), "lo"), self.const(np.array(6.0), "hi")])

    def conv_bn_relu(self, x: str, cin: int, cout: int, **kw) -> str:
        return self.relu(self.bn(self.conv(x, cin, cout, bias=False, **kw), cout))

    def head(self, x: str, c: int, classes: int = 10) -> str:
        """Global average pool in NHWC (ReduceMean over H, W), then a dense layer."""
        m = self.node("ReduceMean", [x], axes=[1, 2], keepdims=0)
        mm = self.node("MatMul", [m, self.const(0.1 * self.rng.standard_normal((c, classes)), "dense_w")])
        return self.node("Add", [mm, self.const(0.1 * self.rng.standard_normal(classes), "dense_b")])


def plain(b: Builder, x: str) -> tuple[str, list]:
    y = b.conv_bn_relu(x, 3, 8)
    y = b.nchw("MaxPool", y, kernel_shape=[2, 2], strides=[2, 2])
    y = b.conv_bn_relu(y, 8, 16)
    y = b.conv_bn_relu(y, 16, 16)
    return b.head(y, 16), ["N", 10]


def resnet(b: Builder, x: str) -> tuple[str, list]:
    y = b.conv_bn_relu(x, 3, 16)
    # Identity block.
    r = b.conv_bn_relu(y, 16, 16)
    r = b.bn(b.conv(r, 16, 16, bias=False), 16)
    y = b.relu(b.node("Add", [r, y]))
    # Downsampling block: the shortcut is a strided 1x1 conv.
    r = b.conv_bn_relu(y, 16, 32, stride=2)
    r = b.bn(b.conv(r, 32, 32, bias=False), 32)
    s = b.bn(b.conv(y, 16, 32, k=1, stride=2, bias=False), 32)
    y = b.relu(b.node("Add", [r, s]))
    return b.head(y, 32), ["N", 10]


def mobilenet(b: Builder, x: str) -> tuple[str, list]:
    y = b.relu6(b.bn(b.conv(x, 3, 16, stride=2, bias=False), 16))
    # Depthwise-separable block.
    d = b.relu6(b.bn(b.conv(y, 16, 16, group=16, bias=False), 16))
    y = b.bn(b.conv(d, 16, 24, k=1, bias=False), 24)
    # Inverted residual: expand, depthwise, project, add.
    e = b.relu6(b.bn(b.conv(y, 24, 48, k=1, bias=False), 48))
    e = b.relu6(b.bn(b.conv(e, 48, 48, group=48, bias=False), 48))
    e = b.bn(b.conv(e, 48, 24, k=1, bias=False), 24)
    y = b.node("Add", [y, e])
    y = b.nchw("AveragePool", y, kernel_shape=[2, 2], strides=[2, 2])
    return b.head(y, 24), ["N", 10]


def unet(b: Builder, x: str) -> tuple[str, list]:
    e1 = b.relu(b.conv(x, 3, 8))
    p1 = b.nchw("MaxPool", e1, kernel_shape=[2, 2], strides=[2, 2])
    e2 = b.relu(b.conv(p1, 8, 16))
    scales = b.const(np.array([1.0, 1.0, 2.0, 2.0]), "scales")
    up = b.nchw("Resize", e2, ["", scales], mode="nearest")
    cat = b.node("Concat", [up, e1], axis=3)
    d1 = b.relu(b.conv(cat, 24, 8))
    out = b.node("Sigmoid", [b.conv(d1, 8, 1, k=1)])
    return out, ["N", 32, 32, 1]


def inception(b: Builder, x: str) -> tuple[str, list]:
    y = b.conv_bn_relu(x, 3, 16)
    a = b.relu(b.conv(y, 16, 8, k=1))
    c = b.relu(b.conv(b.relu(b.conv(y, 16, 8, k=1)), 8, 8))
    d = b.relu(b.conv(b.relu(b.conv(y, 16, 4, k=1)), 4, 8, k=5))
    p = b.nchw("MaxPool", y, kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    p = b.relu(b.conv(p, 16, 8, k=1))
    y = b.node("Concat", [a, c, d, p], axis=3)
    return b.head(y, 32), ["N", 10]


def densenet(b: Builder, x: str) -> tuple[str, list]:
    y = b.conv_bn_relu(x, 3, 8)
    c = 8
    for _ in range(3):
        n = b.conv(b.relu(b.bn(y, c)), c, 8, bias=False)
        y = b.node("Concat", [y, n], axis=3)
        c += 8
    y = b.conv(b.relu(b.bn(y, c)), c, 16, k=1, bias=False)
    y = b.nchw("AveragePool", y, kernel_shape=[2, 2], strides=[2, 2])
    return b.head(y, 16), ["N", 10]


ARCHITECTURES = {"plain": plain, "resnet": resnet, "mobilenet": mobilenet, "unet": unet,
                 "inception": inception, "densenet": densenet}


def build(arch: str) -> onnx.ModelProto:
    b = Builder(seed=sum(map(ord, arch)))
    out, out_shape = ARCHITECTURES[arch](b, "x")
    b.nodes.append(helper.make_node("Identity", [out], ["y"], name="output"))
    graph = helper.make_graph(b.nodes, f"tf2onnx_{arch}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 32, 32, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="onnxopt models/tf2onnx/make_models.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    x = np.random.default_rng(11).standard_normal((2, 32, 32, 3)).astype(np.float32)
    for arch in ARCHITECTURES:
        folder = os.path.join(HERE, arch)
        os.makedirs(folder, exist_ok=True)
        golden.save_with_golden(build(arch), folder, {"x": x})


if __name__ == "__main__":
    main()
