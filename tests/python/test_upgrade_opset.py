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


@pytest.mark.corpus
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


def _restamp(path: Path, low: int) -> onnx.ModelProto:
    model = onnx.load(str(path))
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = low
    model.ir_version = min(model.ir_version, 10 if low >= 21 else 8)
    return model


def _node_test_restamps() -> list[tuple[Path, int]]:
    """(model, lower opset) pairs: each one-node default-domain case of ONNX's node tests, restamped to the
    opsets 21, 17, 13 and 11 below its own where onnx.checker accepts it and onnxruntime runs it."""
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    pairs = []
    for path in sorted((roundtrip_check.shared_dir() / "onnx-node-tests").glob("test_*/model.onnx")):
        model = onnx.load(str(path), load_external_data=False)
        if len(model.graph.node) != 1 or model.functions or model.graph.node[0].domain not in ("", "ai.onnx"):
            continue
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
        for low in (21, 17, 13, 11):
            if low >= opset:
                continue
            model = _restamp(path, low)
            try:
                onnx.checker.check_model(model, full_check=True)
                ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            except Exception:
                continue  # not valid, or not runnable, at that opset to begin with
            pairs.append((path, low))
    return pairs


def _run_node_test(session, case_dir: Path) -> list | None:
    import re

    from onnx import numpy_helper

    files = sorted((case_dir / "test_data_set_0").glob("input_*.pb"), key=lambda p: int(re.sub(r"\D", "", p.stem)))
    try:
        feeds = {i.name: numpy_helper.to_array(onnx.TensorProto.FromString(f.read_bytes()))
                 for i, f in zip(session.get_inputs(), files)}
        return session.run(None, feeds)
    except Exception:  # sequences, optionals: not comparable here
        return None


@pytest.mark.corpus
@pytest.mark.parametrize("path,low", _node_test_restamps(), ids=lambda v: v.parent.name if isinstance(v, Path) else str(v))
def test_upgrade_to_23_keeps_node_tests_running(path: Path, low: int, opt: Path, work_dir: Path) -> None:
    """Upgrading to 23 never turns a model onnxruntime runs into one it cannot run, or changes its outputs:
    an op whose new version has no CPU kernel (GlobalLpPool-22, RoiAlign-22, Bernoulli-22) holds the opset
    below that version."""
    import numpy as np
    import onnxruntime as ort

    model = _restamp(path, low)
    before = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    src, out = work_dir / "in.onnx", work_dir / "out.onnx"
    onnx.save(model, str(src))
    proc = roundtrip_check.run_opt(opt, src, "--passes=upgrade-opset{target=23}", "-o", out)
    assert proc.returncode == 0, proc.stderr
    upgraded = onnx.load(str(out))
    after = ort.InferenceSession(upgraded.SerializeToString(), providers=["CPUExecutionProvider"])
    expected, got = _run_node_test(before, path.parent), _run_node_test(after, path.parent)
    if expected is None or any(w in path.parent.name for w in ("random", "bernoulli", "dropout_default")):
        return  # loads in onnxruntime; outputs are random or not tensors
    for e, g in zip(expected, got):
        if isinstance(e, list):
            continue
        e, g = np.asarray(e), np.asarray(g)
        assert e.shape == g.shape and e.dtype == g.dtype
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, e)
