"""Weight-only quantization (`opt --quantize weights=int4|int8`, the quantize-weights pass) on the
bundled decoders (models/decoders, with a KV cache, run on their stored inputs) and
models/llama_mlp, raised to opset 21 first:
- the quantized model runs on onnxruntime and agrees with our reference kernels;
- `opt check ORIGINAL QUANTIZED` reports the error (cosine similarity, max abs) against the float
  model, within what the type allows;
- the quantized weights shrink to 1/8 plus one float32 scale per block (int4) or 1/4 plus scales
  (int8), and so does the file;
- each block's values are what onnxruntime's QuantizeLinear-21 gives for the weight with the
  written scale and zero point (round to nearest), and dequantize within half a scale of it (and
  the scale's rounding at the range's ends);
- --quantize-exclude matches node names; an opset below 21 is refused with the flag to use;
- the reference kernels' DequantizeLinear-21 (which runs these models in `opt run` and `opt check`)
  equals onnxruntime's bit for bit on blocked int4, uint4, int8 and uint8 with and without zero
  points, float and float16 scales, any axis, odd element counts (a half-filled last byte) and a
  partial last block; with bfloat16 scales (no onnxruntime CPU kernel), numpy's (q - z) * s in
  float rounded to bfloat16 is the oracle."""

from __future__ import annotations

import itertools
import json
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from model_corpus import stored_input_args
from roundtrip_check import REPO_ROOT

MODELS = ["decoders/llama_kv_dynamo", "decoders/qwen2_kv_dynamo", "decoders/phi_kv_dynamo",
          "decoders/gptj_kv_dynamo", "llama_mlp"]
# (flags, the least cosine similarity of the first output to the float model's, the weight bytes
# after over before: 4 or 8 bits of 32 plus a float32 scale, and a 4- or 8-bit zero point when
# asymmetric, per block of 32).
CONFIGS = {
    "int4": (["weights=int4"], 0.98, (4 + 32 / 32) / 32),
    "int4-asym": (["weights=int4", "--quantize-asymmetric"], 0.98, (4 + 32 / 32 + 4 / 32) / 32),
    "int4-b64": (["weights=int4", "--block-size", "64"], 0.98, (4 + 32 / 64) / 32),
    "int8": (["weights=int8"], 0.9999, (8 + 32 / 32) / 32),
}


def _inputs(model_dir: Path) -> list[str]:
    if model_dir.parent.name == "decoders":
        return stored_input_args((model_dir / "model.onnx").resolve())
    return ["--input", f"x={model_dir / 'test_data_set_0' / 'input_0.pb'}"]


def _stats(stdout: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"quantize-weights\.(\S+)\s+(\d+)", stdout)}


def _initializer_bytes(path: Path) -> int:
    return sum(len(t.raw_data) for t in onnx.load(str(path)).graph.initializer)


def _check(run_opt, work: Path, *args) -> dict:
    report = work / "check.json"
    proc = run_opt("check", *args, "--report", report)
    assert report.exists(), proc.stdout + proc.stderr
    return json.loads(report.read_text())["check"]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", MODELS)
