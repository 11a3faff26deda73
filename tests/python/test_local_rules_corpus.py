"""A corpus for the local rewrite rules of eliminate-noop, merge-consecutive and einsum-to-matmul: one
small model per kind of chain that exporters write (tf2onnx's Reshape then Unsqueeze, chained Slices,
Reduce without keepdims then Unsqueeze, repeated Squeeze/Unsqueeze, idempotent ops, default-perm
Transpose pairs, Where of Not, Einsum as a matrix product). For each: the rules fire (opt -O2 leaves
at most so many of the ops they merge or drop, AT_MOST); opt leaves at most as many nodes as the
best correct peer installed (onnxsim, onnxslim, onnxoptimizer where installed, onnxruntime's
basic-level offline optimization always; a peer counts where its outputs match onnxruntime on the
original); and opt's output matches onnxruntime on the original model.

    .venv/bin/python tests/python/test_local_rules_corpus.py   # prints the node counts table
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.parser
import onnxruntime as ort
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "bench"))
import peers  # noqa: E402

INT64_MAX = 9223372036854775807
INT64_MIN = -9223372036854775808

# name: (textual model, concrete sizes of its symbolic dims)
CORPUS: dict[str, tuple[str, dict[str, int]]] = {
    # tf2onnx's audio front end: frames reshaped, then unsqueezed to a channel for a Conv, three times;
    # a Reshape back to the shape it has.
    "reshape_unsqueeze": ("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,160] x) => (float[N,8,4,40] y) <int64[3] s = {-1, 4, 40}, int64[1] a1 = {1},
    float[1,1,3,3] w = {1., 2., 3., 4., 5., 6., 7., 8., 9.}, int64[4] same = {0, 1, 4, 40},
    float[8,3,3,3] w2 = {0.5}> {
  r0 = Reshape(x, s)
  u0 = Unsqueeze(r0, a1)
  c0 = Conv <pads = [1, 1, 1, 1]> (u0, w)
  k0 = Reshape(c0, same)
  r1 = Reshape(x, s)
  u1 = Unsqueeze(r1, a1)
  c1 = Conv <pads = [1, 1, 1, 1]> (u1, w)
  r2 = Reshape(x, s)
  u2 = Unsqueeze(r2, a1)
  c2 = Conv <pads = [1, 1, 1, 1]> (u2, w)
  k = Concat <axis = 1> (k0, c1, c2)
  y = Conv <pads = [1, 1, 1, 1]> (k, w2)
}""", {"N": 3}),
    # Reshapes to the shape a value already has, over symbolic batch and time.
    "noop_reshape_symbolic": ("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[B,T,16] x) => (float[B,T,16] y) <int64[3] keep = {0, 0, 16}, int64[3] lead = {-1, 0, 16},
    int64[3] mid = {0, -1, 16}, float[16,16] w = {0.25}> {
  a = Reshape(x, keep)
  m = MatMul(a, w)
  b = Reshape(m, lead)
  t = Tanh(b)
  y = Reshape(t, mid)
}""", {"B": 2, "T": 5}),
    # A Squeeze then Flatten, an Unsqueeze of a Squeeze of another axis: one Reshape each.
    "view_chains": ("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,1,8,8] x) => (float[N,64] y, float[N,8,8,1] z) <int64[1] a1 = {1}, int64[1] a3 = {3}> {
  s = Squeeze(x, a1)
  f = Flatten <axis = 1> (s)
  y = Relu(f)
  q = Squeeze(x, a1)
  u = Unsqueeze(q, a3)
  z = Sigmoid(u)
}""", {"N": 2}),
    # Slices one after the other: disjoint axes, the same axis with a step, then a reversal.
    "slice_chain": (f"""
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,100,16] x) => (float[N,?,8] y) <int64[1] s2 = {{2}}, int64[1] em2 = {{-2}}, int64[1] ax1 = {{1}},
    int64[1] z = {{0}}, int64[1] e8 = {{8}}, int64[1] ax2 = {{2}}, int64[1] one = {{1}},
    int64[1] max = {{{INT64_MAX}}}, int64[1] two = {{2}}, int64[1] m1 = {{-1}}, int64[1] min = {{{INT64_MIN}}}> {{
  a = Slice(x, s2, em2, ax1)
  b = Slice(a, z, e8, ax2)
  c = Slice(b, one, max, ax1, two)
  d = Slice(c, m1, min, ax1, m1)
  y = Relu(d)
}}""", {"N": 2}),
    # A squeeze-excitation block whose pooled values lost their dims (keepdims=0) and got them back.
    "reduce_unsqueeze": ("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,8,6,6] x) => (float[N,8,6,6] y, float[N,8,1,1] m) <int64[2] hw = {2, 3}, int64[2] w = {8, 8}> {
  p = ReduceMean <axes = [2, 3], keepdims = 0> (x)
  u = Unsqueeze(p, hw)
  q = Relu(u)
  s = Sigmoid(q)
  y = Mul(x, s)
  r = ReduceMax <axes = [-1, -2], keepdims = 0> (x)
  m = Unsqueeze(r, hw)
}""", {"N": 2}),
    "reduce_unsqueeze_opset18": ("""
