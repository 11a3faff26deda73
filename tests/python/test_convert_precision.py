"""--precision fp16|bf16 (convert-precision): converted models are valid ONNX (the full checker),
load in onnxruntime (fp16), run on the reference executor within the target type's tolerance of
the float32 original, place Casts only at island borders, and refuse bad options with a message.
On the bundled CNN, U-Net (Resize's scales stay float32: declared tensor(float)), BERT, GPT-2 and
Llama (whose attention masks hold float32's lowest value, which float16 cannot: those nodes stay
float32 and their outputs are clipped to float16's range where they enter it, or a fully masked
row would be NaN) and two of ../shared/models/real."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

MODELS = ["models/tiny_cnn/model.onnx", "models/transformers/bert_dynamo/model.onnx",
          "models/tiny_unet/model.onnx", "models/transformers/gpt2_dynamo/model.onnx",
          "models/transformers/llama_dynamo/model.onnx", "models/transformers/gpt2_legacy/model.onnx",
          "models/transformers/llama_legacy/model.onnx"]
REAL = ["mnist_opset7.onnx", "ultraface_slim_320.onnx"]
# What `opt check` is given: the target types' rounding over a whole network, not one op's.
TOLERANCE = {"fp16": "0.05", "bf16": "0.2"}


def _paths(repo_root: Path, shared_dir: Path) -> list[Path]:
    out = [repo_root / m for m in MODELS]
    out += [shared_dir / "models" / "real" / m for m in REAL if (shared_dir / "models" / "real" / m).exists()]
    return out


def _elem_types(model: onnx.ModelProto) -> set[int]:
    types = {i.data_type for i in model.graph.initializer}
    types |= {v.type.tensor_type.elem_type for v in model.graph.value_info}
    return types


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("index", range(len(MODELS) + len(REAL)))
def test_converted_model_is_valid_and_close(precision, index, repo_root, shared_dir, run_opt, work_dir):
    paths = _paths(repo_root, shared_dir)
    if index >= len(paths):
        pytest.fail(f"model {index} missing from ../shared/models/real")
    src = paths[index]
    out = work_dir / "converted.onnx"
    extra = []
    opset = next(o.version for o in onnx.load(str(src)).opset_import if o.domain in ("", "ai.onnx"))
    if precision == "bf16" and opset < 13:
        # bfloat16 joined most ops' type constraints at opset 13: below it nothing converts
        # (and the note says why); raised, the model converts.
        r = run_opt(str(src), "--precision", precision, "-o", str(out))
        assert r.returncode == 0, r.stderr
        assert "type not allowed at this opset" in r.stderr
        assert TensorProto.BFLOAT16 not in _elem_types(onnx.load(str(out)))
        extra = ["--target-opset", "17"]
    r = run_opt(str(src), "--precision", precision, "-o", str(out), "--infer-shapes", *extra)
    assert r.returncode == 0, r.stderr
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    target = TensorProto.FLOAT16 if precision == "fp16" else TensorProto.BFLOAT16
    assert target in _elem_types(model), "nothing was converted"
    # Graph inputs and outputs keep float32 (keep-io-types).
    src_model = onnx.load(str(src))
    for a, b in zip(src_model.graph.output, model.graph.output):
        assert a.type.tensor_type.elem_type == b.type.tensor_type.elem_type
    if precision == "fp16":
        ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    tol = TOLERANCE[precision]
    r = run_opt("check", str(src), str(out), "--atol", tol, "--rtol", tol)
    assert r.returncode == 0, r.stdout + r.stderr


def test_casts_only_at_borders_and_shared(repo_root, run_opt, work_dir):
    """Every Cast the conversion adds reads a value no other added Cast reads (one per value), and
    no Cast feeds another."""
    out = work_dir / "bert16.onnx"
    r = run_opt(str(repo_root / MODELS[1]), "--precision", "fp16", "-o", str(out))
    assert r.returncode == 0, r.stderr
    g = onnx.load(str(out)).graph
    casts = [n for n in g.node if n.op_type == "Cast"]
    produced_by_cast = {n.output[0] for n in casts}
    seen = set()
    for n in casts:
        key = (n.input[0], n.attribute[0].i)
        assert key not in seen, f"{n.input[0]} cast twice to the same type"
        seen.add(key)
        assert n.input[0] not in produced_by_cast, f"a Cast chain at {n.input[0]}"


def test_keep_io_types_false_converts_the_interface(repo_root, run_opt, work_dir):
    out = work_dir / "cnn16.onnx"
    r = run_opt(str(repo_root / MODELS[0]), "--precision", "fp16", "--keep-io-types", "false", "-o", str(out))
    assert r.returncode == 0, r.stderr
    g = onnx.load(str(out)).graph
    assert g.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    assert g.output[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    # onnxruntime runs it and agrees with the float32 original.
    src = str(repo_root / MODELS[0])
    feed_info = onnx.load(src).graph.input[0]
    shape = [d.dim_value or 1 for d in feed_info.type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(src).run(None, {feed_info.name: x})[0]
    got = ort.InferenceSession(str(out)).run(None, {feed_info.name: x.astype(np.float16)})[0]
    np.testing.assert_allclose(got.astype(np.float32), want, atol=0.05, rtol=0.05)


def _named_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    w = numpy_helper.from_array(np.full([3, 3], 0.5, np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="/block.0/proj/MatMul"),
             helper.make_node("Relu", ["m"], ["y"], name="/block.0/act")]
    g = helper.make_graph(nodes, "g", [x], [y], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_keep_node_by_a_name_with_slashes(run_opt, work_dir):
    src = work_dir / "named.onnx"
    onnx.save(_named_model(), str(src))
    out = work_dir / "named16.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "--keep-node", "/block.0/proj/MatMul", "-o", str(out))
    assert r.returncode == 0, r.stderr
    nodes = {n.name: n for n in onnx.load(str(out)).graph.node}
    assert "/block.0/proj/MatMul" in nodes
    g = onnx.load(str(out)).graph
    assert all(i.data_type == TensorProto.FLOAT for i in g.initializer), "the kept MatMul's weight stays float32"
    assert any(n.op_type == "Cast" and n.attribute[0].i == TensorProto.FLOAT16 for n in g.node)


@pytest.mark.parametrize("args,message", [
    (["--precision", "fp16", "--keep-op", "Reluu"], "keep-ops names 'Reluu'"),
    (["--precision", "fp8"], "--precision"),
    (["--precision", "fp16", "--keep-node", "a,b"], "cannot be passed to the pass"),
])
def test_bad_options_fail_with_a_message(args, message, run_opt, work_dir):
    src = work_dir / "named.onnx"
    onnx.save(_named_model(), str(src))
    out = work_dir / "never.onnx"
    r = run_opt(str(src), *args, "-o", str(out))
    assert r.returncode != 0
    assert message in r.stderr
    assert not out.exists(), "a half-written output"


def _overflow_model() -> onnx.ModelProto:
    """Activations past float16's range before a LayerNormalization, as some LLMs have them: the
    MatMul's outputs reach about 1e5 for standard-normal x, the LayerNormalization brings them back
    to about 1. Converted naively, the MatMul overflows to inf and the output is NaN."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((5000.0 * np.sign(rng.standard_normal([64, 64]))).astype(np.float32), "w")
    scale = numpy_helper.from_array(np.ones([64], np.float32), "scale")
    bias = numpy_helper.from_array(np.zeros([64], np.float32), "bias")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="up"),
             helper.make_node("Add", ["h", "x"], ["r"], name="residual"),
             helper.make_node("LayerNormalization", ["r", "scale", "bias"], ["n"], name="norm", axis=-1),
             helper.make_node("Relu", ["n"], ["y"], name="act")]
    g = helper.make_graph(nodes, "g", [x], [y], [w, scale, bias])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_range_analysis_keeps_the_overflowing_nodes(run_opt, work_dir):
    src = work_dir / "overflow.onnx"
    onnx.save(_overflow_model(), str(src))
    naive = work_dir / "naive.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "--range-analysis", "false", "-o", str(naive))
    assert r.returncode == 0, r.stderr
    r = run_opt("check", str(src), str(naive), "--atol", "0.05", "--rtol", "0.05")
    assert r.returncode == 3, "the naive conversion was expected to overflow\n" + r.stdout
    safe = work_dir / "safe.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "-o", str(safe))
    assert r.returncode == 0, r.stderr
    assert "past half" in r.stderr and "h (MatMul" in r.stderr, r.stderr
    nodes = {n.name: n for n in onnx.load(str(safe)).graph.node}
    elem = {v.name: v.type.tensor_type.elem_type for v in onnx.shape_inference.infer_shapes(onnx.load(str(safe))).graph.value_info}
    assert elem.get("h") == TensorProto.FLOAT and elem.get("r") == TensorProto.FLOAT
    assert "act" in nodes
    r = run_opt("check", str(src), str(safe), "--atol", "0.05", "--rtol", "0.05")
    assert r.returncode == 0, r.stdout + r.stderr


