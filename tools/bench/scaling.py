#!/usr/bin/env python3
"""Scaling benchmark: opt's time and peak memory on generated graphs of growing size.

Each family stresses one place where a naive implementation is quadratic (issue 13, item 14):
  chain     N unary nodes in a chain (import, every pass, export)
  fanin     one Sum node reading the same value N times (use-lists)
  cse       N identical nodes feeding one Concat (common-subexpression elimination)
  initializers  N unused initializers (dead-code elimination)
  opsets    N unused opset imports (dead-code elimination of imports)
  attributes    one node with N attributes (import and export)

For each family and size, the model is generated into a temporary folder and `opt IN -o OUT -O2` runs
under GNU time (wall time and peak RSS, median of --runs). Results go to stdout as a table and, with
--write-docs, into docs/benchmarks.md between scaling markers, with a log-log chart in docs/bench/.

  .venv/bin/python tools/bench/scaling.py [--opt build/bin/opt] [--max 1000000] [--runs 3] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
OPSET = 18


def _vi(name: str, dims) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def _model(graph: onnx.GraphProto, extra_opsets=()) -> onnx.ModelProto:
    opsets = [helper.make_opsetid("", OPSET), *extra_opsets]
    return helper.make_model(graph, ir_version=8, opset_imports=opsets)


def chain(n: int) -> onnx.ModelProto:
    g = onnx.GraphProto(name="chain")
    g.input.append(_vi("x", [4]))
    prev = "x"
    for i in range(n):
        node = g.node.add()
        node.op_type = "Sigmoid" if i % 2 else "Tanh"
        node.input.append(prev)
        prev = f"v{i}" if i + 1 < n else "y"
        node.output.append(prev)
    g.output.append(_vi("y", [4]))
    return _model(g)


def fanin(n: int) -> onnx.ModelProto:
    g = onnx.GraphProto(name="fanin")
    g.input.append(_vi("x", [4]))
    g.node.add(op_type="Sum", input=["x"] * n, output=["y"])
    g.output.append(_vi("y", [4]))
    return _model(g)


def cse(n: int) -> onnx.ModelProto:
    g = onnx.GraphProto(name="cse")
    g.input.append(_vi("x", [4]))
    for i in range(n):
        g.node.add(op_type="Tanh", input=["x"], output=[f"t{i}"])
    g.node.add(op_type="Concat", input=[f"t{i}" for i in range(n)], output=["y"],
               attribute=[helper.make_attribute("axis", 0)])
    g.output.append(_vi("y", [4 * n]))
    return _model(g)


def initializers(n: int) -> onnx.ModelProto:
    g = onnx.GraphProto(name="initializers")
    g.input.append(_vi("x", [4]))
    g.node.add(op_type="Tanh", input=["x"], output=["y"])
    for i in range(n):
        g.initializer.add(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[1], float_data=[float(i)])
    g.output.append(_vi("y", [4]))
    return _model(g)


def opsets(n: int) -> onnx.ModelProto:
    g = onnx.GraphProto(name="opsets")
    g.input.append(_vi("x", [4]))
    g.node.add(op_type="Tanh", input=["x"], output=["y"])
    g.output.append(_vi("y", [4]))
    return _model(g, [helper.make_opsetid(f"com.example.d{i}", 1) for i in range(n)])


def attributes(n: int) -> onnx.ModelProto:
    g = onnx.GraphProto(name="attributes")
    g.input.append(_vi("x", [4]))
    node = g.node.add(op_type="Custom", domain="com.example", input=["x"], output=["y"])
    for i in range(n):
        node.attribute.add(name=f"a{i}", type=onnx.AttributeProto.INT, i=i)
    g.output.append(_vi("y", [4]))
    return _model(g, [helper.make_opsetid("com.example", 1)])


FAMILIES = {
    "chain": (chain, [10_000, 100_000, 1_000_000]),
    "fanin": (fanin, [10_000, 100_000, 400_000]),
    "cse": (cse, [10_000, 100_000, 200_000]),
    "initializers": (initializers, [10_000, 100_000, 400_000]),
    "opsets": (opsets, [10_000, 100_000, 200_000]),
    "attributes": (attributes, [10_000, 100_000, 200_000]),
}


def run_opt(opt: str, model: Path, out: Path, timeout: float) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB, and status of one `opt -O2` run under GNU time."""
    cmd = ["/usr/bin/time", "-f", "%M", opt, str(model), "-o", str(out), "-O2"]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return timeout, float("nan"), "timeout"
    wall = time.perf_counter() - start
    rss_kb = int(proc.stderr.strip().splitlines()[-1])
    return wall, rss_kb / 1024, "ok" if proc.returncode == 0 else f"exit {proc.returncode}"


def measure(opt: str, max_n: int, runs: int, timeout: float, only: list[str]):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for family, (build, sizes) in FAMILIES.items():
            if only and family not in only:
                continue
            for n in sizes:
                if n > max_n:
                    continue
                path = Path(tmp) / f"{family}_{n}.onnx"
                path.write_bytes(build(n).SerializeToString())
                samples = [run_opt(opt, path, Path(tmp) / "out.onnx", timeout) for _ in range(runs)]
                status = next((s for _, _, s in samples if s != "ok"), "ok")
                wall = statistics.median(s[0] for s in samples)
                rss = max(s[1] for s in samples)
                mb = path.stat().st_size / 1e6
                rows.append((family, n, mb, wall, rss, status))
                print(f"{family:13} {n:>9} {mb:8.1f} MB  {wall:7.2f} s  {rss:8.0f} MB  {status}", flush=True)
                path.unlink()
    return rows


def write_docs(rows, note: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from chart_png import save_png

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for family in FAMILIES:
        pts = [(n, wall) for f, n, _, wall, _, s in rows if f == family and s == "ok"]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=family)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("size N (nodes, uses, initializers, imports or attributes)")
    ax.set_ylabel("opt -O2 wall time (s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax.set_title("opt -O2 scaling on generated graphs")
    fig.tight_layout()
    chart = ROOT / "docs/bench/scaling.png"
    save_png(fig, chart)

    lines = ["<!-- scaling:begin (generated by tools/bench/scaling.py) -->", "## Scaling", "",
             "`opt IN -o OUT -O2` on generated graphs that stress one place each where a naive implementation is",
             "quadratic (import, use-lists, CSE, DCE of initializers and opset imports, attributes). Wall time is the",
             "median of the runs; peak RSS is GNU time's maximum resident set size. " + note, "",
             "| family | N | model MB | wall s | peak RSS MB | status |", "|---|---:|---:|---:|---:|---|"]
    for family, n, mb, wall, rss, status in rows:
        lines.append(f"| {family} | {n:,} | {mb:.1f} | {wall:.2f} | {rss:.0f} | {status} |")
    lines += ["", "![scaling](bench/scaling.png)", "<!-- scaling:end -->"]
    block = "\n".join(lines)
    doc = ROOT / "docs/benchmarks.md"
    text = doc.read_text()
    pattern = re.compile(r"<!-- scaling:begin.*?<!-- scaling:end -->", re.S)
    text = pattern.sub(block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text)
    print(f"wrote {doc} and {chart}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opt", default=str(ROOT / "build/bin/opt"))
    ap.add_argument("--max", type=int, default=1_000_000, help="largest N to run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--only", nargs="*", default=[], choices=list(FAMILIES))
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--note", default="", help="a sentence on the machine and its load, for the docs")
    args = ap.parse_args()
    rows = measure(args.opt, args.max, args.runs, args.timeout, args.only)
    if args.write_docs:
        write_docs(rows, args.note)
    return 0 if all(r[5] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
