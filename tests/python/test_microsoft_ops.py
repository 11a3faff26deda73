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


@pytest.mark.parametrize("seed", range(6))
def test_rotary_embedding(seed: int, run_opt, work_dir: Path) -> None:
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
    cos, sin = _caches(rng, 16, rot // 2, np.float32)
    shape = [b, heads, s, head] if four_d else [b, s, heads * head]
    # position_ids: [B, S] on odd seeds, else one start offset.
    pos = rng.integers(0, 16 - s, (b, s)) if seed % 3 else np.array([int(rng.integers(0, 16 - s))])
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, **attrs)
    model = _save(work_dir / "m.onnx", [node], [_io("x", F32, shape)], [_io("y", F32, None)],
                  [_const("pos", pos.astype(np.int64)), _const("cos", cos), _const("sin", sin)])
    _check(run_opt, model, *_tol(F32))


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


@pytest.mark.parametrize("bits,zp_kind", [(4, "none"), (4, "packed"), (4, "float"), (8, "none"), (8, "packed")])
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
