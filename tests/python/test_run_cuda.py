"""`opt run --device cuda` and `opt check --runner cuda` from the command line: on a machine without a
GPU (or a build without CUDA) a clear error and exit 1; with one, the run's outputs and, with --stats,
the plan summary (arena, intermediate and weight bytes, fallback nodes)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "models" / "tiny_cnn" / "model.onnx"


def _outputs(stdout: str) -> list[str]:
    return [line.split(":")[0] for line in stdout.splitlines() if line.startswith("output ")]


def test_run_on_cuda_or_a_clear_error(run_opt) -> None:
    proc = run_opt("run", MODEL, "--device", "cuda", "--stats")
    if proc.returncode == 1:
        assert f"opt: error: {MODEL}: cuda runner: no usable CUDA device 0" in proc.stderr, \
            proc.stderr
        assert "output " not in proc.stdout
        return
    assert proc.returncode == 0, proc.stderr
    assert "plan: " in proc.stdout and "memory: arena " in proc.stdout, proc.stdout
    reference = run_opt("run", MODEL)
    assert reference.returncode == 0, reference.stderr
    assert _outputs(proc.stdout) == _outputs(reference.stdout)


def test_check_with_the_cuda_runner(run_opt) -> None:
    proc = run_opt("check", MODEL, MODEL, "--runner", "cuda")
    if proc.returncode == 1 and "no usable CUDA device" in proc.stderr:
        return
    assert proc.returncode == 0, proc.stderr
    assert "check: runner cuda" in proc.stdout, proc.stdout


def test_unknown_device_is_a_usage_error(run_opt) -> None:
    proc = run_opt("run", MODEL, "--device", "tpu")
    assert proc.returncode not in (0, 1), (proc.returncode, proc.stderr)
    assert "--device" in proc.stderr, proc.stderr
