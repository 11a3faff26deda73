#!/usr/bin/env python3
"""onnxruntime runner for `opt check --runner onnxruntime` (the opt binary never needs Python; this helper
is used only when that runner is asked for).

    python3 ort_runner.py MODEL IN_DIR OUT_DIR [--all-values]

IN_DIR holds inputs.txt (one graph input name per line) and input_<i>.npy. The helper writes
OUT_DIR/outputs.txt (one name per line) and output_<i>.npy: the graph outputs and, with --all-values,
every typed value of the main graph (in node order) that onnxruntime can return. Errors go to stderr
as one line and exit 1.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    all_values = "--all-values" in sys.argv[1:]
    if len(args) != 3:
        print("usage: ort_runner.py MODEL IN_DIR OUT_DIR [--all-values]", file=sys.stderr)
        return 2
    model_path, in_dir, out_dir = Path(args[0]), Path(args[1]), Path(args[2])
    try:
        import numpy as np
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        print(f"{e} (install onnxruntime and onnx for {sys.executable}, or set "
              "ONNXOPT_PYTHON to an interpreter that has them)", file=sys.stderr)
        return 1

    model = onnx.load(str(model_path))
    outputs = [o.name for o in model.graph.output]
    if all_values:
        # Every main-graph value with an inferred type becomes an extra output.
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        typed = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
        known = set(outputs)
        for node in model.graph.node:
            for name in node.output:
                if name and name not in known and name in typed and typed[name].type.HasField("tensor_type"):
                    model.graph.output.append(typed[name])
                    known.add(name)
                    outputs.append(name)

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        print(f"onnxruntime cannot load {model_path}: {' '.join(str(e).split())[:400]}", file=sys.stderr)
        return 1
    names = (in_dir / "inputs.txt").read_text().splitlines()
    feeds = {name: np.load(in_dir / f"input_{i}.npy") for i, name in enumerate(names)}
    try:
        values = session.run(outputs, feeds)
    except Exception as e:
        print(f"onnxruntime failed on {model_path}: {' '.join(str(e).split())[:400]}", file=sys.stderr)
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, value in zip(outputs, values):
        if not isinstance(value, np.ndarray) or value.dtype == object:
            continue  # sequences, maps and strings are not compared
        np.save(out_dir / f"output_{len(written)}.npy", np.ascontiguousarray(value))
        written.append(name)
    (out_dir / "outputs.txt").write_text("".join(n + "\n" for n in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
