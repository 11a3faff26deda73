"""Model-zoo regression and benchmarks on a Ray cluster: each model, at each level and target,
one Ray task that runs opt on a worker, and one merged report.

    python -m onnxopt.cluster check MODELS... --report r.json [--address ray://HOST:PORT]
        [--runner reference|cuda|onnxruntime] [--levels 1,2,3] [--targets portable,cuda]
        [--resume] [-- OPT ARGUMENTS...]
    python -m onnxopt.cluster bench MODELS... --report r.json --runner cuda

Ray is an optional dependency (`pip install onnxopt[ray]`): this package imports it only when a
run starts, and `import onnxopt` never does. docs/cluster.md describes the report.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, Optional, Sequence

from .. import __version__

__all__ = ["main"]

_PROG = "python -m onnxopt.cluster"
_RUNNERS = {"check": ("reference", "cuda", "onnxruntime"), "bench": ("reference", "cuda")}
_TARGETS = {"portable": "", "cuda": "cuda"}


class _Usage(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=_PROG, description="Check or benchmark many models on a Ray cluster (one task per "
        "model, level and target) into one report. Arguments after `--` go to every opt run.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, what in (("check", "optimize each model and check it against the original "
                                 "(opt MODEL -o OUT -O LEVEL --check --runner RUNNER)"),
                       ("bench", "optimize each model and time the result (opt bench)")):
        c = sub.add_parser(name, help=what, description=what)
        c.add_argument("models", nargs="+", help="model files, or folders: every .onnx under them")
        c.add_argument("--report", required=True,
                       help="the merged report (JSON; Markdown beside it with .md)")
        c.add_argument("--address", help="the Ray cluster (ray://HOST:PORT, or auto); default: "
                       "a local Ray instance for this run")
        c.add_argument("--runner", choices=_RUNNERS[name], default="reference",
                       help="what runs the models (cuda: each task takes a GPU)")
        c.add_argument("--levels", default="2", help="optimization levels, e.g. 1,2,3 (default 2)")
        c.add_argument("--targets", default="portable",
                       help="portable (opt's default) and/or cuda (opt --target cuda), e.g. "
                       "portable,cuda")
        c.add_argument("--resume", action="store_true",
                       help="keep the results REPORT (or its journal) holds and run the rest")
        c.add_argument("--max-retries", type=int, default=3,
                       help="tries again a task whose worker died, this many times (default 3)")
        c.add_argument("--timeout", type=float, default=3600,
                       help="seconds one opt run may take (default 3600)")
        c.add_argument("--num-cpus", type=int, help="the size of the local Ray instance")
        c.add_argument("--opt", help="the opt binary to run on the workers (default: the "
                       "package's)")
    return p


def _split_levels(text: str) -> List[int]:
    try:
        levels = sorted({int(x) for x in text.split(",")})
    except ValueError:
        raise _Usage(f"--levels: {text!r} is not a list of levels 0..3") from None
    if not all(0 <= lv <= 3 for lv in levels):
        raise _Usage(f"--levels: {text!r}: levels are 0..3")
    return levels


def _split_targets(text: str) -> List[str]:
    names = text.split(",")
    unknown = [n for n in names if n not in _TARGETS]
    if unknown:
        raise _Usage(f"--targets: unknown target {unknown[0]!r} (portable or cuda)")
    return [_TARGETS[n] for n in dict.fromkeys(names)]


def _models(paths: Sequence[str]) -> List[tuple]:
    """(given path, absolute path) of every model; a folder: every .onnx under it, sorted."""
    models = []
    for given in paths:
        if os.path.isdir(given):
            found = sorted(os.path.join(d, f) for d, _, fs in os.walk(given) for f in fs
                           if f.endswith(".onnx"))
            if not found:
                raise _Usage(f"{given}: no .onnx file in this folder")
            models += [(os.path.normpath(f), os.path.abspath(f)) for f in found]
        elif os.path.isfile(given):
            models.append((os.path.normpath(given), os.path.abspath(given)))
        else:
            raise _Usage(f"{given}: no such model file or folder")
    return list(dict.fromkeys(models))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line; returns the exit status: 0 when every task passed, 3 when one failed or
    could not run (the report says which), 1 when the run itself failed, 2 on bad usage (Ray
    missing among it), 130 when interrupted (the report keeps what finished)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    opt_args = argv[argv.index("--") + 1:] if "--" in argv else []
    args = _parser().parse_args(argv[:len(argv) - len(opt_args) - (1 if "--" in argv else 0)])
    try:
        import ray  # noqa: F401
    except ImportError:
        sys.stderr.write(f"{_PROG}: error: Ray is not installed; pip install 'onnxopt[ray]'\n")
        return 2
    from ._driver import connect, missing_gpus, task_list
    from ._journal import Journal, ResumeMismatch, previous_records

    try:
        tasks = task_list(args.command, _models(args.models), _split_levels(args.levels),
                          _split_targets(args.targets), args.runner)
        header = {"onnxopt_version": __version__, "command": f"cluster {args.command}",
                  "runner": args.runner, "opt_args": opt_args}
        if not os.path.isdir(os.path.dirname(os.path.abspath(args.report))):
            raise _Usage(f"{args.report}: its folder does not exist")
        records = previous_records(args.report, header) if args.resume else []
    except (_Usage, ResumeMismatch) as e:
        sys.stderr.write(f"{_PROG}: error: {e}\n")
        return 2
    except (ValueError, KeyError) as e:  # a report or journal that is not one
        sys.stderr.write(f"{_PROG}: error: {args.report}: cannot resume: not a report ({e})\n")
        return 2
    try:
        started = connect(args.address, args.num_cpus)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f" at {args.address}" if args.address else ""
        sys.stderr.write(f"{_PROG}: error: cannot start or reach Ray{where}: {e}\n")
        return 1
    try:
        problem = missing_gpus(tasks, args.address)
        if problem:
            sys.stderr.write(f"{_PROG}: error: {problem}\n")
            return 1
        return _run(args, tasks, Journal(args.report, header, records), opt_args)
    except OSError as e:
        sys.stderr.write(f"{_PROG}: error: {args.report}: {e.strerror}\n")
        return 1
    finally:
        if started:
            import ray

            ray.shutdown()


def _run(args: argparse.Namespace, tasks: list, journal: Any, opt_args: List[str]) -> int:
    """Runs the tasks into the journal; the exit status as main's."""
    from ._driver import run_tasks

    complete = False
    try:
        run_tasks(tasks, journal, opt=args.opt, opt_args=opt_args, timeout=args.timeout,
                  max_retries=args.max_retries)
        complete = True
    except KeyboardInterrupt:
        pass
    finally:
        kept = journal.close(complete)
    s = journal.merged()["summary"]
    sys.stderr.write(f"{args.report}: {s['tasks']} tasks, {s['passed']} passed, {s['failed']} "
                     f"failed, {s['error']} errors\n")
    if not complete:
        sys.stderr.write(f"{_PROG}: interrupted; the results so far are in {args.report} and "
                         f"{kept}: --resume runs the rest\n")
        return 130
    return 0 if s["passed"] == s["tasks"] else 3
