#!/usr/bin/env python3
"""Transposes left by each transpose optimizer on the tf2onnx-style models (models/tf2onnx, the layout
issue's acceptance): `opt -O2`, onnxruntime's ORT_ENABLE_BASIC (its transpose optimizer), onnxsim,
onnxslim and onnxoptimizer, each output checked against onnxruntime on the original (the model's golden
input, max abs difference within 1e-5) and by onnx.checker.

    python tools/bench/transpose_counts.py [--markdown tools/results/node_counts.md]

With --markdown the table replaces what follows the `<!-- transposes -->` marker of that file
(compare_nodes.py keeps it when it rewrites the rest). The peers are the optional benchmark
dependencies (tools/requirements-bench.txt); a missing one is shown as "not installed". Exits 1 when
opt's output is invalid, differs, or keeps more Transposes than onnxruntime's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("opt", "ort-basic", *peers.PEERS)
MARKER = "<!-- transposes -->"
ATOL = 1e-5


def versions() -> str:
    from importlib import metadata

    out = []
    for pkg in ("onnxruntime", "onnxsim", "onnxslim", "onnxoptimizer"):
        try:
            out.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            out.append(f"{pkg} not installed")
    return ", ".join(out)


def transposes(path: Path) -> tuple[int, int]:
    g = onnx.load(str(path)).graph
    return sum(n.op_type == "Transpose" for n in g.node), len(g.node)


def run(path: Path, feeds: dict) -> list:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"]).run(None, feeds)


def golden_feeds(model: Path) -> dict:
    m = onnx.load(str(model))
    data = model.parent / "test_data_set_0"
    names = [i.name for i in m.graph.input]
    return {n: numpy_helper.to_array(onnx.load_tensor(str(data / f"input_{k}.pb"))) for k, n in enumerate(names)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", type=Path, help="write the table after the marker of this file")
    args = ap.parse_args()
    models = sorted((ROOT / "models" / "tf2onnx").glob("*/model.onnx"))
    rows, failed = [], False
    print(f"{'model':<12} {'T / nodes':>10} " + " ".join(f"{t:>14}" for t in TOOLS))
    for model in models:
        feeds = golden_feeds(model)
        expected = run(model, feeds)
        t0, n0 = transposes(model)
        cells, counts = [], {}
        for tool in TOOLS:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "out.onnx"
                r = peers.run_tool(tool, model, out)
                if not r.ok:
                    cells.append("not installed" if r.error == "not installed" else "error")
                    failed |= tool == "opt"
                    continue
                t, n = transposes(out)
                try:
                    onnx.checker.check_model(str(out), full_check=True)
                    got = run(out, feeds)
                    diff = max(float(np.abs(e - g).max()) for e, g in zip(expected, got))
                except Exception as e:  # noqa: BLE001 - a peer's bad output is a cell, not a crash
                    cells.append(f"{t}! ({type(e).__name__})")
                    failed |= tool == "opt"
                    continue
                ok = diff <= ATOL
                cells.append(f"{t} / {n}" + ("" if ok else f" ! {diff:.1e}"))
                if ok:
                    counts[tool] = t
                failed |= tool == "opt" and not ok
        if "opt" in counts and "ort-basic" in counts and counts["opt"] > counts["ort-basic"]:
            failed = True
        name = model.parent.name
        rows.append((name, f"{t0} / {n0}", cells))
        print(f"{name:<12} {t0:>4} / {n0:<4} " + " ".join(f"{c:>14}" for c in cells), flush=True)
    if args.markdown:
        lines = [MARKER, "", "## Transposes on tf2onnx-style models", "",
                 "Written by `python tools/bench/transpose_counts.py --markdown tools/results/node_counts.md`: the "
                 "models of models/tf2onnx (NHWC inputs, a Transpose pair around every Conv, pool, "
                 "BatchNormalization and Resize, as tf2onnx converts Keras models), Transposes / nodes after "
                 "each tool. A count is valid (onnx.checker) and matches onnxruntime on the original within "
                 f"{ATOL:g} (max abs, the golden input); `!` marks an output that does not. Versions: "
                 f"{versions()}.", "",
                 "| model | original | " + " | ".join(TOOLS) + " |", "|---|---:|" + "---:|" * len(TOOLS)]
        lines += [f"| {name} | {orig} | " + " | ".join(cells) + " |" for name, orig, cells in rows]
        doc = args.markdown
        head = doc.read_text().split(MARKER)[0].rstrip() + "\n\n" if doc.exists() else ""
        doc.write_text(head + "\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
