"""The Python package (`pip install .`: src/python/onnxopt over the native module onnxopt._core).

It must agree with the opt binary built from the same tree: the same optimized model for every
bundled and real model, the same check figures, the same error messages; runs must match
onnxruntime (the goldens of models/golden, and onnxruntime itself); models cross as paths, bytes
and ModelProto alike; external data is read and written; threads may optimize concurrently.
tools/test.sh installs the package into .venv before it runs these tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxopt

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools"))
import golden  # noqa: E402

SHARED = Path(os.environ.get("ONNXOPT_SHARED", REPO.parent / "shared"))
BUNDLED = sorted((REPO / "models").glob("**/*.onnx"))
REAL = sorted((SHARED / "models" / "real").glob("**/*.onnx"))
OPT = Path(os.environ.get("ONNXOPT_OPT", REPO / "build" / "bin" / "opt"))


def rel(p: Path) -> str:
    return str(p.relative_to(REPO) if p.is_relative_to(REPO) else p.relative_to(SHARED))


def run_opt(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(OPT), *map(str, args)], capture_output=True, text=True, timeout=300)


def cli_error(proc: subprocess.CompletedProcess) -> str:
    """The message of opt's error line ("opt: error: MESSAGE")."""
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("opt: error: ")]
    assert lines, proc.stderr
    return lines[-1][len("opt: error: "):]


def test_the_installed_package_is_this_tree() -> None:
    # Not a stale install from another checkout: the version is the tree's, the module is built.
    version = run_opt("--version").stdout.split()[-1]
    assert onnxopt.__version__ == version
    assert Path(onnxopt._core.__file__).name.startswith("_core")
    assert "fold-constants" in {p["id"] for p in onnxopt.list_passes()}
    assert {"reference", "onnxruntime", "cuda"} <= set(onnxopt.runners())