<ir_version: 8, opset_import: ["" : 18]>
g (float[N,8,6] x) => (float[N,1,6] y, int64[N,8,1] i) <int64[1] a1 = {1}, int64[1] m1 = {-1}> {
  p = ReduceSum <keepdims = 0> (x, a1)
  y = Unsqueeze(p, a1)
  a = ArgMax <axis = -1, keepdims = 0> (x)
  i = Unsqueeze(a, m1)
}""", {"N": 2}),
    # Squeezes and Unsqueezes one at a time, as a per-axis exporter writes them.
    "squeeze_unsqueeze_chains": ("""
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,N,1,8] x) => (float[1,1,N,8,1] y) <int64[1] a0 = {0}, int64[1] a1 = {1}, int64[1] m1 = {-1}> {
  s = Squeeze(x, a0)
  t = Squeeze(s, a1)
  r = Relu(t)
  u = Unsqueeze(r, a0)
  v = Unsqueeze(u, a0)
  y = Unsqueeze(v, m1)
}""", {"N": 3}),
    # silero-vad's decoder: an LSTM state squeezed, unsqueezed back for the new state and
    # unsqueezed on another axis for the head.
    "lstm_state_views": ("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[T,N,8] x, float[1,N,8] h) => (float[2,N,8] state, float[N,8,1] head) <float[1,32,8] w = {0.1},
    float[1,32,8] r = {0.1}, int64[1] a0 = {0}, int64[1] a2 = {2}> {
  y, yh = LSTM <hidden_size = 8> (x, w, r)
  q = Squeeze(yh, a0)
  u = Unsqueeze(q, a0)
  state = Concat <axis = 0> (u, h)
  v = Unsqueeze(q, a2)
  head = Relu(v)
}""", {"T": 3, "N": 2}),
    "idempotent_ops": ("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[4,5] x, bool[4,5] b) => (float[4,5] y, bool[4,5] c) {
  r = Relu(x)
  r2 = Relu(r)
  a = Abs(r2)
  a2 = Abs(a)
  f = Floor(a2)
  f2 = Floor(f)
  e = Ceil(f2)
  e2 = Ceil(e)
  o = Round(e2)
  o2 = Round(o)
  s = Sign(x)
  s2 = Sign(s)
  n = Neg(s2)
  n2 = Neg(n)
  y = Add(o2, n2)
  t = Not(b)
  c = Not(t)
}""", {}),
    "transpose_default_perm": ("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3,4] x) => (float[2,3,4] y, float[3,4,2] z) {
  a = Transpose(x)
  b = Transpose(a)
  y = Relu(b)
  c = Transpose <perm = [0, 2, 1]> (x)
  d = Transpose(c)
  z = Sigmoid(d)
}""", {}),
    "where_not": ("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,T] x, bool[N,T] mask) => (float[N,T] y) <float fill = {-10000.0}> {
  k = Not(mask)
  w = Where(k, fill, x)
  y = Softmax <axis = -1> (w)
}""", {"N": 2, "T": 7}),
    "einsum_matmul": ("""