def test_calibration_inputs(run_opt, work_dir):
    src = work_dir / "overflow.onnx"
    onnx.save(_overflow_model(), str(src))
    # Small calibration inputs: nothing goes past the limit, so nothing is kept for range.
    small = work_dir / "small.npy"
    np.save(small, np.full([4, 64], 1e-3, np.float32))
    out = work_dir / "out.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "--calibration-input", f"x={small}", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "past half" not in r.stderr
    bad_shape = work_dir / "bad.npy"
    np.save(bad_shape, np.zeros([3, 64], np.float32))
    for args, message in [
        ([f"x={bad_shape}"], "x"),
        ([f"nosuch={small}"], "nosuch"),
    ]:
        r = run_opt(str(src), "--precision", "fp16", "--calibration-input", *args, "-o", str(out) + ".bad")
        assert r.returncode != 0 and message in r.stderr, r.stderr
        assert not Path(str(out) + ".bad").exists()
    r = run_opt(str(src), "--calibration-input", f"x={small}", "-o", str(out) + ".bad")
    assert r.returncode == 2 and "--calibration-input needs --precision" in r.stderr, r.stderr


def test_check_holds_a_converted_model_to_its_compute_type(repo_root, run_opt, work_dir):
    """opt check without --atol/--rtol: a float16 model with float32 outputs passes at float16's
    tolerance (it would fail float32's 1e-5), and --per-layer compares values across types."""
    src = repo_root / MODELS[0]
    out = work_dir / "cnn16.onnx"
    r = run_opt(str(src), "--precision", "fp16", "-o", str(out))
    assert r.returncode == 0, r.stderr
    r = run_opt("check", str(src), str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1e-03/1e-02" in r.stdout, r.stdout
    r = run_opt("check", str(src), str(out), "--per-layer")
    assert "element type" not in r.stdout, r.stdout
    # The untouched model still gets float32's tolerance.
    r = run_opt("check", str(src), str(src))
    assert "1e-05/1e-04" in r.stdout, r.stdout


def _types_of(path: Path) -> dict[str, int]:
    """Element type of every value of the model, by name (shape inference for the untyped)."""
    m = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    out = {v.name: v.type.tensor_type.elem_type for v in list(m.graph.value_info) + list(m.graph.output)}
    out.update({i.name: i.data_type for i in m.graph.initializer})
    return out


def _rms_norm_model(scale: float) -> onnx.ModelProto:
    """x * scale -> RMSNorm (Pow 2, ReduceMean, Add eps, Sqrt, Div) -> MatMul: Llama's norm as the
    torch exporter writes it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(np.array([scale], np.float32), "scale"),
             numpy_helper.from_array(np.array([2.0], np.float32), "two"),
             numpy_helper.from_array(np.array([1], np.int64), "axes"),
             numpy_helper.from_array(np.array([1e-6], np.float32), "eps"),
             numpy_helper.from_array((rng.standard_normal([64, 64]) / 8).astype(np.float32), "w")]
    nodes = [helper.make_node("Mul", ["x", "scale"], ["h"], name="scale"),
             helper.make_node("Pow", ["h", "two"], ["sq"], name="square"),
             helper.make_node("ReduceMean", ["sq", "axes"], ["ms"], name="mean", keepdims=1),
             helper.make_node("Add", ["ms", "eps"], ["v"], name="add_eps"),
             helper.make_node("Sqrt", ["v"], ["rms"], name="sqrt"),
             helper.make_node("Div", ["h", "rms"], ["n"], name="normalize"),
             helper.make_node("MatMul", ["n", "w"], ["y"], name="proj")]
    g = helper.make_graph(nodes, "g", [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_precision_analysis_converts_a_reduction_measured_safe(run_opt, work_dir):
    """The RMSNorm's ReduceMean of x^2 is accumulation-sensitive (float32 by default, two Casts
    around it); measured on the float32 run, x^2 fits float16 and the mean keeps its precision,
    so the whole chain converts: no Cast but the graph's two. Scaled so x^2 passes float16's
    range, the Pow, the mean and their neighbours stay float32 instead."""
    src = work_dir / "rms.onnx"
    onnx.save(_rms_norm_model(1.0), str(src))
    default = work_dir / "default.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "--range-analysis", "false", "-o", str(default))
    assert r.returncode == 0, r.stderr
    t = _types_of(default)
    assert t["ms"] == TensorProto.FLOAT and t["sq"] == TensorProto.FLOAT
    assert sum(n.op_type == "Cast" for n in onnx.load(str(default)).graph.node) == 4
    measured = work_dir / "measured.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "-o", str(measured))
    assert r.returncode == 0, r.stderr
    assert "measured safe" in r.stderr and "ms (ReduceMean" in r.stderr, r.stderr
    t = _types_of(measured)
    assert t["ms"] == TensorProto.FLOAT16 and t["sq"] == TensorProto.FLOAT16
    model = onnx.load(str(measured))
    onnx.checker.check_model(model, full_check=True)
    assert sum(n.op_type == "Cast" for n in model.graph.node) == 2
    r = run_opt("check", str(src), str(measured))
    assert r.returncode == 0, r.stdout + r.stderr

    big = work_dir / "big.onnx"
    onnx.save(_rms_norm_model(400.0), str(big))  # |h| up to ~1600: h^2 past 65504
    out = work_dir / "big16.onnx"
    r = run_opt(str(big), "-O0", "--precision", "fp16", "-o", str(out))
    assert r.returncode == 0, r.stderr
    t = _types_of(out)
    assert t["sq"] == TensorProto.FLOAT and t["ms"] == TensorProto.FLOAT, r.stderr
    r = run_opt("check", str(big), str(out))
    assert r.returncode == 0, r.stdout + r.stderr


def _rotary_model() -> onnx.ModelProto:
    """cos(pos * f): rotary angles up to ~2000 radians. float16 rounds 2000 to a multiple of 1, so
    the cosine of the rounded angle is noise; float32 keeps it."""
    pos = helper.make_tensor_value_info("pos", TensorProto.FLOAT, [64, 1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 8])
    freq = numpy_helper.from_array((32.0 / 10000.0 ** (np.arange(8) / 8)).astype(np.float32), "freq")
    nodes = [helper.make_node("Mul", ["pos", "freq"], ["angle"], name="angles"),
             helper.make_node("Cos", ["angle"], ["c"], name="cos"),
             helper.make_node("Relu", ["c"], ["y"], name="act")]
    g = helper.make_graph(nodes, "g", [pos], [y], [freq])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_precision_analysis_keeps_what_loses_precision(run_opt, work_dir):
    """With calibration positions 0..63, the Cos of float16-rounded angles is off by up to ~0.03
    (past 16 units of float16's rounding of its largest output): the analysis keeps the Cos and
    its input's producer float32, and the converted model matches where the naive one does
    not."""
    src = work_dir / "rotary.onnx"
    onnx.save(_rotary_model(), str(src))
    pos = work_dir / "pos.npy"
    np.save(pos, np.arange(64, dtype=np.float32).reshape(64, 1))
    naive = work_dir / "naive.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "--range-analysis", "false", "-o", str(naive))
    assert r.returncode == 0, r.stderr
    kept = work_dir / "kept.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "--calibration-input", f"pos={pos}", "-o", str(kept))
    assert r.returncode == 0, r.stderr
    assert "c (Cos" in r.stderr and "lose more than" in r.stderr, r.stderr
    t = _types_of(kept)
    assert t["angle"] == TensorProto.FLOAT and t["c"] == TensorProto.FLOAT
    check = ["--input", f"pos={pos}", "--atol", "0.01", "--rtol", "0.01"]
    r = run_opt("check", str(src), str(naive), *check)
    assert r.returncode == 3, "the naive conversion was expected to lose the cosine\n" + r.stdout
    r = run_opt("check", str(src), str(kept), *check)
    assert r.returncode == 0, r.stdout + r.stderr


def _mask_model(mask_op: str) -> onnx.ModelProto:
    """scores + mask -> Softmax, the mask float32's lowest where masked: Where(keep, 0, lowest)
    (its output is exactly 0 or lowest), or Mul(m, lowest) for a soft m in [0, 1]."""
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    lowest = numpy_helper.from_array(np.array([np.finfo(np.float32).min], np.float32), "lowest")
    inits = [lowest]
    if mask_op == "Where":
        keep = np.ones([4, 8], bool)
        keep[:, 6:] = False
        inits += [numpy_helper.from_array(keep, "keep"), numpy_helper.from_array(np.zeros([1], np.float32), "zero")]
        mask = helper.make_node("Where", ["keep", "zero", "lowest"], ["m"], name="mask")
    else:
        soft = np.random.default_rng(3).uniform(0, 1, [4, 8]).astype(np.float32)
        inits += [numpy_helper.from_array(soft, "soft")]
        mask = helper.make_node("Mul", ["soft", "lowest"], ["m"], name="mask")
    nodes = [mask, helper.make_node("Add", ["s", "m"], ["a"], name="add"),
             helper.make_node("Softmax", ["a"], ["y"], name="softmax", axis=-1)]
    g = helper.make_graph(nodes, "g", [s], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("mask_op", ["Where", "Mul"])
def test_precision_analysis_saturates_a_mask_constant(mask_op, run_opt, work_dir):
    """Where(keep, 0, lowest) with lowest saturated to -65504 gives the float32 output clipped to
    float16's range exactly: it converts, with no Clip or Cast for the mask. Mul(soft, lowest)
    does not (0.5 * -65504 is not the clipped -1.7e38): it stays float32, and so do its readers
    (its values are past the range)."""
    src = work_dir / "mask.onnx"
    onnx.save(_mask_model(mask_op), str(src))
    out = work_dir / "mask16.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "-o", str(out))
    assert r.returncode == 0, r.stderr
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    ops = [n.op_type for n in model.graph.node]
    t = _types_of(out)
    if mask_op == "Where":
        assert "Clip" not in ops and ops.count("Cast") == 2, ops
        assert t["m"] == TensorProto.FLOAT16
        low = [i for i in model.graph.initializer if i.data_type == TensorProto.FLOAT16 and "lowest" in i.name]
        assert low and numpy_helper.to_array(low[0]).min() == np.float16(-65504)
    else:
        # Its output (up to 1.7e38) is past the range: the Mul and its readers stay float32.
        assert t["m"] == TensorProto.FLOAT and "Cast" not in ops, ops
    r = run_opt("check", str(src), str(out))
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_padding_mask_does_not_keep_the_attention_float32(repo_root, run_opt, work_dir):
    """BERT calibrated with a padding mask (the last 28 of 128 positions masked): the scores the
    mask's Add makes are float32's lowest there, past float16's range, but they are masks (the
    Where saturates to -65504, and they read as -inf downstream): no softmax stays float32, and
    the Casts are the model's own one and the output's."""
    src = repo_root / MODELS[1]
    mask = np.ones([1, 128], np.int64)
    mask[:, 100:] = 0
    ids = np.random.default_rng(0).integers(0, 1000, [1, 128]).astype(np.int64)
    np.save(work_dir / "mask.npy", mask)
    np.save(work_dir / "ids.npy", ids)
    out = work_dir / "bert16.onnx"
    r = run_opt(str(src), "--precision", "fp16", "-o", str(out),
                "--calibration-input", f"attention_mask={work_dir / 'mask.npy'}",
                "--calibration-input", f"input_ids={work_dir / 'ids.npy'}")
    assert r.returncode == 0, r.stderr
    assert "past half" not in r.stderr, r.stderr
    g = onnx.load(str(out)).graph
    assert [n.op_type for n in g.node].count("Cast") == 2
    r = run_opt("check", str(src), str(out), "--input", f"attention_mask={work_dir / 'mask.npy'}",
                "--input", f"input_ids={work_dir / 'ids.npy'}", "--atol", "0.05", "--rtol", "0.05")
    assert r.returncode == 0, r.stdout + r.stderr


def test_precision_analysis_keeps_values_under_the_smallest_normal(run_opt, work_dir):
    """x * 1e-7 * 1e7: the middle value is wholly under float16's smallest normal (6.1e-5), where
    it keeps a bit or two. Its producer and reader stay float32 (the check passes at float16's own
    tolerance); converted naively, the output is off by tens of percent."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])
    inits = [numpy_helper.from_array(np.array([1e-7], np.float32), "down"),
             numpy_helper.from_array(np.array([1e7], np.float32), "up")]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Mul", ["r", "down"], ["t"], name="shrink"),
             helper.make_node("Mul", ["t", "up"], ["y"], name="grow")]
    src = work_dir / "tiny.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                                opset_imports=[helper.make_opsetid("", 17)]), str(src))
    naive, kept = work_dir / "naive.onnx", work_dir / "kept.onnx"
    r = run_opt(str(src), "-O0", "--precision", "fp16", "--range-analysis", "false", "-o", str(naive))
    assert r.returncode == 0, r.stderr
    r = run_opt(str(src), "-O0", "--precision", "fp16", "-o", str(kept))
    assert r.returncode == 0, r.stderr
    assert "t (Mul" in r.stderr and "smallest normal" in r.stderr, r.stderr
    t = _types_of(kept)
    assert t["t"] == TensorProto.FLOAT and t["r"] == TensorProto.FLOAT16
    assert run_opt("check", str(src), str(naive), "--atol", "0.05", "--rtol", "0.05").returncode == 3
    r = run_opt("check", str(src), str(kept))
    assert r.returncode == 0, r.stdout + r.stderr