def test_console_script_is_opt(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("onnxopt")
    assert script.is_file(), "the onnxopt console script is not installed beside python"
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"onnxopt {onnxopt.__version__}"
    model = REPO / "models/tiny_cnn/model.onnx"
    out = tmp_path / "out.onnx"
    proc = subprocess.run([str(script), str(model), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert onnx.load(out) == onnxopt.optimize(model)
    proc = subprocess.run([str(script), str(tmp_path / "nope.onnx"), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "nope.onnx: cannot open" in proc.stderr


def test_the_wheel_installs_in_a_fresh_venv(tmp_path: Path) -> None:
    # tools/test.sh builds the wheel (pip wheel .) into the build folder and installs it here.
    dist = REPO / os.environ.get("ONNXOPT_BUILD_DIR", "build") / "dist"
    wheels = sorted(dist.glob("onnxopt-*.whl"))
    assert len(wheels) == 1, f"no single wheel in {dist}: tools/test.sh builds it"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q",
                          "--disable-pip-version-check", str(wheels[0])],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr  # its dependencies (numpy, onnx, ml_dtypes) from PyPI
    model = REPO / "models/transformers/gpt2_legacy/model.onnx"
    script = ("import onnxopt, sys; m = onnxopt.optimize(sys.argv[1]); "
              "print(onnxopt.__version__, len(m.graph.node))")
    proc = subprocess.run([str(venv / "bin/python"), "-c", script, str(model)], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [onnxopt.__version__, str(len(onnxopt.optimize(model).graph.node))]
    proc = subprocess.run([str(venv / "bin/onnxopt"), "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"onnxopt {onnxopt.__version__}"


# --- optimize: the same model as opt, from a path, bytes or a ModelProto ------------------------


@pytest.mark.filterwarnings("ignore::onnxopt.OnnxoptWarning")  # opt prints them too
@pytest.mark.parametrize("model", BUNDLED + REAL, ids=rel)
def test_optimize_equals_the_cli(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.onnx"
    proc = run_opt(model, "-o", out)
    if proc.returncode != 0:
        # A model opt refuses: the package raises the same message.
        with pytest.raises(onnxopt.Error) as err:
            onnxopt.optimize(model)
        assert str(err.value) == cli_error(proc)
        return
    expected = onnx.load(out, load_external_data=False)
    assert onnxopt.optimize(model) == expected
    if not (model.parent / f"{model.stem}.data").exists():
        assert onnxopt.optimize(model.read_bytes()) == expected


@pytest.mark.parametrize("level", [0, 1, 3])
def test_levels_and_pass_lists_equal_the_cli(level: int, tmp_path: Path) -> None:
    model = REPO / "models/transformers/bert_legacy/model.onnx"
    out = tmp_path / "out.onnx"
    assert run_opt(model, "-o", out, f"-O{level}").returncode == 0
    assert onnxopt.optimize(model, level=level) == onnx.load(out)
    assert run_opt(model, "-o", out, "--passes", "fold-constants,dce").returncode == 0
    assert onnxopt.optimize(model, passes=["fold-constants", "dce"]) == onnx.load(out)
    assert onnxopt.optimize(model, passes="fold-constants,dce") == onnx.load(out)


def test_options_equal_the_cli(tmp_path: Path) -> None:
    model = REPO / "models/transformers/gpt2_legacy/model.onnx"
    out = tmp_path / "out.onnx"
    cases = [
        (["--target-opset", "23"], dict(target_opset=23)),
        (["--precision", "fp16"], dict(precision="fp16")),
        (["-O3", "--target", "cuda"], dict(level=3, target="cuda")),
        (["--disable-pass", "fuse-gelu"], dict(disable=["fuse-gelu"])),
        (["--target-opset", "21", "--quantize", "weights=int4", "--block-size", "64",
          "--quantize-asymmetric", "--quantize-exclude", "*attn*", "--quantize-lm-head", "false"],
         dict(target_opset=21, quantize="int4", block_size=64, quantize_symmetric=False,
              quantize_exclude=["*attn*"], quantize_lm_head=False)),
        (["--target-opset", "21", "--quantize", "weights=int8", "--quantize-embeddings"],
         dict(target_opset=21, quantize="int8", quantize_embeddings=True)),
    ]
    for args, kwargs in cases:
        proc = run_opt(model, "-o", out, *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert onnxopt.optimize(model, **kwargs) == onnx.load(out), args


def test_model_proto_round_trip() -> None:
    path = REPO / "models/transformers/vit_legacy/model.onnx"
    proto = onnx.load(path)
    from_proto = onnxopt.optimize(proto)
    assert isinstance(from_proto, onnx.ModelProto)
    assert from_proto == onnxopt.optimize(path) == onnxopt.optimize(proto.SerializeToString())
    onnx.checker.check_model(from_proto)
    # The result goes back in: optimizing an optimized model changes nothing more.
    assert onnxopt.optimize(from_proto) == from_proto
    assert len(from_proto.graph.node) < len(proto.graph.node)
    assert proto == onnx.load(path), "the caller's ModelProto must not be changed"


def _big_weights_model() -> onnx.ModelProto:
    """y = (x @ W1) @ Transpose(W2t) + b: W1 and W2t (512 KiB each) cross apart, W2t's
    Transpose folds into a new weight; b is small; E, a weight-stripped [512, 512] tensor (empty
    raw_data), and F, a big one in float_data, stay in the serialized bytes."""
    rng = np.random.default_rng(0)
    w1 = onnx.numpy_helper.from_array(rng.standard_normal((256, 512), dtype=np.float32), "W1")
    w1.doc_string = "the first projection"  # fields beside raw_data cross with the tensor
    w1.metadata_props.add(key="origin", value="test")
    w2t = onnx.numpy_helper.from_array(rng.standard_normal((256, 512), dtype=np.float32), "W2t")
    b = onnx.numpy_helper.from_array(rng.standard_normal(256, dtype=np.float32), "b")
    stripped = TensorProto(name="E", data_type=TensorProto.FLOAT, dims=[512, 512], raw_data=b"")
    typed = helper.make_tensor("F", TensorProto.FLOAT, [128, 256],
                               rng.standard_normal(128 * 256).astype(np.float32).tolist())
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]),
             helper.make_node("Transpose", ["W2t"], ["W2"]),
             helper.make_node("MatMul", ["h", "W2"], ["z"]),
             helper.make_node("Add", ["z", "b"], ["y"]),
             helper.make_node("Shape", ["E"], ["e"]),
             helper.make_node("MatMul", ["x", "F"], ["f"], name="uses_f")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 256]),
         helper.make_tensor_value_info("e", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, [2, 256])],
        [w1, w2t, b, stripped, typed])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_big_weights_cross_apart_and_back(tmp_path: Path) -> None:
    from onnxopt import _proto

    proto = _big_weights_model()
    original = proto.SerializeToString()
    split = _proto.split_weights(proto)
    data, weights = split.data, split.weights
    assert [w is not None for w in weights] == [True, True, False, False, False]
    assert len(data) < 256 * 1024 + 1024  # W1 and W2t left out; F (128 KiB) in
    # Joined back, the pieces are the model itself, every field of the tensors given apart included.
    joined = _proto.join_weights(data, [(k, w) for k, w in enumerate(weights) if w is not None])
    assert joined.SerializeToString() == original
    path = tmp_path / "in.onnx"
    path.write_bytes(original)
    out = tmp_path / "out.onnx"
    proc = run_opt(path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    expected = onnx.load(out)
    # The same model as the CLI's, through every way in; the caller's model is not changed.
    assert onnxopt.optimize(proto) == expected
    assert onnxopt.optimize(original) == expected
    assert onnxopt.optimize(path) == expected
    assert proto.SerializeToString() == original
    # The weights come back apart: the folded W2 and F (raw_data now) as new bytes, the
    # unchanged W1 as the very bytes object that went in (no copy).
    src = onnxopt._source(proto)
    _, _, back = onnxopt._core.optimize(src, onnxopt._args(2, None, None, None, None, False,
                                                           None, ()))
    names = [t.name for t in expected.graph.initializer]
    back_names = {names[k]: raw for k, raw in back}
    assert set(back_names) == {"W1", "W2", "F"}
    assert back_names["W1"] is src.weights[0]
    assert back_names["W2"] == expected.graph.initializer[names.index("W2")].raw_data


def test_weights_given_apart_must_match_the_initializers() -> None:
    from onnxopt import _proto

    split = _proto.split_weights(_big_weights_model())
    data, weights = split.data, split.weights
    args = onnxopt._args(2, None, None, None, None, False, None, ())
    src = onnxopt._core.Source()
    src.data, src.weights = data, weights[:2]
    with pytest.raises(onnxopt.InvalidArgumentError, match="2 weights given apart for the main "
                       "graph's 5 initializers"):
        onnxopt._core.optimize(src, args)
    # A tensor that holds data in the bytes and is given apart too is refused, naming it.
    src.data, src.weights = data, [None, None, None, None, b"\0" * 4 * 128 * 256]
    with pytest.raises(onnxopt.InvalidArgumentError,
                       match="initializer 'F': raw_data given apart, but the tensor holds data"):
        onnxopt._core.optimize(src, args)


def test_optimize_file_writes_what_optimize_returns(tmp_path: Path) -> None:
    model = REPO / "models/transformers/bert_legacy/model.onnx"
    out = tmp_path / "out.onnx"
    summary = onnxopt.optimize_file(model, out)
    assert onnx.load(out) == onnxopt.optimize(model)
    assert summary["nodes_after"] < summary["nodes_before"]
    assert summary["pipeline"] and summary["seconds"] >= 0


# --- external data ------------------------------------------------------------------------------


def _external_model(folder: Path) -> Path:
    w = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["W"], ["Wt"], perm=[1, 0]),
         helper.make_node("MatMul", ["x", "Wt"], ["y"])],
        "ext", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])],
        [onnx.numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "ext.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.weights", size_threshold=0)
    return path


