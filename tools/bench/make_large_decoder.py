#!/usr/bin/env python3
"""Generates the benchmark's large case: a 6-layer transformer block stack (hidden 2048, MLP 8192, 16 heads)
with 1.2 GB of float32 weights in one external data file, written in the decomposed form exporters produce
(LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div, erf GELU, attention as MatMul/Mul/Softmax/MatMul), opset 18.
Weights are seeded random (scaled by 0.02), streamed to the data file without a copy in protobuf.

    .venv/bin/python tools/bench/make_large_decoder.py OUT_FOLDER
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

HIDDEN, MLP, HEADS, LAYERS = 2048, 8192, 16, 6


def generate(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model_path = folder / "decoder_1gb.onnx"
    data_name = "decoder_1gb.data"
    rng = np.random.default_rng(0)
    inits: list[TensorProto] = []
    with open(folder / data_name, "wb") as data:

        def weight(name: str, shape: tuple[int, ...], fill: float | None = None) -> str:
            arr = (np.full(shape, fill, np.float32) if fill is not None
                   else (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)))
            offset = data.tell()
            data.write(arr.tobytes())
            t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(shape),
                            data_location=TensorProto.EXTERNAL)
            for k, v in (("location", data_name), ("offset", str(offset)), ("length", str(arr.nbytes))):
                t.external_data.add(key=k, value=v)
            inits.append(t)
            return name

        def const(name: str, values, dtype=np.float32) -> str:
            inits.append(onnx.numpy_helper.from_array(np.asarray(values, dtype), name))
            return name

        nodes = []

        def node(op, ins, out, **attrs):
            nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
            return out

        const("axes_last", [-1], np.int64)
        const("two", 2.0)
        const("eps", 1e-5)
        const("half", 0.5)
        const("one", 1.0)
        const("rsqrt2", 1.0 / np.sqrt(2.0))
        const("scale", 1.0 / np.sqrt(HIDDEN // HEADS))
        const("heads_shape", [0, 0, HEADS, HIDDEN // HEADS], np.int64)
        const("merge_shape", [0, 0, HIDDEN], np.int64)

        def layer_norm(x: str, p: str) -> str:
            m = node("ReduceMean", [x, "axes_last"], f"{p}_mean")
            d = node("Sub", [x, m], f"{p}_centered")
            sq = node("Pow", [d, "two"], f"{p}_sq")
            v = node("ReduceMean", [sq, "axes_last"], f"{p}_var")
            ve = node("Add", [v, "eps"], f"{p}_var_eps")
            s = node("Sqrt", [ve], f"{p}_std")
            n = node("Div", [d, s], f"{p}_norm")
            g = node("Mul", [n, weight(f"{p}.gamma", (HIDDEN,), 1.0)], f"{p}_scaled")
            return node("Add", [g, weight(f"{p}.beta", (HIDDEN,), 0.0)], f"{p}_out")

        def linear(x: str, p: str, n_in: int, n_out: int) -> str:
            mm = node("MatMul", [x, weight(f"{p}.weight", (n_in, n_out))], f"{p}_mm")
            return node("Add", [mm, weight(f"{p}.bias", (n_out,), 0.01)], f"{p}_out")

        def heads(x: str, p: str, perm) -> str:
            r = node("Reshape", [x, "heads_shape"], f"{p}_heads")
            return node("Transpose", [r], f"{p}_t", perm=perm)

        x = "x"
        for i in range(LAYERS):
            p = f"layer{i}"
            h = layer_norm(x, f"{p}.ln1")
            q = heads(linear(h, f"{p}.q", HIDDEN, HIDDEN), f"{p}.q", [0, 2, 1, 3])
            k = heads(linear(h, f"{p}.k", HIDDEN, HIDDEN), f"{p}.k", [0, 2, 3, 1])
            v = heads(linear(h, f"{p}.v", HIDDEN, HIDDEN), f"{p}.v", [0, 2, 1, 3])
            s = node("MatMul", [q, k], f"{p}_scores")
            s = node("Mul", [s, "scale"], f"{p}_scaled_scores")
            a = node("Softmax", [s], f"{p}_probs", axis=-1)
            o = node("MatMul", [a, v], f"{p}_context")
            o = node("Transpose", [o], f"{p}_context_t", perm=[0, 2, 1, 3])
            o = node("Reshape", [o, "merge_shape"], f"{p}_context_merged")
            x = node("Add", [x, linear(o, f"{p}.o", HIDDEN, HIDDEN)], f"{p}_residual1")
            h = layer_norm(x, f"{p}.ln2")
            f = linear(h, f"{p}.fc1", HIDDEN, MLP)
            e = node("Erf", [node("Mul", [f, "rsqrt2"], f"{p}_gelu_div")], f"{p}_gelu_erf")
            g = node("Mul", [node("Mul", [f, "half"], f"{p}_gelu_half"),
                             node("Add", [e, "one"], f"{p}_gelu_add")], f"{p}_gelu")
            x = node("Add", [x, linear(g, f"{p}.fc2", MLP, HIDDEN)], f"{p}_residual2")
        y = node("Identity", [layer_norm(x, "final_ln")], "y")

    graph = helper.make_graph(nodes, "decoder_1gb",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", HIDDEN])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, "seq", HIDDEN])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    model_path.write_bytes(model.SerializeToString())
    return model_path


if __name__ == "__main__":
    path = generate(Path(sys.argv[1]))
    print(path, (path.parent / "decoder_1gb.data").stat().st_size / 2**30, "GiB of weights")
