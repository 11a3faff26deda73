"""python -m onnxopt.cluster: many models checked on a local Ray cluster of two worker processes.

Every model of a run appears once in the merged report, whatever happens to the workers: a worker
killed in the middle of a task is replaced and the task tried again; opt crashing on a model is
that model's failure, tried once; results reach the disk as tasks finish, so an interrupted run
keeps them and --resume runs only the rest. The models are copies of models/tiny_cnn; a wrapper
around opt (--opt) counts the runs of each model and kills or crashes where a model's name asks.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import ray

from onnxopt.cluster import main

REPO = Path(__file__).resolve().parents[3]
OPT = Path(os.environ.get("ONNXOPT_OPT", REPO / "build" / "bin" / "opt"))

# Runs opt; first appends "run $CUDA_VISIBLE_DEVICES" to RUNS/<model>.runs. "kill_worker" kills
# the Ray worker that runs it (its parent) on the first of its runs (mkdir: one of two at once),
# "always_kill" on every run; "crash" dies of SIGSEGV as a crash in native code would; "slow"
# waits for RUNS/release (30 s at most).
WRAPPER = """#!/bin/sh
name=$(basename "$1" .onnx)
echo "run ${{CUDA_VISIBLE_DEVICES-}}" >> "{runs}/$name.runs"
case "$name" in
  kill_worker) ! mkdir "{runs}/killed" 2>/dev/null || {{ kill -9 $PPID; exec sleep 30; }} ;;
  always_kill) kill -9 $PPID; exec sleep 30 ;;
  crash) kill -SEGV $$ ;;
  slow) i=0; while [ ! -e "{runs}/release" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done ;;
esac
exec "{opt}" "$@"
"""


@pytest.fixture(scope="module")
def local_ray():
    # Two worker processes, as on a CI machine of two cores; runs in this process use it. The GPU
    # is declared, not real: Ray hands it to the cuda runner's tasks (CUDA_VISIBLE_DEVICES).
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def make_models(folder: Path, names: list[str]) -> list[str]:
    folder.mkdir(exist_ok=True)
    for n in names:
        shutil.copy(REPO / "models/tiny_cnn/model.onnx", folder / f"{n}.onnx")
    return [str(folder / f"{n}.onnx") for n in names]


def wrapper(tmp_path: Path) -> tuple[str, Path]:
    runs = tmp_path / "runs"
    runs.mkdir()
    script = tmp_path / "opt"
    script.write_text(WRAPPER.format(runs=runs, opt=OPT))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script), runs


def run_counts(runs: Path) -> dict[str, int]:
    return {p.stem: len(p.read_text().splitlines()) for p in runs.glob("*.runs")}


def results(report: Path) -> dict[str, dict]:
    merged = json.loads(report.read_text())
    keys = [r["task"] for r in merged["results"]]
    assert len(keys) == len(set(keys)), f"a task reported twice: {keys}"
    return {r["task"]: r for r in merged["results"]}


def test_every_model_once_when_a_worker_dies_mid_run(local_ray, tmp_path: Path) -> None:
    opt, runs = wrapper(tmp_path)
    models = make_models(tmp_path / "m", ["a", "b", "kill_worker", "c", "d"])
    report = tmp_path / "r.json"
    rc = main(["check", *models, "--levels", "1,2", "--report", str(report), "--opt", opt])
    assert rc == 0
    got = results(report)
    assert set(got) == {f"{m} -O{lv}" for m in models for lv in (1, 2)}
    assert all(r["status"] == "passed" and r["check"]["passed"] for r in got.values())
    # The killed task ran again on a new worker; no other task ran twice.
    counts = run_counts(runs)
    assert counts.pop("kill_worker") == 3 and set(counts.values()) == {2}
    assert (runs / "killed").exists()
    # The Markdown page beside the report has a row per task.
    md = (tmp_path / "r.md").read_text()
    assert "10 tasks, 10 passed, 0 failed, 0 errors" in md
    assert all(f"| {m} | -O{lv} | passed |" in md for m in models for lv in (1, 2))
    assert not (tmp_path / "r.jsonl").exists(), "a finished run keeps no journal"


def test_a_crash_is_a_failure_with_its_message_tried_once(local_ray, tmp_path: Path) -> None:
    opt, runs = wrapper(tmp_path)
    models = make_models(tmp_path / "m", ["a", "crash", "always_kill"])
    report = tmp_path / "r.json"
    rc = main(["check", *models, "--report", str(report), "--opt", opt, "--max-retries", "1"])
    assert rc == 3
    got = results(report)
    assert len(got) == 3 and got[f"{models[0]} -O2"]["status"] == "passed"
    crash = got[f"{models[1]} -O2"]
    assert crash["status"] == "error" and "opt crashed (SIGSEGV)" in crash["error"]
    killed = got[f"{models[2]} -O2"]
    assert killed["status"] == "error"
    assert "worker running it died on each of 2 tries" in killed["error"]
    assert run_counts(runs) == {"a": 1, "crash": 1, "always_kill": 2}
    merged = json.loads(report.read_text())
    assert merged["summary"] == {"tasks": 3, "passed": 1, "failed": 0, "error": 2}


def test_errors_and_failures_carry_opts_message(local_ray, tmp_path: Path) -> None:
    # The package's own opt (no --opt): a model opt refuses, and outputs past a zero tolerance.
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    model = REPO / "models/tiny_cnn/model.onnx"
    report = tmp_path / "r.json"
    rc = main(["check", str(broken), str(model), "--report", str(report), "--",
               "--atol", "0", "--rtol", "0"])
    assert rc == 3
    got = results(report)
    error = got[f"{broken} -O2"]
    assert error["status"] == "error" and error["error"].startswith(f"{broken}: ")
    failed = got[f"{os.path.normpath(model)} -O2"]
    assert failed["status"] == "failed" and not failed["check"]["passed"]
    assert failed["check"]["outputs"][0]["atol"] == 0
    # The record is opt's --report: the pipeline, counts and passes are there.
    assert failed["command"] == "optimize" and failed["before"]["nodes"] > failed["after"]["nodes"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_results_stream_and_resume_runs_the_rest(local_ray, tmp_path: Path, sig: int) -> None:
    opt, runs = wrapper(tmp_path)
    models = make_models(tmp_path / "m", ["a", "b", "slow"])
    report, journal = tmp_path / "r.json", tmp_path / "r.jsonl"
    driver = subprocess.Popen(
        [sys.executable, "-m", "onnxopt.cluster", "check", *models, "--report", str(report),
         "--opt", opt, "--num-cpus", "2"], stderr=subprocess.PIPE, text=True)
    try:
        # a and b reach the journal while slow still runs: nothing waits for the end of the run.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            lines = journal.read_text().splitlines() if journal.exists() else []
            if len(lines) == 3:  # the header and two records
                break
            assert driver.poll() is None, driver.stderr.read()
            time.sleep(0.2)
        assert len(lines) == 3, lines
        driver.send_signal(sig)
        _, err = driver.communicate(timeout=60)
    finally:
        driver.kill()
        (runs / "release").touch()
    if sig == signal.SIGINT:  # the report is written, and says how to go on
        assert driver.returncode == 130, err
        assert "--resume runs the rest" in err
        assert set(results(report)) == {f"{m} -O2" for m in models[:2]}
    assert journal.exists()
    # Resumed with one more model: only slow and the new one run.
    models += make_models(tmp_path / "m", ["e"])
    rc = main(["check", *models, "--report", str(report), "--opt", opt, "--resume"])
    assert rc == 0
    assert set(results(report)) == {f"{m} -O2" for m in models}
    assert run_counts(runs) == {"a": 1, "b": 1, "slow": 2, "e": 1}
    # Resuming with other settings is refused before anything runs.
    rc = main(["check", *models, "--report", str(report), "--opt", opt, "--resume",
               "--runner", "onnxruntime"])
    assert rc == 2 and run_counts(runs)["e"] == 1


def test_the_cuda_runner_takes_a_gpu_per_task(local_ray, tmp_path: Path) -> None:
    opt, runs = wrapper(tmp_path)
    models = make_models(tmp_path / "m", ["a", "b"])
    report = tmp_path / "r.json"
    rc = main(["check", *models, "--report", str(report), "--opt", opt, "--runner", "cuda"])
    # Each run saw the one GPU Ray gave its task; the CPU-only tools answer what opt answers.
    assert {p.read_text() for p in runs.glob("*.runs")} == {"run 0\n"}
    got = results(report)
    assert len(got) == 2 and rc == (0 if all(r["status"] == "passed" for r in got.values()) else 3)
    assert all(r["runner"] == "cuda" for r in got.values())


def test_without_ray_one_error_line_and_exit_2(tmp_path: Path) -> None:
    # `import onnxopt` and `import onnxopt.cluster` never import Ray; the command needs it.
    script = ("import sys; sys.modules['ray'] = None\n"
              "import onnxopt, onnxopt.cluster\n"
              "sys.argv = ['cluster', 'check', sys.argv[1], '--report', sys.argv[2]]\n"
              "import runpy; runpy.run_module('onnxopt.cluster', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", script, str(REPO / "models/tiny_cnn/model.onnx"),
                           str(tmp_path / "r.json")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "python -m onnxopt.cluster: error: Ray is not installed; pip install 'onnxopt[ray]'"]
    assert not (tmp_path / "r.json").exists()
    proc = subprocess.run([sys.executable, "-c", "import sys, onnxopt, onnxopt.cluster; "
                           "print('ray' in sys.modules)"], capture_output=True, text=True)
    assert proc.stdout.strip() == "False", proc.stderr


def test_ray_is_the_packages_extra_only() -> None:
    # pip install onnxopt[ray] brings Ray (with its client, for ray:// addresses), onnxopt[serve]
    # Ray Serve (onnxopt.serve); onnxopt itself does not.
    requires = importlib.metadata.requires("onnxopt") or []
    ray_deps = [r.replace(" ", "") for r in requires if r.startswith("ray")]
    assert ray_deps and all(r.endswith((';extra=="ray"', ';extra=="serve"')) for r in ray_deps)
    assert any(r.startswith("ray[client]") and r.endswith(';extra=="ray"') for r in ray_deps)
    assert any(r.startswith("ray[serve]") and r.endswith(';extra=="serve"') for r in ray_deps)


def test_bad_usage_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = str(REPO / "models/tiny_cnn/model.onnx")
    for args, message in [([str(tmp_path / "nope.onnx")], "no such model file or folder"),
                          ([model, "--levels", "2,7"], "levels are 0..3"),
                          ([model, "--targets", "tpu"], "unknown target 'tpu'")]:
        rc = main(["check", *args, "--report", str(tmp_path / "r.json")])
        assert rc == 2 and message in capsys.readouterr().err, args
    with pytest.raises(SystemExit) as e:  # argparse: opt bench has no onnxruntime runner
        main(["bench", model, "--report", str(tmp_path / "r.json"), "--runner", "onnxruntime"])
    assert e.value.code == 2
