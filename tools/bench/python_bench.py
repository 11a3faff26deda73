#!/usr/bin/env python3
"""Benchmark (not a test): the Python package's overhead and its speed against the in-process peers.

Per model (models/**/*.onnx and ../shared/models/real/**/*.onnx), in one run:
  - cli: the wall time of `opt IN -o OUT` (a process: start, load, optimize, write);
  - onnxopt: `onnxopt.optimize(model)` on an in-memory onnx.ModelProto (serialized into the native
    module, optimized, parsed back into a ModelProto: what a user's export script pays);
  - onnxsim: `onnxsim.simplify(model)` and onnxslim: `onnxslim.slim(model)` on the same ModelProto.
Each in-process figure is the median of --runs calls in one worker process per tool and model (the
model is loaded before the clock starts; a worker that crashes or times out is reported, not
retried), the cli figure the median of --runs processes. The onnxopt worker also times the floor of
any tool that takes and returns a ModelProto as bytes: Python serializing the input and parsing the
result. The goals (issue 21): onnxopt within 1.2x of the cli on every model, and >= 10x faster than
onnxsim and onnxslim; the summary gives per-model ratios, totals over the corpus, geometric means,
and the models on which the floor alone rules 10x out. Writes a markdown table and the raw figures
as JSON.

    .venv/bin/python tools/bench/python_bench.py [--runs 5] [--out tools/results/python_bench.md]
        [--json tools/results/python_bench.json]
        [--models DIR_OR_FILE ...]   (other models instead: e.g. tools/bench/export_torch_zoo.py's)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report_text import portable

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("ONNXOPT_SHARED", ROOT.parent / "shared"))
TIMEOUT_S = 600

# One worker per (tool, model): loads the model, calls the tool --runs times, prints the times.
_WORKER = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
tool, path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
import onnx
# A fresh copy per call, made before the clock starts (a tool may change its argument).
copies = [onnx.load(path) for _ in range(runs)]
if tool == "onnxopt":
    import onnxopt
    call = onnxopt.optimize
elif tool == "onnxsim":
    import onnxsim
    def call(model):
        out, ok = onnxsim.simplify(model)
        assert ok, "onnxsim's check failed"
        return out
elif tool == "onnxslim":
    import onnxslim
    call = onnxslim.slim
times, cpu = [], []
for model in copies:
    t0, c0 = time.perf_counter(), time.process_time()
    out = call(model)
    times.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
result = {"times": times, "cpu": cpu, "nodes": len(out.graph.node)}
if tool == "onnxopt":
    # The floor of any in-process tool that takes and returns a ModelProto as bytes (onnxsim does
    # too): serializing the input in Python and parsing the result back, on fresh copies.
    # As in the calls above, the last result stays alive while the next is made (a tool's caller
    # keeps it), so each parse fills fresh memory: page faults count as they do there.
    floor, floor_cpu = [], []
    data = out.SerializeToString()
    kept = None
    for model in [onnx.load(path) for _ in range(runs)]:
        t0, c0 = time.perf_counter(), time.process_time()
        model.SerializeToString()
        kept = onnx.load_from_string(data)
        floor.append(time.perf_counter() - t0)
        floor_cpu.append(time.process_time() - c0)
    # The write floor, the least of any in-process tool that returns a new ModelProto holding the
    # weights (onnxopt and the peers alike): each initializer's bytes written into the result once
    # (read beforehand), on fresh memory as above. A ModelProto cannot share bytes with another.
    raws = [t.raw_data for t in copies[0].graph.initializer]
    write, write_cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        made = onnx.ModelProto()
        for raw in raws:
            made.graph.initializer.add().raw_data = raw
        kept = made
        write.append(time.perf_counter() - t0)
        write_cpu.append(time.process_time() - c0)
    del kept
    result["floor"] = floor
    result["floor_cpu"] = floor_cpu
    result["write"] = write
    result["write_cpu"] = write_cpu
print(json.dumps(result))
"""

TOOLS = ("onnxopt", "onnxsim", "onnxslim")


