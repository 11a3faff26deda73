#!/usr/bin/env python3
"""Round-trips the whole corpus through opt and prints totals and failures (the property of test_roundtrip.py).

  tools/roundtrip_report.py [--opt PATH] [--shared DIR] [-j N] [-k SUBSTRING] [--opt-args ARGS] [-v]

--opt-args replaces -O0, e.g. --opt-args='--passes=dce,cse' to hold passes that should be exact to the same
bitwise standard. Exit status 1 when any case fails.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import roundtrip_check  # noqa: E402


COLUMNS: list[tuple[str, Callable[[roundtrip_check.Outcome], bool]]] = [
    ("cases", lambda o: True),
    ("checker-ok", lambda o: o.checker_ok),
    ("still-ok", lambda o: bool(o.checker_ok_after)),
    ("opt-ok", lambda o: o.opt_ok),
    ("ort-runs", lambda o: o.ort_runnable),
    ("identical", lambda o: bool(o.identical) and o.ort_note != "nondeterministic"),
    ("nondet", lambda o: o.ort_note == "nondeterministic"),
    ("failed", lambda o: bool(o.failures)),
]
LEGEND = """
checker-ok: the original passes onnx.checker (full check); still-ok: so does opt's output.
opt-ok: opt wrote an output; ort-runs: onnxruntime runs the original; identical: bitwise-identical outputs.
nondet: the original's outputs vary run to run (unseeded random ops), so only types and shapes are compared."""


def _check(job: tuple[roundtrip_check.Case, Path, tuple[str, ...], bool]) -> roundtrip_check.Outcome:
    case, opt, opt_args, tolerant = job
    with tempfile.TemporaryDirectory(prefix="onnxopt-roundtrip-") as workdir:
        try:
            return roundtrip_check.check_case(case, opt, Path(workdir), base_args=opt_args, tolerant=tolerant)
        except Exception as e:  # a harness error is reported as the case's failure, not a lost run
            return roundtrip_check.Outcome(case.id, failures=[f"harness error: {type(e).__name__}: {e}"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opt", type=Path, default=roundtrip_check.opt_path(), help="the opt binary")
    parser.add_argument("--shared", type=Path, default=roundtrip_check.shared_dir(), help="shared data folder")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count(), help="cases run in parallel")
    parser.add_argument("-k", "--filter", default="", help="only cases whose id contains this")
    parser.add_argument(
        "--opt-args", default=" ".join(roundtrip_check.ROUNDTRIP_ARGS), help="opt's flags (default: %(default)s)"
    )
    parser.add_argument("--tolerant", action="store_true",
                        help="compare float outputs within rounding (for optimized models), not bitwise")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list cases ORT cannot run, and why")
    args = parser.parse_args()
    if not os.access(args.opt, os.X_OK):
        print(f"roundtrip_report: opt binary not found at {args.opt}", file=sys.stderr)
        return 2

    cases = [c for c in roundtrip_check.corpus(args.shared) if args.filter in c.id]
    with multiprocessing.Pool(max(1, args.jobs)) as pool:
        opt_args = tuple(shlex.split(args.opt_args))
        outcomes = pool.map(_check, [(c, args.opt, opt_args, args.tolerant) for c in cases], chunksize=4)

    by_suite: dict[str, list[roundtrip_check.Outcome]] = collections.defaultdict(list)
    for outcome in outcomes:
        by_suite[outcome.case.split("/")[0]].append(outcome)
    header = f"{'suite':<18}" + "".join(f"{name:>{len(name) + 2}}" for name, _ in COLUMNS)
    print(header)
    print("-" * len(header))
    for suite, rows in [*sorted(by_suite.items()), ("total", outcomes)]:
        print(f"{suite:<18}" + "".join(f"{sum(map(count, rows)):>{len(name) + 2}}" for name, count in COLUMNS))
    total = {name: sum(map(count, outcomes)) for name, count in COLUMNS}
    print(
        f"\n{total['checker-ok']} checker-valid originals, {total['still-ok']} of them still valid after;"
        f" {total['ort-runs']} ORT-runnable, {total['identical']}"
        f" {'matching within rounding' if args.tolerant else 'bitwise identical'}"
        f" ({total['nondet']} more nondeterministic with matching types and shapes); {total['failed']} failed."
    )
    print(LEGEND)

    rejected = [o for o in outcomes if not o.opt_ok and not o.failures]
    if rejected:
        print(f"\nrejected by opt as well as by onnx.checker ({len(rejected)}, allowed):")
        for o in rejected:
            print(f"  {o.case}: {o.opt_error}")
    if args.verbose:
        skipped = [o for o in outcomes if not o.ort_runnable]
        print(f"\nnot run in onnxruntime ({len(skipped)}):")
        for o in skipped:
            print(f"  {o.case}: {o.ort_note or 'opt rejected it'}")
    failed = [o for o in outcomes if o.failures]
    print(f"\nfailures ({len(failed)}):")
    for o in failed:
        print(f"  {o.case}:")
        for failure in o.failures:
            print(f"    {failure}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
