#!/usr/bin/env python3
"""Node counts before and after `opt -O<level>`, and opt's wall time, per model of the real and light corpus,
with the validity and equivalence checks of tests/python/roundtrip_check.py.

    .venv/bin/python tools/optimize_report.py [-O 1] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import roundtrip_check  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))
from peers import count_nodes  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-O", dest="level", default="1", help="optimization level (default 1)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per model; the median is reported")
    args = parser.parse_args()
    opt = roundtrip_check.opt_path()
    cases = [c for c in roundtrip_check.corpus() if c.id.split("/")[0] in ("real", "light", "bundled")]
    print(f"{'model':<46} {'nodes':>6} {'-O' + args.level:>6} {'KiB':>8} {'-O' + args.level:>8} {'time ms':>8}  check")
    failures = 0
    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.onnx"
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                proc = subprocess.run([str(opt), str(case.model), "-O" + args.level, "-o", str(out)],
                                      capture_output=True, text=True)
                times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                print(f"{case.id:<46} rejected: {proc.stderr.strip()[:80]}")
                continue
            before = count_nodes(onnx.load(str(case.model), load_external_data=False).graph)
            after = count_nodes(onnx.load(str(out), load_external_data=False).graph)
            size_before = case.model.stat().st_size / 1024
            size_after = out.stat().st_size / 1024
        with tempfile.TemporaryDirectory() as tmp:
            outcome = roundtrip_check.check_case(case, opt, Path(tmp), base_args=("-O" + args.level,),
                                                 tolerant=True)
        verdict = "FAIL: " + "; ".join(outcome.failures) if outcome.failures else (
            ("valid" if outcome.checker_ok_after else "n/a") + ", " +
            ("matches ORT" if outcome.identical else "not run in ORT"))
        failures += bool(outcome.failures)
        print(f"{case.id:<46} {before:>6} {after:>6} {size_before:>8.1f} {size_after:>8.1f}"
              f" {statistics.median(times) * 1e3:>8.1f}  {verdict}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