def test_external_data_in_and_out(tmp_path: Path) -> None:
    path = _external_model(tmp_path)
    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    want = onnxopt.run(path, {"x": x})["y"]
    optimized = onnxopt.optimize(path)  # the weights are read beside the model
    assert [n.op_type for n in optimized.graph.node] == ["MatMul"]  # the Transpose was folded
    np.testing.assert_allclose(onnxopt.run(optimized, {"x": x})["y"], want, rtol=1e-5)
    out = tmp_path / "out" / "opt.onnx"
    out.parent.mkdir()
    onnxopt.optimize_file(path, out, external_data="opt.weights")
    assert (out.parent / "opt.weights").stat().st_size == 64 * 64 * 4
    assert onnx.load(out, load_external_data=False).graph.initializer[0].data_location == \
        TensorProto.EXTERNAL
    np.testing.assert_allclose(onnxopt.run(out, {"x": x})["y"], want, rtol=1e-5)
    # Bytes of a model with external data: its data is read relative to the current folder,
    # where it is not: a clear error naming the file.
    with pytest.raises(onnxopt.Error, match="ext.weights"):
        onnxopt.optimize(path.read_bytes())


def test_optimize_file_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    path = _external_model(tmp_path)
    before = (tmp_path / "ext.weights").read_bytes()
    with pytest.raises(onnxopt.InvalidArgumentError, match="which the input model reads"):
        onnxopt.optimize_file(path, path)
    with pytest.raises(onnxopt.InvalidArgumentError, match="which the input model reads"):
        onnxopt.optimize_file(path, tmp_path / "other.onnx", external_data="ext.weights")
    assert (tmp_path / "ext.weights").read_bytes() == before


