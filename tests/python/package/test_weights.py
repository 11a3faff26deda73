"""optimize(ModelProto)'s big weights: placeholders read only where a pass reads them.

A weight no pass reads stays in the caller's TensorProto; the result copies that message. These
tests hold the result to the model that reading every weight gives (the bytes the CLI writes),
and the caller's model to what it was: no weight dropped, none copied from the wrong tensor,
none changed in the caller's message, and a weight read with the wrong size still refused.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxopt
from onnxopt import _proto

REPO = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("ONNXOPT_SHARED", REPO.parent / "shared"))
OPT = Path(os.environ.get("ONNXOPT_OPT", REPO / "build" / "bin" / "opt"))
ARGS = onnxopt._args(2, None, None, None, None, False, None, ())


def _rel(p: Path) -> str:
    return str(p.relative_to(REPO) if p.is_relative_to(REPO) else p.relative_to(SHARED))


def _crossing_apart() -> list[Path]:
    """The bundled and real models whose weights cross as placeholders."""
    found = []
    for p in sorted((REPO / "models").glob("**/*.onnx")) + sorted(
            (SHARED / "models" / "real").glob("**/*.onnx")):
        if (p.parent / f"{p.stem}.data").exists():
            continue
        if any(_proto.split_weights(onnx.load(p), lazy=True).placeholders):
            found.append(p)
    return found


def _weight(name: str, shape: tuple, seed: int) -> TensorProto:
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape, dtype=np.float32), name)


def _model() -> onnx.ModelProto:
    """U is unused (dce drops it, so the result's initializers sit one place earlier than the
    caller's); A and B have one shape and differ (cse compares them, reading both); C is read by
    nothing; T folds through a Transpose into a new weight; A carries a doc string."""
    a, b = _weight("A", (256, 256), 1), _weight("B", (256, 256), 2)
    a.doc_string = "the first projection"
    weights = [_weight("U", (128, 512), 0), a, b, _weight("C", (256, 384), 3),
               _weight("T", (256, 256), 4)]
    nodes = [helper.make_node("MatMul", ["x", "A"], ["h"]),
             helper.make_node("MatMul", ["h", "B"], ["i"]),
             helper.make_node("Transpose", ["T"], ["Tt"]),
             helper.make_node("MatMul", ["i", "Tt"], ["j"]),
             helper.make_node("MatMul", ["j", "C"], ["y"])]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 384])],
                              weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class _Counted:
    """Stands for a TensorProto where the native module reads raw_data: counts the reads."""

    def __init__(self, tensor: TensorProto) -> None:
        self.tensor, self.reads = tensor, 0

    @property
    def raw_data(self) -> bytes:
        self.reads += 1
        return self.tensor.raw_data


def _optimize(split: _proto.Split) -> onnx.ModelProto:
    src = onnxopt._core.Source()
    src.data, src.weights, src.placeholders = split.data, split.weights, split.placeholders
    data, _, weights = onnxopt._core.optimize(src, ARGS)
    return split.join(data, weights)


def _cli(model: onnx.ModelProto, tmp_path: Path) -> bytes:
    path, out = tmp_path / "in.onnx", tmp_path / "out.onnx"
    path.write_bytes(model.SerializeToString())
    proc = subprocess.run([str(OPT), str(path), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes()


def test_only_the_weights_a_pass_reads_are_read(tmp_path: Path) -> None:
    model = _model()
    before = model.SerializeToString()
    split = _proto.split_weights(model, lazy=True)
    assert [p is not None for p in split.placeholders] == [True] * 5
    counted = [_Counted(t) for t in model.graph.initializer]
    split.placeholders = [(c, size) for c, (_, size) in zip(counted, split.placeholders)]
    src = onnxopt._core.Source()
    src.data, src.weights, src.placeholders = split.data, split.weights, split.placeholders
    data, _, back = onnxopt._core.optimize(src, ARGS)
    # cse reads A and B (one shape), fold-constants reads T; U and C are never read.
    assert {t.tensor.name: t.reads for t in counted} == {"U": 0, "A": 1, "B": 1, "C": 0, "T": 1}
    # Unchanged weights come back as the caller's index (C is the caller's 3rd, the result's 2nd
    # after dce); the folded T as bytes.
    result = onnx.load_from_string(data)
    names = [t.name for t in result.graph.initializer]
    back = {names[k]: raw for k, raw in back}
    assert back["A"] == 1 and back["B"] == 2 and back["C"] == 3
    assert isinstance(back["Tt"], bytes)
    assert model.SerializeToString() == before


def test_the_result_is_the_cli_result_and_the_caller_model_stays(tmp_path: Path) -> None:
    model = _model()
    before = model.SerializeToString()
    expected = _cli(model, tmp_path)
    result = onnxopt.optimize(model)
    assert result.SerializeToString() == expected
    # Every weight is there, with its own bytes (none dropped, none taken from another tensor).
    given = {t.name: t.raw_data for t in model.graph.initializer}
    kept = {t.name: t.raw_data for t in result.graph.initializer}
    assert set(kept) == {"A", "B", "C", "Tt"}
    for name in ("A", "B", "C"):
        assert kept[name] == given[name], name
    assert result.graph.initializer[0].doc_string == "the first projection"
    # The result is a copy: changing it leaves the caller's model as it was, and the reverse.
    for t in result.graph.initializer:
        t.raw_data = b"\0" * len(t.raw_data)
    assert model.SerializeToString() == before
    model.graph.initializer[3].raw_data = b"\1" * len(given["C"])
    assert kept["C"] == given["C"]


def test_a_renamed_unchanged_weight_takes_its_new_fields() -> None:
    # The result's tensor differs from the caller's in a field (here: renamed by the join's
    # caller after the call); the join copies raw_data alone, not the caller's message.
    model = _model()
    split = _proto.split_weights(model, lazy=True)
    src = onnxopt._core.Source()
    src.data, src.weights, src.placeholders = split.data, split.weights, split.placeholders
    data, _, back = onnxopt._core.optimize(src, ARGS)
    result = onnx.load_from_string(data)
    k = [t.name for t in result.graph.initializer].index("C")
    result.graph.initializer[k].name = "C2"
    joined = split.join(result.SerializeToString(), back)
    assert joined.graph.initializer[k].name == "C2"
    assert joined.graph.initializer[k].raw_data == model.graph.initializer[3].raw_data


def test_a_weight_read_with_the_wrong_size_is_refused() -> None:
    model = _model()
    t = model.graph.initializer[4]  # T, read by fold-constants
    t.raw_data = t.raw_data[:-4]
    with pytest.raises(onnxopt.InvalidArgumentError,
                       match="initializer 'T': tensor 'T': holds 262140 bytes of data but "
                       r"float\[256,256\] needs 262144"):
        onnxopt.optimize(model)
    split = _proto.split_weights(model, lazy=True)
    src = onnxopt._core.Source()
    src.data, src.weights, src.placeholders = split.data, split.weights, split.placeholders
    assert onnxopt._core.optimize(src, ARGS) is None  # (optimize then reads every weight)


@pytest.mark.filterwarnings("ignore::onnxopt.OnnxoptWarning")
@pytest.mark.parametrize("path", _crossing_apart(), ids=_rel)
def test_placeholders_give_the_model_that_reading_every_weight_gives(path: Path) -> None:
    model = onnx.load(path)
    before = model.SerializeToString()
    eager = _optimize(_proto.split_weights(model))
    assert _optimize(_proto.split_weights(model, lazy=True)).SerializeToString() == \
        eager.SerializeToString()
    assert onnxopt.optimize(model).SerializeToString() == eager.SerializeToString()
    assert model.SerializeToString() == before
