#!/usr/bin/env python3
"""`opt bench` on the bundled transformer and CNN models (models/transformers/*, models/tiny_cnn,
models/tiny_unet) for issue 16's closing note: each model optimized as the golden manifest says
(-O2, with --target-opset 23 for the transformers), then benchmarked in fp32 with CUDA graphs and
without (--no-cuda-graph), at batch --batch and sequence --seq (the models' dynamic dims).
Plain python3; tools/gpu/test.sh's `bench` group calls it. While opt has no `bench` command
(`opt bench --help` lists no --warmup), it says so and exits 0.

    python3 tools/gpu/bench_cuda.py --device cuda [--warmup 10 --iters 100 --batch 1 --seq 128]

Prints opt bench's own output per run, its --json result as one `json:` line, and one
`benchmark: MODEL MODE: ...` line per run (p50/p90/p99, runs/s, CUDA graph state) that the
summary collects. On the reference device (for testing) each model runs once, in the mode "reference".
Exit status 1 when a run fails or is not run (--time-limit: runs not started by then).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import roundtrip_check  # noqa: E402

RUN_TIMEOUT_S = 120


def bench_models() -> list[Path]:
    models = sorted((ROOT / "models" / "transformers").glob("*/model.onnx"))
    return [ROOT / "models" / "tiny_cnn" / "model.onnx", ROOT / "models" / "tiny_unet" / "model.onnx", *models]


def optimize_args(model: Path) -> list[str]:
    """The golden manifest's optimization flags for the model (-O2 where it has none)."""
    manifest = json.loads((ROOT / "models" / "golden" / "manifest.json").read_text())
    for m in manifest["models"]:
        if (ROOT / m["model"]).resolve() == model.resolve():
            return list(m.get("args", ["-O2"]))
    return ["-O2"]


def shape_args(model: Path, batch: int, seq: int, image: int) -> list[str]:
    """--input-shape for every input with a symbolic dim: batch-like dims (batch, N) get `batch`,
    H and W `image`, the others (seq, T) `seq`."""
    m = onnx.load(model, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    args = []
    for inp in m.graph.input:
        if inp.name in inits or not inp.type.tensor_type.HasField("shape"):
            continue
        dims = inp.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            continue
        sizes = []
        for d in dims:
            if d.HasField("dim_value"):
                sizes.append(d.dim_value)
            elif d.dim_param in ("batch", "N", "batch_size"):
                sizes.append(batch)
            elif d.dim_param in ("H", "W", "height", "width"):
                sizes.append(image)
            else:
                sizes.append(seq)
        args += ["--input-shape", f"{inp.name}={','.join(map(str, sizes))}"]
    return args


def brief(data: dict, stdout: str) -> str:
    """One line of a run: latency percentiles, throughput and the CUDA graph state, from opt bench's
    --json (its latency line where there is no JSON)."""
    lat = data.get("latency_ms") or {}
    if all(isinstance(lat.get(k), (int, float)) for k in ("p50", "p90", "p99")):
        text = f"p50 {lat['p50']:.3f} ms, p90 {lat['p90']:.3f}, p99 {lat['p99']:.3f}"
        if isinstance(data.get("throughput_per_s"), (int, float)):
            text += f", {data['throughput_per_s']:.1f} runs/s"
        if data.get("cuda_graph"):
            text += f", cuda graph: {data['cuda_graph']}"
        return text
    return next((line.strip() for line in stdout.splitlines() if "p50" in line), "no p50 line")


def has_bench(opt: Path) -> bool:
    """Whether opt has the bench command: without it, `opt bench --help` is the main help (bench read
    as a model path), which has no --warmup."""
    proc = subprocess.run([str(opt), "bench", "--help"], capture_output=True, text=True, errors="replace")
    return proc.returncode == 0 and "--warmup" in proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--image", type=int, default=64, help="H and W of tiny_unet")
    parser.add_argument("--models", default="", help="only the models whose folder matches this regular expression")
    parser.add_argument("--opt", help="the opt binary (default: ONNXOPT_OPT, else build/bin/opt)")
    parser.add_argument("--time-limit", type=float, default=0,
                        help="seconds: runs not started by then are reported as not run (0: no limit)")
    args = parser.parse_args()
    deadline = time.monotonic() + args.time_limit if args.time_limit > 0 else float("inf")
    opt = Path(args.opt) if args.opt else roundtrip_check.opt_path()
    roundtrip_check.require_opt(opt)
    if not has_bench(opt):
        print("benchmark: skipped: this opt has no bench command yet (`opt bench --help` lists no --warmup)")
        return 0
    models = [m for m in bench_models() if re.search(args.models, m.parent.relative_to(ROOT).as_posix())]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="bench_") as tmp:
        work = Path(tmp)
        for model in models:
            name = model.parent.relative_to(ROOT / "models").as_posix()
            optimized = work / (name.replace("/", "_") + ".onnx")
            proc = subprocess.run([str(opt), str(model), "-o", str(optimized), *optimize_args(model)],
                                  capture_output=True, text=True, errors="replace")
            if proc.returncode != 0:
                print(f"benchmark: {name}: FAILED to optimize: {proc.stderr.strip()[:300]}")
                failed = 1
                continue
            shapes = shape_args(model, args.batch, args.seq, args.image)
            # CUDA graphs are the cuda device's: the reference device has one mode.
            modes = [("graph", []), ("eager", ["--no-cuda-graph"])] if args.device == "cuda" else [(args.device, [])]
            for mode, flags in modes:
                if time.monotonic() > deadline:
                    print(f"benchmark: {name} {mode}: NOT RUN (past --time-limit)")
                    failed = 1
                    continue
                result = work / "bench.json"
                result.unlink(missing_ok=True)
                cmd = [str(opt), "bench", str(optimized), "--device", args.device, "--warmup", str(args.warmup),
                       "--iters", str(args.iters), *flags, *shapes, "--json", str(result)]
                print(f"== {name} {mode}: {' '.join(cmd[1:])}", flush=True)
                start = time.monotonic()
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                                          timeout=min(RUN_TIMEOUT_S, max(5.0, deadline - time.monotonic() + 10)))
                except subprocess.TimeoutExpired:
                    print(f"benchmark: {name} {mode}: FAILED: timed out")
                    failed = 1
                    continue
                took = time.monotonic() - start
                print(proc.stdout.rstrip())
                if proc.returncode != 0:
                    print(f"benchmark: {name} {mode}: FAILED (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
                    failed = 1
                    continue
                data = json.loads(result.read_text()) if result.is_file() else {}
                if data:
                    print("json: " + json.dumps({"model": name, "mode": mode, "batch": args.batch, "seq": args.seq,
                                                 "result": data}))
                print(f"benchmark: {name} {mode}: {brief(data, proc.stdout)} ({took:.1f} s)")
    return failed


if __name__ == "__main__":
    sys.exit(main())
