"""`upgrade-opset` over the whole corpus: raising every model to opset 18 keeps it valid for onnx.checker
and keeps onnxruntime's outputs (within output-type rounding); models it cannot convert keep their
opset. And on the exported transformers (both exporters), `-O2 --target-opset 23` fuses every layer's
LayerNorm or RMSNorm, GELU and attention while matching onnxruntime."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import roundtrip_check

CASES = roundtrip_check.corpus()

# Per exported model (two layers each): the normalization op and its count (embeddings or final norm
# plus two per layer), Gelu nodes (one per layer: erf form in BERT and ViT, tanh in GPT-2; Llama uses
# SiLU) and Attention nodes (one per layer).
TRANSFORMERS = {
    f"{arch}_{exporter}": expected
    for arch, expected in {"bert": ("LayerNormalization", 5, 2), "gpt2": ("LayerNormalization", 5, 2),
                           "vit": ("LayerNormalization", 5, 2), "llama": ("RMSNormalization", 5, 0)}.items()
    for exporter in ("legacy", "dynamo")
}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_upgrade_to_18_keeps_the_model(case: roundtrip_check.Case, opt: Path, work_dir: Path) -> None:
    outcome = roundtrip_check.check_case(
        case, opt, work_dir, base_args=("--passes=infer-shapes,upgrade-opset{target=18}", "--verify-each"),
        tolerant=True)
    assert not outcome.failures, f"{case.model}:\n  " + "\n  ".join(outcome.failures)


@pytest.mark.parametrize("name", sorted(TRANSFORMERS))
def test_transformer_layers_fuse(name: str, opt: Path, work_dir: Path) -> None:
    case = next(c for c in CASES if c.id == f"bundled/{name}")
    outcome = roundtrip_check.check_case(case, opt, work_dir, base_args=("-O2", "--target-opset", "23"),
                                         tolerant=True)
    assert not outcome.failures, "\n".join(outcome.failures)
    model = onnx.load(str(roundtrip_check.output_path(work_dir)))
    ops = [n.op_type for n in model.graph.node]
    norm, norms, gelus = TRANSFORMERS[name]
    assert ops.count(norm) == norms
    assert ops.count("Gelu") == gelus
    assert ops.count("Attention") == 2
    for decomposed in ("ReduceMean", "Erf", "Tanh", "Softmax", "Sqrt"):
        assert decomposed not in ops, f"{decomposed} left unfused"
