"""Generates models/shape_chains: small models whose Reshape targets and sizes are computed at run
time from Shape chains, the way exporters write them, for the shape folding rules of fold-constants.

- bert_heads.onnx: two BERT-style self-attention layers over x [batch, seq, 64] (4 heads of 16), with
  the head split and merge the TorchScript exporter writes (Shape -> Gather -> Unsqueeze -> Concat with
  constants -> Reshape, one Shape per use) in layer 0 and the one transformers' `x.size()[:-1] + (h, d)`
  gives (Shape -> Slice -> Concat) in layer 1. Every target becomes {0, 0, 4, 16} / {0, 0, 64}.
- yolo_head.onnx: a YOLO-style detection head over an image [N, 3, H, W] (H, W multiples of 8): three
  stride-2 Conv stages, a 1x1 Conv to 4*4 box bins + 4 classes at the last two scales, each flattened
  to [b, 20, -1] with b = Shape(p)[0], concatenated, split into boxes and classes, and the box bins
  reshaped to [b, 4, 4, a] with a = Shape(cat)[2] (H*W/64 + H*W/256 anchors: run time), then Softmax
  over the bins and a weighted sum (DFL). b is copied (0); a is the one entry left, -1, which is
  exact because the flattening Reshapes already fail when b is 0.
- cls_token.onnx: a ViT-style block: a class token concatenated to F tokens [B, F, 64] gives
  [B, F + 1, 64]; the head count is computed as numel // (b * n * 16), which is
  (64*B*(F + 1)) / (16*B*(F + 1)) = 4 only if symbolic division cancels the common factor.

Opset 17, seeded random weights.

    python models/shape_chains/make_models.py
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17


class Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, value, dtype=np.int64, base="c") -> str:
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), n))
        return n

    def weight(self, *shape, scale=None) -> str:
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[0])
        n = self.name("w")
        self.inits.append(numpy_helper.from_array(
            (self.rng.standard_normal(shape) * scale).astype(np.float32), n))
        return n

    def op(self, op_type: str, inputs: list[str], n_out: int = 1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=outs[0] + "_n", **attrs))
        return outs[0] if n_out == 1 else outs

    def dim(self, x: str, i: int) -> str:
        """Unsqueeze(Gather(Shape(x), i)): a fresh Shape per use, as the TorchScript exporter writes."""
        s = self.op("Shape", [x])
        g = self.op("Gather", [s, self.const(i)], axis=0)
        return self.op("Unsqueeze", [g, self.const([0])])

    def model(self, inputs, outputs) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "g", inputs, outputs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def bert_heads() -> onnx.ModelProto:
    b = Builder(20261206)
    hidden, heads, d = 64, 4, 16
    x = "x"
    for layer in range(2):
        def split(t):
            if layer == 0:
                target = b.op("Concat", [b.dim(t, 0), b.dim(t, 1), b.const([heads]), b.const([d])], axis=0)
            else:
                lead = b.op("Slice", [b.op("Shape", [t]), b.const([0]), b.const([-1])])
                target = b.op("Concat", [lead, b.const([heads, d])], axis=0)
            return b.op("Transpose", [b.op("Reshape", [t, target])], perm=[0, 2, 1, 3])

        def proj(t):
            return b.op("Add", [b.op("MatMul", [t, b.weight(hidden, hidden)]), b.weight(hidden, scale=0.1)])

        q, k, v = split(proj(x)), split(proj(x)), split(proj(x))
        kt = b.op("Transpose", [k], perm=[0, 1, 3, 2])
        scores = b.op("Div", [b.op("MatMul", [q, kt]), b.const(np.sqrt(d), np.float32)])
        ctx = b.op("Transpose", [b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])], perm=[0, 2, 1, 3])
        if layer == 0:
            target = b.op("Concat", [b.dim(ctx, 0), b.dim(ctx, 1), b.const([hidden])], axis=0)
        else:
            lead = b.op("Slice", [b.op("Shape", [ctx]), b.const([0]), b.const([-2])])
            target = b.op("Concat", [lead, b.const([hidden])], axis=0)
        merged = b.op("Reshape", [ctx, target])
        x = b.op("Add", [x, proj(merged)])
    b.nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", hidden])])


def yolo_head() -> onnx.ModelProto:
    b = Builder(20261207)
    bins, classes = 4, 4
    ch = 4 * bins + classes

    def conv(t, cin, cout, k, stride):
        w = b.weight(cout, cin, k, k, scale=1.0 / np.sqrt(cin * k * k))
        return b.op("Conv", [t, w, b.weight(cout, scale=0.1)], pads=[k // 2] * 4, strides=[stride] * 2)

    t = b.op("Relu", [conv("image", 3, 8, 3, 2)])
    p3 = b.op("Relu", [conv(t, 8, 16, 3, 2)])
    p4 = b.op("Relu", [conv(p3, 16, 16, 3, 2)])
    flats = []
    for p in (p3, p4):
        head = conv(p, 16, ch, 1, 1)
        target = b.op("Concat", [b.dim(head, 0), b.const([ch]), b.const([-1])], axis=0)
        flats.append(b.op("Reshape", [head, target]))
    cat = b.op("Concat", flats, axis=2)
    box, cls = b.op("Split", [cat, b.const([4 * bins, classes])], n_out=2, axis=1)
    target = b.op("Concat", [b.dim(box, 0), b.const([4]), b.const([bins]), b.dim(cat, 2)], axis=0)
    dist = b.op("Softmax", [b.op("Reshape", [box, target])], axis=2)
    proj = b.const(np.arange(bins, dtype=np.float32).reshape(1, 1, bins, 1), np.float32)
    boxes = b.op("ReduceSum", [b.op("Mul", [dist, proj]), b.const([2])], keepdims=0)
    b.nodes.append(helper.make_node("Concat", [boxes, b.op("Sigmoid", [cls])], ["y"], name="out", axis=1))
    return b.model([helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4 + classes, "anchors"])])


def cls_token() -> onnx.ModelProto:
    b = Builder(20261208)
    hidden, d = 64, 16
    token = b.weight(1, 1, hidden, scale=0.1)
    batch = b.op("Shape", ["x"], start=0, end=1)
    tokens = b.op("Expand", [token, b.op("Concat", [batch, b.const([1, 1])], axis=0)])
    t = b.op("Concat", [tokens, "x"], axis=1)
    bn = b.op("Mul", [b.dim(t, 0), b.dim(t, 1)])
    heads = b.op("Div", [b.op("Unsqueeze", [b.op("Size", [t]), b.const([0])]), b.op("Mul", [bn, b.const([d])])])
    target = b.op("Concat", [b.dim(t, 0), b.dim(t, 1), heads, b.const([d])], axis=0)
    split = b.op("Reshape", [t, target])
    b.nodes.append(helper.make_node("Softmax", [split], ["y"], name="out", axis=-1))
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "F", hidden])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "F1", 4, d])])


MODELS = {"bert_heads": bert_heads, "yolo_head": yolo_head, "cls_token": cls_token}


def main() -> None:
    for name, build in MODELS.items():
        model = build()
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(HERE, f"{name}.onnx"))


if __name__ == "__main__":
    main()
