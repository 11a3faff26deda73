"""What opt writes, and when: nothing is committed until every step (optimize, --check, --report)
succeeded, so a failing step leaves every existing file as it was, even with -o naming the input; the
output paths (model, external data file, report) are checked before anything runs, and none of them may
be a file the input still needs; long output names work."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


def _model(path: Path, external: bool = False) -> Path:
    """y = Relu(x @ W + b) with a 4 KiB weight (over the 1 KiB external-data threshold)."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((32, 32)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])], "commit",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if external:
        onnx.save_model(model, path, save_as_external_data=True, location=path.name + ".data",
                        size_threshold=1024)
    else:
        onnx.save(model, path)
    return path


def _run(path: Path) -> np.ndarray:
    x = np.random.default_rng(2).standard_normal((2, 32)).astype(np.float32)
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _one_error_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("opt: error: "), proc.stderr
    return lines[0]


# --- A step after the optimization fails: nothing is written -------------------------------------------------


def _failing_check_env(work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """--check with the onnxruntime runner and a Python that does not exist: the check step fails."""
    monkeypatch.setenv("ONNXOPT_PYTHON", str(work_dir / "no-such-python"))
    return ("--check", "--runner", "onnxruntime")


@pytest.mark.parametrize("failing", ["check", "check-differs", "check-input", "report-is-a-folder",
                                     "report-folder-missing"])
@pytest.mark.parametrize("target", ["new-file", "existing-file", "the-input"])
@pytest.mark.parametrize("external", [False, True], ids=["embedded", "external-data"])
def test_failing_step_commits_nothing(failing: str, target: str, external: bool, run_opt, work_dir: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    src = _model(work_dir / "in.onnx", external=external)
    out = {"new-file": work_dir / "out.onnx", "existing-file": work_dir / "out.onnx", "the-input": src}[target]
    if target == "existing-file":
        out.write_bytes(b"previous output")
    args: tuple = ()
    if failing == "check":
        args = _failing_check_env(work_dir, monkeypatch)
    elif failing == "check-differs":  # a tolerance nothing meets: every output "differs"
        args = ("--check", "--atol", "-1", "--rtol", "0")
    elif failing == "check-input":
        (work_dir / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'}")
        args = ("--check", "--check-input", f"x={work_dir / 'bad.npy'}")
    elif failing == "report-is-a-folder":
        (work_dir / "report.json").mkdir()
        args = ("--report", work_dir / "report.json")
    else:
        args = ("--report", work_dir / "missing" / "report.json")
    ext = ("--external-data",) if external else ()
    before = _snapshot(work_dir)
    proc = run_opt(src, "-o", out, *ext, *args)
    assert proc.returncode == (3 if failing == "check-differs" else 1), proc.stdout + proc.stderr
    _one_error_line(proc)
    assert _snapshot(work_dir) == before
    assert not [p for p in work_dir.iterdir() if p.name.startswith(".")], "temporary files left behind"
    np.testing.assert_array_equal(_run(src), _run(src))  # the input still loads and runs


def test_check_and_report_then_commit(run_opt, work_dir: Path) -> None:
    """The passing case commits model, data file and report; the report describes what was committed."""
    src = _model(work_dir / "in.onnx", external=True)
    expected = _run(src)
    report = work_dir / "report.json"
    proc = run_opt(src, "-o", src, "--check", "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(report.read_text())["check"]["passed"] is True
    np.testing.assert_allclose(_run(src), expected, rtol=1e-5, atol=1e-6)
    assert not [p for p in work_dir.iterdir() if p.name.startswith(".")]


def test_check_reads_the_staged_output(run_opt, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With onnxruntime reading files, --check reads what is about to be committed: an old OUT (here
    not a model at all) is neither read nor replaced before the check passed."""
    import sys

    monkeypatch.setenv("ONNXOPT_PYTHON", sys.executable)
    src = _model(work_dir / "in.onnx", external=True)
    out = work_dir / "out.onnx"
    out.write_bytes(b"not a model")
    proc = run_opt(src, "-o", out, "--check", "--runner", "onnxruntime")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    np.testing.assert_allclose(_run(out), _run(src), rtol=1e-5, atol=1e-6)


# --- Output paths checked up front ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", [
    "output-is-a-folder", "output-is-a-folder-with-data", "output-folder-missing", "data-is-the-output",
    "data-is-the-input", "data-is-the-inputs-data", "output-is-the-inputs-data", "data-is-a-folder",
    "report-is-the-input", "report-is-the-output",
])
def test_output_paths_are_refused_up_front(case: str, run_opt, work_dir: Path) -> None:
    src = _model(work_dir / "in.onnx", external=True)
    out = work_dir / "out.onnx"
    args: tuple = ()
    if case == "output-is-a-folder":
        out.mkdir()
    elif case == "output-is-a-folder-with-data":
        out.mkdir()
        args = ("--external-data",)
    elif case == "output-folder-missing":
        out = work_dir / "missing" / "out.onnx"
    elif case == "data-is-the-output":
        args = ("--external-data=out.onnx",)
    elif case == "data-is-the-input":
        args = ("--external-data=in.onnx",)
    elif case == "data-is-the-inputs-data":
        args = ("--external-data=in.onnx.data",)
    elif case == "output-is-the-inputs-data":
        out = work_dir / "in.onnx.data"
    elif case == "data-is-a-folder":
        (work_dir / "w").mkdir()
        args = ("--external-data=w",)
    elif case == "report-is-the-input":
        args = ("--report", src)
    elif case == "report-is-the-output":
        args = ("--report", out)
    before = _snapshot(work_dir)
    expected = _run(src)
    proc = run_opt(src, "-o", out, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = _one_error_line(proc)
    assert "terminate" not in line and "what()" not in line
    assert _snapshot(work_dir) == before
    assert not [p for p in work_dir.rglob(".*")], "temporary files left behind"
    np.testing.assert_array_equal(_run(src), expected)


def test_in_place_with_external_data(run_opt, work_dir: Path) -> None:
    """-o naming the input replaces model and data file together (the data file's name is the input's)."""
    src = _model(work_dir / "in.onnx", external=True)
    expected = _run(src)
    proc = run_opt(src, "-o", src, "--external-data")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(_run(src), expected, rtol=1e-5, atol=1e-6)
    assert sorted(p.name for p in work_dir.iterdir()) == ["in.onnx", "in.onnx.data"]


@pytest.mark.parametrize("external", [False, True], ids=["embedded", "external-data"])
@pytest.mark.parametrize("emit", ["onnx", "text"])
def test_long_output_name(external: bool, emit: str, run_opt, work_dir: Path) -> None:
    """A 250-byte file name (255 with '.data'): the temporary names must not be longer."""
    src = _model(work_dir / "in.onnx")
    name = "m" * (250 - len(".onnx")) + ".onnx"
    assert len(name) == 250 and len(name + ".data") == os.pathconf(work_dir, "PC_NAME_MAX")
    out = work_dir / name
    ext = ("--external-data",) if external and emit == "onnx" else ()
    report = work_dir / ("r" * 250)
    proc = run_opt(src, "-o", out, "--emit", emit, *ext, "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(report.read_text())["output"] == str(out)
    if emit == "onnx":
        np.testing.assert_allclose(_run(out), _run(src), rtol=1e-5, atol=1e-6)
        assert (work_dir / (name + ".data")).exists() == external
    else:
        assert out.read_text().strip()
