"""-O3 --target cuda: the fusions to our own ops (ai.onnxopt) write each op's decomposition as a model-local
function, so the file stays a valid ONNX model that onnxruntime runs with the same results, and our own
runners run it too (the reference executor through the functions' bodies or its own kernels)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
TRANSFORMERS = sorted((REPO / "models" / "transformers").glob("*/model.onnx"))


def _mlp(opset: int, gelu: str) -> onnx.ModelProto:
    """Two transformer MLP blocks on [2, 7, 16]: MatMul + bias + activation, MatMul + bias, with the
    activation as a Gelu node (opset 20+) or written out (erf form), and a Relu branch."""
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32) * 0.3, n)
             for n, s in [("w1", (16, 32)), ("b1", (32,)), ("w2", (32, 16)), ("b2", (16,)),
                          ("w3", (16, 8)), ("b3", (8,))]]
    inits += [numpy_helper.from_array(np.array(v, np.float32), n)
              for n, v in [("r2", 2 ** 0.5), ("one", 1.0), ("half", 0.5)]]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["h1"])]
    if gelu == "node":
        nodes.append(helper.make_node("Gelu", ["h1"], ["g1"]))
    else:
        nodes += [helper.make_node("Div", ["h1", "r2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["h1", "a"], ["p"]),
                  helper.make_node("Mul", ["p", "half"], ["g1"])]
    nodes += [helper.make_node("MatMul", ["g1", "w2"], ["m2"]), helper.make_node("Add", ["b2", "m2"], ["y"]),
              helper.make_node("MatMul", ["y", "w3"], ["m3"]), helper.make_node("Add", ["m3", "b3"], ["a3"]),
              helper.make_node("Relu", ["a3"], ["z"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 7, 16]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 7, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def _ort(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def _target_ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node if n.domain == "ai.onnxopt"]


@pytest.mark.parametrize("opset,gelu,fused", [
    (20, "node", ["MatMulBiasGelu", "MatMulBias", "MatMulBiasRelu"]),
    (20, "written", ["MatMulBiasGelu", "MatMulBias", "MatMulBiasRelu"]),  # fuse-gelu first
    (17, "written", ["MatMulBias", "MatMulBias", "MatMulBiasRelu"]),  # no Gelu before opset 20
])
def test_fused_model_is_valid_and_onnxruntime_matches(run_opt, work_dir: Path, monkeypatch, opset: int,
                                                      gelu: str, fused: list[str]) -> None:
    monkeypatch.setenv("ONNXOPT_PYTHON", sys.executable)  # the onnxruntime runner's interpreter
    src, dst = work_dir / "mlp.onnx", work_dir / "mlp.cuda.onnx"
    onnx.save(_mlp(opset, gelu), src)
    proc = run_opt(src, "-O3", "--target", "cuda", "-o", dst)
    assert proc.returncode == 0, proc.stderr
    out = onnx.load(dst)
    onnx.checker.check_model(out, full_check=True)
    assert _target_ops(out) == fused
    assert {(f.domain, f.name) for f in out.functions} == {("ai.onnxopt", op) for op in fused}
    assert {i.domain: i.version for i in out.opset_import}.get("ai.onnxopt") == 1
    x = np.random.default_rng(5).standard_normal((2, 7, 16)).astype(np.float32)
    for name, e, g in zip(["y", "z"], _ort(src, {"x": x}), _ort(dst, {"x": x})):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5, err_msg=name)
    # Our reference runner on the fused file, against onnxruntime on the same file.
    proc = run_opt("check", dst, "--runner", "reference", "--against", "onnxruntime")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_portable_levels_add_no_target_ops(run_opt, work_dir: Path) -> None:
    """Negative: -O3 without a target, and -O2 with one, stay standard ONNX."""
    src = work_dir / "mlp.onnx"
    onnx.save(_mlp(20, "node"), src)
    for args in (["-O3"], ["-O2", "--target", "cuda"]):
        dst = work_dir / "out.onnx"
        proc = run_opt(src, *args, "-o", dst)
        assert proc.returncode == 0, proc.stderr
        out = onnx.load(dst)
        assert not _target_ops(out) and not out.functions, args


def test_unknown_target_is_a_usage_error(run_opt, work_dir: Path) -> None:
    src = work_dir / "mlp.onnx"
    onnx.save(_mlp(20, "node"), src)
    proc = run_opt(src, "-O3", "--target", "tpu", "-o", work_dir / "out.onnx")
    assert proc.returncode == 2
    assert "tpu" in proc.stderr
    assert not (work_dir / "out.onnx").exists()


def test_reoptimizing_a_fused_model_gives_it_back(run_opt, work_dir: Path) -> None:
    """-O3 --target cuda on its own output: -O1 inlines the calls, the fusions make them again."""
    src, once, twice = work_dir / "mlp.onnx", work_dir / "once.onnx", work_dir / "twice.onnx"
    onnx.save(_mlp(20, "node"), src)
    assert run_opt(src, "-O3", "--target", "cuda", "-o", once).returncode == 0
    proc = run_opt(once, "-O3", "--target", "cuda", "-o", twice)
    assert proc.returncode == 0, proc.stderr
    assert _target_ops(onnx.load(twice)) == _target_ops(onnx.load(once))
    proc = run_opt(once, "-O2", "-o", work_dir / "plain.onnx")
    assert proc.returncode == 0, proc.stderr
    plain = onnx.load(work_dir / "plain.onnx")
    assert not _target_ops(plain) and not plain.functions


def _prenorm_block(opset: int) -> onnx.ModelProto:
    """A pre-norm residual pair on [batch, seq, 16] (dynamic dims): h = x + f(LN(x)); y = h + LN(h), with
    the first sum used again by the next residual."""
    rng = np.random.default_rng(21)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in [("g1", (16,)), ("b1", (16,)), ("g2", (16,)), ("b2", (16,))]]
    nodes = [helper.make_node("Relu", ["x"], ["f"]), helper.make_node("Add", ["x", "f"], ["h"]),
             helper.make_node("LayerNormalization", ["h", "g1", "b1"], ["n1"], epsilon=1e-3),
             helper.make_node("Add", ["h", "n1"], ["h2"]),
             helper.make_node("LayerNormalization", ["h2", "g2", "b2"], ["y"])]
    dims = ["batch", "seq", 16]
    graph = helper.make_graph(nodes, "prenorm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def test_residual_layernorm_fuses_and_onnxruntime_matches(run_opt, work_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("ONNXOPT_PYTHON", sys.executable)
    src, dst = work_dir / "block.onnx", work_dir / "block.cuda.onnx"
    onnx.save(_prenorm_block(17), src)
    proc = run_opt(src, "-O3", "--target", "cuda", "-o", dst)
    assert proc.returncode == 0, proc.stderr
    out = onnx.load(dst)
    onnx.checker.check_model(out, full_check=True)
    fused = [n for n in out.graph.node if n.domain == "ai.onnxopt"]
    assert [n.op_type for n in fused] == ["SkipLayerNormalization"] * 2
    assert [len(n.output) for n in fused] == [2, 2]  # the first sum feeds the next residual
    for batch, seq in ((1, 3), (2, 5)):
        x = np.random.default_rng(batch).standard_normal((batch, seq, 16)).astype(np.float32)
        np.testing.assert_allclose(_ort(dst, {"x": x})[0], _ort(src, {"x": x})[0], rtol=1e-5, atol=1e-5)
    proc = run_opt("check", dst, "--runner", "reference", "--against", "onnxruntime")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", ["bert_dynamo", "gpt2_dynamo"])
def test_bundled_transformer_gets_skip_layernorm(run_opt, work_dir: Path, name: str) -> None:
    """The bundled BERT and GPT-2 (dynamic batch and sequence) fuse their residual LayerNorms; their
    zero-initialized biases are gone at -O2 (Add of zeros), so no MatMulBias is expected there."""
    dst = work_dir / "cuda.onnx"
    proc = run_opt(REPO / "models" / "transformers" / name / "model.onnx", "-O3", "--target", "cuda", "-o", dst)
    assert proc.returncode == 0, proc.stderr
    assert _target_ops(onnx.load(dst)).count("SkipLayerNormalization") >= 4


@pytest.mark.parametrize("model", TRANSFORMERS, ids=lambda p: p.parent.name)
def test_bundled_transformer_fused_matches_onnxruntime(run_opt, work_dir: Path, monkeypatch, model: Path) -> None:
    monkeypatch.setenv("ONNXOPT_PYTHON", sys.executable)  # the onnxruntime runner's interpreter
    dst = work_dir / "cuda.onnx"
    proc = run_opt(model, "-O3", "--target", "cuda", "-o", dst)
    assert proc.returncode == 0, proc.stderr
    onnx.checker.check_model(onnx.load(dst))
    proc = run_opt("check", model, dst, "--runner", "onnxruntime")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("case", ["split", "projections"])
def test_packed_attention_matches_onnxruntime(run_opt, work_dir: Path, case: str) -> None:
    """fuse-packed-attention's lit inputs (SafeAttention calls): the original with its functions
    attached (fuse-skip-layernorm matches nothing there, but gives every ai.onnxopt call its
    function) against the packed result, on onnxruntime (through the bodies: Split, the merged
    weights) and on the reference runner (through SafePackedAttention's own kernel)."""
    src = REPO / "tests" / "lit" / "passes" / "fuse-packed-attention" / f"{case}.onnxtxt"
    original, packed = work_dir / "original.onnx", work_dir / "packed.onnx"
    proc = run_opt(src, "--passes=infer-shapes,fuse-skip-layernorm", "-o", original)
    assert proc.returncode == 0, proc.stderr
    proc = run_opt(src, "--passes=infer-shapes,fuse-packed-attention,dce", "-o", packed)
    assert proc.returncode == 0, proc.stderr
    assert "SafePackedAttention" in _target_ops(onnx.load(packed))
    onnx.checker.check_model(onnx.load(packed), full_check=True)
    rng = np.random.default_rng(3)
    feeds = {}
    for i in onnx.load(original).graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = rng.standard_normal(shape).astype(np.float32) * 0.1
    for want, got in zip(_ort(original, feeds), _ort(packed, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    proc = run_opt("check", original, packed)
    assert proc.returncode == 0 and "check: passed" in proc.stdout, proc.stdout + proc.stderr


def _torch_mha(batch_first: bool) -> onnx.ModelProto:
    """torch's nn.MultiheadAttention (self-attention, need_weights=False) as its dynamo exporter
    writes it at opset 18, and a residual Add: batch_first transposes x [B, S, E] to sequence-first,
    the packed projection (MatMul + bias) is unflattened to [S, B, 3, E], unsqueezed, transposed
    and squeezed to [3, S, B, E], its parts selected (Gather), split into heads ([S, B * H, D],
    Transpose, [B, H, S, D]); scaled_dot_product_attention without mask decomposed as torch's
    ONNX library does (Q and K^T each scaled by sqrt(scale), K^T through a 3-D Transpose); the
    result permuted to [S, B, H, D], flattened to [S * B, E] for the out-projection (Gemm) and
    transposed back. B = 2, S = 5, E = 8, 2 heads."""
    b, s, e, h = 2, 5, 8, 2
    d = e // h
    rng = np.random.default_rng(5)
    inits, nodes = [], []

    def const(name: str, value) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    x = node("Transpose", ["x"], "xt", perm=[1, 0, 2]) if batch_first else "x"
    qkv = node("Add", [node("MatMul", [x, const("w_in", rng.standard_normal((e, 3 * e)).astype(np.float32))], "pm"),
                       const("b_in", rng.standard_normal(3 * e).astype(np.float32))], "qkv")
    parts = node("Squeeze", [node("Transpose", [node("Unsqueeze", [
        node("Reshape", [qkv, const("unflat", np.array([s, b, 3, e]))], "u"), const("ax0", np.array([0]))], "w")],
        "t", perm=[3, 1, 2, 0, 4]), const("axm2", np.array([-2]))], "p")
    heads = []
    for i, name in enumerate("qkv"):
        g = node("Gather", [parts, const(f"i{i}", np.array(i))], f"{name}0", axis=0)
        r = node("Reshape", [g, const(f"sbhd{i}", np.array([s, b * h, d]))], f"{name}1")
        heads.append(node("Reshape", [node("Transpose", [r], f"{name}2", perm=[1, 0, 2]),
                                      const(f"bhsd{i}", np.array([b, h, s, d]))], f"{name}4"))
    q, k, v = heads
    c = const("sqrt_scale", np.array(1 / np.sqrt(np.sqrt(d)), np.float32))
    kt = node("Reshape", [node("Transpose", [node("Reshape", [k, const("k3", np.array([-1, s, d]))], "ksq")],
                               "kst", perm=[0, 2, 1]), const("kt4", np.array([b, h, d, s]))], "kt")
    scores = node("MatMul", [node("Mul", [q, c], "qs"), node("Mul", [kt, c], "kts")], "scores")
    a = node("MatMul", [node("Softmax", [scores], "probs", axis=-1), v], "a")
    rows = node("Reshape", [node("Transpose", [a], "o", perm=[2, 0, 1, 3]), const("rows", np.array([s * b, e]))], "r")
    out = node("Gemm", [rows, const("w_out", rng.standard_normal((e, e)).astype(np.float32)),
                        const("b_out", rng.standard_normal(e).astype(np.float32))], "gm", transB=1)
    out = node("Reshape", [out, const("sbe", np.array([s, b, e]))], "g3")
    if batch_first:
        out = node("Transpose", [out], "back", perm=[1, 0, 2])
    node("Add", [out, "x"], "y")
    shape = [b, s, e] if batch_first else [s, b, e]
    graph = helper.make_graph(nodes, "mha", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("batch_first,fused", [
    (True, ["MatMulBias", "PackedAttention", "MatMulBias"]),  # both Transposes go
    (False, ["MatMulBias", "SeqFirstPackedAttention", "MatMulBias"]),
])
def test_torch_multihead_attention_packs(run_opt, work_dir: Path, batch_first: bool, fused: list[str]) -> None:
    """The whole -O3 --target cuda pipeline on torch's nn.MultiheadAttention export (_torch_mha): the
    SDPA decomposition becomes Attention (-O2), its head views of the packed projection one packed
    attention call reading it in place, and with batch_first the rows go batch-first so that no
    Transpose, Gather or Split is left; onnxruntime runs the result (through the functions) and
    matches, and so does our reference runner."""
    src, dst = work_dir / "mha.onnx", work_dir / "cuda.onnx"
    onnx.save(_torch_mha(batch_first), src)
    proc = run_opt(src, "-O3", "--target", "cuda", "--target-opset", "23", "-o", dst)
    assert proc.returncode == 0, proc.stderr
    out = onnx.load(dst)
    onnx.checker.check_model(out, full_check=True)
    assert _target_ops(out) == fused
    assert not {"Transpose", "Gather", "Split", "Attention"} & {n.op_type for n in out.graph.node}
    x = np.random.default_rng(2).standard_normal([2, 5, 8] if batch_first else [5, 2, 8]).astype(np.float32)
    np.testing.assert_allclose(_ort(dst, {"x": x})[0], _ort(src, {"x": x})[0], rtol=1e-5, atol=1e-5)
    proc = run_opt("check", src, dst, "--runner", "reference")
    assert proc.returncode == 0 and "check: passed" in proc.stdout, proc.stdout + proc.stderr


def test_torchvision_vit_export_packs(run_opt, work_dir: Path) -> None:
    """models/transformers/tvvit_dynamo: torchvision's VisionTransformer (nn.MultiheadAttention,
    sequence-first inside) as torch's dynamo exporter writes it (export.py). With its batch fixed,
    -O3 --target cuda makes each of its 2 layers' attention one PackedAttention reading the QKV
    projection in place (no head Gathers, Split or Attention left: one Gather, the class token's;
    3 Transposes, the patch embedding's),
    and the result gives the export's golden output on onnxruntime and on the reference runner."""
    folder = REPO / "models" / "transformers" / "tvvit_dynamo"
    model = onnx.load(folder / "model.onnx")
    x = numpy_helper.to_array(onnx.load_tensor(str(folder / "test_data_set_0" / "input_0.pb")))
    golden = numpy_helper.to_array(onnx.load_tensor(str(folder / "test_data_set_0" / "output_0.pb")))
    for v in list(model.graph.input) + list(model.graph.output):
        v.type.tensor_type.shape.dim[0].dim_value = x.shape[0]
    del model.graph.value_info[:]
    src, dst = work_dir / "static.onnx", work_dir / "cuda.onnx"
    onnx.save(model, src)
    proc = run_opt(src, "-O3", "--target", "cuda", "--target-opset", "23", "-o", dst)
    assert proc.returncode == 0, proc.stderr
    out = onnx.load(dst)
    onnx.checker.check_model(out, full_check=True)
    assert _target_ops(out).count("PackedAttention") == 2
    ops = [n.op_type for n in out.graph.node]
    assert not {"Split", "Attention", "Softmax"} & set(ops), ops
    assert ops.count("Transpose") <= 3 and ops.count("Gather") == 1, ops  # the class token's Gather
    np.testing.assert_allclose(_ort(dst, {model.graph.input[0].name: x})[0], golden, rtol=1e-4, atol=1e-4)
    proc = run_opt("check", src, dst, "--runner", "reference")
    assert proc.returncode == 0 and "check: passed" in proc.stdout, proc.stdout + proc.stderr