def test_subgraphs_convert_inside_with_a_float32_interface(shared_dir, run_opt, work_dir):
    """silero_vad: an If at the top whose branches hold the convolutions and the LSTM (and
    Ifs and Loops of their own). The branches convert inside, their interface float32; bodies
    with nothing to speed up stay float32. onnxruntime runs the result (the reference kernels
    cannot run this model on seeded inputs) and matches the float32 original."""
    src = shared_dir / "models" / "real" / "silero_vad.onnx"
    if not src.exists():
        pytest.fail(f"{src} missing from ../shared/models/real")
    out = work_dir / "silero16.onnx"
    r = run_opt(str(src), "--precision", "fp16", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "a subgraph without products or convolutions" in r.stderr, r.stderr
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    branch_types = set()
    for n in model.graph.node:
        for a in n.attribute:
            branch_types |= {i.data_type for i in a.g.initializer}
            branch_types |= {v.type.tensor_type.elem_type for v in a.g.value_info}
    assert TensorProto.FLOAT16 in branch_types, "nothing converted inside the branches"
    rng = np.random.default_rng(0)
    feeds = {"input": (0.1 * rng.standard_normal([1, 512])).astype(np.float32),
             "state": np.zeros([2, 1, 128], np.float32), "sr": np.array(16000, np.int64)}
    want = ort.InferenceSession(str(src)).run(None, feeds)
    got = ort.InferenceSession(str(out)).run(None, feeds)
    for w, g in zip(want, got):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, atol=0.02, rtol=0.02)


