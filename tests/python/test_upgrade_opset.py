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


# ---------------------------------------------------------------------------------------------------------
# Resize and Upsample: every mode, rounding and coordinate mode, by scales and by sizes, from each opset
# where the op changed, upgraded to 23 with onnxruntime's outputs unchanged.

_RESIZE_X = [1, 2, 5, 7]
_RESIZE_SCALES = ([1, 1, 2, 2], [1, 1, 0.5, 0.6], [1, 1, 1.7, 2.5], [1, 1, 0.8, 1.6])
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")


def _resize_model(opset: int, node: onnx.NodeProto, inits: list) -> onnx.ModelProto:
    from onnx import TensorProto, helper

    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, _RESIZE_X)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=5 if opset <= 10 else 7)


def _resize_cases(opset: int, mode: str, transform: str) -> list[tuple[str, onnx.ModelProto]]:
    """Resize-`opset` nodes with every nearest_mode (nearest) and each scale set, by scales and by sizes."""
    import numpy as np
    from onnx import helper, numpy_helper

    cases = []
    for nearest in _NEAREST_MODES if mode == "nearest" else (None,):
        for scales in _RESIZE_SCALES:
            for by_sizes in (False, True):
                attrs = {"mode": mode, "coordinate_transformation_mode": transform}
                if nearest:
                    attrs["nearest_mode"] = nearest
                roi = [0, 0, 0.1, 0.2, 1, 1, 0.8, 0.9] if transform == "tf_crop_and_resize" else []
                inits = [numpy_helper.from_array(np.array(roi, np.float32), "roi")]
                if by_sizes:
                    sizes = [int(d * s) for d, s in zip(_RESIZE_X, scales)]
                    inits += [numpy_helper.from_array(np.zeros(0, np.float32), "s"),
                              numpy_helper.from_array(np.array(sizes, np.int64), "sz")]
                    inputs = ["x", "roi", "s", "sz"] if opset == 11 else ["x", "roi", "", "sz"]
                else:
                    inits.append(numpy_helper.from_array(np.array(scales, np.float32), "s"))
                    inputs = ["x", "roi", "s"]
                node = helper.make_node("Resize", inputs, ["y"], **attrs)
                cases.append((f"{attrs} scales={scales} by_sizes={by_sizes}", _resize_model(opset, node, inits)))
    return cases


def _opset10_cases(op: str, mode: str) -> list[tuple[str, onnx.ModelProto]]:
    """Resize-10, Upsample-9 (scales input) and Upsample-7 (scales attribute) nodes for each scale set."""
    import numpy as np
    from onnx import helper, numpy_helper

    cases = []
    for scales in _RESIZE_SCALES:
        init = [numpy_helper.from_array(np.array(scales, np.float32), "s")]
        if op == "Resize":
            model = _resize_model(10, helper.make_node("Resize", ["x", "s"], ["y"], mode=mode), init)
        elif op == "Upsample-9":
            model = _resize_model(9, helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode), init)
        else:
            model = _resize_model(7, helper.make_node("Upsample", ["x"], ["y"], mode=mode, scales=scales), [])
        cases.append((f"{op} {mode} scales={scales}", model))
    return cases


def _check_upgrade_keeps_outputs(model: onnx.ModelProto, name: str, opt: Path, work_dir: Path,
                                 args: tuple[str, ...] = ("--passes=infer-shapes,upgrade-opset{target=23}",),
                                 must_reach: bool = True) -> None:
    import numpy as np
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    feeds = {i.name: np.random.default_rng(0).standard_normal(
        [d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32) for i in model.graph.input}
    try:
        expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception:
        return  # onnxruntime rejects the original (Upsample scales below 1, cubic on these axes)
    src, out = work_dir / "in.onnx", work_dir / "out.onnx"
    onnx.save(model, str(src))
    proc = roundtrip_check.run_opt(opt, src, *args, "--verify-each", "-o", out)
    assert proc.returncode == 0, f"{name}: {proc.stderr}"
    upgraded = onnx.load(str(out))
    opset = next(o.version for o in upgraded.opset_import if o.domain in ("", "ai.onnx"))
    if must_reach:
        assert opset == 23, f"{name}: stopped at {opset}: {proc.stderr}"
    onnx.checker.check_model(upgraded, full_check=True)
    got = ort.InferenceSession(upgraded.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for e, g in zip(expected, got):
        assert e.shape == g.shape, name
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("opset", (11, 13, 18))
@pytest.mark.parametrize("mode", ("nearest", "linear", "cubic"))
@pytest.mark.parametrize("transform", _TRANSFORMS)
def test_resize_upgrade_keeps_outputs(opset: int, mode: str, transform: str, opt: Path, work_dir: Path) -> None:
    for name, model in _resize_cases(opset, mode, transform):
        _check_upgrade_keeps_outputs(model, name, opt, work_dir)


@pytest.mark.parametrize("nearest", ("round_prefer_floor", "floor"))
def test_resize_tf_half_pixel_for_nn_upgrades(nearest: str, opt: Path, work_dir: Path) -> None:
    """tf_half_pixel_for_nn (gone at 13) with the two nearest modes that have an opset-13 equivalent."""
    for name, model in _resize_cases(11, "nearest", "tf_half_pixel_for_nn"):
        if f"'nearest_mode': '{nearest}'" in name:
            _check_upgrade_keeps_outputs(model, name, opt, work_dir)


@pytest.mark.parametrize("op", ("Resize", "Upsample-9", "Upsample-7"))
@pytest.mark.parametrize("mode", ("nearest", "linear"))
def test_opset10_resize_upgrade_keeps_outputs(op: str, mode: str, opt: Path, work_dir: Path) -> None:
    for name, model in _opset10_cases(op, mode):
        mixed = mode == "nearest" and op == "Resize" and "0.8, 1.6" in name  # grows and shrinks: stays at 10
        _check_upgrade_keeps_outputs(model, name, opt, work_dir, must_reach=not mixed)


@pytest.mark.parametrize("opset", (11, 12))
def test_yolo_style_model_upgrades_to_23(opset: int, opt: Path, work_dir: Path) -> None:
    """A YOLO neck as the PyTorch exporter writes it (Conv, a nearest 2x Resize with Constant roi and scales,
    Concat with the lateral branch) goes to 23 through -O2, checker-valid and with onnxruntime's outputs."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    weights = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
               for n, s in (("w1", [8, 3, 3, 3]), ("b1", [8]), ("w2", [8, 8, 1, 1]), ("w3", [4, 16, 3, 3]))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c1"], ["s1"]),
        helper.make_node("Mul", ["c1", "s1"], ["a1"]),
        helper.make_node("Conv", ["a1", "w2"], ["c2"], strides=[2, 2]),
        helper.make_node("Constant", [], ["roi"], value=numpy_helper.from_array(np.zeros(0, np.float32))),
        helper.make_node("Constant", [], ["scales"], value=numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32))),
        helper.make_node("Resize", ["c2", "roi", "scales"], ["up"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Concat", ["up", "a1"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "w3"], ["y"], pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(nodes, "neck", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])], initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)
    _check_upgrade_keeps_outputs(model, f"neck-{opset}", opt, work_dir, args=("-O2", "--target-opset", "23"))
