"""onnxruntime's contrib ops as onnxruntime-genai's model builder writes them (com.microsoft
GroupQueryAttention, RotaryEmbedding, SkipSimplifiedLayerNormalization, MatMulNBits and the
default domain's SimplifiedLayerNormalization): imported, inferred, run on the reference kernels
and compared with onnxruntime's CPU kernels (`opt check --against onnxruntime`), alone and in a
small decoder layer, before and after -O2/-O3; bad nodes are one error line naming the node."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16
NP = {F32: np.float32, F16: np.float16}


@pytest.fixture(autouse=True)
def ort_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The onnxruntime runner uses this interpreter (the test venv has onnxruntime)."""
    monkeypatch.setenv("ONNXOPT_PYTHON", sys.executable)


def _save(path: Path, nodes, inputs, outputs, inits=()) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)])
    onnx.save(model, path)
    return path


def _const(name: str, value: np.ndarray):
    return numpy_helper.from_array(value, name)


def _io(name: str, elem: int, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _check(run_opt, model: Path, *args: str) -> None:
    """The reference runner matches onnxruntime on the model."""
    proc = run_opt("check", model, "--against", "onnxruntime", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check: passed" in proc.stdout, proc.stdout


def _tol(elem: int) -> tuple[str, ...]:
    return ("--atol", "2e-2", "--rtol", "2e-2") if elem == F16 else ("--atol", "1e-4", "--rtol", "1e-3")


# --- each op alone -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("elem", [F32, F16])
def test_simplified_layer_norm(seed: int, elem: int, run_opt, work_dir: Path) -> None:
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(2, 5))
    shape = [int(d) for d in rng.integers(1, 6, rank)]
    axis = int(rng.integers(-rank, rank))
    norm = shape[axis:] if axis >= 0 else shape[rank + axis:]
    scale = (rng.random(norm) + 0.5).astype(NP[elem])
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "s"], ["y", "inv"], axis=axis,
                            epsilon=float(rng.choice([1e-5, 1e-3])), stash_type=1)
    model = _save(work_dir / "m.onnx", [node], [_io("x", elem, shape)],
                  [_io("y", elem, None), _io("inv", F32, None)], [_const("s", scale)])
    _check(run_opt, model, *_tol(elem))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("elem", [F32, F16])
def test_skip_simplified_layer_norm(seed: int, elem: int, run_opt, work_dir: Path) -> None:
    rng = np.random.default_rng(seed)
    b, s, h = (int(d) for d in rng.integers(1, 5, 3))
    h *= 4
    with_bias = bool(seed % 2)
    inits = [_const("g", (rng.random(h) + 0.5).astype(NP[elem]))]
    ins = ["x", "skip", "g"]
    if with_bias:
        inits.append(_const("bias", rng.standard_normal(h).astype(NP[elem])))
        ins.append("bias")
    node = helper.make_node("SkipSimplifiedLayerNormalization", ins, ["y", "", "", "sum"], domain=MS,
                            epsilon=1e-5)
    model = _save(work_dir / "m.onnx", [node], [_io("x", elem, [b, s, h]), _io("skip", elem, [b, s, h])],
                  [_io("y", elem, None), _io("sum", elem, None)], inits)
    _check(run_opt, model, *_tol(elem))


def _caches(rng, max_pos: int, half: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    angles = rng.random((max_pos, half)) * 6.0
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


@pytest.mark.parametrize("seed,elem", [(seed, F32) for seed in range(6)] + [(1, F16), (4, F16)])
def test_rotary_embedding(seed: int, elem: int, run_opt, work_dir: Path) -> None:
    rng = np.random.default_rng(seed)
    b, s, heads = int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(1, 4))
    head = 2 * int(rng.integers(2, 6))
    interleaved = int(rng.integers(0, 2))
    four_d = bool(seed % 2)
    partial = seed >= 4
    rot = head - 2 if partial else head
    attrs = {"interleaved": interleaved}
    if partial or not four_d:
        attrs.update(num_heads=heads)
    if partial:
        attrs.update(rotary_embedding_dim=rot)
    cos, sin = _caches(rng, 16, rot // 2, NP[elem])
    shape = [b, heads, s, head] if four_d else [b, s, heads * head]
    # position_ids: [B, S] on odd seeds, else one start offset.
    pos = rng.integers(0, 16 - s, (b, s)) if seed % 3 else np.array([int(rng.integers(0, 16 - s))])
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, **attrs)
    model = _save(work_dir / "m.onnx", [node], [_io("x", elem, shape)], [_io("y", elem, None)],
                  [_const("pos", pos.astype(np.int64)), _const("cos", cos), _const("sin", sin)])
    _check(run_opt, model, *_tol(elem))