def _init(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> TensorProto:
    return numpy_helper.from_array((0.3 * rng.standard_normal(shape)).astype(np.float32), name)


def _ints(name: str, values: list[int]) -> TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _typed_by_attribute_models() -> dict[str, tuple[list, list, list, list]]:
    """(nodes, inputs, outputs, initializers) of the models that once converted to invalid files or
    were refused: a ConstantOfShape into an Add (its value stayed float32 under a float16 type), an
    LSTM and a GRU whose zero states come from ConstantOfShape -> Slice, a graph output that another
    node reads, and a Constant with a sparse value."""
    rng = np.random.default_rng(0)
    x8 = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])]
    hid = 5
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "v"),
                                       _ints("i", [1, 6]), [2, 4])
    return {
        "constant_of_shape": (
            [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["one"],
                              value=numpy_helper.from_array(np.array([1.0], np.float32))),
             helper.make_node("Add", ["x", "one"], ["a"]), helper.make_node("MatMul", ["a", "w"], ["y"])],
            x8, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [_init("w", (8, 4), rng)]),
        "rnn_states": (
            [helper.make_node("Shape", ["x"], ["xs"]), helper.make_node("Gather", ["xs", "one"], ["n"], axis=0),
             helper.make_node("Concat", ["four", "n", "hid"], ["shape"], axis=0),
             helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
             helper.make_node("Slice", ["zeros", "s0", "s2", "s0"], ["h0"]),
             helper.make_node("Slice", ["zeros", "s2", "s4", "s0"], ["c0"]),
             helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["ly", "lh", "lc"], hidden_size=hid,
                              direction="bidirectional"),
             helper.make_node("GRU", ["x", "GW", "GR", "GB", "", "h0"], ["gy", "gh"], hidden_size=hid,
                              direction="bidirectional"),
             helper.make_node("Add", ["lh", "gh"], ["y"])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", "N", 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "N", hid])],
            [_init("W", (2, 4 * hid, 3), rng), _init("R", (2, 4 * hid, hid), rng), _init("B", (2, 8 * hid), rng),
             _init("GW", (2, 3 * hid, 3), rng), _init("GR", (2, 3 * hid, hid), rng), _init("GB", (2, 6 * hid), rng),
             _ints("one", [1]), _ints("four", [4]), _ints("hid", [hid]), _ints("s0", [0]), _ints("s2", [2]),
             _ints("s4", [4])]),
        "output_also_read": (
            [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
            x8, [helper.make_tensor_value_info("h", TensorProto.FLOAT, ["N", 4]),
                 helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [_init("w", (8, 4), rng)]),
        "sparse_constant": (
            [helper.make_node("Constant", [], ["c"], sparse_value=sparse), helper.make_node("Add", ["x", "c"], ["a"]),
             helper.make_node("MatMul", ["a", "w"], ["y"])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [_init("w", (4, 3), rng)]),
    }


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(_typed_by_attribute_models()))
def test_converted_models_keep_types_consistent(name, precision, run_opt, work_dir):
    """Each converts (bf16 at opset 22, where LSTM, GRU and ConstantOfShape allow it) to a model the
    full checker accepts; onnxruntime runs the float16 one within 0.02 of the original (its CPU
    provider has no bfloat16 Add or MatMul: the checker's type inference is what holds bf16 here)."""
    nodes, inputs, outputs, inits = _typed_by_attribute_models()[name]
    opset = 17 if precision == "fp16" else 22
    model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid("", opset)], ir_version=10 if opset > 17 else 8)
    src, out = work_dir / "model.onnx", work_dir / "converted.onnx"
    onnx.save(model, str(src))
    r = run_opt(str(src), "--precision", precision, "-o", str(out))
    assert r.returncode == 0, r.stderr
    converted = onnx.load(str(out))
    onnx.checker.check_model(converted, full_check=True)
    target = TensorProto.FLOAT16 if precision == "fp16" else TensorProto.BFLOAT16
    assert target in _elem_types(converted), "nothing was converted"
    if precision == "bf16":
        return
    rng = np.random.default_rng(1)
    feeds = {i.name: rng.standard_normal([d.dim_value or 3 for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in model.graph.input}
    want = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feeds)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, atol=0.02, rtol=0.02)


