#!/usr/bin/env python3
"""Regenerates the golden outputs of models/golden/manifest.json from onnxruntime on the UNOPTIMIZED models.
Inputs already stored are kept (use --new-inputs to draw them again from the manifest's specs, seed 0).
Never run by CI: a golden changes only when someone decides it should, and commits the result.

    .venv/bin/python tools/regen_goldens.py [--only NAME ...] [--new-inputs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import golden  # noqa: E402

_NP_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
             "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def make_inputs(g: golden.Golden, sess) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    values = []
    for inp in sess.get_inputs():
        spec = g.inputs.get(inp.name)
        if spec is None:
            raise SystemExit(f"{g.name}: the manifest gives no input spec for {inp.name!r}")
        dtype = _NP_TYPES[inp.type]
        if "value" in spec:
            values.append(np.array(spec["value"], dtype))
        elif np.issubdtype(dtype, np.integer):
            values.append(rng.integers(spec.get("low", 0), spec.get("high", 4), spec["shape"]).astype(dtype))
        elif dtype == np.bool_:
            values.append(rng.integers(0, 2, spec["shape"]).astype(np.bool_))
        else:
            values.append(rng.standard_normal(spec["shape"]).astype(dtype))
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="names to regenerate (default: all)")
    parser.add_argument("--new-inputs", action="store_true", help="draw the inputs again from the specs")
    args = parser.parse_args()
    for g in golden.load_manifest():
        if args.only and g.name not in args.only:
            continue
        sess = golden.session(g.model)
        g.data.mkdir(parents=True, exist_ok=True)
        if args.new_inputs or not list(g.data.glob("input_*.pb")):
            for old in g.data.glob("input_*.pb"):
                old.unlink()
            for i, value in enumerate(make_inputs(g, sess)):
                (g.data / f"input_{i}.pb").write_bytes(numpy_helper.from_array(value).SerializeToString())
        outputs = sess.run(None, golden.feeds(g, sess))
        for old in g.data.glob("output_*.pb"):
            old.unlink()
        for i, value in enumerate(outputs):
            (g.data / f"output_{i}.pb").write_bytes(numpy_helper.from_array(np.asarray(value)).SerializeToString())
        print(f"{g.name:<28} {len(outputs)} outputs -> {g.data.relative_to(golden.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
