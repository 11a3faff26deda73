"""Random valid ONNX models for tools/fuzz_graphs.py: `generate(seed)` builds one from the op
families the passes rewrite (elementwise with broadcasting, MatMul/Gemm, Transpose chains, view ops
in their opset-11 attribute and opset-13 input forms, Concat/Split/Slice/Gather/Expand, Cast round
trips, reductions, Softmax, LayerNormalization and its decomposed form, Conv/ConvTranspose +
BatchNormalization, pools, Pad, Clip, Dropout, constant subgraphs, duplicated subexpressions, dead
branches, outputs that are inputs or intermediates, a symbolic batch) at opsets 11, 13, 17, 18, 21,
in float32 mostly, float16 or double."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSETS = (11, 13, 17, 18, 21)
DTYPES = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.float64: TensorProto.DOUBLE}
BATCH = "N"


@dataclass
class V:
    """A value of the graph being built: its concrete shape for batch size 2 and which axis is the
    symbolic batch (None when the shape is static)."""

    name: str
    dt: type
    shape: list[int]
    b: int | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    def free_axes(self, min_dim: int = 1) -> list[int]:
        return [a for a in range(self.rank) if a != self.b and self.shape[a] >= min_dim]


@dataclass
class G:
    rng: np.random.RandomState
    opset: int
    dt: type
    nodes: list = field(default_factory=list)
    inits: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    pool: list = field(default_factory=list)
    ops: set = field(default_factory=set)
    n: int = 0

    def name(self, p: str) -> str:
        self.n += 1
        return f"{p}{self.n}"

    def const(self, arr: np.ndarray, node: bool | None = None) -> str:
        nm = self.name("c")
        t = numpy_helper.from_array(np.asarray(arr), nm)
        if node is None:
            node = self.rng.rand() < 0.3
        if node:
            self.nodes.append(helper.make_node("Constant", [], [nm], value=t))
            self.ops.add("Constant")
        else:
            self.inits.append(t)
        return nm

    def fconst(self, shape, lo=-1.0, hi=1.0, dt=None) -> str:
        return self.const(self.rng.uniform(lo, hi, size=shape).astype(dt or self.dt))

    def ints(self, vals) -> str:
        return self.const(np.array(vals, np.int64))

    def node(self, op, ins, n_out=1, **attrs) -> list[str]:
        outs = [self.name("t") for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name=self.name(op.lower() + "_"), **attrs))
        self.ops.add(op)
        return outs

    def add(self, op, ins, shape, b=None, dt=None, **attrs) -> V:
        v = V(self.node(op, ins, **attrs)[0], dt or self.dt, list(shape), b)
        self.pool.append(v)
        return v

    def pick(self, pred=lambda v: True, dt=None) -> V | None:
        want = dt or self.dt
        cands = [v for v in self.pool if v.dt == want and pred(v)]
        if not cands:
            return None
        # Prefer recent values so chains form, but reach back too.
        i = len(cands) - 1 - min(int(self.rng.exponential(2.0)), len(cands) - 1)
        return cands[i]

    def choice(self, seq):
        return seq[self.rng.randint(len(seq))]


def bcast_shape(g: G, x: V) -> list[int]:
    """A constant shape that broadcasts to x: a suffix of x's shape with some dims set to 1."""
    k = g.rng.randint(0, x.rank + 1)
    shape = list(x.shape[x.rank - k:])
    for i in range(len(shape)):
        if x.rank - k + i == x.b or g.rng.rand() < 0.3:
            shape[i] = 1
    return shape


# ---- op families: each returns None when it cannot apply to the current pool ------------------------

def unary(g: G):
    x = g.pick()
    if x is None:
        return None
    op = g.choice(["Relu", "Sigmoid", "Tanh", "Neg", "Abs", "Exp", "Sqrt", "Identity", "Log", "Erf"])
    if op == "Erf" and g.dt != np.float32:  # onnxruntime's Erf is float only
        op = "Tanh"
    if op in ("Exp",):
        x = g.add("Tanh", [x.name], x.shape, x.b)
    if op in ("Sqrt", "Log"):
        x = g.add("Abs", [x.name], x.shape, x.b)
        if op == "Log":
            x = g.add("Add", [x.name, g.const(np.array(1, g.dt))], x.shape, x.b)
    return g.add(op, [x.name], x.shape, x.b)