def test_an_input_without_seeded_values_skips_the_analysis(run_opt, work_dir):
    """A string input has no seeded value for the analysis' float32 run: the conversion goes on
    without the analysis (a warning says why) instead of refusing the model."""
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Identity", ["s"], ["t"])], "strings",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
         helper.make_tensor_value_info("s", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("t", TensorProto.STRING, [2])], [_init("w", (4, 3), rng)])
    src, out = work_dir / "strings.onnx", work_dir / "strings16.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(src))
    r = run_opt(str(src), "--precision", "fp16", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "precision analysis skipped (input 's' of type string: give it with --input)" in r.stderr, r.stderr
    converted = onnx.load(str(out))
    onnx.checker.check_model(converted, full_check=True)
    assert TensorProto.FLOAT16 in _elem_types(converted)


def test_scan_body_converts_inside_with_a_float32_interface(run_opt, work_dir):
    """A Scan whose body multiplies each step's row by a weight into a running sum: the body
    converts inside (a MatMul to speed up), its state and scan interface stays float32, and
    onnxruntime runs the result and matches the float32 original."""
    rng = np.random.default_rng(0)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["row", "w"], ["p"]), helper.make_node("Add", ["acc", "p"], ["acc_out"]),
         helper.make_node("Identity", ["p"], ["step"])],
        "body",
        [helper.make_tensor_value_info("acc", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("row", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("step", TensorProto.FLOAT, [1, 4])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["acc0", "x"], ["acc", "steps"], body=body, num_scan_inputs=1)],
        "scan",
        [helper.make_tensor_value_info("acc0", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, 8])],
        [helper.make_tensor_value_info("acc", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("steps", TensorProto.FLOAT, [5, 1, 4])],
        [_init("w", (8, 4), rng)])
    src, out = work_dir / "scan.onnx", work_dir / "scan16.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(src))
    r = run_opt(str(src), "--precision", "fp16", "-o", str(out))
    assert r.returncode == 0, r.stderr
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    scan = next(n for n in model.graph.node if n.op_type == "Scan")
    inner = onnx.helper.get_attribute_value(scan.attribute[0])
    assert TensorProto.FLOAT16 in {i.data_type for i in inner.initializer} | {
        i.data_type for i in model.graph.initializer}, "nothing converted"
    feeds = {"acc0": rng.standard_normal([1, 4]).astype(np.float32),
             "x": rng.standard_normal([5, 1, 8]).astype(np.float32)}
    want = ort.InferenceSession(str(src)).run(None, feeds)
    got = ort.InferenceSession(str(out)).run(None, feeds)
    for w, g in zip(want, got):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, atol=0.02, rtol=0.02)
