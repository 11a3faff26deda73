"""The example plugin (tools/plugins/swiglu) through `opt --plugin`, and the same replacement as a
rules file (tools/plugins/swiglu/swiglu_rules.onnxtxt), on the generated Llama-style MLP
(models/llama_mlp): the fused op is written with its function body, so onnxruntime runs the output
and matches the original; the reference runner runs it through the plugin's kernel (proved by a
model written without function bodies, which runs only with the plugin)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from roundtrip_check import REPO_ROOT

MODEL = REPO_ROOT / "models" / "llama_mlp" / "model.onnx"
RULES = REPO_ROOT / "tools" / "plugins" / "swiglu" / "swiglu_rules.onnxtxt"


@pytest.fixture(scope="module")
def plugin(opt: Path) -> Path:
    path = opt.parent.parent / "plugins" / "libonnxopt_swiglu.so"
    assert path.is_file(), f"{path}: the example plugin is built with opt (tools/plugins/swiglu)"
    return path


def _golden() -> tuple[np.ndarray, np.ndarray]:
    folder = MODEL.parent / "test_data_set_0"
    load = lambda name: onnx.numpy_helper.to_array(onnx.load_tensor(str(folder / name)))  # noqa: E731
    return load("input_0.pb"), load("output_0.pb")


def _ort(path: Path, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def _fused(path: Path) -> list[onnx.NodeProto]:
    return [n for n in onnx.load(str(path)).graph.node if n.domain == "example" and n.op_type == "SwiGLU"]


@pytest.mark.parametrize("how", ["plugin", "rules"])
def test_swiglu_replaced_and_portable(how: str, plugin: Path, run_opt, work_dir: Path) -> None:
    out = work_dir / "out.onnx"
    flags = ["--plugin", plugin] if how == "plugin" else ["--rewrite-rules", RULES]
    proc = run_opt(MODEL, "-o", out, *flags)
    assert proc.returncode == 0, proc.stderr
    assert len(_fused(out)) == 2  # both exported forms of the block
    model = onnx.load(str(out))
    assert [(f.domain, f.name) for f in model.functions] == [("example", "SwiGLU")]
    assert {o.domain: o.version for o in model.opset_import}.get("example") == 1
    onnx.checker.check_model(model, full_check=True)
    x, y = _golden()
    np.testing.assert_allclose(_ort(out, x), y, rtol=1e-5, atol=1e-5)


def test_reference_runner_uses_the_plugin_kernel(plugin: Path, run_opt, work_dir: Path) -> None:
    bare = work_dir / "bare.onnx"
    proc = run_opt(MODEL, "-o", bare, "--plugin", plugin, "--no-function-bodies")
    assert proc.returncode == 0, proc.stderr
    assert len(_fused(bare)) == 2 and not onnx.load(str(bare)).functions
    x, y = _golden()
    np.save(work_dir / "x.npy", x)
    # Without the plugin nothing runs the op; with it, its reference kernel does.
    proc = run_opt("run", bare, "--input", f"x={work_dir / 'x.npy'}")
    assert proc.returncode == 1 and "domain 'example' has no reference kernels" in proc.stderr, proc.stderr
    outputs = work_dir / "outputs"
    outputs.mkdir()
    proc = run_opt("run", "--plugin", plugin, bare, "--input", f"x={work_dir / 'x.npy'}",
                   "--save-outputs", outputs)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(outputs / "y.npy"), y, rtol=1e-5, atol=1e-5)
    # opt check: the original on the reference kernels against the plugin's kernel.
    proc = run_opt("check", "--plugin", plugin, MODEL, bare)
    assert proc.returncode == 0 and "check: passed" in proc.stdout, proc.stdout + proc.stderr


def test_plugin_pass_only_where_it_runs(plugin: Path, run_opt, work_dir: Path) -> None:
    """fuse-swiglu joins the level pipelines; -O0 runs nothing, a --passes pipeline names it."""
    proc = run_opt(MODEL, "-O0", "--plugin", plugin, "-o", work_dir / "o0.onnx")
    assert proc.returncode == 0 and not _fused(work_dir / "o0.onnx"), proc.stderr
    proc = run_opt(MODEL, "--plugin", plugin, "--passes=infer-shapes,fuse-swiglu,dce", "-o",
                   work_dir / "p.onnx")
    assert proc.returncode == 0 and len(_fused(work_dir / "p.onnx")) == 2, proc.stderr
    proc = run_opt("--plugin", plugin, "--list-passes")
    assert proc.returncode == 0 and "fuse-swiglu" in proc.stdout, proc.stderr


@pytest.mark.parametrize("export", ["llama_legacy", "llama_dynamo"])
@pytest.mark.parametrize("how", ["plugin", "rules"])
def test_swiglu_in_torch_exports(export: str, how: str, plugin: Path, run_opt, work_dir: Path) -> None:
    """Both torch exporters' Llama MLPs (models/transformers): each layer's SwiGLU is replaced;
    onnxruntime on the output (through the function body) matches the golden outputs."""
    folder = REPO_ROOT / "models" / "transformers" / export
    out = work_dir / "out.onnx"
    flags = ["--plugin", plugin] if how == "plugin" else ["--rewrite-rules", RULES]
    proc = run_opt(folder / "model.onnx", "-o", out, *flags)
    assert proc.returncode == 0, proc.stderr
    assert len(_fused(out)) == 2, "one SwiGLU per decoder layer"
    onnx.checker.check_model(str(out), full_check=True)
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    data = folder / "test_data_set_0"
    inputs = sorted(data.glob("input_*.pb"))
    feeds = {i.name: onnx.numpy_helper.to_array(onnx.load_tensor(str(p)))
             for i, p in zip(sess.get_inputs(), inputs)}
    expected = [onnx.numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(data.glob("output_*.pb"))]
    for got, want in zip(sess.run(None, feeds), expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    if how == "plugin":  # and the reference runner through the plugin's kernel
        proc = run_opt("check", "--plugin", plugin, folder / "model.onnx", out)
        assert proc.returncode == 0 and "check: passed" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("case", ["missing", "not_a_library"])
def test_bad_plugin_is_a_clear_error(case: str, run_opt, work_dir: Path) -> None:
    path = work_dir / "libnone.so" if case == "missing" else MODEL
    out = work_dir / "o.onnx"
    proc = run_opt(MODEL, "--plugin", path, "-o", out)
    assert proc.returncode == 1 and str(path) in proc.stderr and not out.exists(), proc.stderr
    assert ("no such file" if case == "missing" else "cannot load it") in proc.stderr
