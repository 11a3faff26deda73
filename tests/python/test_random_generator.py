"""Seeded random ops through `opt run` reproduce ONNX's reference implementation bit for bit: both use
numpy's legacy RandomState(seed) (kernels/reference/mt19937.h). The oracle here is
onnx.reference.ReferenceEvaluator, not onnxruntime (whose generator differs)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

X = np.random.RandomState(1).rand(4, 6).astype(np.float32)
P = np.array([0, 1, 0.5, 0.7, 0.2, 1, 0.9, 0.1], np.float64)

CASES = {
    "uniform": (helper.make_node("RandomUniform", [], ["y"], shape=[3, 5], seed=3.0, low=-2.0, high=5.0), {}),
    "uniform_double": (helper.make_node("RandomUniform", [], ["y"], shape=[3, 5], seed=3.0, dtype=11), {}),
    "normal": (helper.make_node("RandomNormal", [], ["y"], shape=[7, 5], seed=11.0, mean=1.0, scale=2.5), {}),
    "normal_double_odd": (helper.make_node("RandomNormal", [], ["y"], shape=[7], seed=11.0, dtype=11), {}),
    "uniform_like": (helper.make_node("RandomUniformLike", ["x"], ["y"], seed=0.0), {"x": X}),
    "normal_like_float16": (helper.make_node("RandomNormalLike", ["x"], ["y"], seed=5.0, dtype=10), {"x": X}),
    "bernoulli": (helper.make_node("Bernoulli", ["x"], ["y"], seed=0.0), {"x": X}),
    "bernoulli_int64_edges": (helper.make_node("Bernoulli", ["x"], ["y"], seed=7.0, dtype=7), {"x": P}),
    "dropout_mask": (helper.make_node("Dropout", ["x", "r", "t"], ["y", "m"], seed=4),
                     {"x": X, "r": np.array(0.3, np.float32), "t": np.array(True)}),
    "dropout_double": (helper.make_node("Dropout", ["x", "r", "t"], ["y", "m"], seed=4),
                       {"x": X.astype(np.float64), "r": np.array(0.7, np.float64), "t": np.array(True)}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeded_matches_onnx_reference(name: str, opt: Path, work_dir: Path) -> None:
    node, inputs = CASES[name]
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    expected = ReferenceEvaluator(model).run(None, inputs)
    path = work_dir / "m.onnx"
    onnx.save(model, str(path))
    args = [str(opt), "run", str(path), "--save-outputs", str(work_dir)]
    for k, v in inputs.items():
        (work_dir / f"{k}.pb").write_bytes(numpy_helper.from_array(v, k).SerializeToString())
        args += ["--input", f"{k}={work_dir / f'{k}.pb'}"]
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for o, e in zip(node.output, expected):
        got = np.load(work_dir / f"{o}.npy")
        assert got.dtype == e.dtype and got.shape == e.shape
        assert got.tobytes() == e.tobytes(), f"{o}: {got.ravel()[:6]} != {e.ravel()[:6]}"


def test_training_dropout_is_not_folded(opt: Path, work_dir: Path) -> None:
    """Training-mode Dropout is random, with a seed too (the generator is the runtime's):
    fold-constants leaves it (skipped-random)."""
    inits = [numpy_helper.from_array(X, "x"), numpy_helper.from_array(np.array(0.3, np.float32), "r"),
             numpy_helper.from_array(np.array(True), "t")]
    for seeded in (False, True):
        attrs = {"seed": 2} if seeded else {}
        graph = helper.make_graph([helper.make_node("Dropout", ["x", "r", "t"], ["y"], **attrs)], "d", [],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])], inits)
        src, out = work_dir / "d.onnx", work_dir / "d_out.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]), str(src))
        proc = subprocess.run([str(opt), str(src), "--passes=fold-constants", "-o", str(out)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        ops = [n.op_type for n in onnx.load(str(out)).graph.node]
        assert ops == ["Dropout"], seeded


def test_run_saves_bfloat16_as_tensor_proto(opt: Path, work_dir: Path) -> None:
    """`opt run --save-format pb` writes outputs .npy cannot hold (bfloat16) as TensorProto files."""
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)], "c",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3])])
    src = work_dir / "c.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), str(src))
    x = np.array([1.0, -2.5, 3.0], np.float32)
    (work_dir / "x.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    args = [str(opt), "run", str(src), "--input", f"x={work_dir / 'x.pb'}", "--save-outputs", str(work_dir)]
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode != 0 and "cannot write bfloat16 as .npy" in proc.stderr
    proc = subprocess.run(args + ["--save-format", "pb"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    t = onnx.TensorProto.FromString((work_dir / "y.pb").read_bytes())
    assert t.data_type == TensorProto.BFLOAT16
    assert numpy_helper.to_array(t).astype(np.float32).tolist() == x.tolist()
