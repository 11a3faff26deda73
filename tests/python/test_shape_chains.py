"""Shape chains over partly static shapes fold (issue 47, item 8), on the models of models/shape_chains.

Each model is optimized at -O1 (cleanup and folding only) and -O2; each result must have no more nodes
than onnxruntime's basic level leaves (ORT_ENABLE_BASIC, written with optimized_model_filepath), every
Reshape target a constant (0 for a copied dim, -1 for the one run-time entry), and the same outputs as onnxruntime on the original model
for several sizes of the dynamic dims.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "models" / "shape_chains"))
import make_models  # noqa: E402  (models/shape_chains/make_models.py)

# Inputs per model, for several values of its dynamic dims.
FEEDS = {
    "bert_heads": [{"x": (b, s, 64)} for b, s in ((1, 7), (3, 16), (2, 1))],
    "yolo_head": [{"image": (n, 3, h, w)} for n, h, w in ((1, 32, 32), (2, 64, 48), (1, 16, 80))],
    "cls_token": [{"x": (b, f, 64)} for b, f in ((1, 3), (2, 15), (4, 0))],
}

# What is left of the chains: Reshape targets only, every one constant. (The anchors count of
# yolo_head's box Reshape is run time: -1 there, beside the batch that the flattening Reshapes
# already prove nonzero.)
TARGETS = {
    "bert_heads": [[0, 0, 4, 16]] * 6 + [[0, 0, 64]] * 2,
    "yolo_head": [[0, 20, -1], [0, 20, -1], [0, 4, 4, -1]],
    "cls_token": [[0, 0, 4, 16]],
}


def _ort(path: Path, feeds: dict[str, np.ndarray], level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
         optimized: Path | None = None) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = level
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _feeds(shapes: dict[str, tuple[int, ...]], rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}


@pytest.fixture(scope="module", params=sorted(make_models.MODELS))
def model(request, tmp_path_factory) -> tuple[str, Path]:
    path = tmp_path_factory.mktemp(request.param) / "model.onnx"
    onnx.save(make_models.MODELS[request.param](), str(path))
    return request.param, path


def _target(model: onnx.ModelProto, reshape: onnx.NodeProto) -> list[int] | None:
    inits = {t.name: t for t in model.graph.initializer}
    t = inits.get(reshape.input[1])
    return onnx.numpy_helper.to_array(t).tolist() if t is not None else None


@pytest.mark.parametrize("level", ["-O1", "-O2"])
def test_shape_chains_fold_to_constant_targets(model, level, opt, work_dir):
    name, src = model
    out = work_dir / "out.onnx"
    proc = subprocess.run([str(opt), str(src), level, "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    optimized = onnx.load(str(out))

    basic = work_dir / "basic.onnx"
    _ort(src, _feeds(FEEDS[name][0], np.random.default_rng(0)), ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
         basic)
    peer = len(onnx.load(str(basic)).graph.node)
    assert len(optimized.graph.node) <= peer, f"{name} {level}: {len(optimized.graph.node)} nodes, onnxruntime {peer}"

    ops = [n.op_type for n in optimized.graph.node]
    assert "Gather" not in ops and "Size" not in ops and "Unsqueeze" not in ops, ops
    targets = [_target(optimized, n) for n in optimized.graph.node if n.op_type == "Reshape"]
    assert sorted(t for t in targets if t is not None) == sorted(TARGETS[name])
    assert None not in targets

    rng = np.random.default_rng(8)
    for shapes in FEEDS[name]:
        feeds = _feeds(shapes, rng)
        want = _ort(src, feeds)
        got = _ort(out, feeds)
        for w, g in zip(want, got):
            assert w.shape == g.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
