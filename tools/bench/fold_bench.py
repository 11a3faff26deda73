#!/usr/bin/env python3
"""Benchmark (not a test): constant folding on the real and light models. Per model, the median wall
time of `opt --passes=lift-constants,infer-shapes,fold-constants,dce` over --runs runs (the whole
process: load, fold, write), node counts and file sizes before and after.

    .venv/bin/python tools/bench/fold_bench.py [--runs 5]
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import roundtrip_check  # noqa: E402

PIPELINE = "--passes=lift-constants,infer-shapes,fixpoint(fold-constants,dce)"


def nodes(path: Path) -> int:
    def count(g: onnx.GraphProto) -> int:
        return sum(1 + sum(count(a.g) if a.HasField("g") else 0 for a in n.attribute) +
                   sum(count(g2) for a in n.attribute for g2 in a.graphs) for n in g.node)
    return count(onnx.load(str(path), load_external_data=False).graph)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    opt = roundtrip_check.opt_path()
    print(f"{'model':<52} {'nodes':>6} {'after':>6} {'KiB':>8} {'after':>8} {'median ms':>10}")
    times = []
    for case in roundtrip_check.corpus():
        if case.id.split("/")[0] not in ("real", "light"):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.onnx"
            runs = []
            for _ in range(args.runs):
                start = time.perf_counter()
                proc = subprocess.run([str(opt), str(case.model), PIPELINE, "-o", str(out)], capture_output=True)
                runs.append(time.perf_counter() - start)
            if proc.returncode != 0:
                continue
            median = statistics.median(runs)
            times.append(median)
            print(f"{case.id:<52} {nodes(case.model):>6} {nodes(out):>6} {case.model.stat().st_size / 1024:>8.1f}"
                  f" {out.stat().st_size / 1024:>8.1f} {median * 1e3:>10.1f}")
    print(f"\n{len(times)} models; median of medians {statistics.median(times) * 1e3:.1f} ms, "
          f"max {max(times) * 1e3:.1f} ms, total {sum(times):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
