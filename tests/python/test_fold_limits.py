"""Constant folding checks the size of a result before it does any work (issue 13).

A 4 MB weight concatenated 1000 times would be a 4 GB result: `opt -O2` must decide from the inferred
output size that it is over the limit before it copies a single input, so that it runs in a small
address space and leaves the Concat in place. Likewise for the other ops whose result can be much
larger than their inputs (Tile, Expand, ConstantOfShape, Range, Pad, Resize), each here with a 1 GiB
result.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import peak_rss

# Far below any of the results (4 GiB for the Concat, 1 GiB for the generators: under the reference
# kernels' own 2 GiB cap, so only the order of check and work keeps them from being computed), well
# above what opt needs for the 4 MB model.
ADDRESS_SPACE_LIMIT = 768 << 20


def _optimize_limited(opt: Path, model: onnx.ModelProto, work_dir: Path) -> onnx.ModelProto:
    """opt -O2 on the model; its own peak RSS must stay under the limit. Measured rather than enforced with
    RLIMIT_AS, which AddressSanitizer builds cannot run under (their shadow memory reserves terabytes of
    address space)."""
    src, out = work_dir / "in.onnx", work_dir / "out.onnx"
    onnx.save(model, str(src))
    run = peak_rss.run([str(opt), str(src), "-O2", "-o", str(out)], work_dir)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.peak_rss < ADDRESS_SPACE_LIMIT, f"opt peaked at {run.peak_rss / 2**20:.0f} MiB"
    return onnx.load(str(out))


def _model(nodes, outputs, initializers, opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [], outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def test_concat_of_one_weight_1000_times_is_not_materialized(opt, work_dir):
    weight = numpy_helper.from_array(np.arange(1 << 20, dtype=np.float32), "w")  # 4 MB
    model = _model(
        [helper.make_node("Concat", ["w"] * 1000, ["y"], axis=0)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight],
    )
    out = _optimize_limited(opt, model, work_dir)
    assert [n.op_type for n in out.graph.node] == ["Concat"]
    assert len(out.graph.node[0].input) == 1000


def _i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


@pytest.mark.parametrize(
    "op,inputs,initializers,attrs",
    [
        ("Tile", ["w", "reps"], [_i64("reps", [256])], {}),
        ("Expand", ["w2", "shape"], [_i64("shape", [256, 1 << 20])], {}),
        ("ConstantOfShape", ["shape"], [_i64("shape", [1 << 28])], {}),
        ("Range", ["start", "limit", "delta"], [_i64("start", 0), _i64("limit", 1 << 27), _i64("delta", 1)], {}),
        ("Pad", ["w", "pads"], [_i64("pads", [0, (1 << 28) - (1 << 20)])], {}),
        ("Resize", ["w4", "", "scales"],
         [numpy_helper.from_array(np.array([1, 1, 16, 16], dtype=np.float32), "scales")], {"mode": "nearest"}),
    ],
    ids=["Tile", "Expand", "ConstantOfShape", "Range", "Pad", "Resize"],
)
def test_generators_past_the_limit_are_not_materialized(op, inputs, initializers, attrs, opt, work_dir):
    weights = [
        numpy_helper.from_array(np.ones(1 << 20, dtype=np.float32), "w"),
        numpy_helper.from_array(np.ones((1, 1 << 20), dtype=np.float32), "w2"),
        numpy_helper.from_array(np.ones((1, 1, 1024, 1024), dtype=np.float32), "w4"),
    ]
    used = [w for w in weights if w.name in inputs]
    model = _model(
        [helper.make_node(op, inputs, ["y"], **attrs)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT if op != "Range" else TensorProto.INT64, None)],
        used + initializers,
        opset=18,
    )
    out = _optimize_limited(opt, model, work_dir)
    assert [n.op_type for n in out.graph.node] == [op]
