#!/usr/bin/env python3
"""float16 conversion: `opt --precision fp16` (-O2, range analysis on) against onnxconverter-common's
convert_float_to_float16(model, keep_io_types=True), on the same models: Cast nodes in each
output, and each output's largest error (and cosine similarity) against the float32 original, both run by `opt check`
on the reference kernels with the same seeded inputs (so one runner judges both). Also whether
onnxruntime loads each result (onnxconverter-common's target). Prints a markdown table
(docs/precision.md).

    .venv/bin/pip install -r tools/requirements-bench.txt   # onnxconverter-common
    .venv/bin/python tools/bench/precision_bench.py [--opt build/bin/opt] [MODEL.onnx ...]

Without models: the bundled ones, ../shared/models/real's float models and the onnx package's
light models."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[2]


def default_models() -> list[Path]:
    out = [ROOT / p for p in ["models/tiny_cnn/model.onnx", "models/tiny_unet/model.onnx",
                              "models/transformers/bert_dynamo/model.onnx",
                              "models/transformers/gpt2_dynamo/model.onnx",
                              "models/transformers/llama_dynamo/model.onnx",
                              "models/transformers/mobilenet_dynamo/model.onnx"]]
    shared = Path(os.environ.get("ONNXOPT_SHARED", ROOT.parent / "shared")) / "models" / "real"
    out += [shared / n for n in ["mnist_opset7.onnx", "ultraface_slim_320.onnx", "ultraface_rfb_320.onnx",
                                 "silero_vad.onnx"]]
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    out += sorted(light.glob("light_*.onnx"))
    return [p for p in out if p.exists()]


def casts(path: Path) -> int:
    """Cast nodes in the model, subgraphs (If/Loop/Scan bodies) included."""
    def count(g: onnx.GraphProto) -> int:
        return sum((n.op_type == "Cast") + sum(count(a.g) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
                   + sum(count(x) for a in n.attribute for x in a.graphs) for n in g.node)
    return count(onnx.load(str(path), load_external_data=False).graph)


def max_error(opt: str, original: Path, converted: Path) -> tuple[str, str]:
    """The largest max-abs error and the smallest cosine similarity over the outputs, as `opt
    check` reports them (or why it failed). The cosine shows an output that is all wrong though
    small (activations under float16's smallest normal)."""
    r = subprocess.run([opt, "check", str(original), str(converted), "--atol", "1e30", "--rtol", "1e30"],
                       capture_output=True, text=True, timeout=900)
    errs, cosines = [], []
    for line in r.stdout.splitlines():
        m = re.match(r"\s+(\S+)\s+(float\S*|double)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s", line)
        if m:
            errs.append(m.group(3))
            cosines.append(m.group(6))
    if r.returncode != 0 and not errs:
        return "fails: " + (r.stderr.strip().splitlines() or ["?"])[-1][:60], "-"
    vals = []
    for e in errs:
        try:
            vals.append(float(e))
        except ValueError:
            return e, "-"  # nan / inf
    try:
        cos = f"{min(float(c) for c in cosines):.4f}" if cosines else "-"
    except ValueError:
        cos = "-"
    return (f"{max(vals):.3g}" if vals else "-"), cos


def ort_loads(path: Path) -> str:
    import onnxruntime as ort
    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return "yes"
    except Exception as e:  # noqa: BLE001 - reported, not raised
        return "no (" + str(e).splitlines()[0][:40] + ")"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--opt", default=str(ROOT / "build" / "bin" / "opt"))
    a = ap.parse_args(argv)
    from onnxconverter_common import float16

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in a.models or default_models():
            ours, theirs = Path(tmp) / "ours.onnx", Path(tmp) / "theirs.onnx"
            r = subprocess.run([a.opt, str(src), "--precision", "fp16", "-o", str(ours)],
                               capture_output=True, text=True, timeout=900)
            ours_ok = r.returncode == 0
            try:
                m = float16.convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
                onnx.save(m, str(theirs))
                theirs_ok = True
            except Exception as e:  # noqa: BLE001
                theirs_ok, why = False, str(e).splitlines()[0][:50]
            label = f"{src.parent.name}/{src.name}" if src.name == "model.onnx" else src.name
            row = [label, str(casts(src))]
            row += [str(casts(ours)), *max_error(a.opt, src, ours), ort_loads(ours)] if ours_ok else \
                   ["-", "fails: " + r.stderr.strip().splitlines()[-1][:60], "-", "-"]
            row += [str(casts(theirs)), *max_error(a.opt, src, theirs), ort_loads(theirs)] if theirs_ok else \
                   ["-", "fails: " + why, "-", "-"]
            rows.append(row)
            print(" | ".join(row), file=sys.stderr, flush=True)
    print("| model | Casts before | ours: Casts | ours: max abs error | ours: min cosine | "
          "ours: onnxruntime loads | onnxconverter-common: Casts | its max abs error | its min cosine | "
          "it: onnxruntime loads |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
