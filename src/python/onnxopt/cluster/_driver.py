"""The Ray side of a cluster run: one task per model, level and target, with the resources its
runner needs; results go to the journal as they finish, and a progress bar to stderr."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, TextIO

from ._journal import Journal
from ._task import Task, run_task


class Progress:
    """A bar redrawn in place on a terminal; elsewhere (CI logs) one line per finished task."""

    def __init__(self, total: int, skipped: int, stream: TextIO = sys.stderr) -> None:
        self.total, self.done, self.stream = total, 0, stream
        self.tty = stream.isatty()
        self.counts = {"passed": 0, "failed": 0, "error": 0}
        self.start = time.monotonic()
        if skipped:
            stream.write(f"resume: {skipped} tasks already in the report\n")

    def update(self, record: Dict[str, Any]) -> None:
        self.done += 1
        self.counts[record["status"]] += 1
        c = self.counts
        counts = f"{c['passed']} passed, {c['failed']} failed, {c['error']} errors"
        if self.tty:
            filled = 30 * self.done // max(self.total, 1)
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}"
                              f"  {counts}  {time.monotonic() - self.start:.0f} s")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"[{self.done}/{self.total}] {record['task']}: {record['status']}\n")
        self.stream.flush()


def _failure(task: Task, error: Exception, retries: int) -> Dict[str, Any]:
    import ray.exceptions as rex

    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if isinstance(error, (rex.WorkerCrashedError, rex.NodeDiedError, rex.OutOfMemoryError)):
        message = f"the worker running it died on each of {retries + 1} tries ({first})"
    else:
        message = f"{type(error).__name__}: {first}"
    return {"task": task.key, "input": task.model, "level": task.level,
            "target": task.target or None, "runner": task.runner, "status": "error",
            "error": message}


def connect(address: Optional[str], num_cpus: Optional[int]) -> bool:
    """Joins the Ray cluster at `address`, or starts a local instance (num_cpus: its size);
    a Ray already initialized in this process is used as it is. True when this call started it."""
    import ray

    if ray.is_initialized():
        return False
    kwargs: Dict[str, Any] = dict(log_to_driver=False, logging_level=logging.WARNING)
    if address:
        ray.init(address=address, **kwargs)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False, **kwargs)
    return True


def missing_gpus(tasks: Sequence[Task], address: Optional[str]) -> Optional[str]:
    """Why tasks that need a GPU would never run (a cluster without one), else None. A cluster
    named by --address may autoscale: there a warning is printed instead."""
    import ray

    if not any(t.runner == "cuda" for t in tasks) or ray.cluster_resources().get("GPU", 0) > 0:
        return None
    if address:
        sys.stderr.write(f"warning: the Ray cluster at {address} has no GPU yet: the cuda "
                         "runner's tasks wait for a node with one\n")
        return None
    return "the Ray cluster has no GPU, which each task of the cuda runner takes"


def run_tasks(tasks: Sequence[Task], journal: Journal, *, opt: Optional[str],
              opt_args: Sequence[str], timeout: Optional[float], max_retries: int) -> None:
    """Runs every task not in the journal, adding each record as it comes back. A worker that
    dies is retried by Ray up to max_retries times; opt failing (or crashing) is a record."""
    import ray

    todo = [t for t in tasks if not journal.done(t.key)]
    progress = Progress(len(todo), len(tasks) - len(todo))
    remote = ray.remote(run_task)
    pending: Dict[Any, Task] = {}
    for t in todo:
        resources = {"num_gpus": 1} if t.runner == "cuda" else {"num_cpus": 1}
        ref = remote.options(max_retries=max_retries, retry_exceptions=False,
                             name=f"onnxopt {t.command} {t.key}", **resources).remote(
            t, opt, list(opt_args), timeout)
        pending[ref] = t
    try:
        while pending:
            # Every task done within the half second, not one per call: a wait looks at all
            # that are pending, thousands in a model-zoo run.
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.5)
            for ref in ready:
                task = pending.pop(ref)
                try:
                    record = {"task": task.key, **ray.get(ref)}
                except ray.exceptions.RayError as e:
                    record = _failure(task, e, max_retries)
                journal.add(record)
                progress.update(record)
    finally:
        for ref in pending:  # interrupted: what did not finish is not recorded
            ray.cancel(ref, force=True)


def task_list(command: str, models: List[tuple], levels: List[int], targets: List[str],
              runner: str) -> List[Task]:
    """Every (model, level, target) as a Task; models as (given path, absolute path)."""
    return [Task(command, given, path, level, target, runner)
            for given, path in models for level in levels for target in targets]
