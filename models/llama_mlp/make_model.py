"""Generates models/llama_mlp: two Llama-style gated MLP blocks (SwiGLU) with residuals, and goldens.

x [batch, seq, 64] -> h1 = x + down1(Silu(x W1) * (x W3)) -> y = h1 + down2(Silu(h1 W1') * (h1 W3')),
intermediate width 176, seeded random weights, opset 18, dynamic `batch` and `seq`. The two blocks
write the SwiGLU in the exported forms onnxopt's rules and the swiglu plugin must both match:
Mul(a, Sigmoid(a)) * b as the TorchScript exporter writes F.silu(a) * b, and b * (Sigmoid(a) * a)
with the operands the other way round. Goldens: test_data_set_0/input_0.pb and output_0.pb, from
onnxruntime on this model with batch 2, seq 5.

    python models/llama_mlp/make_model.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import golden  # noqa: E402  (tools/golden.py)

HIDDEN, INTER = 64, 176


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(20261204)
    w = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)  # noqa: E731
    inits, nodes = [], []
    x = "x"
    for layer, swapped in ((1, False), (2, True)):
        p = f"l{layer}_"
        inits += [numpy_helper.from_array(w(HIDDEN, INTER), p + "gate"),
                  numpy_helper.from_array(w(HIDDEN, INTER), p + "up"),
                  numpy_helper.from_array(w(INTER, HIDDEN), p + "down")]
        nodes += [
            helper.make_node("MatMul", [x, p + "gate"], [p + "a"], name=p + "gate_proj"),
            helper.make_node("Sigmoid", [p + "a"], [p + "sig"], name=p + "sigmoid"),
            helper.make_node("Mul", [p + "sig", p + "a"] if swapped else [p + "a", p + "sig"],
                             [p + "silu"], name=p + "silu"),
            helper.make_node("MatMul", [x, p + "up"], [p + "b"], name=p + "up_proj"),
            helper.make_node("Mul", [p + "b", p + "silu"] if swapped else [p + "silu", p + "b"],
                             [p + "gated"], name=p + "gated"),
            helper.make_node("MatMul", [p + "gated", p + "down"], [p + "mlp"], name=p + "down_proj"),
            helper.make_node("Add", [x, p + "mlp"], [p + "out" if layer == 1 else "y"], name=p + "residual"),
        ]
        x = p + "out"
    graph = helper.make_graph(
        nodes, "llama_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", HIDDEN])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              producer_name="onnxopt models/llama_mlp")
    model.ir_version = 9
    onnx.checker.check_model(model, full_check=True)
    return model


def main() -> None:
    x = np.random.default_rng(7).standard_normal((2, 5, HIDDEN)).astype(np.float32)
    golden.save_with_golden(build(), HERE, {"x": x})


if __name__ == "__main__":
    main()