def binary(g: G):
    x = g.pick()
    if x is None:
        return None
    op = g.choice(["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Where"])
    r = g.rng.rand()
    if op == "Div":
        other = g.const(g.rng.uniform(0.5, 2.0, bcast_shape(g, x)).astype(g.dt) * g.choice([1, -1]))
    elif op == "Pow":
        if g.rng.rand() < 0.5:
            x = g.add("Abs", [x.name], x.shape, x.b)
            other = g.const(np.array(g.choice([0.5, 1.0, 2.0, 3.0, 1.5]), g.dt))
        else:
            other = g.const(np.array(g.choice([1.0, 2.0, 3.0]), g.dt))
        return g.add("Pow", [x.name, other], x.shape, x.b)
    elif r < 0.4:
        y = g.pick(lambda v: v.shape == x.shape and v.b == x.b)
        other = y.name if y is not None else x.name
    else:
        other = g.fconst(bcast_shape(g, x))
    if op == "Where":
        cond = g.node(g.choice(["Greater", "Less"]), [x.name, g.const(np.array(0, g.dt))])[0]
        return g.add("Where", [cond, x.name, other], x.shape, x.b)
    if op in ("Max", "Min", "Sum") and g.rng.rand() < 0.4:
        return g.add(op, [x.name, other, g.fconst(bcast_shape(g, x))], x.shape, x.b)
    ins = [x.name, other] if g.rng.rand() < 0.8 or op in ("Div",) else [other, x.name]
    return g.add(op, ins, x.shape, x.b)


def matmul(g: G):
    x = g.pick(lambda v: v.rank >= 1 and v.b != v.rank - 1 and v.shape[-1] <= 16)
    if x is None:
        return None
    k, m = x.shape[-1], g.rng.randint(1, 7)
    if x.rank == 2 and g.rng.rand() < 0.5 and g.dt != np.float16:
        return gemm(g, x, m)
    w = g.fconst([k, m]) if x.rank > 1 else g.fconst([k, m])
    out = x.shape[:-1] + [m]
    v = g.add("MatMul", [x.name, w], out, x.b)
    if g.rng.rand() < 0.5:
        v = g.add("Add", [v.name, g.fconst([m])], out, x.b)
    return v


def gemm(g: G, x: V, m: int):
    ta = int(x.b is None and g.rng.rand() < 0.3)
    tb = int(g.rng.rand() < 0.5)
    rows, k = (x.shape[1], x.shape[0]) if ta else (x.shape[0], x.shape[1])
    w = g.fconst([m, k] if tb else [k, m])
    attrs = {"transA": ta, "transB": tb}
    if g.rng.rand() < 0.5:
        attrs["alpha"] = float(g.choice([0.5, 2.0, -1.0]))
    if g.rng.rand() < 0.5:
        attrs["beta"] = float(g.choice([0.0, 0.5, 2.0]))
    ins = [x.name, w]
    if g.rng.rand() < 0.8:
        cshape = g.choice([[m], [1, m], [], [1, 1]] + ([[rows, m], [rows, 1]] if x.b is None or ta else []))
        ins.append(g.fconst(cshape))
    return g.add("Gemm", ins, [rows, m], None if ta else x.b, **attrs)


def transpose(g: G):
    x = g.pick(lambda v: v.rank >= 2)
    if x is None:
        return None
    for _ in range(g.rng.randint(1, 3)):
        perm = list(g.rng.permutation(x.rank))
        if g.rng.rand() < 0.15:
            x = g.add("Transpose", [x.name], x.shape[::-1], None if x.b is None else x.rank - 1 - x.b)
            continue
        x = g.add("Transpose", [x.name], [x.shape[p] for p in perm],
                  None if x.b is None else perm.index(x.b), perm=[int(p) for p in perm])
    return x


