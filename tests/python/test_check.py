"""`opt check` and `opt IN -o OUT --check`: a planted wrong rewrite (the operands of a Sub swapped in the
optimized model) fails the check and names the output, `--per-layer` names the first differing value, with
both runners; a correct optimization passes; `--report` writes the documented JSON; inputs get sensible
ranges; bad usage fails with one error line."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from roundtrip_check import REPO_ROOT
from test_pass_numeric import _pipeline, _rule_flags

RUNNERS = ("reference", "onnxruntime")


def _model(path: Path) -> Path:
    """y = (Relu((x + emb[ids]) @ W) - b) * 2 and z = Sigmoid(x): a Sub whose operands matter."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b"),
        numpy_helper.from_array(np.array(2.0, np.float32), "two"),
        numpy_helper.from_array(rng.standard_normal((10, 4)).astype(np.float32), "emb"),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["e"]),
        helper.make_node("Add", ["x", "e"], ["xe"]),
        helper.make_node("MatMul", ["xe", "W"], ["m"]),
        helper.make_node("Relu", ["m"], ["r"]),
        helper.make_node("Sub", ["r", "b"], ["s"]),
        helper.make_node("Mul", ["s", "two"], ["y"]),
        helper.make_node("Sigmoid", ["x"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes, "check_test",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _plant_swapped_sub(optimized: Path, bad: Path) -> None:
    model = onnx.load(optimized)
    subs = [n for n in model.graph.node if n.op_type == "Sub"]
    assert len(subs) == 1, "the optimized model should keep its Sub"
    subs[0].input[0], subs[0].input[1] = subs[0].input[1], subs[0].input[0]
    onnx.save(model, bad)


@pytest.fixture
def ort_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The onnxruntime runner uses this interpreter (the test venv has onnxruntime)."""
    monkeypatch.setenv("ONNXOPT_PYTHON", sys.executable)


@pytest.mark.parametrize("runner", RUNNERS)
def test_planted_bug_fails_and_is_located(runner: str, run_opt, work_dir: Path, ort_env) -> None:
    original = _model(work_dir / "model.onnx")
    optimized = work_dir / "opt.onnx"
    assert run_opt(original, "-o", optimized).returncode == 0
    bad = work_dir / "bad.onnx"
    _plant_swapped_sub(optimized, bad)

    good = run_opt("check", original, optimized, "--runner", runner)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "check: passed (2 outputs)" in good.stdout

    proc = run_opt("check", original, bad, "--runner", runner)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "check: FAILED: output 'y' past tolerance" in proc.stdout
    rows = {line.split()[0]: line.split()[-1] for line in proc.stdout.splitlines() if line.startswith("  ")
            and line.split()[0] in ("y", "z")}
    assert rows == {"y": "FAIL", "z": "pass"}

    layers = run_opt("check", original, bad, "--runner", runner, "--per-layer")
    assert layers.returncode == 3
    assert "first value past tolerance: 's' (Sub)" in layers.stdout
    # The values before the Sub agree.
    for name in ("e", "xe", "m", "r"):
        assert any(line.split()[:1] == [name] and line.endswith("pass") for line in layers.stdout.splitlines())


def test_optimize_with_check_and_report(run_opt, work_dir: Path, repo_root: Path) -> None:
    report = work_dir / "report.json"
    out = work_dir / "out.onnx"
    proc = run_opt(repo_root / "models" / "tiny_cnn" / "model.onnx", "-o", out, "--check", "--report", report)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    assert data["command"] == "optimize"
    assert data["pipeline"].startswith("freeze-initializer-inputs,")
    assert data["before"]["nodes"] > data["after"]["nodes"] > 0
    passes = {p["id"]: p for p in data["passes"]}
    assert passes["fuse-conv-affine"]["changed_runs"] >= 1
    assert all(p["runs"] >= 1 and p["seconds"] >= 0 for p in passes.values())
    assert data["check"]["passed"] is True
    assert [o["name"] for o in data["check"]["outputs"]] == [o.name for o in onnx.load(out).graph.output]
    for o in data["check"]["outputs"]:
        assert o["passed"] and o["max_abs_error"] <= o["atol"] + o["rtol"] * 10 and o["cosine_similarity"] > 0.999


def test_check_report_of_a_failure(run_opt, work_dir: Path) -> None:
    original = _model(work_dir / "model.onnx")
    optimized = work_dir / "opt.onnx"
    assert run_opt(original, "-o", optimized).returncode == 0
    bad = work_dir / "bad.onnx"
    _plant_swapped_sub(optimized, bad)
    report = work_dir / "check.json"
    proc = run_opt("check", original, bad, "--per-layer", "--report", report)
    assert proc.returncode == 3
    data = json.loads(report.read_text())
    assert data["command"] == "check" and data["check"]["passed"] is False
    y = next(o for o in data["check"]["outputs"] if o["name"] == "y")
    assert y["passed"] is False and y["mismatches"] > 0 and y["cosine_similarity"] < 0.5
    assert data["check"]["first_failing_value"] == "s"


def test_tolerances_decide(run_opt, work_dir: Path) -> None:
    """A planted error passes with a tolerance above it and fails below it."""
    original = _model(work_dir / "model.onnx")
    model = onnx.load(original)
    two = next(t for t in model.graph.initializer if t.name == "two")
    two.CopyFrom(numpy_helper.from_array(np.array(2.0 * (1 + 1e-3), np.float32), "two"))
    off = work_dir / "off.onnx"
    onnx.save(model, off)
    assert run_opt("check", original, off).returncode == 3
    assert run_opt("check", original, off, "--rtol", "1e-2").returncode == 0


def test_inputs_get_sensible_ranges(run_opt, work_dir: Path) -> None:
    """ids index a 10-row table: 0..9; a mask is 0/1; named dims are 2 unless pinned."""
    original = _model(work_dir / "model.onnx")
    proc = run_opt("check", original, original, "--input-shape", "ids=64", "--input-shape", "x=64,4",
                   "--input-shape", "attention_mask=64")
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[1].rstrip(":"): line for line in proc.stdout.splitlines() if line.startswith("input")}
    assert "ids: int64[64]" in lines["ids"] and "max=9" in lines["ids"] and "min=0" in lines["ids"]
    assert "min=0 max=1" in lines["attention_mask"]
    default = run_opt("check", original, original)
    assert "x: float[2,4]" in default.stdout


def test_given_inputs(run_opt, work_dir: Path) -> None:
    original = _model(work_dir / "model.onnx")
    np.save(work_dir / "x.npy", np.ones((3, 4), np.float32))
    np.save(work_dir / "ids.npy", np.array([1, 2, 3], np.int64))
    proc = run_opt("check", original, original, "--input", f"x={work_dir / 'x.npy'}",
                   "--input", f"ids={work_dir / 'ids.npy'}", "--input-shape", "attention_mask=3")
    assert proc.returncode == 0, proc.stderr
    assert "x: float[3,4]  min=1 max=1" in proc.stdout


@pytest.mark.parametrize("args,message", [
    (("--input", "x=missing.npy"), "cannot open"),
    (("--input-shape", "x=2,a"), "bad dim"),
])
def test_bad_check_usage(args, message: str, run_opt, work_dir: Path) -> None:
    original = _model(work_dir / "model.onnx")
    np.save(work_dir / "x.npy", np.ones((2, 4), np.float32))
    args = tuple(a.replace("missing.npy", str(work_dir / "missing.npy")).replace("=x.npy", f"={work_dir / 'x.npy'}")
                 for a in args)
    proc = run_opt("check", original, original, *args)
    assert proc.returncode == 1
    assert proc.stderr.startswith("opt: error: ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_missing_input_in_optimized(run_opt, work_dir: Path) -> None:
    original = _model(work_dir / "model.onnx")
    model = onnx.load(original)
    model.graph.input[0].name = "renamed"
    for n in model.graph.node:
        n.input[:] = ["renamed" if i == "x" else i for i in n.input]
    other = work_dir / "other.onnx"
    onnx.save(model, other)
    proc = run_opt("check", original, other)
    assert proc.returncode == 1 and "input 'x'" in proc.stderr and "is missing" in proc.stderr


def test_onnxruntime_runner_without_python(run_opt, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONNXOPT_PYTHON", str(work_dir / "no-such-python"))
    original = _model(work_dir / "model.onnx")
    proc = run_opt("check", original, original, "--runner", "onnxruntime")
    assert proc.returncode == 1 and "ONNXOPT_PYTHON" in proc.stderr


def test_onnxruntime_runner_without_onnxruntime(run_opt, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter without numpy/onnxruntime (site-packages off): one line, the runner named once."""
    bare = work_dir / "bare-python"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    bare.chmod(0o755)
    monkeypatch.setenv("ONNXOPT_PYTHON", str(bare))
    original = _model(work_dir / "model.onnx")
    proc = run_opt("check", original, original, "--runner", "onnxruntime")
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0].count("onnxruntime runner:") == 1 and "install onnxruntime" in lines[0], proc.stderr


# --- Inputs that cannot be generated or read: one clear error, never a crash (`opt run` and `opt check`) ---

HUGE = 4611686018427387904  # 2**62


def _npy(path: Path, header: str, data: bytes = b"") -> Path:
    h = header.encode()
    h += b" " * (63 - (10 + len(h)) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + data)
    return path


def _declared_model(path: Path, dims: list) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "declared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _run_both(run_opt, model: Path, *args):
    """`opt run` and `opt check` with the same input options."""
    for flag_args in (("run", model), ("check", model, model)):
        yield flag_args[0], run_opt(*flag_args, *args)


@pytest.mark.parametrize("case,message", [
    ("shape-2^62", "x"),
    ("shape-overflow", "64 bits"),
    ("shape-out-of-range", "too large"),
    ("shape-past-the-cap", "GiB"),
    ("npy-shape-2^62", "bad.npy"),
    ("npy-shape-overflow-to-zero", "64 bits"),
    ("npy-dim-out-of-range", "too large"),
    ("npy-no-shape", "no 'shape'"),
    ("npy-garbage-dim", "not a size"),
    ("npy-header-past-end", "bad.npy"),
    ("npy-wrong-dtype", "int64"),
    ("npy-wrong-shape", "declared"),
    ("pb-wrong-shape", "bad.pb"),
    ("declared-2^62", "input 'x'"),
    ("declared-overflow", "overflows"),
])
def test_bad_input_sizes_are_errors(case: str, message: str, run_opt, work_dir: Path) -> None:
    dims: list = ["batch", 4]
    args: tuple = ()
    bad = work_dir / "bad.npy"
    if case == "shape-2^62":
        args = ("--input-shape", f"x={HUGE},4")
    elif case == "shape-overflow":
        args = ("--input-shape", f"x={HUGE},{HUGE}")
        dims = ["a", "b"]
    elif case == "shape-out-of-range":
        args = ("--input-shape", "x=99999999999999999999,4")
    elif case == "shape-past-the-cap":
        args = ("--input-shape", f"x={1 << 31},4")
    elif case == "npy-shape-2^62":
        args = ("--input", f"x={_npy(bad, str({'descr': '<f4', 'fortran_order': False, 'shape': (HUGE, 4)}))}")
    elif case == "npy-shape-overflow-to-zero":
        args = ("--input", f"x={_npy(bad, str({'descr': '<f4', 'fortran_order': False, 'shape': (1 << 32, 1 << 32)}))}")
    elif case == "npy-dim-out-of-range":
        args = ("--input", f"x={_npy(bad, str({'descr': '<f4', 'fortran_order': False, 'shape': (10**20, 4)}))}")
    elif case == "npy-no-shape":
        args = ("--input", f"x={_npy(bad, str({'descr': '<f4', 'fortran_order': False}))}")
    elif case == "npy-garbage-dim":
        header = "{'descr': '<f4', 'shape': (2x, 4), }"
        args = ("--input", f"x={_npy(bad, header)}")
    elif case == "npy-header-past-end":
        bad.write_bytes(b"\x93NUMPY\x01\x00\xff\xff{'descr'")
        args = ("--input", f"x={bad}")
    elif case == "npy-wrong-dtype":
        np.save(bad, np.zeros((2, 4), np.int64))
        args = ("--input", f"x={bad}")
    elif case == "npy-wrong-shape":
        np.save(bad, np.zeros((2, 5), np.float32))
        args = ("--input", f"x={bad}")
    elif case == "pb-wrong-shape":
        pb = work_dir / "bad.pb"
        pb.write_bytes(numpy_helper.from_array(np.zeros((3,), np.float32)).SerializeToString())
        args = ("--input", f"x={pb}")
    elif case == "declared-2^62":
        dims = [HUGE, 4]
    elif case == "declared-overflow":
        dims = [HUGE, HUGE, 4]
    model = _declared_model(work_dir / "m.onnx", dims)
    for command, proc in _run_both(run_opt, model, *args):
        assert proc.returncode == 1, f"{command}: {proc.returncode} {proc.stderr}"
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("opt: error: "), f"{command}: {proc.stderr}"
        assert message in lines[0], f"{command}: {lines[0]}"
        assert "stoll" not in lines[0] and "bad_alloc" not in lines[0], f"{command}: {lines[0]}"
        if case.startswith(("npy", "pb")):  # the file is to blame, not the model
            assert lines[0].startswith(f"opt: error: {work_dir / 'bad.'}"), f"{command}: {lines[0]}"


@pytest.mark.parametrize("flag,spec", [("--input", "nope=x.npy"), ("--input-shape", "nope=2,4"),
                                       ("--input-shape", "y=2,4")])
def test_unknown_input_name_is_a_usage_error(flag: str, spec: str, run_opt, work_dir: Path) -> None:
    original = _model(work_dir / "model.onnx")
    np.save(work_dir / "x.npy", np.ones((2, 4), np.float32))
    spec = spec.replace("x.npy", str(work_dir / "x.npy"))
    runs = [("run", run_opt("run", original, flag, spec)),
            ("check", run_opt("check", original, original, flag, spec)),
            ("--check", run_opt(original, "-o", work_dir / "out.onnx", "--check",
                                "--check-input" if flag == "--input" else flag, spec))]
    for command, proc in runs:
        assert proc.returncode == 2, f"{command}: {proc.returncode} {proc.stderr}"
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("opt: error: "), proc.stderr
        assert "'x', 'ids', 'attention_mask'" in lines[0], lines[0]
    assert not (work_dir / "out.onnx").exists()


def _dynamic_cnn(path: Path) -> Path:
    """Conv 3x3 -> MaxPool 2/2 -> Relu -> Conv 3x3 -> AveragePool 2/2 -> GlobalAveragePool, on
    x[N, 3, H, W]: H = W = 2 (the old default) leaves the second conv nothing to read."""
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w2"),
             numpy_helper.from_array(np.float32(0.5), "half")]
    nodes = [
        helper.make_node("Mul", ["x", "half"], ["xs"]),  # an elementwise op before the conv
        helper.make_node("Conv", ["xs", "w1", "b1"], ["c1"], kernel_shape=[3, 3]),
        helper.make_node("MaxPool", ["c1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Relu", ["p1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[3, 3]),
        helper.make_node("AveragePool", ["c2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "dynamic_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("runner", RUNNERS)
def test_dynamic_cnn_gets_spatial_dims_that_run(runner: str, run_opt, work_dir: Path, ort_env) -> None:
    model = _dynamic_cnn(work_dir / "cnn.onnx")
    out = work_dir / "out.onnx"
    report = work_dir / "report.json"
    proc = run_opt(model, "-o", out, "--check", "--runner", runner, "--report", report)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check: passed (1 outputs)" in proc.stdout
    dims = next(line for line in proc.stdout.splitlines() if line.startswith("dims"))
    sizes = dict(item.split("=") for item in dims.split(":", 1)[1].split("(")[0].replace(" ", "").split(","))
    assert sizes["N"] == "2" and int(sizes["H"]) >= 14 and sizes["H"] == sizes["W"], dims
    assert json.loads(report.read_text())["check"]["inputs"][0]["dynamic_dims"] == dims.split(": ", 1)[1].split(" (")[0]
    check = run_opt("check", model, out, "--runner", runner)
    assert check.returncode == 0, check.stdout + check.stderr
    run = run_opt("run", model)
    assert run.returncode == 0, run.stderr
    assert "output y: float[1,8,1,1]" in run.stdout  # run keeps unnamed/batch dims at 1
    pinned = run_opt("check", model, out, "--input-shape", "x=1,3,16,16")
    assert pinned.returncode == 0 and "x: float[1,3,16,16]" in pinned.stdout
    small = run_opt("check", model, out, "--input-shape", "x=1,3,2,2")
    assert small.returncode == 1 and len(small.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("runner", RUNNERS)
def test_inputs_of_another_type_are_an_error(runner: str, run_opt, work_dir: Path, ort_env) -> None:
    """The optimized model must take the original's inputs as they are: the same values in another
    element type are not comparable (the reference kernels once ran them and passed)."""
    paths = {}
    for name, elem in (("f", TensorProto.FLOAT), ("i", TensorProto.INT64)):
        graph = helper.make_graph([helper.make_node("Neg", ["x"], ["y"])], name,
                                  [helper.make_tensor_value_info("x", elem, [2])],
                                  [helper.make_tensor_value_info("y", elem, [2])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        paths[name] = work_dir / f"{name}.onnx"
        onnx.save(model, paths[name])
    proc = run_opt("check", paths["f"], paths["i"], "--runner", runner)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "input 'x' is int64, but float" in lines[0], proc.stderr


def test_dynamic_signal_gets_a_length_that_runs(run_opt, work_dir: Path) -> None:
    """A batch of signals x[N, samples], framed by a strided 1-D Conv (kernel from the weight's shape,
    no kernel_shape attribute) and pooled: 'samples' must cover the frames."""
    rng = np.random.default_rng(6)
    w = numpy_helper.from_array(rng.standard_normal((4, 1, 64)).astype(np.float32), "w")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["x3"]),
             helper.make_node("Conv", ["x3", "w"], ["c"], strides=[32]),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[4], strides=[4]),
             helper.make_node("ReduceMean", ["p"], ["y"], axes=[2], keepdims=0)]
    graph = helper.make_graph(nodes, "signal", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "samples"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [w, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = work_dir / "signal.onnx"
    onnx.save(model, path)
    for proc in (run_opt("check", path, path), run_opt("run", path)):
        assert proc.returncode == 0, proc.stdout + proc.stderr
        dims = next(line for line in proc.stdout.splitlines() if line.startswith("dims"))
        assert int(dims.split("samples=")[1].split()[0]) >= 64 * 4, dims


# --- Per-layer pairing across fusions: a fused value carries the name of the value it computes ---

# The pass tests that say, in `# PER-LAYER: pairs NAME...` / `# PER-LAYER: unpaired NAME...` lines,
# which values a per-layer check must pair after their pipeline, and which it must not find (a name
# whose value the rewrite changed, or that it fused away).
PER_LAYER_CASES = sorted(p for p in (REPO_ROOT / "tests" / "lit" / "passes").rglob("*.onnxtxt")
                         if re.search(r"^#\s*PER-LAYER:", p.read_text(), re.M))


def _per_layer_names(text: str, kind: str) -> list[str]:
    names = []
    for m in re.finditer(rf"^#\s*PER-LAYER:\s*{kind}\s+(.*)$", text, re.M):
        names += m.group(1).split()
    return names


def _per_layer_rows(stdout: str) -> dict[str, str]:
    """The per-layer table of `opt check --per-layer`: value name -> last column (pass / FAIL...)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("per layer ("))
    rows = {}
    for line in lines[start + 2:]:  # after the column header
        if not line.startswith("  "):
            break
        fields = line.split()
        rows[fields[0]] = "FAIL" if " FAIL" in line else fields[-1]
    return rows


def _check_per_layer(run_opt, original: Path, optimized: Path) -> dict[str, str]:
    proc = run_opt("check", original, optimized, "--per-layer")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every shared value is within tolerance" in proc.stdout, proc.stdout
    rows = _per_layer_rows(proc.stdout)
    assert all(verdict == "pass" for verdict in rows.values()), proc.stdout
    return rows


@pytest.mark.parametrize("case", PER_LAYER_CASES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_per_layer_pairs_fused_values_by_what_they_compute(case: Path, run_opt, work_dir: Path) -> None:
    """A fused chain's intermediate and final values are named: after the fusion, `opt check --per-layer`
    pairs the final name with the fused value and finds no value past tolerance (a value a rewrite
    changed, such as the Conv's output once it absorbed a BatchNormalization, keeps no old name)."""
    text = case.read_text()
    pipeline = _pipeline(text)
    original, optimized = work_dir / "original.onnx", work_dir / "optimized.onnx"
    assert run_opt(case, "-O0", "-o", original).returncode == 0
    proc = run_opt(case, f"--passes={pipeline}", *_rule_flags(text, case), "--verify-each", "-o", optimized)
    assert proc.returncode == 0, proc.stderr
    assert [o.name for o in onnx.load(optimized).graph.output] == [o.name for o in onnx.load(original).graph.output]
    rows = _check_per_layer(run_opt, original, optimized)
    for name in _per_layer_names(text, "pairs"):
        assert name in rows, f"'{name}' is not compared: {sorted(rows)}"
    for name in _per_layer_names(text, "unpaired"):
        assert name not in rows, f"'{name}' is compared, but its value changed or went"


def _mobilenet_v3_like(path: Path) -> Path:
    """A small MobileNetV3-shaped network as PyTorch exports it: Conv + BatchNormalization +
    HardSwish (written out as x * HardSigmoid(x) and as x * Clip(x + 3, 0, 6) / 6), a depthwise
    Conv + BN + Relu, a squeeze-excite block (GlobalAveragePool, 1x1 Convs, HardSigmoid scaling),
    a 1x1 projection Conv + BN with a residual Add, and a Gemm classifier."""
    rng = np.random.default_rng(3)
    inits: list = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def conv_bn(x: str, name: str, cin: int, cout: int, k: int, group: int = 1) -> list:
        w = const(f"{name}.w", rng.standard_normal((cout, cin // group, k, k)) * 0.3)
        stats = [const(f"{name}.{s}", v) for s, v in (
            ("gamma", rng.uniform(0.5, 1.5, cout)), ("beta", rng.standard_normal(cout) * 0.1),
            ("mean", rng.standard_normal(cout) * 0.1), ("var", rng.uniform(0.5, 1.5, cout)))]
        return [helper.make_node("Conv", [x, w], [f"{name}.conv"], pads=[k // 2] * 4, group=group),
                helper.make_node("BatchNormalization", [f"{name}.conv", *stats], [f"{name}.bn"])]

    three, zero, six = const("three", np.array(3.0)), const("zero", np.array(0.0)), const("six", np.array(6.0))
    nodes = conv_bn("x", "stem", 3, 8, 3)
    nodes += [helper.make_node("HardSigmoid", ["stem.bn"], ["stem.hsig"], alpha=1 / 6, beta=0.5),
              helper.make_node("Mul", ["stem.bn", "stem.hsig"], ["stem.act"])]
    nodes += conv_bn("stem.act", "dw", 8, 8, 3, group=8)
    nodes += [helper.make_node("Relu", ["dw.bn"], ["dw.act"]),
              helper.make_node("GlobalAveragePool", ["dw.act"], ["se.pool"]),
              helper.make_node("Conv", ["se.pool", const("se.w1", rng.standard_normal((4, 8, 1, 1)) * 0.3),
                                        const("se.b1", rng.standard_normal(4) * 0.1)], ["se.fc1"]),
              helper.make_node("Relu", ["se.fc1"], ["se.relu"]),
              helper.make_node("Conv", ["se.relu", const("se.w2", rng.standard_normal((8, 4, 1, 1)) * 0.3),
                                        const("se.b2", rng.standard_normal(8) * 0.1)], ["se.fc2"]),
              helper.make_node("HardSigmoid", ["se.fc2"], ["se.gate"], alpha=1 / 6, beta=0.5),
              helper.make_node("Mul", ["dw.act", "se.gate"], ["se.out"])]
    nodes += conv_bn("se.out", "proj", 8, 8, 1)
    nodes += [helper.make_node("Add", ["proj.bn", "stem.act"], ["res"])]
    nodes += conv_bn("res", "head", 8, 16, 1)
    nodes += [helper.make_node("Add", ["head.bn", three], ["head.a"]),
              helper.make_node("Clip", ["head.a", zero, six], ["head.c"]),
              helper.make_node("Div", ["head.c", six], ["head.d"]),
              helper.make_node("Mul", ["head.bn", "head.d"], ["head.act"]),
              helper.make_node("GlobalAveragePool", ["head.act"], ["pool"]),
              helper.make_node("Flatten", ["pool"], ["flat"]),
              helper.make_node("Gemm", ["flat", const("fc.w", rng.standard_normal((10, 16)) * 0.3),
                                        const("fc.b", rng.standard_normal(10) * 0.1)], ["logits"], transB=1)]
    graph = helper.make_graph(nodes, "mobilenet_v3_like",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_mobilenet_v3_like_passes_per_layer(run_opt, work_dir: Path) -> None:
    """Conv + BN (+ HardSwish) chains end to end at -O2: every Conv that absorbed a BN computes the
    BN's value under the BN's name, each HardSwish the chain's last, and every value both models
    name alike agrees."""
    original = _mobilenet_v3_like(work_dir / "model.onnx")
    optimized = work_dir / "opt.onnx"
    proc = run_opt(original, "-O2", "-o", optimized)
    assert proc.returncode == 0, proc.stderr
    ops = {n.output[0]: n.op_type for n in onnx.load(optimized).graph.node}
    assert "BatchNormalization" not in ops.values()
    for block in ("stem", "dw", "proj", "head"):
        assert ops.get(f"{block}.bn") == "Conv" and f"{block}.conv" not in ops, ops
    assert ops.get("stem.act") == "HardSwish" and ops.get("head.act") == "HardSwish", ops
    rows = _check_per_layer(run_opt, original, optimized)
    for name in ("stem.bn", "stem.act", "dw.bn", "se.out", "proj.bn", "res", "head.bn", "head.act", "logits"):
        assert name in rows, f"'{name}' is not compared: {sorted(rows)}"


def test_per_layer_leaves_a_value_of_another_shape_unpaired(run_opt, work_dir: Path) -> None:
    """A value the other model names alike but holds in another layout (as a tool that transposes a
    region and keeps its names would write) is not the same value: it is listed as not compared,
    with the reason, and is no value past tolerance."""
    def save(nodes: list, path: Path) -> Path:
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, path)
        return path

    original = save([helper.make_node("Sigmoid", ["x"], ["t"]), helper.make_node("Neg", ["t"], ["n"]),
                     helper.make_node("Abs", ["n"], ["y"])], work_dir / "a.onnx")
    transposed = save([helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
                       helper.make_node("Sigmoid", ["xt"], ["t"]), helper.make_node("Neg", ["t"], ["n"]),
                       helper.make_node("Transpose", ["n"], ["nt"], perm=[1, 0]),
                       helper.make_node("Abs", ["nt"], ["y"])], work_dir / "b.onnx")
    report = work_dir / "r.json"
    proc = run_opt("check", original, transposed, "--per-layer", "--report", report)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every shared value is within tolerance" in proc.stdout
    assert "not compared (2 named alike in both models, but not the same value):" in proc.stdout
    assert any(line.split()[:1] == ["t"] and line.endswith("shape [3,2] != [2,3]") for line in proc.stdout.splitlines())
    data = json.loads(report.read_text())["check"]
    assert [v["name"] for v in data["per_layer"]] == ["y"] and data["first_failing_value"] is None
    assert [(v["name"], v["problem"]) for v in data["per_layer_unpaired"]] == [
        ("t", "shape [3,2] != [2,3]"), ("n", "shape [3,2] != [2,3]")]
