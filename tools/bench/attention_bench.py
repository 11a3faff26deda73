#!/usr/bin/env python3
"""Benchmark (not a test): the CUDA Attention kernels alone, at the shapes of the GPU benchmark's
transformers (issue 17), as achieved TFLOP/s and TB/s.

Per case, one ONNX Attention node (opset 23, fp16, 3-D [B, S, H * D] Q, K and V, 64-dim heads)
is written to DIR and timed with `opt bench --device cuda` (CUDA graphs; the figure is the device
time of the node), once per kernel variant the environment selects:
  mma      the mma.sync kernel (the default where the grid fills the GPU)
  wmma     ONNXOPT_FLASH_MMA=0: the WMMA kernel instead
  split    ONNXOPT_FLASH_SPLIT=1: the split-key kernel
Cases: bert (B 32, S 128, H 12, a bool key-padding mask [B, 1, 1, S] and without one), gpt2
(B 32, S 128, H 12, causal), vit (B 32, S 197, H 12), and their batch-1 forms.
FLOP = 4 B H Sq Skv D (the two products; causal counts half); bytes = Q, K, V read once and Y
written once (the floor: a kernel rereads K and V once per block of query rows).

    python3 tools/bench/attention_bench.py --opt build-gpu/bin/opt [--out DIR] [--json FILE]
        [--variants mma,wmma,split]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

CASES = [
    # name, batch, seq, heads, mask, causal
    ("bert_bs32", 32, 128, 12, "pad", False),
    ("bert_bs32_nomask", 32, 128, 12, None, False),
    ("gpt2_bs32", 32, 128, 12, None, True),
    ("vit_bs32", 32, 197, 12, None, False),
    ("bert_bs1", 1, 128, 12, "pad", False),
    ("vit_bs1", 1, 197, 12, None, False),
]
VARIANTS = {"mma": {}, "wmma": {"ONNXOPT_FLASH_MMA": "0"}, "split": {"ONNXOPT_FLASH_SPLIT": "1"}}
HEAD = 64


def build(path: str, batch: int, seq: int, heads: int, mask: str | None, causal: bool) -> None:
    e = heads * HEAD
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT16, [batch, seq, e]) for n in "qkv"]
    names = ["q", "k", "v"]
    inits = []
    if mask == "pad":
        # The last quarter of each sequence is padding, as a key-padding mask exports.
        m = np.ones((batch, 1, 1, seq), dtype=bool)
        m[..., seq - seq // 4:] = False
        inits.append(onnx.numpy_helper.from_array(m, "mask"))
        names.append("mask")
    node = helper.make_node("Attention", names, ["y"], q_num_heads=heads, kv_num_heads=heads,
                            is_causal=int(causal))
    graph = helper.make_graph([node], "attention", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [batch, seq, e])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    onnx.save(model, path)


def bench(opt: str, path: str, env: dict[str, str]) -> float | None:
    """The median device time of the node steps (`opt bench --json`'s compute_ms), or None."""
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        out = subprocess.run([opt, "bench", path, "--device", "cuda", "--warmup", "20", "--iters", "200",
                              "--json", result.name], capture_output=True, text=True,
                             env={**os.environ, **env}, timeout=300)
        if out.returncode != 0:
            print(out.stdout + out.stderr, file=sys.stderr)
            return None
        return float(json.load(open(result.name))["compute_ms"]["p50"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opt", required=True)
    parser.add_argument("--out", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: mma, wmma, split")
    args = parser.parse_args()
    folder = args.out or tempfile.mkdtemp(prefix="attention_bench_")
    os.makedirs(folder, exist_ok=True)
    rows = []
    print(f"{'case':<18} {'variant':<6} {'ms':>8} {'TFLOP/s':>8} {'TB/s':>6}")
    for name, batch, seq, heads, mask, causal in CASES:
        path = os.path.join(folder, f"{name}.onnx")
        build(path, batch, seq, heads, mask, causal)
        flop = 4.0 * batch * heads * seq * seq * HEAD * (0.5 if causal else 1.0)
        nbytes = 4.0 * batch * seq * heads * HEAD * 2
        for variant in args.variants.split(","):
            env = VARIANTS[variant]
            ms = bench(args.opt, path, env)
            row = {"case": name, "variant": variant, "ms": ms}
            if ms:
                row["tflops"] = flop / (ms * 1e-3) / 1e12
                row["tbps"] = nbytes / (ms * 1e-3) / 1e12
                print(f"{name:<18} {variant:<6} {ms:8.4f} {row['tflops']:8.1f} {row['tbps']:6.2f}", flush=True)
            else:
                print(f"{name:<18} {variant:<6} failed", flush=True)
            rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["ms"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