def reshape(g: G):
    x = g.pick(lambda v: v.b in (None, 0) and v.rank >= 1)
    if x is None:
        return None
    kind = g.rng.randint(4)
    rest = x.shape[1:] if x.b == 0 else x.shape
    total = int(np.prod(rest)) if rest else 1
    if kind == 0:  # Flatten
        axis = 1 if x.b == 0 else g.rng.randint(0, x.rank + 1)
        lead = int(np.prod(x.shape[:axis])) if axis else 1
        return g.add("Flatten", [x.name], [lead, int(np.prod(x.shape[axis:]))], x.b, axis=axis)
    if kind == 1:  # Unsqueeze / Squeeze
        axis = g.rng.randint(0, x.rank + 1)
        shape = x.shape[:axis] + [1] + x.shape[axis:]
        b = None if x.b is None else (x.b + (axis <= x.b))
        axis_attr = int(axis - x.rank - 1) if g.rng.rand() < 0.3 else int(axis)
        if g.opset >= 13:
            u = g.add("Unsqueeze", [x.name, g.ints([axis_attr])], shape, b)
        else:
            u = g.add("Unsqueeze", [x.name], shape, b, axes=[axis_attr])
        ones = [a for a in range(u.rank) if u.shape[a] == 1 and a != u.b]
        sq = [ones[g.rng.randint(len(ones))]]
        shape = [d for a, d in enumerate(u.shape) if a not in sq]
        b = None if u.b is None else u.b - (sq[0] < u.b)
        if g.rng.rand() < 0.5:
            return u
        if g.opset >= 13:
            return g.add("Squeeze", [u.name, g.ints(sq)], shape, b)
        return g.add("Squeeze", [u.name], shape, b, axes=sq)
    if kind == 2 and x.b == 0:  # shape computed from Shape(x): x.reshape(N, -1)
        s = g.node("Shape", [x.name])[0]
        head = g.node("Slice", [s, g.ints([0]), g.ints([1])])[0] if g.rng.rand() < 0.5 else \
            g.node("Gather", [s, g.ints([0])], axis=0)[0]
        shp = g.node("Concat", [head, g.ints([-1])], axis=0)[0]
        return g.add("Reshape", [x.name, shp], [x.shape[0], total], 0)
    # static reshape of the non-batch part
    dims = factor(g, total)
    shape = ([0] if x.b == 0 else []) + dims
    if len(dims) > 0 and g.rng.rand() < 0.4:
        shape[g.rng.randint(1 if x.b == 0 else 0, len(shape))] = -1
    return g.add("Reshape", [x.name, g.ints(shape)], ([x.shape[0]] if x.b == 0 else []) + dims, x.b)


def factor(g: G, total: int) -> list[int]:
    dims = []
    while total > 1 and len(dims) < 3:
        divs = [d for d in range(2, total + 1) if total % d == 0]
        d = g.choice(divs)
        dims.append(d)
        total //= d
    if total > 1:
        dims.append(total)
    g.rng.shuffle(dims)
    return dims or [1]


