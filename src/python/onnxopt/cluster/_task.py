"""One task of a cluster run: one model at one level and target, checked or benchmarked by the
opt binary in subprocesses, so that a crash of the native code ends that subprocess, never the
Ray worker or the driver. Nothing here imports Ray: the worker calls run_task."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence


@dataclass(frozen=True)
class Task:
    command: str  #: "check" or "bench"
    model: str  #: the path as given: the report's "input"
    path: str  #: the absolute path the worker reads
    level: int
    target: str  #: "" (portable ONNX) or an opt --target
    runner: str

    @property
    def key(self) -> str:
        """What names the task in the report (and what --resume looks for)."""
        return f"{self.model} -O{self.level}" + (f" --target {self.target}" if self.target else "")


def _die_with_parent() -> None:
    # A worker that Ray kills (or that dies) takes its opt with it, instead of leaving it running
    # on the node; Ray then retries the task elsewhere. (Looked up before the fork: the child of
    # a threaded worker may run no import.)
    if _prctl is not None:
        _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


if sys.platform.startswith("linux"):
    import ctypes

    _prctl = ctypes.CDLL(None).prctl
else:
    _prctl = None


def _run_opt(opt: str, env: Dict[str, str], args: List[str], task: Task,
             timeout: Optional[float]) -> Optional[str]:
    """Runs opt; None when it exited 0 or 3 (a check past tolerance), else the error to report."""
    try:
        proc = subprocess.run([opt, *args], capture_output=True, text=True, errors="replace",
                              env=env, timeout=timeout, preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired:
        return f"opt did not finish within {timeout:g} s"
    except OSError as e:
        return f"{opt}: cannot run: {e.strerror}"
    if proc.returncode in (0, 3):
        return None
    errors = [ln[len("opt: error: "):] for ln in proc.stderr.splitlines()
              if ln.startswith("opt: error: ")]
    if errors:
        message = errors[-1]
    elif proc.returncode < 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        message = f"opt crashed ({signal.Signals(-proc.returncode).name})" + (
            f": {tail}" if tail else "")
    else:
        message = f"opt exited with status {proc.returncode}: {proc.stderr.strip()[-500:]}"
    return message.replace(task.path, task.model)


def _opt_binary(opt: Optional[str]) -> tuple:
    from .._cli import PACKAGE_OPT, opt_env  # the package, on the worker's node

    return opt or PACKAGE_OPT, opt_env()


def run_task(task: Task, opt: Optional[str] = None, opt_args: Sequence[str] = (),
             timeout: Optional[float] = None) -> Dict[str, Any]:
    """The task's record: what `opt MODEL -o OUT -O{level} --report R` wrote (check: with
    --check --runner RUNNER; bench: and `opt bench OUT --json` under "bench"), or the error that
    stopped it, with the task's "level", "target", "status", "host" and "wall_seconds".
    opt_args go to every opt run (check: the optimize-and-check one; bench: opt bench)."""
    start = time.monotonic()
    binary, env = _opt_binary(opt)
    record: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="onnxopt-cluster-") as tmp:
        out, report = os.path.join(tmp, "out.onnx"), os.path.join(tmp, "report.json")
        args = [task.path, "-o", out, f"-O{task.level}", "--report", report]
        if task.target:
            args += ["--target", task.target]
        if task.command == "check":
            args += ["--check", "--runner", task.runner, *opt_args]
        error = _run_opt(binary, env, args, task, timeout)
        if error is None:
            with open(report, encoding="utf-8") as f:
                record.update(json.load(f))
            record["output"] = None  # the optimized model is not kept
        if error is None and task.command == "bench":
            bench = os.path.join(tmp, "bench.json")
            error = _run_opt(binary, env, ["bench", out, "--device", task.runner, "--json", bench,
                                           *opt_args], task, timeout)
            if error is None:
                with open(bench, encoding="utf-8") as f:
                    record["bench"] = {**json.load(f), "model": None}
    record.update(input=task.model, level=task.level, target=task.target or None,
                  runner=task.runner)
    if error is not None:
        record.update(status="error", error=error)
    elif task.command == "check" and not record["check"]["passed"]:
        record["status"] = "failed"
    else:
        record["status"] = "passed"
    record.update(host=socket.gethostname(), wall_seconds=round(time.monotonic() - start, 3))
    return record