def test_quantized_decoder(name: str, config: str, run_opt, work_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("ONNXOPT_PYTHON", sys.executable)  # opt's onnxruntime runner
    flags, min_cosine, ratio = CONFIGS[config]
    model_dir = REPO_ROOT / "models" / name
    src = model_dir / "model.onnx"
    base, quant = work_dir / "float.onnx", work_dir / "quant.onnx"
    assert run_opt(src, "--target-opset", "21", "-o", base).returncode == 0
    proc = run_opt(src, "--target-opset", "21", "--quantize", *flags, "--stats", "-o", quant)
    assert proc.returncode == 0, proc.stderr
    stats = _stats(proc.stdout)
    ops = [n.op_type for n in onnx.load(str(quant)).graph.node]
    assert ops.count("DequantizeLinear") == stats["weights-quantized"] > 0
    onnx.checker.check_model(str(quant), full_check=True)

    # Size: the quantized weights by the format's ratio, the file by what they were.
    assert stats["weight-bytes-after"] == pytest.approx(ratio * stats["weight-bytes-before"])
    saved = stats["weight-bytes-before"] - stats["weight-bytes-after"]
    assert _initializer_bytes(base) - _initializer_bytes(quant) == saved
    assert quant.stat().st_size < base.stat().st_size - saved * 0.99

    # onnxruntime runs the quantized model as our reference kernels do.
    inputs = _inputs(model_dir)
    agree = _check(run_opt, work_dir, quant, "--runner", "onnxruntime", "--against", "reference",
                   *inputs)
    assert agree["passed"], agree["outputs"]

    # The error against the float model: reported, nonzero (the weights did change), bounded.
    error = _check(run_opt, work_dir, base, quant, *inputs)["outputs"][0]
    assert 0 < error["max_abs_error"] < 1, error
    assert min_cosine <= error["cosine_similarity"] < 1, error


def _product_model(w: np.ndarray, node_names=("proj_a", "proj_b")) -> onnx.ModelProto:
    """x @ w0 and x @ w1 (w's two halves of columns), named nodes, opset 21."""
    k, n = w.shape
    dtype = helper.np_dtype_to_tensor_dtype(w.dtype)
    inits = [numpy_helper.from_array(w[:, : n // 2].copy(), "w0"),
             numpy_helper.from_array(w[:, n // 2:].copy(), "w1")]
    nodes = [helper.make_node("MatMul", ["x", f"w{i}"], [f"y{i}"], name=node_names[i])
             for i in range(2)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", dtype, [3, k])],
                              [helper.make_tensor_value_info(f"y{i}", dtype, [3, n // 2])
                               for i in range(2)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _quantize_linear(w: np.ndarray, scale: np.ndarray, zero_point, qtype: int,
                     block: int) -> np.ndarray:
    """onnxruntime's QuantizeLinear-21 of w along axis 0 in blocks, to qtype."""
    inputs = [helper.make_tensor_value_info("w", helper.np_dtype_to_tensor_dtype(w.dtype), w.shape),
              helper.make_tensor_value_info("s", helper.np_dtype_to_tensor_dtype(scale.dtype),
                                            scale.shape)]
    names = ["w", "s"]
    inits = []
    if zero_point is not None:
        inits.append(zero_point)
        names.append(zero_point.name)
    node = helper.make_node("QuantizeLinear", names, ["q4"], axis=0, block_size=block,
                            output_dtype=qtype if zero_point is None else 0)
    # onnxruntime returns no 4-bit arrays to Python: widened in the graph.
    cast = helper.make_node("Cast", ["q4"], ["q"], to=TensorProto.INT32)
    graph = helper.make_graph([node, cast], "q", inputs,
                              [helper.make_tensor_value_info("q", TensorProto.INT32, w.shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"w": w, "s": scale})[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("flags,qtype", [
    (["weights=int4"], TensorProto.INT4), (["weights=int4", "--quantize-asymmetric"], TensorProto.UINT4),
    (["weights=int8"], TensorProto.INT8), (["weights=int8", "--quantize-asymmetric"], TensorProto.UINT8)],
    ids=["int4", "uint4", "int8", "uint8"])
def test_values_are_quantize_linear_of_the_weight(flags, qtype, dtype, run_opt, work_dir: Path) -> None:
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((128, 16)) * rng.uniform(0.01, 2, (1, 16))).astype(dtype)
    w[:32, 0] = 0  # an all-zero block: scale 1, values 0
    w[32:64, 1] = np.abs(w[32:64, 1])  # a block of one sign: the zero point at an end
    src, out = work_dir / "w.onnx", work_dir / "q.onnx"
    onnx.save(_product_model(w), src)
    proc = run_opt(src, "-O0", "--quantize", *flags, "-o", out)
    assert proc.returncode == 0, proc.stderr
    model = onnx.load(str(out))
    inits = {t.name: t for t in model.graph.initializer}
    for i, half in enumerate(np.split(w, 2, axis=1)):
        dq = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == f"w{i}")
        assert [(a.name, a.i) for a in dq.attribute] == [("axis", 0), ("block_size", 32)]
        q = inits[dq.input[0]]
        scale = numpy_helper.to_array(inits[dq.input[1]])
        zero = inits[dq.input[2]] if len(dq.input) > 2 else None
        assert q.data_type == qtype and scale.dtype == dtype and scale.shape == (4, 8)
        if i == 0:
            assert scale[0, 0] == 1
        expected = _quantize_linear(half, scale, zero, qtype, 32)
        np.testing.assert_array_equal(numpy_helper.to_array(q).astype(np.int32), expected)
        # Dequantized: within half a scale of the weight, and at the range's ends the steps
        # that the scale's rounding to the weight's type moves them by.
        z = numpy_helper.to_array(zero).astype(np.float64) if zero is not None else np.zeros(scale.shape)
        back = (numpy_helper.to_array(q).astype(np.float64) - np.repeat(z, 32, axis=0)) \
            * np.repeat(scale.astype(np.float64), 32, axis=0)
        steps = 255 if qtype in (TensorProto.INT8, TensorProto.UINT8) else 15
        slack = np.repeat(scale.astype(np.float64), 32, axis=0) * (0.5 + steps * np.finfo(dtype).eps)
        assert np.all(np.abs(back - half.astype(np.float64)) <= slack)


def test_exclude_matches_node_names(run_opt, work_dir: Path) -> None:
    src, out = work_dir / "w.onnx", work_dir / "q.onnx"
    onnx.save(_product_model(np.ones((64, 4), np.float32)), src)
    proc = run_opt(src, "-O0", "--quantize", "weights=int8", "--quantize-exclude", "proj_?", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "DequantizeLinear" not in {n.op_type for n in onnx.load(str(out)).graph.node}
    proc = run_opt(src, "-O0", "--quantize", "weights=int8", "--quantize-exclude", "*_b", "-o", out)
    assert proc.returncode == 0, proc.stderr
    readers = {n.name: n.input[1] for n in onnx.load(str(out)).graph.node if n.op_type == "MatMul"}
    inits = {t.name for t in onnx.load(str(out)).graph.initializer}
    assert readers["proj_b"] in inits and readers["proj_a"] not in inits


def test_opset_below_21_is_refused_with_the_flag(run_opt, work_dir: Path) -> None:
    out = work_dir / "q.onnx"
    proc = run_opt(REPO_ROOT / "models/llama_mlp/model.onnx", "--quantize", "weights=int4", "-o", out)
    assert proc.returncode != 0 and not out.exists()
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("opt: error: ") and "add --target-opset 21" in lines[0], proc.stderr


QUANT_RANGES = {TensorProto.INT4: (-8, 7), TensorProto.UINT4: (0, 15), TensorProto.INT8: (-128, 127),
                TensorProto.UINT8: (0, 255)}
# (shape, axis, block): a weight's axis 0; a Gemm transB's axis 1; a batched weight; blocks that
# do not divide the dim (the last one partial) and odd element counts.
LAYOUTS = [((64, 3), 0, 32), ((5, 40), 1, 16), ((2, 7, 3), 1, 4), ((3, 5), 0, 2), ((4, 33), 1, 32)]
DQ_CASES = list(itertools.product(QUANT_RANGES, [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16],
                                  [False, True]))


def _dq_model(qtype: int, stype: int, zero_point: bool, rng: np.random.Generator):
    """DequantizeLinear-21 of constants, one output y{i} per layout: the model, and for each
    layout (q, s, z, axis, block) as int64 / float32 arrays."""
    lo, hi = QUANT_RANGES[qtype]
    nodes, outputs, inits, parts = [], [], [], []
    for i, (shape, axis, block) in enumerate(LAYOUTS):
        sshape = list(shape)
        sshape[axis] = -(-shape[axis] // block)
        q = rng.integers(lo, hi + 1, shape)
        s = rng.uniform(0.01, 2, sshape).astype(np.float32)
        if stype == TensorProto.FLOAT16:
            s = s.astype(np.float16).astype(np.float32)
        inits.append(helper.make_tensor(f"q{i}", qtype, shape, q.ravel().tolist()))
        if stype == TensorProto.BFLOAT16:
            # bfloat16 keeps float32's top 16 bits: values truncated so are exactly representable.
            s = (s.view(np.uint32) & 0xFFFF0000).view(np.float32)
            inits.append(helper.make_tensor(f"s{i}", stype, sshape, s.ravel().tolist()))
        else:
            inits.append(numpy_helper.from_array(s.astype(helper.tensor_dtype_to_np_dtype(stype)), f"s{i}"))
        z = np.zeros(sshape, np.int64)
        names = [f"q{i}", f"s{i}"]
        if zero_point:
            z = rng.integers(lo, hi + 1, sshape)
            inits.append(helper.make_tensor(f"z{i}", qtype, sshape, z.ravel().tolist()))
            names.append(f"z{i}")
        nodes.append(helper.make_node("DequantizeLinear", names, [f"y{i}"], axis=axis, block_size=block))
        outputs.append(helper.make_tensor_value_info(f"y{i}", stype, shape))
        parts.append((q, s, z, axis, block))
    graph = helper.make_graph(nodes, "dq", [], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return model, parts


@pytest.mark.parametrize("qtype,stype,zero_point", DQ_CASES,
                         ids=[f"{TensorProto.DataType.Name(q).lower()}-{TensorProto.DataType.Name(s).lower()}"
                              f"{'-zp' if z else ''}" for q, s, z in DQ_CASES])
def test_reference_dequantize_blocked(qtype, stype, zero_point, run_opt, work_dir: Path,
                                      monkeypatch) -> None:
    model, parts = _dq_model(qtype, stype, zero_point, np.random.default_rng(qtype))
    onnx.checker.check_model(model, full_check=True)
    path = work_dir / "dq.onnx"
    onnx.save(model, path)
    if stype != TensorProto.BFLOAT16:
        monkeypatch.setenv("ONNXOPT_PYTHON", sys.executable)  # opt's onnxruntime runner
        agree = _check(run_opt, work_dir, path, "--runner", "onnxruntime", "--against", "reference",
                       "--atol", "0", "--rtol", "0")
        assert agree["passed"] and len(agree["outputs"]) == len(LAYOUTS), agree["outputs"]
        return
    proc = run_opt("run", path, "--save-outputs", work_dir, "--save-format", "pb")
    assert proc.returncode == 0, proc.stderr
    for i, (q, s, z, axis, block) in enumerate(parts):
        got = numpy_helper.to_array(onnx.load_tensor(str(work_dir / f"y{i}.pb"))).astype(np.float32)
        expand = lambda t: np.repeat(t, block, axis=axis).take(range(q.shape[axis]), axis=axis)
        exact = ((q - expand(z)).astype(np.float32) * expand(s)).astype(np.float32)
        expected = numpy_helper.to_array(helper.make_tensor("e", TensorProto.BFLOAT16, exact.shape,
                                                            exact.ravel().tolist())).astype(np.float32)
        np.testing.assert_array_equal(got, expected, err_msg=f"layout {LAYOUTS[i]}")
