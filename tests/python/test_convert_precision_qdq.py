"""--precision on QDQ models (models/qdq: onnxruntime's quantize_static, per-channel and per-tensor,
opsets 13 to 21). Each converted model passes the full onnx checker, runs on onnxruntime (float16;
its CPU provider lacks most bfloat16 kernels) within one quantization step of the float32 original
(a value on a rounding boundary may move a step: the output's scale, plus float16's 1e-2), and adds
no Cast but one per float graph input and output at most: from opset 19 the Q/DQ scales convert
(every Q/DQ reading or writing a converted value has a scale of the type); below it the Q/DQ and
what lies between them stay float32, and one warning names --target-opset 19, which converts them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, numpy_helper

QDQ = Path(__file__).resolve().parents[2] / "models" / "qdq"
MODELS = sorted(p.name for p in QDQ.glob("*.onnx"))
LOW = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}


def _opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _casts(model: onnx.ModelProto) -> int:
    return sum(n.op_type == "Cast" for n in model.graph.node)


def _elem_types(model: onnx.ModelProto) -> dict[str, int]:
    """Element type per value name: inputs, initializers, value_info, outputs (shape-inferred)."""
    model = onnx.shape_inference.infer_shapes(model)
    out = {i.name: i.data_type for i in model.graph.initializer}
    for v in [*model.graph.input, *model.graph.value_info, *model.graph.output]:
        out[v.name] = v.type.tensor_type.elem_type
    return out


def _convert(run_opt, src: Path, out: Path, precision: str, *extra: str) -> str:
    r = run_opt(str(src), "--precision", precision, "-o", str(out), *extra)
    assert r.returncode == 0, r.stderr
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)
    return r.stderr


def _run(path: Path, feeds: dict) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(None, feeds)


def _output_step(model: onnx.ModelProto) -> float:
    """The largest scale of a DequantizeLinear giving a graph output, through Identity (0: none)."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    outputs = {o.name for o in model.graph.output}
    for n in reversed(model.graph.node):
        if n.op_type == "Identity" and n.output[0] in outputs:
            outputs.add(n.input[0])
    steps = [float(np.max(inits[n.input[1]])) for n in model.graph.node
             if n.op_type == "DequantizeLinear" and n.output[0] in outputs and n.input[1] in inits]
    return max(steps, default=0.0)


def _check_qdq_types(model: onnx.ModelProto, low: int) -> None:
    """No Cast at a Q/DQ but the graph's own border: a Q reads no Cast but one of a graph input
    (the transpose optimizers may move a Transpose from between them), a DQ feeds no Cast but one
    giving a graph output; a Q/DQ whose float side is `low` has a scale of `low`."""
    types = _elem_types(model)
    producers = {o: n for n in model.graph.node for o in n.output}
    inputs, outputs = {i.name for i in model.graph.input}, {o.name for o in model.graph.output}
    for n in model.graph.node:
        if n.op_type == "QuantizeLinear":
            p = producers.get(n.input[0])
            assert p is None or p.op_type != "Cast" or p.input[0] in inputs, n.name
            assert (types[n.input[0]] == low) == (types[n.input[1]] == low), n.name
        if n.op_type == "DequantizeLinear":
            readers = [m for m in model.graph.node if n.output[0] in m.input]
            assert not any(m.op_type == "Cast" and m.output[0] not in outputs for m in readers), n.name
            assert types[n.output[0]] == types[n.input[1]], n.name


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("name", MODELS)
def test_qdq_model_converts_without_casts_per_qdq(name, precision, run_opt, work_dir):
    src = QDQ / name
    original = onnx.load(str(src))
    out = work_dir / "converted.onnx"
    stderr = _convert(run_opt, src, out, precision)
    converted = onnx.load(str(out))
    floats = [v for v in [*original.graph.input, *original.graph.output]
              if v.type.tensor_type.elem_type == TensorProto.FLOAT]
    print(f"{name} {precision}: Casts {_casts(original)} -> {_casts(converted)}, "
          f"nodes {len(original.graph.node)} -> {len(converted.graph.node)}")
    assert _casts(converted) <= _casts(original) + len(floats), stderr
    _check_qdq_types(converted, LOW[precision])
    below = _opset(original) < 19
    assert (stderr.count("--target-opset 19") == 1) == below, stderr
    if below:
        kept = {i.name for i in converted.graph.initializer if i.data_type == LOW[precision]}
        assert not any(n.input[1] in kept for n in converted.graph.node
                       if n.op_type in ("QuantizeLinear", "DequantizeLinear")), name
    if precision == "fp16":
        inp = original.graph.input[0]
        shape = [d.dim_value or 2 for d in inp.type.tensor_type.shape.dim]
        feeds = {inp.name: np.random.default_rng(5).standard_normal(shape).astype(np.float32)}
        want, got = _run(src, feeds), _run(out, feeds)
        tolerance = _output_step(original) + 1e-2
        for w, g in zip(want, got):
            error = float(np.max(np.abs(w.astype(np.float64) - g)))
            print(f"  max abs error {error:.3g} (tolerance {tolerance:.3g})")
            assert error <= tolerance, (name, error)


@pytest.mark.parametrize("name", [m for m in MODELS if "opset13" in m or "opset17" in m])
def test_target_opset_19_converts_the_scales(name, run_opt, work_dir):
    """Below opset 19 the warning's advice holds: --target-opset 19 converts every Q/DQ's scale."""
    out = work_dir / "upgraded.onnx"
    stderr = _convert(run_opt, QDQ / name, out, "fp16", "--target-opset", "19")
    converted = onnx.load(str(out))
    assert "--target-opset" not in stderr, stderr
    assert _opset(converted) == 19
    _check_qdq_types(converted, TensorProto.FLOAT16)
    low = {i.name for i in converted.graph.initializer if i.data_type == TensorProto.FLOAT16}
    qdq = [n for n in converted.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    # Only the Q of the float32 graph input and the DQ of the float32 graph output keep theirs.
    assert sum(n.input[1] not in low for n in qdq) <= 2, [n.name for n in qdq if n.input[1] not in low]
    assert _casts(converted) <= _casts(onnx.load(str(QDQ / name))) + 2