def models(given: list[Path]) -> list[Path]:
    if given:
        return [m for p in given for m in (sorted(p.glob("**/*.onnx")) if p.is_dir() else [p])]
    found = sorted((ROOT / "models").glob("**/*.onnx"))
    found += sorted((SHARED / "models" / "real").glob("**/*.onnx"))
    return found


def label(p: Path) -> str:
    p = p.resolve()
    for base in (ROOT, SHARED):
        if p.is_relative_to(base):
            return str(p.relative_to(base))
    return p.name


def in_process(tool: str, model: Path, runs: int) -> dict:
    try:
        proc = subprocess.run([sys.executable, "-c", _WORKER, tool, str(model), str(runs)],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        return {"error": portable(lines[-1] if lines else f"exit {proc.returncode}")[:120]}
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    out = {"ms": 1000 * statistics.median(r["times"]), "nodes": r["nodes"],
           "cpu_ms": 1000 * statistics.median(r["cpu"])}
    if "floor" in r:
        out["floor_ms"] = 1000 * statistics.median(r["floor"])
        out["floor_cpu_ms"] = 1000 * statistics.median(r["floor_cpu"])
        out["write_ms"] = 1000 * statistics.median(r["write"])
        out["write_cpu_ms"] = 1000 * statistics.median(r["write_cpu"])
    return out


def cli(opt: Path, model: Path, runs: int) -> dict:
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            t0 = time.perf_counter()
            proc = subprocess.run([str(opt), str(model), "-o", f"{tmp}/out.onnx"],
                                  capture_output=True, text=True, timeout=TIMEOUT_S)
            times.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                return {"error": portable(proc.stderr.strip().splitlines()[-1])[:120]}
    return {"ms": 1000 * statistics.median(times)}


def fmt(v: dict) -> str:
    return f"{v['ms']:.1f}" if "ms" in v else "fails"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "tools" / "results" / "python_bench.md")
    parser.add_argument("--json", type=Path, default=ROOT / "tools" / "results" / "python_bench.json",
                        help="the measurements behind --out")
    parser.add_argument("--opt", type=Path,
                        default=Path(os.environ.get("ONNXOPT_OPT", ROOT / "build" / "bin" / "opt")))
    parser.add_argument("--limit", type=int, default=0, help="only the first N models (a quick look)")
    parser.add_argument("--models", type=Path, nargs="+", default=[],
                        help="model files or folders (searched for *.onnx) instead of the corpus")
    parser.add_argument("--tools", default=",".join(TOOLS), help="in-process tools to time")
    args = parser.parse_args()
    import onnxopt  # noqa: F401  (fails here, not in every worker, when the package is missing)

    rows = []
    todo = models(args.models)[: args.limit or None]
    tools = [t for t in TOOLS if t in args.tools.split(",")]
    for i, model in enumerate(todo):
        row = {"model": label(model), "cli": cli(args.opt, model, args.runs)}
        for tool in TOOLS:
            row[tool] = in_process(tool, model, args.runs) if tool in tools else {"error": "not run"}
        rows.append(row)
        print(f"[{i + 1}/{len(todo)}] {row['model']}: cli {fmt(row['cli'])} ms, "
              + ", ".join(f"{t} {fmt(row[t])}" for t in tools), file=sys.stderr, flush=True)

    def ratio(a: dict, b: dict) -> float | None:
        return a["ms"] / b["ms"] if "ms" in a and "ms" in b and b["ms"] > 0 else None

    lines = ["# The Python package: overhead and peers in process", "",
             f"tools/bench/python_bench.py --runs {args.runs}; onnxopt {onnxopt.__version__}; "
             "median ms per call. `onnxopt` is `onnxopt.optimize(ModelProto)` in process, `cli` is "
             "`opt IN -o OUT` as a process; `/cli` is onnxopt's time over the cli's (goal <= 1.2), "
             "`sim/` and `slim/` the peers' times over onnxopt's (goal >= 10).", "",
             "`floor` is Python's own part of any in-process tool that takes and returns a whole "
             "ModelProto as bytes (serializing the input, parsing the result), as onnxsim does; "
             "onnxopt hands a model's big weights over apart from its bytes, below it. The "
             "summary also gives the same figures in CPU time (user + system, every thread of "
             "the worker), which a loaded machine disturbs less than wall time.", "",
             "| model | cli | onnxopt | floor | /cli | onnxsim | sim/ | onnxslim | slim/ |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    summary = {"over_cli": [], "onnxsim": [], "onnxslim": []}
    for r in rows:
        over = ratio(r["onnxopt"], r["cli"])
        sim = ratio(r["onnxsim"], r["onnxopt"])
        slim = ratio(r["onnxslim"], r["onnxopt"])
        for key, v in (("over_cli", over), ("onnxsim", sim), ("onnxslim", slim)):
            if v is not None:
                summary[key].append((v, r["model"]))
        show = lambda v: f"{v:.2f}" if v is not None else "-"  # noqa: E731
        floor = r["onnxopt"].get("floor_ms")
        lines.append(f"| {r['model']} | {fmt(r['cli'])} | {fmt(r['onnxopt'])} | "
                     f"{'-' if floor is None else f'{floor:.1f}'} | {show(over)} | "
                     f"{fmt(r['onnxsim'])} | {show(sim)} | {fmt(r['onnxslim'])} | {show(slim)} |")
    lines.append("")
    for key, what in (("over_cli", "onnxopt / cli"), ("onnxsim", "onnxsim / onnxopt"),
                      ("onnxslim", "onnxslim / onnxopt")):
        vals = sorted(summary[key])
        if vals:
            lines.append(f"- {what}: {len(vals)} models, min {vals[0][0]:.2f} ({vals[0][1]}), "
                         f"median {statistics.median(v for v, _ in vals):.2f}, max {vals[-1][0]:.2f} "
                         f"({vals[-1][1]})")
    # Over the corpus: the total time of the models both tools optimize, and the geometric mean
    # of the per-model ratios; and the models where 10x cannot be reached by any tool that takes
    # a ModelProto as bytes: Python's own serialization and parsing (the floor) alone exceed a
    # tenth of the peer's time.
    lines.append("")
    for peer in ("onnxsim", "onnxslim"):
        both = [r for r in rows if "ms" in r[peer] and "ms" in r["onnxopt"]]
        if not both:
            continue
        for key, floor_key, write_key, what in (("ms", "floor_ms", "write_ms", "wall"),
                                                ("cpu_ms", "floor_cpu_ms", "write_cpu_ms", "CPU")):
            ours = sum(r["onnxopt"][key] for r in both)
            written = sum(r["onnxopt"].get(write_key, 0.0) for r in both)
            theirs = sum(r[peer][key] for r in both)
            geo = statistics.geometric_mean(r[peer][key] / r["onnxopt"][key] for r in both)
            below = [r for r in both if r[peer][key] < 10 * r["onnxopt"][key]]
            bound = [r["model"] for r in below
                     if r[peer][key] < 10 * r["onnxopt"].get(floor_key, 0.0)]
            lines.append(f"- {peer}, {len(both)} models, {what} time: total {theirs:.1f} ms "
                         f"against onnxopt's {ours:.1f} ms ({theirs / ours:.2f}x); geometric "
                         f"mean of the ratios {geo:.2f}x; {len(both) - len(below)} models at 10x "
                         f"or more; on {len(bound)} of the {len(below)} others Python's "
                         "whole-model serialization and parsing (the floor) alone take over a "
                         "tenth of the peer's time"
                         + (f"; writing the weights into the result once (the write floor of any "
                            f"tool returning a new ModelProto) takes {written:.1f} ms in total, "
                            f"which bounds the total ratio at {theirs / written:.2f}x"
                            if written > 0 else ""))
    failures = [(r["model"], t, r[t]["error"]) for r in rows for t in ("cli",) + tuple(tools)
                if "error" in r[t]]
    if failures:
        lines += ["", "Failures (reported, not retried):", ""]
        lines += [f"- {m}, {t}: {e}" for m, t, e in failures]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
