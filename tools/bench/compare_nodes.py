#!/usr/bin/env python3
"""Node counts after `opt -O2` and after onnxsim, onnxslim and onnxoptimizer, per model, with each output's
validity (onnx.checker) and equivalence to the original in onnxruntime (float32 within rtol 1e-4, atol 1e-5).

The model set: the bundled models (models/, transformers with `--target-opset 23`), ../shared/models/real
and the onnx package's light models. Models onnxruntime cannot run are listed with their counts only.

    .venv/bin/python tools/bench/compare_nodes.py [--markdown docs/fusion_table.md] [--filter SUBSTRING]

Exits 1 if opt's output of some model is invalid or differs from the original.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import onnx  # noqa: E402
import peers  # noqa: E402
import roundtrip_check  # noqa: E402
from report_text import portable  # noqa: E402

SUITES = ("bundled", "real", "light")
TOOLS = ("opt", *peers.PEERS)


def opt_args(case: roundtrip_check.Case) -> tuple[str, ...]:
    # Transformers are exported at opset 14 (legacy) and 18 (dynamo); LayerNormalization (17), Gelu (20),
    # RMSNormalization and Attention (23) need the upgrade.
    if case.id.startswith("bundled/") and "transformers" in case.model.parts:
        return ("-O2", "--target-opset", "23")
    return ("-O2",)


def checker_ok(model: Path) -> bool:
    try:
        onnx.checker.check_model(str(model), full_check=True)
        return True
    except Exception:
        return False


def verdict(case: roundtrip_check.Case, out: Path) -> str:
    """'ok', 'ok (not run)' where ORT cannot run the original, or what is wrong."""
    outcome = roundtrip_check.Outcome(case.id)
    if checker_ok(case.model):
        try:
            onnx.checker.check_model(str(out), full_check=True)
        except Exception as e:
            return "invalid: " + " ".join(str(e).split())[:100]
    roundtrip_check.compare_in_ort(case, out, outcome, tolerant=True)
    if outcome.failures:
        return "; ".join(outcome.failures)[:160]
    return "ok" if outcome.ort_runnable else "ok (not run)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", type=Path, help="also write the table as markdown to this file")
    parser.add_argument("--filter", default="", help="only models whose id contains this")
    args = parser.parse_args()

    cases = [c for c in roundtrip_check.corpus() if c.id.split("/")[0] in SUITES and args.filter in c.id]
    rows = []
    bad_opt = 0
    worse = []
    print(f"{'model':<48} {'nodes':>6} " + " ".join(f"{t:>13}" for t in TOOLS), flush=True)
    for case in cases:
        before = peers.model_nodes(case.model)
        cells, notes = [], []
        counts = {}
        for tool in TOOLS:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "out.onnx"
                run = peers.run_tool(tool, case.model, out, opt_args(case))
                if not run.ok:
                    rejected = tool == "opt" and not checker_ok(case.model)
                    cells.append("rejected" if rejected else "error")
                    notes.append(f"{tool}: {portable(run.error)}")
                    if tool == "opt" and not rejected:
                        bad_opt += 1
                    continue
                n = peers.model_nodes(out)
                check = verdict(case, out)
                if check.startswith("ok"):
                    counts[tool] = n
                    cells.append(str(n))
                else:
                    cells.append(f"{n}!")
                    notes.append(f"{tool}: {check}")
                    if tool == "opt":
                        bad_opt += 1
        if "opt" in counts and any(counts["opt"] > counts[p] for p in peers.PEERS if p in counts):
            worse.append(case.id)
        name = case.id + (" (opset 23)" if len(opt_args(case)) > 1 else "")
        rows.append((name, before, cells, notes))
        print(f"{name:<48} {before:>6} " + " ".join(f"{c:>13}" for c in cells), flush=True)
        for note in notes:
            print(f"    {note}", flush=True)

    print(f"\nopt invalid or different: {bad_opt}; opt above a peer that kept outputs: {len(worse)} {worse}")
    if args.markdown:
        lines = ["# Node counts: opt -O2 against onnxsim, onnxslim and onnxoptimizer", "",
                 "Written by `.venv/bin/python tools/bench/compare_nodes.py --markdown tools/results/node_counts.md`. "
                 "Nodes include subgraphs. A count is shown only for an output that passes onnx.checker (where "
                 "the original does) and matches onnxruntime on the original (float32 within rtol 1e-4).", "",
                 "| model | nodes | " + " | ".join(TOOLS) + " |", "|---|---:|" + "---:|" * len(TOOLS)]
        for name, before, cells, _ in rows:
            lines.append(f"| {name} | {before} | " + " | ".join(cells) + " |")
        lines.append("")
        lines.append("`!`: the tool's output is invalid or its outputs differ from the original's; `error`: the tool "
                     "failed; `rejected`: opt refused a model onnx.checker rejects too. Notes:")
        lines.append("")
        for name, _, _, notes in rows:
            for note in notes:
                lines.append(f"- {name}: {note}")
        # transpose_counts.py's table, after its marker, stays.
        marker = "<!-- transposes -->"
        old = args.markdown.read_text() if args.markdown.exists() else ""
        tail = "\n" + marker + old.split(marker, 1)[1] if marker in old else ""
        args.markdown.write_text("\n".join(lines) + "\n" + tail)
    return 1 if bad_opt else 0


if __name__ == "__main__":
    sys.exit(main())