def concat_split(g: G):
    x = g.pick(lambda v: len(v.free_axes()) > 0)
    if x is None:
        return None
    axis = g.choice(x.free_axes())
    neg = g.rng.rand() < 0.3
    if g.rng.rand() < 0.5:
        shape2 = list(x.shape)
        shape2[axis] = g.rng.randint(1, 4)
        shape2 = [1 if a == x.b else d for a, d in enumerate(shape2)]
        if x.b is not None:  # a batch-sized operand: slice one from x itself
            other = x.name
            shape2 = list(x.shape)
        else:
            other = g.fconst(shape2)
        out = list(x.shape)
        out[axis] += shape2[axis]
        ins = [x.name, other] if g.rng.rand() < 0.5 else [other, x.name]
        return g.add("Concat", ins, out, x.b, axis=int(axis - x.rank if neg else axis))
    if x.shape[axis] < 2:
        return None
    d = x.shape[axis]
    cut = g.rng.randint(1, d)
    sizes = [cut, d - cut]
    a = int(axis - x.rank if neg else axis)
    if g.opset >= 18 and d % 2 == 0 and g.rng.rand() < 0.4:
        outs = g.node("Split", [x.name], 2, axis=a, num_outputs=2)
        sizes = [d // 2, d // 2]
    elif g.opset >= 13:
        outs = g.node("Split", [x.name, g.ints(sizes)], 2, axis=a)
    else:
        outs = g.node("Split", [x.name], 2, axis=a, split=sizes)
    res = []
    for o, s in zip(outs, sizes):
        shape = list(x.shape)
        shape[axis] = s
        res.append(V(o, x.dt, shape, x.b))
    g.pool.extend(res)
    return res[g.rng.randint(2)]


def slice_(g: G):
    x = g.pick(lambda v: len(v.free_axes(2)) > 0)
    if x is None:
        return None
    axes = [a for a in x.free_axes(2) if g.rng.rand() < 0.6] or [x.free_axes(2)[0]]
    starts, ends, steps, shape = [], [], [], list(x.shape)
    for a in axes:
        d = x.shape[a]
        step = int(g.choice([1, 1, 2, -1, -2]))
        idx = list(range(d))[slice(None, None, step)]
        s0 = g.rng.randint(0, len(idx))
        s1 = g.rng.randint(s0 + 1, len(idx) + 1)
        sel = idx[s0:s1]
        start = sel[0] - (d if g.rng.rand() < 0.4 else 0)
        if step > 0:
            end = sel[-1] + 1
            end = end if g.rng.rand() < 0.7 else (end - d if end < d else 2**62)
        else:
            end = sel[-1] - 1
            end = end if end >= 0 else (-(2**62) if g.rng.rand() < 0.5 else -d - 1)
        starts.append(start), ends.append(end), steps.append(step)
        shape[a] = len(sel)
    axes_in = [a - x.rank if g.rng.rand() < 0.3 else a for a in axes]
    ins = [x.name, g.ints(starts), g.ints(ends), g.ints(axes_in)]
    if any(s != 1 for s in steps) or g.rng.rand() < 0.5:
        ins.append(g.ints(steps))
    return g.add("Slice", ins, shape, x.b)


def gather(g: G):
    x = g.pick(lambda v: len(v.free_axes()) > 0)
    if x is None:
        return None
    axis = g.choice(x.free_axes())
    d = x.shape[axis]
    scalar = g.rng.rand() < 0.3
    idx = g.rng.randint(-d, d, size=() if scalar else (g.rng.randint(1, 4),))
    shape = x.shape[:axis] + list(idx.shape) + x.shape[axis + 1:]
    b = x.b if x.b is None or x.b < axis else x.b + idx.ndim - 1
    return g.add("Gather", [x.name, g.const(idx.astype(np.int64))], shape, b,
                 axis=int(axis - x.rank if g.rng.rand() < 0.3 else axis))


def expand(g: G):
    x = g.pick(lambda v: v.rank <= 4)
    if x is None:
        return None
    if not any(d == 1 for a, d in enumerate(x.shape) if a != x.b):
        x = reshape_unsq(g, x)
    target = [1 if a == x.b else (g.rng.randint(2, 4) if d == 1 and g.rng.rand() < 0.7 else d)
              for a, d in enumerate(x.shape)]
    shape = [x.shape[a] if a == x.b else t for a, t in enumerate(target)]
    if g.rng.rand() < 0.3:  # one more leading dim
        target, shape = [2] + target, [2] + shape
        b = None if x.b is None else x.b + 1
    else:
        b = x.b
    return g.add("Expand", [x.name, g.ints(target)], shape, b)


def reshape_unsq(g: G, x: V) -> V:
    b = None if x.b is None else x.b + 1
    if g.opset >= 13:
        return g.add("Unsqueeze", [x.name, g.ints([0])], [1] + x.shape, b)
    return g.add("Unsqueeze", [x.name], [1] + x.shape, b, axes=[0])


def cast(g: G):
    x = g.pick()
    if x is None:
        return None
    to = g.choice([TensorProto.INT32, TensorProto.INT64, TensorProto.FLOAT16, TensorProto.DOUBLE,
                   TensorProto.FLOAT, TensorProto.BOOL])
    if x.dt == np.float16 and to == TensorProto.INT32:
        to = TensorProto.INT64
    mid = g.node("Cast", [x.name], to=to)[0]
    if to in (TensorProto.INT32, TensorProto.INT64) and g.rng.rand() < 0.5:
        # Integer arithmetic in between, so the round trip's truncation is observable.
        mid = g.node("Add", [mid, g.const(np.array(1, np.int32 if to == TensorProto.INT32 else np.int64))])[0]
    return g.add("Cast", [mid], x.shape, x.b, to=DTYPES[g.dt])


def reduce(g: G):
    x = g.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    op = g.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
                   "ReduceSumSquare", "ReduceLogSumExp"])
    if op in ("ReduceProd", "ReduceLogSumExp", "ReduceSumSquare"):
        x = g.add("Tanh", [x.name], x.shape, x.b)
    keep = int(g.rng.rand() < 0.5)
    as_input = g.opset >= (13 if op == "ReduceSum" else 18)
    mode = g.rng.randint(4)
    attrs: dict = {}
    if g.rng.rand() < 0.7:
        attrs["keepdims"] = keep
    else:
        keep = 1
    ins = [x.name]
    if mode == 0:  # all axes
        axes = list(range(x.rank))
        if as_input and g.rng.rand() < 0.5:
            ins.append("")
    elif mode == 1 and as_input:  # empty axes: a no-op with noop_with_empty_axes=1
        attrs["noop_with_empty_axes"] = 1
        if g.rng.rand() < 0.5:
            ins.append(g.const(np.zeros((0,), np.int64)))
        return g.add(op, ins, x.shape, x.b, **attrs)
    else:
        axes = sorted(set(int(a) for a in g.rng.choice(x.rank, g.rng.randint(1, x.rank + 1))))
        ax = [a - x.rank if g.rng.rand() < 0.3 else a for a in axes]
        if as_input:
            ins.append(g.ints(ax))
        else:
            attrs["axes"] = ax
    shape = [1 if a in axes else d for a, d in enumerate(x.shape)] if keep else \
        [d for a, d in enumerate(x.shape) if a not in axes]
    if x.b is None or x.b in axes:
        b = None
    else:
        b = x.b if keep else x.b - sum(a < x.b for a in axes)
    return g.add(op, ins, shape, b, **attrs)


