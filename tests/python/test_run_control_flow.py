"""`opt run` (the reference executor) on ONNX's node test models for control flow, sequences and
optionals: Loop, Scan, SequenceMap, the Sequence*/Optional* ops and If over sequences, each case
through conformance.run_case_executor (its input .pb files fed, its outputs compared with the
expected ones; sequence and optional values rebuilt as tensors). Also: errors name the node."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

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


# --- what a run may spend: RunLimits, opt run/check --max-iterations and --max-memory ----------------------


def _nested_loops(trips: list[int | str]) -> onnx.ModelProto:
    """Loops nested len(trips) deep, loop{k} running trips[k] times (an int: a constant of the graph around
    it; a str: that graph input of the model, fed at run time); the innermost adds 1 to the carried x, so
    y = x0 + the product of the trips. The conditions pass through: each loop runs exactly its trip count."""
    def body(k: int) -> onnx.GraphProto:
        inner, inits = [helper.make_node("Identity", [f"c{k}"], [f"co{k}"])], []
        if k + 1 == len(trips):
            inner.append(helper.make_node("Add", [f"x{k}", "one"], [f"xo{k}"]))
            inits.append(numpy_helper.from_array(np.array(1, np.float32), "one"))
        else:
            node, init = loop(k + 1, f"x{k}", f"xo{k}")
            inner.append(node)
            inits += init
        return helper.make_graph(
            inner, f"body{k}",
            [helper.make_tensor_value_info(f"i{k}", TensorProto.INT64, []),
             helper.make_tensor_value_info(f"c{k}", TensorProto.BOOL, []),
             helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [])],
            [helper.make_tensor_value_info(f"co{k}", TensorProto.BOOL, []),
             helper.make_tensor_value_info(f"xo{k}", TensorProto.FLOAT, [])], inits)

    def loop(k: int, x: str, out: str):
        trip = trips[k]
        inits = [] if isinstance(trip, str) else [numpy_helper.from_array(np.array(trip, np.int64), f"M{k}")]
        m = trip if isinstance(trip, str) else f"M{k}"
        return helper.make_node("Loop", [m, "", x], [out], body=body(k), name=f"loop{k}"), inits

    node, inits = loop(0, "x", "y")
    fed = [helper.make_tensor_value_info(t, TensorProto.INT64, []) for t in trips if isinstance(t, str)]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])] + fed,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _refused(proc, path: Path, message: str, within: float | None = None, elapsed: float = 0) -> None:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"opt: error: {path}"), proc.stderr
    assert message in lines[0], proc.stderr
    if within is not None:
        assert elapsed < within, f"took {elapsed:.1f} s"


@pytest.mark.parametrize("command", ["run", "check"])
@pytest.mark.parametrize("trips, count", [([10**12], "1000000000000"), ([10**9] * 9, "more than 18446744073709551615"),
                                          ([1000, 1000, 1000], "1001001000")],
                         ids=["trip count 1e12", "nine nested loops of 1e9", "three nested loops of 1000"])
def test_loop_past_the_iteration_limit_is_refused_before_it_starts(run_opt, work_dir: Path, trips, count,
                                                                    command: str) -> None:
    path = work_dir / "loops.onnx"
    onnx.save(_nested_loops(trips), path)
    start = time.monotonic()
    proc = run_opt(*(["run", path] if command == "run" else ["check", path, path]), timeout=60)
    _refused(proc, path, f"node 'loop0' (Loop): would run {count} loop iterations (those of the loops it nests "
             "included), more than the 16777216 a run may make (the limit; --max-iterations)",
             within=3, elapsed=time.monotonic() - start)


def test_iteration_limit_counts_nested_iterations_exactly(run_opt, work_dir: Path) -> None:
    """10 x 10 nested: 10 + 100 iterations. Static trip counts are refused up front; a trip count given at
    run time is counted as the loops run."""
    static, fed = work_dir / "static.onnx", work_dir / "fed.onnx"
    onnx.save(_nested_loops([10, 10]), static)
    onnx.save(_nested_loops([10, "n"]), fed)
    x = _save_input(work_dir, "x", np.array(0, dtype=np.float32))
    n = _save_input(work_dir, "n", np.array(10, dtype=np.int64))
    for path, inputs in ((static, ["--input", x]), (fed, ["--input", x, "--input", n])):
        out = work_dir / path.stem
        out.mkdir()
        ok = run_opt("run", path, *inputs, "--max-iterations", "110", "--save-outputs", out)
        assert ok.returncode == 0, ok.stderr
        assert np.load(out / "y.npy") == 100
    _refused(run_opt("run", static, "--input", x, "--max-iterations", "109"), static,
             "node 'loop0' (Loop): would run 110 loop iterations")
    # The inner loop's trip count is known once it starts: its 10th start finds 100 iterations spent.
    _refused(run_opt("run", fed, "--input", x, "--input", n, "--max-iterations", "109"), fed,
             "node 'loop0' (Loop): node 'loop1' (Loop): would run 10 loop iterations (those of the loops it "
             "nests included), more than the 9 left of the 109 a run may make (the limit; --max-iterations)")


def test_loop_that_never_stops_ends_at_the_iteration_limit(run_opt, work_dir: Path) -> None:
    """No trip count and a condition that never turns false: counted as it runs, refused at the limit."""
    path = work_dir / "forever.onnx"
    onnx.save(_scan_loop(None, [1000]), path)
    proc = run_opt("run", path, "--max-iterations", "1000")
    _refused(proc, path, "node 'the_loop' (Loop): the run makes more than 1000 loop iterations (the limit; "
             "--max-iterations)")


def _scan_loop(trip: int | None, slice_dims: list[int] | None) -> onnx.ModelProto:
    """A Loop whose scan output gathers float[1000] zeros per iteration (declared with `slice_dims`; None:
    no shape). trip None: no trip count, and the condition never turns false (x != -1, x counting up)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["x_in", "one"], ["x_out"]),
         helper.make_node("Equal", ["x_out", "minus_one"], ["stop"]),
         helper.make_node("Not", ["stop"], ["c_out"]),
         helper.make_node("ConstantOfShape", ["shape"], ["slice"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("slice", TensorProto.FLOAT, slice_dims)],
        [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("one", 1), ("minus_one", -1))]
        + [numpy_helper.from_array(np.array([1000], np.int64), "shape")])
    inits = [numpy_helper.from_array(np.array(0, np.float32), "x0")]
    if trip is not None:
        inits.append(numpy_helper.from_array(np.array(trip, np.int64), "M"))
        # The condition is computed, but the trip count bounds the loop: cut short by nothing here.
        body.output[0].CopyFrom(helper.make_tensor_value_info("c_in", TensorProto.BOOL, []))
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M" if trip is not None else "", "", "x0"], ["x", "slices"], body=body,
                          name="the_loop")], "g", [],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("slices", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("trip, dims, message", [
    (1000, [1000], "node 'the_loop' (Loop): its scan outputs would hold 4000000 bytes, more than the 1048576 "
                   "bytes a run's values may hold (the limit; --max-memory)"),
    (1000, None, "node 'the_loop' (Loop): its scan outputs would hold 3996000 bytes"),
    (None, [1000], "the run's values hold more than 1048576 bytes (the limit; --max-memory)"),
], ids=["static shape", "shape known after one iteration", "no trip count"])
def test_scan_output_past_the_memory_limit_is_refused(run_opt, work_dir: Path, trip, dims, message) -> None:
    path = work_dir / "scan.onnx"
    onnx.save(_scan_loop(trip, dims), path)
    start = time.monotonic()
    proc = run_opt("run", path, "--max-memory", "1MB", timeout=60)
    _refused(proc, path, message, within=3, elapsed=time.monotonic() - start)


def test_scan_output_within_the_memory_limit_runs(run_opt, work_dir: Path) -> None:
    path, out = work_dir / "scan.onnx", work_dir / "out"
    out.mkdir()
    onnx.save(_scan_loop(200, [1000]), path)
    proc = run_opt("run", path, "--max-memory", "1MB", "--save-outputs", out)
    assert proc.returncode == 0, proc.stderr
    assert np.load(out / "slices.npy").shape == (200, 1000)


def test_scan_length_past_the_iteration_limit_is_refused(run_opt, work_dir: Path) -> None:
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "a"], ["s_out"])], "body",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in ("s_in", "a")],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [1])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["s0", "xs"], ["s"], body=body, num_scan_inputs=1, name="the_scan")],
        "g", [helper.make_tensor_value_info("s0", TensorProto.FLOAT, [1]),
              helper.make_tensor_value_info("xs", TensorProto.FLOAT, ["N", 1])],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    model.ir_version = 8
    path = work_dir / "scan.onnx"
    onnx.save(model, path)
    proc = run_opt("run", path, "--input-shape", "xs=100000,1", "--max-iterations", "1000")
    _refused(proc, path, "node 'the_scan' (Scan): would run 100000 loop iterations")
    assert run_opt("run", path, "--input-shape", "xs=1000,1", "--max-iterations", "1000").returncode == 0
