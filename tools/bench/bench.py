#!/usr/bin/env python3
"""Benchmarks `opt -O2` against onnxsim, onnxslim, onnxoptimizer, onnxscript (optimizer + rewriter) and
onnxruntime's offline optimization (basic, extended) and writes docs/benchmarks.md with PNG charts.

Per model and tool: wall time of the whole process (median of --runs), its peak RSS (wait4), node count,
file size (with external data), the largest output error against onnxruntime on the original model (max
|a - b| over max |b|, per output, the worst output), and onnxruntime CPU latency of the result (median,
one intra-op thread, onnxruntime's own graph optimizations off so that the tool's graph is what runs).

Corpus: ../shared/models/real/*.onnx, the onnx package's light models, the bundled models (transformers
with --target-opset 23 for opt), and a generated decoder with over 1 GB of external weights
(tools/bench/make_large_decoder.py).

    .venv/bin/pip install -r tools/requirements-bench.txt
    .venv/bin/python tools/bench/bench.py [--runs 3] [--filter SUBSTRING] [--no-large] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare_nodes  # noqa: E402
import peers  # noqa: E402
import roundtrip_check  # noqa: E402
from report_text import portable  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("opt", *peers.BENCH_PEERS)
LARGE_ID = "generated/decoder_1gb"


@dataclasses.dataclass
class Result:
    model: str
    tool: str
    ok: bool
    error: str = ""
    seconds: float = 0.0
    peak_rss_mb: float = 0.0
    nodes: int = 0
    mbytes: float = 0.0
    max_error: float | None = None  # None: not comparable (original or result not runnable)
    latency_ms: float | None = None


def _session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _latency_ms(session, feeds) -> float:
    session.run(None, feeds)  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < 0.5 and len(times) < 200):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _max_error(expected: list, actual: list) -> float:
    worst = 0.0
    for e, a in zip(expected, actual):
        e = np.asarray(e)
        a = np.asarray(a)
        if e.shape != a.shape or e.dtype.kind not in "fiub":
            return float("inf")
        e64, a64 = e.astype(np.float64), a.astype(np.float64)
        finite = np.isfinite(e64)
        if not np.array_equal(np.isfinite(a64), finite):
            return float("inf")
        scale = np.max(np.abs(e64[finite])) if finite.any() else 0.0
        diff = np.max(np.abs(a64[finite] - e64[finite])) if finite.any() else 0.0
        worst = max(worst, diff / scale if scale > 0 else diff)
    return worst


class Reference:
    """onnxruntime on the original model: the inputs and outputs every result is compared with."""

    def __init__(self, case: roundtrip_check.Case):
        self.feeds = None
        self.expected = None
        self.latency_ms = None
        try:
            session = _session(case.model)
            model = __import__("onnx").load(str(case.model), load_external_data=False)
            names = [i.name for i in session.get_inputs()]
            for default_dim in (2, 1):
                try:
                    hints = roundtrip_check.INPUT_HINTS[case.id]() if case.id in roundtrip_check.INPUT_HINTS else None
                    feeds = roundtrip_check.make_feeds(model, names, case.data_dir, default_dim, hints)
                    self.expected = session.run(None, feeds)
                    self.feeds = feeds
                    break
                except Exception:
                    continue
            if self.feeds is not None:
                self.latency_ms = _latency_ms(session, self.feeds)
        except Exception:
            pass


def bench_one(case: roundtrip_check.Case, tool: str, reference: Reference, runs: int, work: Path) -> Result:
    out = work / f"{tool}.onnx"
    args = compare_nodes.opt_args(case) if case.id != LARGE_ID else ("-O2",)
    times, rss = [], []
    last = None
    for _ in range(runs):
        for f in work.glob(f"{tool}.onnx*"):
            f.unlink()
        last = peers.run_tool(tool, case.model, out, args)
        if not last.ok:
            return Result(case.id, tool, False, last.error)
        times.append(last.seconds)
        rss.append(last.peak_rss_kb)
    r = Result(case.id, tool, True, seconds=statistics.median(times), peak_rss_mb=max(rss) / 1024,
               nodes=peers.model_nodes(out), mbytes=peers.model_bytes(out) / 2**20)
    if reference.feeds is not None:
        try:
            session = _session(out)
            names = [i.name for i in session.get_inputs()]
            feeds = {k: v for k, v in reference.feeds.items() if k in names}
            r.max_error = _max_error(reference.expected, session.run(None, feeds))
            r.latency_ms = _latency_ms(session, feeds)
        except Exception as e:
            r.error = "does not run in onnxruntime: " + " ".join(str(e).split())[:120]
    return r


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "machine": f"{platform.machine()}, {_cpu_count()} CPUs"}
    for dist in ("onnx", "onnxruntime", "onnxsim", "onnxslim", "onnxoptimizer", "onnxscript", "numpy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    proc = subprocess.run([str(peers.opt_binary()), "--version"], capture_output=True, text=True)
    out["onnxopt"] = proc.stdout.strip() or proc.stderr.strip()
    return out


def _cpu_count() -> int:
    import os

    return os.cpu_count() or 0


def charts(results: list[Result], models: list[str], folder: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from chart_png import save_png

    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for metric, label, name in (("seconds", "optimize time (s, log)", "bench_time.png"),
                                ("nodes", "nodes after (log)", "bench_nodes.png")):
        fig, ax = plt.subplots(figsize=(max(10, len(models) * 0.55), 5.5))
        width = 0.8 / len(TOOLS)
        for k, tool in enumerate(TOOLS):
            xs, ys = [], []
            for i, m in enumerate(models):
                r = next((r for r in results if r.model == m and r.tool == tool and r.ok), None)
                if r is not None:
                    xs.append(i + k * width)
                    ys.append(max(getattr(r, metric), 1e-3))
            ax.bar(xs, ys, width, label=tool)
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(models))])
        ax.set_xticklabels([m.split("/")[-1].removesuffix(".onnx") for m in models], rotation=70, ha="right",
                           fontsize=7)
        ax.legend(fontsize=7, ncol=4)
        fig.tight_layout()
        save_png(fig, folder / name)
        plt.close(fig)
        files.append(name)
    return files


def _fmt(v, spec: str, none: str = "-") -> str:
    return none if v is None else format(v, spec)


def write_markdown(results: list[Result], models: list[str], refs: dict[str, Reference], out: Path,
                   chart_files: list[str], command: str, vers: dict[str, str]) -> None:
    by = {(r.model, r.tool): r for r in results}
    lines = ["# Benchmarks", "",
             "Written by `tools/bench/bench.py`; do not edit by hand. Reproduce with:", "",
             f"    {command}", "",
             "Per model and tool: optimize wall time as a whole process (median of the runs), the process's peak "
             "RSS, nodes after (subgraphs included), file size with external data, the largest output error "
             "against onnxruntime on the original (max |a - b| / max |b| of the worst output; `-` when onnxruntime "
             "cannot run the original), and onnxruntime CPU latency of the result (median, one thread, "
             "onnxruntime's graph optimizations off so that each tool's graph is what runs). The 1 GB decoder is "
             "timed with --large-runs runs. `ort-extended` "
             "output uses com.microsoft contrib ops and runs in onnxruntime only. Transformers are optimized "
             "by opt with `--target-opset 23` (the others keep their opset).", "",
             "## Versions", ""]
    lines += [f"- {k}: {v}" for k, v in vers.items()]
    lines += ["", "## Charts", ""] + [f"![{c}](bench/{c})" for c in chart_files]
    # Summary: opt's time as a ratio to each peer, node counts against the best peer.
    lines += ["", "## Summary", "", "| peer | models | median of opt time / peer time | models where opt has fewer or equal nodes |",
              "|---|---:|---:|---:|"]
    for tool in TOOLS[1:]:
        ratios, fewer, n = [], 0, 0
        for m in models:
            a, b = by.get((m, "opt")), by.get((m, tool))
            if a and b and a.ok and b.ok:
                n += 1
                ratios.append(a.seconds / b.seconds if b.seconds > 0 else float("nan"))
                fewer += a.nodes <= b.nodes
        lines.append(f"| {tool} | {n} | {statistics.median(ratios):.3f} | {fewer} |" if ratios else f"| {tool} | 0 | - | - |")
    for metric, title, spec in (("seconds", "Optimize time (s)", ".3f"), ("peak_rss_mb", "Peak RSS (MB)", ".0f"),
                                ("nodes", "Nodes after", "d"), ("mbytes", "File size (MB)", ".2f"),
                                ("max_error", "Max output error vs onnxruntime", ".1e"),
                                ("latency_ms", "onnxruntime latency (ms)", ".3f")):
        lines += ["", f"## {title}", "", "| model | original | " + " | ".join(TOOLS) + " |",
                  "|---|---:|" + "---:|" * len(TOOLS)]
        for m in models:
            ref = refs[m]
            orig = {"nodes": by.get((m, "_original")).nodes if by.get((m, "_original")) else None,
                    "mbytes": by.get((m, "_original")).mbytes if by.get((m, "_original")) else None,
                    "latency_ms": ref.latency_ms}.get(metric)
            cells = []
            for tool in TOOLS:
                r = by.get((m, tool))
                if r is None:
                    cells.append("")
                elif not r.ok:
                    cells.append("error")
                else:
                    cells.append(_fmt(getattr(r, metric), spec))
            lines.append(f"| {m} | {_fmt(orig, spec, '')} | " + " | ".join(cells) + " |")
    errors = [r for r in results if not r.ok or r.error or (r.max_error is not None and r.max_error > 1e-4)]
    lines += ["", "## Failures and errors over 1e-4", ""]
    lines += [f"- {r.model}, {r.tool}: " + portable(r.error or f"max error {r.max_error:.2e}")
              for r in errors] or ["- none"]
    # Sections other tools write (scaling.py) or that are kept by hand sit between
    # <!-- NAME:begin --> and <!-- NAME:end --> markers; they stay, after the tables.
    old = out.read_text() if out.exists() else ""
    kept = [m.group(0) for m in re.finditer(r"<!-- (\w+):begin.*?<!-- \1:end -->", old, re.S)]
    out.write_text("\n".join(lines) + "\n" + "".join(f"\n{block}\n" for block in kept))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--filter", default="")
    parser.add_argument("--no-large", action="store_true", help="skip the generated 1 GB decoder")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--json", type=Path, help="also write every result as JSON")
    parser.add_argument("--large-runs", type=int, default=1,
                        help="timed runs on the 1 GB decoder (default 1: each tool takes seconds to minutes)")
    parser.add_argument("--note", default="", help="a line for the report (e.g. what else ran on the machine)")
    args = parser.parse_args()
    command = ".venv/bin/python tools/bench/bench.py " + " ".join(sys.argv[1:])

    cases = [c for c in roundtrip_check.corpus()
             if (c.id.split("/")[0] in ("light", "bundled") or (c.id.startswith("real/") and c.id.count("/") == 1))
             and args.filter in c.id]
    work_root = Path(tempfile.mkdtemp(prefix="onnxopt-bench-"))
    if not args.no_large and args.filter in LARGE_ID:
        import make_large_decoder

        large = make_large_decoder.generate(work_root / "large")
        cases.append(roundtrip_check.Case(LARGE_ID, large, None))
    results: list[Result] = []
    refs: dict[str, Reference] = {}
    for case in cases:
        refs[case.id] = Reference(case)
        results.append(Result(case.id, "_original", True, nodes=peers.model_nodes(case.model),
                              mbytes=peers.model_bytes(case.model) / 2**20))
        for tool in TOOLS:
            if tool != "opt" and not peers.installed(tool):
                results.append(Result(case.id, tool, False, "not installed"))
                continue
            runs = args.large_runs if case.id == LARGE_ID else args.runs
            with tempfile.TemporaryDirectory(dir=work_root) as tmp:
                r = bench_one(case, tool, refs[case.id], runs, Path(tmp))
            results.append(r)
            print(f"{case.id:<44} {tool:<14} " + (f"{r.seconds:8.3f}s {r.peak_rss_mb:7.0f}MB {r.nodes:6d} nodes "
                                                   f"err {_fmt(r.max_error, '.1e')} lat {_fmt(r.latency_ms, '.3f')}ms"
                                                   if r.ok else f"error: {r.error}"), flush=True)
    models = [c.id for c in cases]
    chart_files = charts([r for r in results if r.tool != "_original"], models, args.out.parent / "bench")
    vers = versions()
    if args.note:
        vers["note"] = args.note
    write_markdown(results, models, refs, args.out, chart_files, command, vers)
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