<ir_version: 8, opset_import: ["" : 17]>
g (float[B,4,8] q, float[B,8,6] k, float[3,8] a, float[8,5] w) => (float[B,4,6] s, float[3,5] t, float[B,4,6] u) {
  s = Einsum <equation = "bij,bjk->bik"> (q, k)
  t = Einsum <equation = "ij, jk"> (a, w)
  u = Einsum <equation = "...ij,...jk->...ik"> (q, k)
}""", {"B": 2}),
}


# What each model's rules leave at most, per op type: the chain they merge or drop.
AT_MOST: dict[str, dict[str, int]] = {
    "reshape_unsqueeze": {"Unsqueeze": 0, "Reshape": 1},
    "noop_reshape_symbolic": {"Reshape": 0},
    "view_chains": {"Squeeze": 0, "Flatten": 0, "Unsqueeze": 0, "Reshape": 2},
    "slice_chain": {"Slice": 1},
    "reduce_unsqueeze": {"Unsqueeze": 0},
    "reduce_unsqueeze_opset18": {"Unsqueeze": 0},
    "squeeze_unsqueeze_chains": {"Squeeze": 1, "Unsqueeze": 1},
    "lstm_state_views": {"Squeeze": 0, "Unsqueeze": 0, "Reshape": 1},
    "idempotent_ops": {"Relu": 1, "Abs": 1, "Floor": 1, "Ceil": 1, "Round": 1, "Sign": 1, "Neg": 0},
    "transpose_default_perm": {"Transpose": 1},
    "where_not": {"Not": 0},
    "einsum_matmul": {"Einsum": 0},
}


def _model(name: str) -> onnx.ModelProto:
    """The parsed model; a float initializer written with one value is filled to its shape with
    seeded values (the text stays short)."""
    model = onnx.parser.parse_model(CORPUS[name][0])
    rng = np.random.default_rng(1)
    for i, init in enumerate(model.graph.initializer):
        size = int(np.prod(init.dims))
        if init.data_type == onnx.TensorProto.FLOAT and len(init.float_data) == 1 and size > 1:
            values = rng.standard_normal(list(init.dims)).astype(np.float32) * 0.3
            model.graph.initializer[i].CopyFrom(onnx.numpy_helper.from_array(values, init.name))
    onnx.checker.check_model(model, full_check=True)
    return model


def _count(model: onnx.ModelProto) -> int:
    return len(model.graph.node)


def _inputs(model: onnx.ModelProto, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    feeds = {}
    for info in model.graph.input:
        t = info.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else sizes[d.dim_param] for d in t.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        feeds[info.name] = (rng.integers(0, 2, shape).astype(np.bool_) if dtype == np.bool_
                            else (rng.standard_normal(shape) * 3).astype(dtype))
    return feeds


def _run(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _matches(path: Path, feeds: dict[str, np.ndarray], want: list[np.ndarray]) -> bool:
    try:
        got = _run(path, feeds)
    except Exception:  # noqa: BLE001 - a peer output onnxruntime cannot run is no correct peer
        return False
    return all(g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-5) for g, w in zip(got, want))


def _peer_counts(src: Path, work: Path, feeds: dict[str, np.ndarray],
                 want: list[np.ndarray]) -> dict[str, int]:
    """Node counts of the peers that are installed and produce a model whose outputs match."""
    counts = {}
    for peer in (*peers.PEERS, "ort-basic"):
        if not peers.installed(peer):
            continue
        out = work / f"{peer}.onnx"
        if peers.run_tool(peer, src, out).ok and out.exists() and _matches(out, feeds, want):
            counts[peer] = _count(onnx.load(out))
    return counts


def _measure(name: str, opt: Path, work: Path) -> tuple[int, onnx.ModelProto, dict[str, int]]:
    model = _model(name)
    src = work / "model.onnx"
    onnx.save(model, src)
    out = work / "opt.onnx"
    subprocess.run([str(opt), str(src), "-O2", "-o", str(out)], check=True, capture_output=True)
    optimized = onnx.load(out)
    feeds = _inputs(model, CORPUS[name][1])
    reference = _run(src, feeds)
    for want, got in zip(reference, _run(out, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return _count(model), optimized, _peer_counts(src, work, feeds, reference)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_rule_fires_and_matches_the_best_peer(name: str, opt: Path, tmp_path: Path) -> None:
    _, optimized, theirs = _measure(name, opt, tmp_path)
    ours = _count(optimized)
    ops = [n.op_type for n in optimized.graph.node]
    for op, most in AT_MOST[name].items():
        assert ops.count(op) <= most, f"{name}: {ops.count(op)} {op} left ({ops})"
    assert theirs, "no peer ran (onnxruntime's basic optimization at least should)"
    best = min(theirs.values())
    assert ours <= best, f"{name}: opt leaves {ours} nodes, the best peer {best} ({theirs})"


if __name__ == "__main__":
    binary = peers.opt_binary()
    tools = [p for p in (*peers.PEERS, "ort-basic") if peers.installed(p)]
    print("| model | nodes | opt -O2 | " + " | ".join(tools) + " |")
    for n in sorted(CORPUS):
        with tempfile.TemporaryDirectory() as d:
            before, after, others = _measure(n, binary, Path(d))
            cells = [str(others.get(t, "failed or wrong")) for t in tools]
            print(f"| {n} | {before} | {_count(after)} | " + " | ".join(cells) + " |")
