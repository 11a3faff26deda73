"""On transformers exported from PyTorch with dynamic batch and sequence (models/transformers, made by its
export.py), every Reshape and Expand whose target is computed from a Shape chain gets a fully symbolic
shape from `opt --infer-shapes`: no unknown dims. Named expectations pin the idioms (head split, head
merge, attention mask)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from roundtrip_check import REPO_ROOT

MODELS = sorted(p.parent.name for p in (REPO_ROOT / "models" / "transformers").glob("*/model.onnx")
                if not p.parent.name.startswith(("mobilenet",)))

EXPECTED = {
    "bert_legacy": {
        "/model/encoder/layer.0/attention/self/Reshape_output_0": ["batch", "seq", 4, 16],
        "/model/encoder/layer.0/attention/self/Reshape_3_output_0": ["batch", "seq", 64],
        "/model/Expand_output_0": ["batch", 1, "seq", "seq"],
    },
    "gpt2_legacy": {
        "/model/h.0/attn/c_attn/Reshape_output_0": ["batch*seq", 64],
        "/model/h.0/attn/Reshape_output_0": ["batch", "seq", 4, 16],
        "/model/h.0/attn/Reshape_3_output_0": ["batch", "seq", 64],
    },
    "llama_legacy": {
        "/model/layers.0/self_attn/Reshape_output_0": ["batch", "seq", 4, 16],
        "/model/layers.0/self_attn/Reshape_1_output_0": ["batch", "seq", 2, 16],
    },
    "vit_legacy": {
        "/model/layers.0/attention/Reshape_output_0": ["batch", 17, 4, 16],
    },
}


def _dims(t: onnx.TypeProto) -> list | None:
    if not t.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.tensor_type.shape.dim]


@pytest.mark.parametrize("name", MODELS)
def test_shape_chain_targets_are_symbolic(name: str, run_opt, work_dir: Path) -> None:
    src = REPO_ROOT / "models" / "transformers" / name / "model.onnx"
    out = work_dir / "inferred.onnx"
    proc = run_opt(src, "-O0", "--infer-shapes", "-o", out)
    assert proc.returncode == 0, proc.stderr
    model = onnx.load(str(out))
    types = {vi.name: vi.type for vi in list(model.graph.value_info) + list(model.graph.output)}
    constants = {i.name for i in model.graph.initializer}
    constants |= {n.output[0] for n in model.graph.node if n.op_type == "Constant"}
    checked = []
    for node in model.graph.node:
        if node.op_type not in ("Reshape", "Expand") or node.input[1] in constants:
            continue
        dims = _dims(types[node.output[0]]) if node.output[0] in types else None
        assert dims is not None and None not in dims, f"{node.output[0]} ({node.op_type}): {dims}"
        checked.append(node.output[0])
    assert checked, "no Reshape/Expand with a computed target: the model is not the exported kind"
    for value, expected in EXPECTED.get(name, {}).items():
        assert _dims(types[value]) == expected, value