# --- errors: onnxopt.Error subclasses with opt's messages ---------------------------------------


def test_errors_carry_the_cli_message(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x96\x01 this is not a model")
    missing = tmp_path / "missing.onnx"
    model = REPO / "models/tiny_cnn/model.onnx"
    cases = [
        ([garbage], dict(model=garbage), onnxopt.InvalidArgumentError),
        ([missing], dict(model=missing), onnxopt.NotFoundError),
        ([model, "--passes", "no-such-pass"], dict(model=model, passes="no-such-pass"),
         onnxopt.InvalidArgumentError),
        ([model, "--target-opset", "99"], dict(model=model, target_opset=99), None),
    ]
    for args, kwargs, cls in cases:
        proc = run_opt(*args, "-o", tmp_path / "out.onnx")
        if cls is None:  # a usage error of the command line (exit 2): still an error here
            assert proc.returncode == 2, proc.stderr
            with pytest.raises(onnxopt.InvalidArgumentError):
                onnxopt.optimize(**kwargs)
            continue
        assert proc.returncode == 1, proc.stderr
        with pytest.raises(cls) as err:
            onnxopt.optimize(**kwargs)
        assert str(err.value) == cli_error(proc)
        assert isinstance(err.value, onnxopt.Error)
    assert not (tmp_path / "out.onnx").exists()


def test_errors_are_python_exceptions_too() -> None:
    with pytest.raises(ValueError, match="not a valid ONNX protobuf"):
        onnxopt.optimize(b"garbage")
    with pytest.raises(FileNotFoundError):
        onnxopt.optimize("/no/such/model.onnx")
    with pytest.raises(onnxopt.InvalidArgumentError, match="level 9 is not one of 0, 1, 2, 3"):
        onnxopt.optimize(REPO / "models/tiny_cnn/model.onnx", level=9)
    with pytest.raises(TypeError):
        onnxopt.optimize(42)
    # Checked by the library, as for opt's --precision.
    with pytest.raises(onnxopt.InvalidArgumentError, match="unknown precision 'fp8'"):
        onnxopt.optimize(REPO / "models/tiny_cnn/model.onnx", precision="fp8")
    with pytest.raises(onnxopt.InvalidArgumentError, match="unknown runner 'nope'"):
        onnxopt.run(REPO / "models/tiny_cnn/model.onnx", runner="nope")
    with pytest.raises(onnxopt.InvalidArgumentError, match="no runner 'nope'"):
        onnxopt.check(REPO / "models/tiny_cnn/model.onnx", REPO / "models/tiny_cnn/model.onnx",
                      runner="nope")


def test_bad_inputs_to_run_are_errors() -> None:
    model = REPO / "models/tiny_cnn/model.onnx"
    name = onnx.load(model).graph.input[0].name
    with pytest.raises(onnxopt.InvalidArgumentError, match="'typo' is not an input"):
        onnxopt.run(model, {"typo": np.zeros(3, np.float32)})
    with pytest.raises(onnxopt.Error, match=name):
        onnxopt.run(model, {name: np.zeros((1, 2), np.int64)})
    with pytest.raises(TypeError, match="no ONNX element type"):
        onnxopt.run(model, {name: np.zeros(2, np.dtype("datetime64[s]"))})


def test_truncated_real_models_raise(tmp_path: Path) -> None:
    for model in REAL[::9]:
        data = model.read_bytes()
        for cut in (len(data) // 3, len(data) - 7):
            with pytest.raises(onnxopt.Error):
                onnxopt.optimize(data[:cut])


# --- check and run: the same figures as opt check; outputs as onnxruntime's --------------------


def test_check_matches_opt_check_report(tmp_path: Path) -> None:
    model = REPO / "models/transformers/bert_legacy/model.onnx"
    out = tmp_path / "out.onnx"
    report_file = tmp_path / "report.json"
    assert run_opt(model, "-o", out).returncode == 0
    proc = run_opt("check", model, out, "--per-layer", "--report", report_file)
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(report_file.read_text())["check"]
    report = onnxopt.check(model, onnx.load(out), per_layer=True)
    assert report and report.passed and not report.failures()
    mine = report.to_dict()
    assert mine["runner"] == cli["runner"] and mine["seed"] == cli["seed"]
    assert [i["name"] for i in mine["inputs"]] == [i["name"] for i in cli["inputs"]]
    for key in ("outputs", "per_layer"):
        assert len(mine[key]) == len(cli[key])
        for a, b in zip(mine[key], cli[key]):
            for field in ("name", "dtype", "shape", "mismatches", "passed", "atol", "rtol"):
                assert a[field] == b[field], (key, field)
            for field in ("max_abs_error", "max_rel_error", "mean_abs_error", "cosine_similarity"):
                assert a[field] == pytest.approx(b[field], rel=1e-9, abs=1e-12), (key, field)


def test_check_reports_a_changed_model(tmp_path: Path) -> None:
    model = onnx.load(REPO / "models/tiny_cnn/model.onnx")
    broken = onnx.ModelProto()
    broken.CopyFrom(model)
    init = broken.graph.initializer[0]
    w = onnx.numpy_helper.to_array(init).copy()
    w.flat[0] += 1.0
    init.CopyFrom(onnx.numpy_helper.from_array(w, init.name))
    report = onnxopt.check(model, broken, per_layer=True)
    assert not report and report.failures()
    assert report.first_failing_value is not None and report.first_failing_op is not None
    assert "FAILED" in str(report)


@pytest.mark.parametrize("case", golden.load_manifest(), ids=lambda g: g.name)
def test_run_matches_onnxruntime_goldens(case: golden.Golden) -> None:
    # The goldens are onnxruntime's outputs on the unoptimized model (tools/regen_goldens.py).
    kwargs: dict = {}
    args = list(case.args)
    for i, a in enumerate(args):
        if a.startswith("-O"):
            kwargs["level"] = int(a[2:])
        elif a == "--target-opset":
            kwargs["target_opset"] = int(args[i + 1])
    model = onnx.load(case.model)
    initializers = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    feeds = dict(zip(names, golden.read_tensors(case.data, "input")))
    expected = golden.read_tensors(case.data, "output")
    optimized = onnxopt.optimize(case.model, **kwargs)
    got = onnxopt.run(optimized, feeds)
    assert list(got) == [o.name for o in model.graph.output]
    for (name, actual), want in zip(got.items(), expected):
        assert actual.dtype == want.dtype and actual.shape == want.shape, name
        np.testing.assert_allclose(actual.astype(np.float64), want.astype(np.float64),
                                   rtol=case.rtol, atol=case.atol, err_msg=f"{case.name}: {name}")


def _counting_loop(trips: int) -> onnx.ModelProto:
    """y = x + trips, by a Loop of `trips` iterations whose condition passes through."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["x_in", "one"], ["x_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [])],
        [onnx.numpy_helper.from_array(np.array(1, np.float32), "one")])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body, name="loop")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        [onnx.numpy_helper.from_array(np.array(trips, np.int64), "M")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_run_and_check_take_the_run_limits() -> None:
    """max_iterations and max_memory are opt's --max-iterations and --max-memory."""
    x = {"x": np.array(0, np.float32)}
    with pytest.raises(onnxopt.ResourceExhaustedError, match="node 'loop' .* would run 1000000000000 loop"):
        onnxopt.run(_counting_loop(10**12), x)
    model = _counting_loop(100)
    assert onnxopt.run(model, x, max_iterations=100)["y"] == 100
    with pytest.raises(onnxopt.ResourceExhaustedError, match="more than the 99 a run may make"):
        onnxopt.run(model, x, max_iterations=99)
    with pytest.raises(onnxopt.ResourceExhaustedError, match="more than the 99 a run may make"):
        onnxopt.check(model, model, inputs=x, max_iterations=99)
    assert onnxopt.check(model, model, inputs=x, max_iterations=100, max_memory=1 << 20)
    with pytest.raises(onnxopt.InvalidArgumentError, match="max_memory must be positive"):
        onnxopt.run(model, x, max_memory=0)


def test_runner_onnxruntime_is_onnxruntime() -> None:
    import onnxruntime as ort

    path = REPO / "models/transformers/gpt2_legacy/model.onnx"
    model = onnx.load(path)
    feeds = {}
    for i in model.graph.input:
        dims = [d.dim_value or 2 for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = np.random.default_rng(3).integers(0, 50, dims).astype(np.int64)
    options = ort.SessionOptions()  # as ort_runner.py runs it: the graph as written
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    via_runner = onnxopt.run(path, feeds, runner="onnxruntime")
    ours = onnxopt.run(onnxopt.optimize(path), feeds)
    assert list(via_runner) == list(want) == list(ours)
    for name in want:
        np.testing.assert_array_equal(via_runner[name], want[name])
        np.testing.assert_allclose(ours[name], want[name], rtol=1e-4, atol=1e-5)
    assert onnxopt.check(path, onnxopt.optimize(path), runner="onnxruntime")


DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_element_type_crosses_unchanged(dtype: str) -> None:
    import ml_dtypes

    from onnxopt._arrays import onnx_type_name

    np_type = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    elem = onnx.helper.np_dtype_to_tensor_dtype(np_type)
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id",
                              [helper.make_tensor_value_info("x", elem, [3, 5])],
                              [helper.make_tensor_value_info("y", elem, [3, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    values = np.arange(-7, 8).reshape(3, 5) % (2 if dtype == "bool" else 16)
    if dtype.startswith("u"):
        values = np.abs(values)
    if dtype == "int4":
        values = np.arange(-8, 7).reshape(3, 5)
    x = values.astype(np_type)
    y = onnxopt.run(model.SerializeToString(), {"x": x})["y"]
    assert y.dtype == np_type and y.shape == (3, 5) and onnx_type_name(y.dtype)
    np.testing.assert_array_equal(y.view(np.uint8) if np_type.itemsize == 1 else y, x.view(
        np.uint8) if np_type.itemsize == 1 else x)


def test_string_and_sequence_outputs() -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["t"]),
         helper.make_node("SequenceConstruct", ["x", "x"], ["seq"])], "str",
        [helper.make_tensor_value_info("s", TensorProto.STRING, [2]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("t", TensorProto.STRING, [2]),
         helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.array([1.5, -2.0], np.float32)
    out = onnxopt.run(model, {"s": np.array(["héllo", "x"]), "x": x})
    assert out["t"].tolist() == ["héllo", "x"]
    assert [a.tolist() for a in out["seq"]] == [x.tolist(), x.tolist()]


def test_missing_inputs_get_the_cli_random_values(tmp_path: Path) -> None:
    model = REPO / "models/tiny_cnn/model.onnx"
    ours = onnxopt.run(model, seed=5)
    npz = tmp_path / "out"
    npz.mkdir()
    proc = run_opt("run", model, "--seed", "5", "--save-outputs", npz)
    assert proc.returncode == 0, proc.stderr
    saved = sorted(npz.glob("*.npy"))
    assert saved, list(npz.iterdir())
    np.testing.assert_array_equal(np.load(saved[0]), next(iter(ours.values())))


def test_infer_shapes_writes_value_info() -> None:
    model = onnx.load(REPO / "models/transformers/llama_dynamo/model.onnx")
    initializers = {t.name for t in model.graph.initializer}
    # The exporter's shapes of the values nodes make (onnxopt writes none for initializers).
    want = {v.name: v for v in model.graph.value_info if v.name not in initializers}
    assert len(want) > 100
    del model.graph.value_info[:]
    inferred = onnxopt.infer_shapes(model)
    got = {v.name: v for v in inferred.graph.value_info}
    assert set(want) <= set(got)
    for name, v in want.items():
        assert got[name].type.tensor_type.elem_type == v.type.tensor_type.elem_type, name
        assert len(got[name].type.tensor_type.shape.dim) == len(v.type.tensor_type.shape.dim), name


def test_warnings_are_onnxopt_warnings() -> None:
    # Accepted input with a warning (opt prints it too): two versions of the default opset.
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "w",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("", 18)])
    with pytest.warns(onnxopt.OnnxoptWarning, match="opset_import lists domain '' twice"):
        optimized = onnxopt.optimize(model)
    assert [o.version for o in optimized.opset_import if o.domain in ("", "ai.onnx")] == [18]


# --- threads -------------------------------------------------------------------------------------


def test_threads_optimize_concurrently() -> None:
    models = BUNDLED[:8] + REAL[-4:]
    data = [m.read_bytes() for m in models]
    sequential = [onnxopt.optimize(d, level=3) for d in data]
    results: dict = {}
    errors: list = []

    def work(k: int) -> None:
        try:
            for i in range(len(data)):
                j = (i + k) % len(data)
                results[(k, j)] = onnxopt.optimize(data[j], level=3)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 6 * len(data)
    for (k, j), m in results.items():
        assert m == sequential[j], (k, models[j])


# --- models over 2 GB ----------------------------------------------------------------------------


@pytest.mark.large
def test_optimize_file_writes_a_model_over_2_gb(tmp_path: Path) -> None:
    import shutil

    import test_external_data_large as large

    free = shutil.disk_usage(tmp_path).free
    assert free > 2.5 * large.MODEL_DATA_BYTES, f"{tmp_path}: {free >> 20} MiB free is too little"
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    model_path, expected = large._write_large_model(tmp_path / "in")
    out = tmp_path / "out" / "large.onnx"
    summary = onnxopt.optimize_file(model_path, out)  # over 2 GB: its data goes external
    assert summary["nodes_after"] == summary["nodes_before"] == large.TENSOR_COUNT
    large._check_large_output(out, expected)
    # The same model as a ModelProto: its big weights cross the native boundary apart from the
    # graph (docs/python.md), so a result over protobuf's 2 GB serialization limit comes back whole.
    result = onnxopt.optimize(model_path)
    assert len(result.graph.node) == large.TENSOR_COUNT
    assert sum(len(t.raw_data) for t in result.graph.initializer) >= large.MODEL_DATA_BYTES
