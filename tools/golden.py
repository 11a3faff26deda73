"""The golden-output manifest (models/golden/manifest.json): reading it and running models in onnxruntime.
Used by tests/python/test_golden.py and tools/regen_goldens.py."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "models" / "golden" / "manifest.json"


@dataclasses.dataclass(frozen=True)
class Golden:
    name: str
    model: Path
    data: Path
    args: tuple[str, ...]
    rtol: float
    atol: float
    inputs: dict[str, Any]


def shared_dir() -> Path:
    return Path(os.environ.get("ONNXOPT_SHARED", ROOT.parent / "shared"))


def load_manifest(path: Path = MANIFEST) -> list[Golden]:
    entries = json.loads(path.read_text())["models"]
    out = []
    for e in entries:
        model = e["model"]
        model_path = shared_dir() / model[len("shared:"):] if model.startswith("shared:") else ROOT / model
        out.append(Golden(e["name"], model_path, ROOT / e["data"], tuple(e["args"]), float(e["rtol"]),
                          float(e["atol"]), e.get("inputs", {})))
    return out


def session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def save_with_golden(model: onnx.ModelProto, folder: Path, inputs: dict[str, np.ndarray]) -> None:
    """What a models/*/make_model.py ends with: writes folder/model.onnx, runs it in onnxruntime
    (session()) on `inputs`, and writes folder/test_data_set_0/input_<i>.pb and output_<i>.pb in the
    order of the graph's inputs and outputs."""
    folder = Path(folder)
    path = folder / "model.onnx"
    onnx.save(model, str(path))
    outputs = session(path).run(None, inputs)
    data = folder / "test_data_set_0"
    data.mkdir(exist_ok=True)
    initializers = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    assert sorted(names) == sorted(inputs), f"inputs {sorted(inputs)} for graph inputs {names}"
    for i, name in enumerate(names):
        onnx.save_tensor(numpy_helper.from_array(inputs[name], name), str(data / f"input_{i}.pb"))
    for i, (info, value) in enumerate(zip(model.graph.output, outputs)):
        onnx.save_tensor(numpy_helper.from_array(value, info.name), str(data / f"output_{i}.pb"))


def read_tensors(folder: Path, prefix: str) -> list[np.ndarray]:
    files = sorted(folder.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[-1]))
    out = []
    for f in files:
        t = onnx.TensorProto()
        t.ParseFromString(f.read_bytes())
        out.append(numpy_helper.to_array(t))
    return out


def feeds(golden: Golden, sess) -> dict[str, np.ndarray]:
    """The stored inputs, in the order of the session's inputs."""
    values = read_tensors(golden.data, "input")
    names = [i.name for i in sess.get_inputs()]
    if len(values) != len(names):
        raise ValueError(f"{golden.name}: {len(values)} stored inputs for {len(names)} model inputs {names}")
    return dict(zip(names, values))
