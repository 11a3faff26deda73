"""`upgrade-opset` over the whole corpus: raising every model to opset 18 keeps it valid for onnx.checker
and keeps onnxruntime's outputs (within output-type rounding); models it cannot convert keep their
opset. And on the exported transformers, `-O2 --target-opset 20` fuses every layer's LayerNorm and GELU
while matching onnxruntime."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import roundtrip_check

CASES = roundtrip_check.corpus()

# Per exported model: LayerNormalization nodes after fusion (one per norm: embeddings or final norm
# plus two per layer) and Gelu nodes (one per layer: erf form in BERT and ViT, tanh in GPT-2).
TRANSFORMERS = {"bert_legacy": (5, 2), "gpt2_legacy": (5, 2), "vit_legacy": (5, 2)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_upgrade_to_18_keeps_the_model(case: roundtrip_check.Case, opt: Path, work_dir: Path) -> None:
    outcome = roundtrip_check.check_case(
        case, opt, work_dir, base_args=("--passes=infer-shapes,upgrade-opset{target=18}", "--verify-each"),
        tolerant=True)
    assert not outcome.failures, f"{case.model}:\n  " + "\n  ".join(outcome.failures)


@pytest.mark.parametrize("name", sorted(TRANSFORMERS))
def test_transformer_layers_fuse(name: str, opt: Path, work_dir: Path) -> None:
    case = next(c for c in CASES if c.id == f"bundled/{name}")
    outcome = roundtrip_check.check_case(case, opt, work_dir, base_args=("-O2", "--target-opset", "20"),
                                         tolerant=True)
    assert not outcome.failures, "\n".join(outcome.failures)
    model = onnx.load(str(roundtrip_check.output_path(work_dir)))
    ops = [n.op_type for n in model.graph.node]
    layer_norms, gelus = TRANSFORMERS[name]
    assert ops.count("LayerNormalization") == layer_norms
    assert ops.count("Gelu") == gelus
    assert "ReduceMean" not in ops and "Erf" not in ops and "Tanh" not in ops