def softmax(g: G):
    x = g.pick(lambda v: v.rank >= 1)
    if x is None:
        return None
    axis = g.rng.randint(-x.rank, x.rank)
    attrs = {"axis": int(axis)} if g.rng.rand() < 0.7 else {}
    return g.add(g.choice(["Softmax", "LogSoftmax"]), [x.name], x.shape, x.b, **attrs)


def layernorm(g: G):
    x = g.pick(lambda v: v.rank >= 2 and v.b != v.rank - 1)
    if x is None:
        return None
    d = x.shape[-1]
    if g.opset >= 17 and g.rng.rand() < 0.5:
        axis = -1 if g.rng.rand() < 0.7 else x.rank - 1
        ins = [x.name, g.fconst([d], 0.5, 1.5)]
        if g.rng.rand() < 0.7:
            ins.append(g.fconst([d]))
        return g.add("LayerNormalization", ins, x.shape, x.b, axis=int(axis), epsilon=1e-5)
    # Decomposed: (x - mean) / sqrt(var + eps) * gamma + beta, with the opset's ReduceMean form.
    def mean(v):
        if g.opset >= 18:
            return g.node("ReduceMean", [v, g.ints([-1])])[0]
        return g.node("ReduceMean", [v], axes=[-1])[0]
    mu = mean(x.name)
    diff = g.node("Sub", [x.name, mu])[0]
    sq = g.node("Pow", [diff, g.const(np.array(2, g.dt))])[0] if g.rng.rand() < 0.5 else \
        g.node("Mul", [diff, diff])[0]
    var = mean(sq)
    den = g.node("Sqrt", [g.node("Add", [var, g.const(np.array(1e-5, g.dt))])[0]])[0]
    y = g.node("Div", [diff, den])[0]
    if g.rng.rand() < 0.7:
        y = g.node("Mul", [y, g.fconst([d], 0.5, 1.5)])[0]
        y = g.node("Add", [y, g.fconst([d])])[0]
    v = V(y, g.dt, list(x.shape), x.b)
    g.pool.append(v)
    return v


