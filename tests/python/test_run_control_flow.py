"""`opt run` (the reference executor) on ONNX's node test models for control flow, sequences and
optionals: Loop, Scan, SequenceMap, the Sequence*/Optional* ops and If over sequences, each case
through conformance.run_case_executor (its input .pb files fed, its outputs compared with the
expected ones; sequence and optional values rebuilt as tensors). Also: errors name the node."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import conformance

_PREFIXES = ("test_loop", "test_scan", "test_sequence_", "test_split_to_sequence", "test_optional_",
             "test_identity_sequence", "test_identity_opt", "test_if_seq", "test_if_opt")
CASES = [p for p in conformance.cases() if p.parent.name.startswith(_PREFIXES)]


def test_cases_present() -> None:
    assert len(CASES) >= 39, f"control-flow node tests missing: found {len(CASES)}"


@pytest.mark.parametrize("path", CASES, ids=[p.parent.name for p in CASES])
def test_node_case_runs(path: Path, opt: Path, work_dir: Path) -> None:
    result = conformance.run_case_executor(path, opt, work_dir)
    assert result.outcome == "pass", f"{result.case}: {result.outcome}: {result.detail}"


def _loop_model(body_out_shape_varies: bool) -> onnx.ModelProto:
    # Body: y = x + iteration; the scan output is y (or, to make an error, Range(0, i) whose length
    # changes every iteration).
    one = helper.make_tensor("one", TensorProto.INT64, [], [1])
    zero = helper.make_tensor("zero", TensorProto.INT64, [], [0])
    nodes = [helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    if body_out_shape_varies:
        nodes.append(helper.make_node("Range", ["zero", "i", "one"], ["scan"]))
    else:
        nodes.append(helper.make_node("Add", ["x_in", "i"], ["scan"]))
    nodes.append(helper.make_node("Add", ["x_in", "i"], ["x_out"]))
    body = helper.make_graph(
        nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.INT64, []),
         helper.make_tensor_value_info("scan", TensorProto.INT64, None)],
        [one, zero])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "x0"], ["x_final", "scans"], body=body, name="the_loop")],
        "g", [helper.make_tensor_value_info("m", TensorProto.INT64, []),
              helper.make_tensor_value_info("x0", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("x_final", TensorProto.INT64, []),
         helper.make_tensor_value_info("scans", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def test_loop_trip_count_without_condition(run_opt, work_dir: Path) -> None:
    path = work_dir / "loop.onnx"
    onnx.save(_loop_model(False), path)
    np.save(work_dir / "m.npy", np.array(4, dtype=np.int64))
    np.save(work_dir / "x0.npy", np.array(10, dtype=np.int64))
    out = work_dir / "out"
    out.mkdir()
    proc = run_opt("run", path, "--input", f"m={work_dir / 'm.npy'}", "--input",
                   f"x0={work_dir / 'x0.npy'}", "--save-outputs", out)
    assert proc.returncode == 0, proc.stderr
    assert np.load(out / "x_final.npy") == 16
    np.testing.assert_array_equal(np.load(out / "scans.npy"), [10, 11, 13, 16])


def test_loop_error_names_the_node(run_opt, work_dir: Path) -> None:
    path = work_dir / "loop.onnx"
    onnx.save(_loop_model(True), path)
    np.save(work_dir / "m.npy", np.array(3, dtype=np.int64))
    np.save(work_dir / "x0.npy", np.array(0, dtype=np.int64))
    proc = run_opt("run", path, "--input", f"m={work_dir / 'm.npy'}", "--input",
                   f"x0={work_dir / 'x0.npy'}")
    assert proc.returncode != 0
    assert "the_loop" in proc.stderr and "scan output 0" in proc.stderr, proc.stderr


def _save_input(work_dir: Path, name: str, value: np.ndarray) -> str:
    np.save(work_dir / f"{name}.npy", value)
    return f"{name}={work_dir / (name + '.npy')}"


def test_sequence_position_out_of_range_names_the_node(run_opt, work_dir: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x", "x"], ["seq"]),
         helper.make_node("SequenceAt", ["seq", "pos"], ["y"], name="the_at")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
              helper.make_tensor_value_info("pos", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = work_dir / "seq.onnx"
    onnx.save(model, path)
    x = _save_input(work_dir, "x", np.array([1, 2], dtype=np.float32))
    ok = run_opt("run", path, "--input", x, "--input",
                 _save_input(work_dir, "pos", np.array(-2, dtype=np.int64)))
    assert ok.returncode == 0, ok.stderr
    bad = run_opt("run", path, "--input", x, "--input",
                  _save_input(work_dir, "pos", np.array(2, dtype=np.int64)))
    assert bad.returncode != 0
    assert "the_at" in bad.stderr and "out of range" in bad.stderr, bad.stderr


def test_scan_lengths_must_agree(run_opt, work_dir: Path) -> None:
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "a"], ["s_mid"]),
         helper.make_node("Add", ["s_mid", "b"], ["s_out"])],
        "body", [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in ("s_in", "a", "b")],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["s0", "xa", "xb"], ["s"], body=body, num_scan_inputs=2,
                          name="the_scan")],
        "g", [helper.make_tensor_value_info("s0", TensorProto.FLOAT, []),
              helper.make_tensor_value_info("xa", TensorProto.FLOAT, [None]),
              helper.make_tensor_value_info("xb", TensorProto.FLOAT, [None])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    model.ir_version = 8
    path = work_dir / "scan.onnx"
    onnx.save(model, path)
    s0 = _save_input(work_dir, "s0", np.array(0, dtype=np.float32))
    xa = _save_input(work_dir, "xa", np.array([1, 2, 3], dtype=np.float32))
    good = run_opt("run", path, "--input", s0, "--input", xa, "--input",
                   _save_input(work_dir, "xb", np.array([10, 20, 30], dtype=np.float32)),
                   "--save-outputs", work_dir)
    assert good.returncode == 0, good.stderr
    assert np.load(work_dir / "s.npy") == 66
    bad = run_opt("run", path, "--input", s0, "--input", xa, "--input",
                  _save_input(work_dir, "xb", np.array([10, 20], dtype=np.float32)))
    assert bad.returncode != 0
    assert "the_scan" in bad.stderr and "lengths 3 and 2" in bad.stderr, bad.stderr
