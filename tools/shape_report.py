#!/usr/bin/env python3
"""Per model: values with known rank and with a fully known shape, onnxopt's inference against onnx's,
and any disagreement (see tests/python/shape_agreement.py).

    .venv/bin/python tools/shape_report.py [--suites real,light] [--mismatches]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import roundtrip_check  # noqa: E402
import shape_agreement  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", default="real,light,pytorch-converted,pytorch-operator,simple,node,bundled")
    parser.add_argument("--mismatches", action="store_true", help="list each disagreeing value")
    parser.add_argument("--per-model", action="store_true", help="one line per model (else per suite)")
    args = parser.parse_args()
    suites = args.suites.split(",")
    opt = roundtrip_check.opt_path()
    totals: dict[str, list[int]] = {}
    bad = 0
    if args.per_model:
        print(f"{'model':<60} {'ranked ours/onnx':>17} {'static ours/onnx':>17}  agree")
    for case in roundtrip_check.corpus():
        suite = case.id.split("/")[0]
        if suite not in suites:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            r = shape_agreement.compare(case, opt, Path(tmp))
        t = totals.setdefault(suite, [0, 0, 0, 0, 0, 0])
        for i, v in enumerate([1, r.ours_ranked, r.onnx_ranked, r.ours_static, r.onnx_static, bool(r.mismatches)]):
            t[i] += v
        bad += bool(r.mismatches)
        if args.per_model:
            note = "yes" if not r.mismatches else f"NO ({len(r.mismatches)})"
            if r.onnx_failed:
                note += f"; onnx failed: {r.onnx_failed[:60]}"
            print(f"{case.id:<60} {r.ours_ranked:>8}/{r.onnx_ranked:<8} {r.ours_static:>8}/{r.onnx_static:<8}  {note}")
        if args.mismatches:
            for m in r.mismatches:
                print(f"  {case.id}: {m}")
    print(f"\n{'suite':<20} {'models':>7} {'ranked ours':>12} {'onnx':>8} {'static ours':>12} {'onnx':>8} {'disagree':>9}")
    for suite, t in totals.items():
        print(f"{suite:<20} {t[0]:>7} {t[1]:>12} {t[2]:>8} {t[3]:>12} {t[4]:>8} {t[5]:>9}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