def conv_block(g: G):
    x = g.pick(lambda v: v.rank == 4 and v.b in (None, 0) and v.shape[1] <= 8 and min(v.shape[2:]) >= 3)
    if x is None:
        return None
    c = x.shape[1]
    groups = c if c > 1 and g.rng.rand() < 0.3 else 1
    m = groups * g.rng.randint(1, 3) if groups > 1 else g.rng.randint(1, 5)
    kh = g.choice([1, 3])
    pad = g.choice([0, 1]) if kh == 3 else 0
    stride = g.choice([1, 1, 2])
    transposed = g.rng.rand() < 0.15 and groups == 1
    if transposed:
        w = g.fconst([c, m, kh, kh], -0.5, 0.5)
        hw = [(d - 1) * stride - 2 * pad + kh for d in x.shape[2:]]
        op = "ConvTranspose"
    else:
        w = g.fconst([m, c // groups, kh, kh], -0.5, 0.5)
        hw = [(d + 2 * pad - kh) // stride + 1 for d in x.shape[2:]]
        op = "Conv"
    ins = [x.name, w] + ([g.fconst([m])] if g.rng.rand() < 0.5 else [])
    attrs = dict(kernel_shape=[kh, kh], pads=[pad] * 4, strides=[stride] * 2)
    if groups > 1:
        attrs["group"] = groups
    y = g.add(op, ins, [x.shape[0], m] + hw, x.b, **attrs)
    if g.rng.rand() < 0.6:
        bn = [g.fconst([m], 0.5, 1.5), g.fconst([m]), g.fconst([m]), g.fconst([m], 0.5, 1.5)]
        y = g.add("BatchNormalization", [y.name] + bn, y.shape, y.b, epsilon=1e-5)
    if g.rng.rand() < 0.5:
        y = g.add(g.choice(["Relu", "Sigmoid", "LeakyRelu", "HardSigmoid"]), [y.name], y.shape, y.b)
    return y


def pool(g: G):
    x = g.pick(lambda v: v.rank == 4 and v.b in (None, 0) and min(v.shape[2:]) >= 2)
    if x is None:
        return None
    if g.rng.rand() < 0.2:
        return g.add(g.choice(["GlobalAveragePool", "GlobalMaxPool"]), [x.name], x.shape[:2] + [1, 1], x.b)
    k = 2
    s = g.choice([1, 2])
    hw = [(d - k) // s + 1 for d in x.shape[2:]]
    return g.add(g.choice(["MaxPool", "AveragePool"]), [x.name], x.shape[:2] + hw, x.b,
                 kernel_shape=[k, k], strides=[s, s])


def pad(g: G):
    x = g.pick(lambda v: v.rank >= 1 and len(v.free_axes(2)) > 0)
    if x is None:
        return None
    mode = g.choice(["constant", "constant", "reflect", "edge"])
    pads = [0] * (2 * x.rank)
    for a in x.free_axes(2):
        if g.rng.rand() < 0.6:
            pads[a] = g.rng.randint(0, 2)
            pads[a + x.rank] = g.rng.randint(0, 2)
    shape = [d + pads[a] + pads[a + x.rank] for a, d in enumerate(x.shape)]
    ins = [x.name, g.ints(pads)]
    if mode == "constant" and g.rng.rand() < 0.5:
        ins.append(g.const(np.array(g.rng.uniform(-1, 1), g.dt)))
    return g.add("Pad", ins, shape, x.b, mode=mode)


def clip(g: G):
    x = g.pick()
    if x is None or (g.opset < 12 and g.dt != np.float32):  # Clip-11 runs float only in onnxruntime
        return None
    lo = g.const(np.array(-0.5, g.dt)) if g.rng.rand() < 0.6 else ""
    hi = g.const(np.array(0.7, g.dt)) if g.rng.rand() < 0.6 else ""
    ins = [x.name, lo, hi]
    while ins and ins[-1] == "":
        ins.pop()
    return g.add("Clip", ins, x.shape, x.b)


def dropout(g: G):
    x = g.pick()
    if x is None:
        return None
    ins = [x.name]
    if g.opset >= 12 and g.rng.rand() < 0.5:  # ratio and training_mode are inputs from opset 12
        ins.append(g.const(np.array(0.3, g.dt)))
    if len(ins) == 2 and g.rng.rand() < 0.5:
        ins.append(g.const(np.array(False)))
    return g.add("Dropout", ins, x.shape, x.b)


def folding(g: G):
    """A constant subexpression feeding arithmetic, so fold-constants has work."""
    x = g.pick()
    if x is None:
        return None
    shape = bcast_shape(g, x)
    c = g.fconst(shape)
    for _ in range(g.rng.randint(1, 4)):
        op = g.choice(["Add", "Mul", "Sub", "Neg", "Sqrt", "Transpose", "Relu"])
        if op in ("Neg", "Relu"):
            c = g.node(op, [c])[0]
        elif op == "Sqrt":
            c = g.node("Sqrt", [g.node("Abs", [c])[0]])[0]
        elif op == "Transpose":
            c = g.node("Transpose", [c])[0] if len(shape) < 2 or len(set(shape)) == 1 else c
        else:
            c = g.node(op, [c, g.fconst(shape)])[0]
    return g.add(g.choice(["Add", "Mul", "Sub"]), [x.name, c], x.shape, x.b)


def duplicate(g: G):
    """Repeat the last node (same op, inputs, attributes), so CSE has work, and combine the copies."""
    last = [n for n in g.nodes if n.op_type not in ("Constant", "Split", "Dropout")]
    if not last:
        return None
    n = last[-1]
    src = next((v for v in g.pool if v.name == n.output[0]), None)
    if src is None or src.dt != g.dt:
        return None
    copy = onnx.NodeProto()
    copy.CopyFrom(n)
    copy.name = g.name("dup_")
    del copy.output[:]
    copy.output.append(g.name("t"))
    g.nodes.append(copy)
    return g.add(g.choice(["Add", "Mul", "Sub", "Max"]), [src.name, copy.output[0]], src.shape, src.b)


FAMILIES = [unary, binary, binary, matmul, transpose, reshape, concat_split, slice_, gather, expand, cast,
            reduce, softmax, layernorm, conv_block, conv_block, pool, pad, clip, dropout, folding, duplicate]
FLOAT16_OK = {unary, binary, matmul, transpose, reshape, concat_split, slice_, gather, expand, cast, reduce,
              softmax, layernorm, pad, clip, dropout, folding, duplicate, conv_block, pool}
DOUBLE_OK = {unary, binary, matmul, transpose, reshape, concat_split, slice_, gather, expand, cast, reduce,
             softmax, clip, folding, duplicate, pad}


def generate(seed: int) -> onnx.ModelProto:
    rng = np.random.RandomState(seed)
    opset = int(OPSETS[rng.randint(len(OPSETS))])
    dt = [np.float32] * 8 + [np.float16, np.float64]
    g = G(rng, opset, dt[rng.randint(len(dt))])
    for i in range(rng.randint(1, 4)):
        image = i == 0 and rng.rand() < 0.4
        shape = [2, rng.randint(1, 5), rng.randint(3, 7), rng.randint(3, 7)] if image else \
            [2] + [int(d) for d in rng.randint(1, 6, size=rng.randint(0, 4))]
        dynamic = rng.rand() < 0.5
        if not dynamic and rng.rand() < 0.3:
            shape = shape[1:] or [3]
        v = V(f"in{i}", g.dt, shape, 0 if dynamic else None)
        g.inputs.append(v)
        g.pool.append(v)
    families = [f for f in FAMILIES if g.dt == np.float32 or f in (FLOAT16_OK if g.dt == np.float16 else DOUBLE_OK)]
    steps = rng.randint(3, 14)
    made = 0
    for _ in range(steps * 4):
        if made >= steps:
            break
        fam = families[rng.randint(len(families))]
        if fam(g) is not None:
            made += 1
    return finish(g)


def value_info(v: V) -> onnx.ValueInfoProto:
    shape = [BATCH if a == v.b else d for a, d in enumerate(v.shape)]
    return helper.make_tensor_value_info(v.name, DTYPES[v.dt], shape)


def finish(g: G) -> onnx.ModelProto:
    rng = g.rng
    produced = [v for v in g.pool if v not in g.inputs]
    outs: list[V] = []
    if produced:
        outs.append(produced[-1])
    for _ in range(rng.randint(0, 3)):
        v = g.pool[rng.randint(len(g.pool))]
        if v not in outs:
            outs.append(v)  # an intermediate value, or a graph input passed straight through
    if not outs:
        outs.append(g.add("Identity", [g.inputs[0].name], g.inputs[0].shape, g.inputs[0].b))
    graph = helper.make_graph(g.nodes, f"rand{g.opset}", [value_info(v) for v in g.inputs],
                              [value_info(v) for v in outs], initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", g.opset)],
                              producer_name="fuzz_graphs")
    model.ir_version = 7 if g.opset <= 13 else 8 if g.opset <= 17 else 9 if g.opset <= 19 else 10
    return model