def _pack(q: np.ndarray, bits: int, block: int) -> np.ndarray:
    """q [N, K] of bits-wide unsigned values into [N, k_blocks, blob] bytes, low bits first."""
    n, k = q.shape
    k_blocks = -(-k // block)
    padded = np.zeros((n, k_blocks * block), np.uint8)
    padded[:, :k] = q
    per = 8 // bits
    fields = padded.reshape(n, k_blocks, block // per, per).astype(np.uint32)
    packed = sum(fields[..., i] << (i * bits) for i in range(per))
    return packed.astype(np.uint8)


def _packed_zero_points(zp: np.ndarray, bits: int) -> np.ndarray:
    n, k_blocks = zp.shape
    per = 8 // bits
    row = -(-k_blocks * bits // 8)
    padded = np.zeros((n, row * per), np.uint8)
    padded[:, :k_blocks] = zp
    fields = padded.reshape(n, row, per).astype(np.uint32)
    return sum(fields[..., i] << (i * bits) for i in range(per)).astype(np.uint8)


def _matmul_nbits(rng, elem: int, k: int, n: int, bits: int, block: int, zp_kind: str, bias: bool,
                  a: str, y: str, prefix: str):
    """A MatMulNBits node of random weights and its initializers."""
    k_blocks = -(-k // block)
    q = rng.integers(0, 1 << bits, (n, k)).astype(np.uint8)
    inits = [_const(prefix + "B", _pack(q, bits, block)),
             _const(prefix + "scales", (rng.random(n * k_blocks) * 0.1 + 0.01).astype(NP[elem]))]
    ins = [a, prefix + "B", prefix + "scales"]
    if zp_kind == "packed":
        zp = rng.integers(0, 1 << bits, (n, k_blocks)).astype(np.uint8)
        inits.append(_const(prefix + "zp", _packed_zero_points(zp, bits).reshape(-1)))
        ins.append(prefix + "zp")
    elif zp_kind == "float":
        inits.append(_const(prefix + "zp", (rng.random(n * k_blocks) * (1 << bits)).astype(NP[elem])))
        ins.append(prefix + "zp")
    if bias:
        ins += [""] * (5 - len(ins)) + [prefix + "bias"]
        inits.append(_const(prefix + "bias", rng.standard_normal(n).astype(NP[elem])))
    node = helper.make_node("MatMulNBits", ins, [y], domain=MS, K=k, N=n, bits=bits, block_size=block)
    return node, inits


@pytest.mark.parametrize("bits,zp_kind", [(2, "none"), (2, "packed"), (4, "none"), (4, "packed"), (4, "float"), (8, "none"),
                                          (8, "packed")])
@pytest.mark.parametrize("elem", [F32, F16])
def test_matmul_nbits(bits: int, zp_kind: str, elem: int, run_opt, work_dir: Path) -> None:
    """onnxruntime's CPU kernel takes bits 2, 4 and 8, float zero points with 4 bits only."""
    rng = np.random.default_rng(bits * 7 + len(zp_kind) + elem)
    block = int(rng.choice([16, 32]))
    k = int(rng.integers(block // 2, 3 * block))  # often not a multiple of block_size
    n = int(rng.integers(1, 9))
    node, inits = _matmul_nbits(rng, elem, k, n, bits, block, zp_kind, bias=bits == 4, a="a", y="y", prefix="")
    model = _save(work_dir / "m.onnx", [node], [_io("a", elem, [2, 3, k])], [_io("y", elem, None)], inits)
    _check(run_opt, model, *_tol(elem))


# --- GroupQueryAttention -------------------------------------------------------------------------


def _gqa_model(path: Path, rng, *, elem=F32, b=1, s=4, heads=4, kv_heads=2, head=16, past=0, total=None,
               seqlens=None, packed=False, rotary=False, interleaved=0, **attrs) -> Path:
    total = s + past if total is None else total
    seqlens = np.full(b, total - 1, np.int32) if seqlens is None else np.asarray(seqlens, np.int32)
    dtype = NP[elem]
    inputs, inits = [], [_const("seqlens", seqlens), _const("total", np.array(total, np.int32))]
    if packed:
        inputs.append(_io("q", elem, [b, s, (heads + 2 * kv_heads) * head]))
        ins = ["q", "", ""]
    else:
        inputs += [_io("q", elem, [b, s, heads * head]), _io("k", elem, [b, s, kv_heads * head]),
                   _io("v", elem, [b, s, kv_heads * head])]
        ins = ["q", "k", "v"]
    if past:
        inputs += [_io("pk", elem, [b, kv_heads, past, head]), _io("pv", elem, [b, kv_heads, past, head])]
        ins += ["pk", "pv"]
    else:
        ins += ["", ""]
    ins += ["seqlens", "total"]
    if rotary:
        cos, sin = _caches(rng, 32, head // 2, dtype)
        inits += [_const("cos", cos), _const("sin", sin)]
        ins += ["cos", "sin"]
        attrs.update(do_rotary=1, rotary_interleaved=interleaved)
    node = helper.make_node("GroupQueryAttention", ins, ["y", "present_k", "present_v"], domain=MS,
                            num_heads=heads, kv_num_heads=kv_heads, **attrs)
    outputs = [_io("y", elem, None), _io("present_k", elem, None), _io("present_v", elem, None)]
    return _save(path, [node], inputs, outputs, inits)


@pytest.mark.parametrize("seed", range(8))
def test_gqa_prompt(seed: int, run_opt, work_dir: Path) -> None:
    """A first prompt (no past): causal GQA, with random attributes."""
    rng = np.random.default_rng(seed)
    kv_heads = int(rng.choice([1, 2]))
    heads = kv_heads * int(rng.choice([1, 2, 4]))
    attrs = {}
    if seed % 2:
        attrs["scale"] = float(rng.random() + 0.1)
    if seed in (2, 5):
        attrs["local_window_size"] = int(rng.integers(1, 3))
    if seed in (3, 6):
        attrs["softcap"] = 2.0
    if seed in (4, 7):
        attrs["smooth_softmax"] = 1
    model = _gqa_model(work_dir / "m.onnx", rng, b=int(rng.integers(1, 3)), s=int(rng.integers(1, 6)),
                       heads=heads, kv_heads=kv_heads, head=int(rng.choice([16, 32])), packed=seed % 3 == 0,
                       rotary=seed % 4 == 1, interleaved=seed % 8 == 5, **attrs)
    _check(run_opt, model, *_tol(F32))


@pytest.mark.parametrize("seed", range(6))
def test_gqa_decode_with_past(seed: int, run_opt, work_dir: Path) -> None:
    """Decoding steps with past KV (BNSH), entries of different lengths, a shared-size buffer."""
    rng = np.random.default_rng(100 + seed)
    b = int(rng.integers(1, 4))
    past = int(rng.integers(3, 8))
    if seed < 3:
        # One token per entry; entries have used different amounts of the past buffer.
        lengths = rng.integers(1, past + 1, b) + 1
        model = _gqa_model(work_dir / "m.onnx", rng, b=b, s=1, past=past, total=int(lengths.max()),
                           seqlens=lengths - 1, rotary=seed == 1, packed=seed == 2, local_window_size=2 * (seed == 0))
    else:
        # A later prompt chunk of batch 1, past and present buffers of one size (buffer sharing).
        s = int(rng.integers(2, 4))
        used = int(rng.integers(0, past - s + 1))
        model = _gqa_model(work_dir / "m.onnx", rng, b=1, s=s, past=past, total=used + s, seqlens=[used + s - 1],
                           rotary=seed == 4, softcap=3.0 * (seed == 5))
    _check(run_opt, model, *_tol(F32))


def test_gqa_float16(run_opt, work_dir: Path) -> None:
    model = _gqa_model(work_dir / "m.onnx", np.random.default_rng(7), elem=F16, b=2, s=3, rotary=True)
    _check(run_opt, model, *_tol(F16))


@pytest.mark.parametrize("seed", range(2))
def test_gqa_bias_sink_and_position_ids(seed: int, run_opt, work_dir: Path) -> None:
    """attention_bias [B or 1, N or 1, S, T] added after softcap, head_sink, given position_ids."""
    rng = np.random.default_rng(300 + seed)
    b, s, heads, kv_heads, head = 2, 3, 4, 2, 16
    model = _gqa_model(work_dir / "m.onnx", rng, b=b, s=s, heads=heads, kv_heads=kv_heads, head=head,
                       rotary=True, softcap=1.5)
    m = onnx.load(model)
    node = m.graph.node[0]
    pos = np.stack([rng.permutation(8)[:s] for _ in range(b)]).astype(np.int64)
    bias = rng.standard_normal((b if seed else 1, heads if seed else 1, s, s)).astype(np.float32)
    sink = rng.standard_normal(heads).astype(np.float32)
    node.input.extend(["pos", "bias", "sink"])
    m.graph.initializer.extend([_const("pos", pos), _const("bias", bias), _const("sink", sink)])
    onnx.save(m, model)
    _check(run_opt, model, *_tol(F32))


# --- a decoder layer as onnxruntime-genai writes it ------------------------------------------------


def _decoder_layer(path: Path, rng, past: int = 0, s: int = 4) -> Path:
    """SimplifiedLayerNormalization -> MatMulNBits q/k/v -> GroupQueryAttention (rotary, past) ->
    MatMulNBits o -> SkipSimplifiedLayerNormalization (residual) -> MatMulNBits gate/up -> SiLU ->
    MatMulNBits down -> Add."""
    b, hidden, heads, kv_heads, head = 1, 64, 4, 2, 16
    nodes, inits = [], [_const("ln1", (rng.random(hidden) + 0.5).astype(np.float32)),
                        _const("ln2", (rng.random(hidden) + 0.5).astype(np.float32))]

    def nbits(a: str, y: str, k: int, n: int, prefix: str) -> None:
        node, more = _matmul_nbits(rng, F32, k, n, 4, 32, "packed", False, a, y, prefix)
        nodes.append(node)
        inits.extend(more)

    nodes.append(helper.make_node("SimplifiedLayerNormalization", ["x", "ln1"], ["h"], axis=-1, epsilon=1e-5,
                                  stash_type=1))
    nbits("h", "q", hidden, heads * head, "wq_")
    nbits("h", "k", hidden, kv_heads * head, "wk_")
    nbits("h", "v", hidden, kv_heads * head, "wv_")
    cos, sin = _caches(rng, 32, head // 2, np.float32)
    inits += [_const("cos", cos), _const("sin", sin), _const("seqlens", np.array([past + s - 1], np.int32)),
              _const("total", np.array(past + s, np.int32))]
    kv_in = ["pk", "pv"] if past else ["", ""]
    nodes.append(helper.make_node("GroupQueryAttention", ["q", "k", "v", *kv_in, "seqlens", "total", "cos", "sin"],
                                  ["attn", "present_k", "present_v"], domain=MS, num_heads=heads,
                                  kv_num_heads=kv_heads, do_rotary=1))
    nbits("attn", "o", heads * head, hidden, "wo_")
    nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", ["o", "x", "ln2"], ["h2", "", "", "res"],
                                  domain=MS, epsilon=1e-5))
    nbits("h2", "gate", hidden, 96, "wg_")
    nbits("h2", "up", hidden, 96, "wu_")
    nodes += [helper.make_node("Sigmoid", ["gate"], ["sg"]), helper.make_node("Mul", ["gate", "sg"], ["silu"]),
              helper.make_node("Mul", ["silu", "up"], ["mlp"])]
    nbits("mlp", "down", 96, hidden, "wd_")
    nodes.append(helper.make_node("Add", ["res", "down"], ["y"]))
    inputs = [_io("x", F32, [b, s, hidden])]
    if past:
        inputs += [_io("pk", F32, [b, kv_heads, past, head]), _io("pv", F32, [b, kv_heads, past, head])]
    outputs = [_io("y", F32, [b, s, hidden]), _io("present_k", F32, None), _io("present_v", F32, None)]
    return _save(path, nodes, inputs, outputs, inits)


@pytest.mark.parametrize("past,s", [(0, 4), (5, 1)])
def test_decoder_layer_runs_and_survives_optimization(past: int, s: int, run_opt, work_dir: Path) -> None:
    model = _decoder_layer(work_dir / "m.onnx", np.random.default_rng(past), past=past, s=s)
    _check(run_opt, model, *_tol(F32))
    stats = run_opt(model, "--stats")
    assert stats.returncode == 0, stats.stderr
    for level in ("-O2", "-O3"):
        out = work_dir / f"o{level}.onnx"
        proc = run_opt(model, level, "--verify-each", "--infer-shapes", "-o", out)
        assert proc.returncode == 0, proc.stderr
        optimized = onnx.load(out)
        ops = {(n.domain, n.op_type) for n in optimized.graph.node}
        for op in ("GroupQueryAttention", "MatMulNBits", "SkipSimplifiedLayerNormalization"):
            assert (MS, op) in ops, (level, ops)
        # Inference gives the contrib ops' outputs their shapes.
        shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in optimized.graph.value_info}
        assert shapes.get("attn") == [1, s, 64], shapes
        # The optimized model runs on onnxruntime and equals the original there.
        check = run_opt("check", model, out, "--runner", "onnxruntime", *_tol(F32))
        assert check.returncode == 0, check.stdout + check.stderr
        assert "check: passed" in check.stdout


# --- bad nodes -----------------------------------------------------------------------------------


def _bad_cases(work_dir: Path):
    rng = np.random.default_rng(0)
    node, inits = _matmul_nbits(rng, F32, 32, 4, 4, 16, "none", False, "a", "y", "")
    bits3 = helper.make_node("MatMulNBits", list(node.input), ["y"], domain=MS, K=32, N=4, bits=3, block_size=16,
                             name="proj")
    yield "bits3", _save(work_dir / "bits3.onnx", [bits3], [_io("a", F32, [2, 32])], [_io("y", F32, None)], inits), \
        "node 'proj' (MatMulNBits): com.microsoft.MatMulNBits: bits is 3; it must be 2, 4 or 8"
    wrong_k = helper.make_node("MatMulNBits", list(node.input), ["y"], domain=MS, K=32, N=4, bits=4, block_size=16,
                               name="proj")
    yield "mismatched_a", _save(work_dir / "k.onnx", [wrong_k], [_io("a", F32, [2, 31])], [_io("y", F32, None)],
                                inits), "node 'proj' (MatMulNBits): com.microsoft.MatMulNBits: A's last dim must be K = 32"
    gqa = _gqa_model(work_dir / "gqa.onnx", rng)
    m = onnx.load(gqa)
    del m.graph.node[0].input[5:]
    m.graph.node[0].name = "attn"
    onnx.save(m, gqa)
    yield "gqa_inputs", gqa, "node 'attn' (GroupQueryAttention): com.microsoft.GroupQueryAttention: needs query, " \
        "seqlens_k and total_sequence_length"
    gqa_k = _gqa_model(work_dir / "gqa_k.onnx", rng)
    m = onnx.load(gqa_k)
    m.graph.input[1].type.tensor_type.shape.dim[2].dim_value = 48
    m.graph.node[0].name = "attn"
    onnx.save(m, gqa_k)
    yield "gqa_shapes", gqa_k, "node 'attn' (GroupQueryAttention): com.microsoft.GroupQueryAttention: key and " \
        "value must be [1, 4, 32]"


@pytest.mark.parametrize("case", ["bits3", "mismatched_a", "gqa_inputs", "gqa_shapes"])
def test_bad_nodes_are_one_error_line(case: str, run_opt, work_dir: Path) -> None:
    path, message = next((p, msg) for name, p, msg in _bad_cases(work_dir) if name == case)
    out = work_dir / "out"
    proc = run_opt("run", path, "--save-outputs", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("opt: error:")]
    assert len(errors) == 1 and message in errors[0], proc.stderr
    assert not out.exists() or not any(out.iterdir())
