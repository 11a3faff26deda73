"""Shape inference agrees with onnx.shape_inference wherever onnx infers a static shape, on every model of
the corpus (see shape_agreement.py)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import roundtrip_check
import shape_agreement

CASES = roundtrip_check.corpus()


@pytest.mark.corpus
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_agrees_with_onnx(case: roundtrip_check.Case, opt: Path, work_dir: Path) -> None:
    result = shape_agreement.compare(case, opt, work_dir)
    assert not result.mismatches, f"{case.model}:\n  " + "\n  ".join(result.mismatches[:20])


# ---------------------------------------------------------------------------------------------------------
# Windowed ops over small known sizes: every shape opt writes is the one onnxruntime produces, onnx.checker's
# full check (strict shape inference) accepts the model, and a dim is left unwritten only where onnx's
# inference and onnxruntime disagree (pools: kernels overhanging the input, SAME padding with dilation, the
# last ceil_mode window starting in the padding before opset 22). Conv and ConvTranspose (SAME with a kernel
# shorter than the stride) go through the same sweep.

def _pool_configs():
    import itertools

    pads_choices = ((0, 0), (0, 1), (1, 0), (1, 1), (2, 1))
    for x, k, s, d, pads, ceil, auto_pad in itertools.product(
            range(1, 7), (1, 2, 3), (1, 2, 3), (1, 2), pads_choices, (0, 1),
            ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")):
        if auto_pad != "NOTSET" and pads != (0, 0):
            continue
        attrs = {"kernel_shape": [k], "strides": [s], "ceil_mode": ceil}
        if d > 1:
            attrs["dilations"] = [d]
        if auto_pad == "NOTSET":
            attrs["pads"] = list(pads)
        else:
            attrs["auto_pad"] = auto_pad
        yield x, attrs


def _window_model(op: str, opset: int, items: list[tuple[int, dict]]) -> onnx.ModelProto:
    """One node per configuration; for Conv and ConvTranspose the kernel_shape becomes a weight."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    nodes, inputs, outputs, weights = [], [], [], []
    for i, (x, attrs) in enumerate(items):
        if op.startswith("Conv"):
            attrs = {a: v for a, v in attrs.items() if a not in ("ceil_mode", "kernel_shape")}
            weights.append(numpy_helper.from_array(np.ones([1, 1, *items[i][1]["kernel_shape"]], np.float32), f"w{i}"))
            nodes.append(helper.make_node(op, [f"x{i}", f"w{i}"], [f"y{i}"], **attrs))
        else:
            nodes.append(helper.make_node(op, [f"x{i}"], [f"y{i}"], **attrs))
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, 1, x]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
    return helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializer=weights),
                             opset_imports=[helper.make_opsetid("", opset)], ir_version=9 if opset < 21 else 10)


def _inferred_and_checked(model: onnx.ModelProto, opt: Path, work_dir: Path,
                          passes: str = "infer-shapes") -> tuple[onnx.ModelProto, str]:
    """The model as opt writes it after `passes` (which onnx.checker's full check accepts) and opt's
    warnings."""
    src, out = work_dir / "in.onnx", work_dir / "out.onnx"
    onnx.save(model, str(src))
    proc = roundtrip_check.run_opt(opt, src, f"--passes={passes}", "-o", out)
    assert proc.returncode == 0, proc.stderr
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    return written, proc.stderr


def _last_dim(value_info: onnx.ValueInfoProto) -> int | None:
    dims = value_info.type.tensor_type.shape.dim
    return dims[-1].dim_value if len(dims) == 3 and dims[-1].HasField("dim_value") else None


@pytest.mark.parametrize("op,opset", [("AveragePool", 19), ("AveragePool", 22), ("MaxPool", 12), ("MaxPool", 22),
                                      ("LpPool", 18), ("LpPool", 22), ("Conv", 13), ("ConvTranspose", 13)])
def test_window_shapes_agree_with_onnx_and_onnxruntime(op: str, opset: int, opt: Path, work_dir: Path) -> None:
    import numpy as np
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    runs = []  # (x, attrs, onnxruntime's output size) for the configurations onnxruntime runs
    for x, attrs in _pool_configs():
        if op.startswith("Conv") and attrs["ceil_mode"]:
            continue
        model = _window_model(op, opset, [(x, attrs)])
        try:
            sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            runs.append((x, attrs, sess.run(None, {"x0": np.ones((1, 1, x), np.float32)})[0].shape[2]))
        except Exception:
            continue  # invalid for onnxruntime (pads >= kernel, an empty output)
    model = _window_model(op, opset, [(x, attrs) for x, attrs, _ in runs])
    written, _ = _inferred_and_checked(model, opt, work_dir)
    problems = []
    for i, (x, attrs, actual) in enumerate(runs):
        ours = _last_dim(written.graph.output[i])
        try:
            inferred = onnx.shape_inference.infer_shapes(_window_model(op, opset, [(x, attrs)]), strict_mode=True)
            theirs = _last_dim(inferred.graph.output[0])
        except Exception:
            theirs = None
        if ours is not None and ours != actual:
            problems.append(f"x={x} {attrs}: wrote {ours}, onnxruntime gives {actual}")
        if ours is None and theirs == actual:
            problems.append(f"x={x} {attrs}: wrote nothing, though onnx and onnxruntime agree on {actual}")
    assert not problems, f"{len(problems)} of {len(runs)}:\n  " + "\n  ".join(problems[:20])


# ---------------------------------------------------------------------------------------------------------
# Loop-carried values that change shape between iterations, with declared types that hold for the first
# iteration at best: every written dim holds in every iteration onnxruntime runs, and where declared and
# inferred types disagree the written one is neither the declared type nor a mix of both.

def _loop_model(name: str) -> tuple[onnx.ModelProto, dict[str, callable]]:
    """The model and, per value, its shape in iteration k (1-based) of the body, or after k iterations for
    the Loop's output."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    def info(n, shape):
        return helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)

    scalars = [helper.make_tensor_value_info("i", TensorProto.INT64, []),
               helper.make_tensor_value_info("cond", TensorProto.BOOL, [])]
    if name == "transpose":  # onnx/optimizer's test_fuse_transpose: [a,b,c] -> [a,c,b] each iteration
        nodes = [helper.make_node("Transpose", ["v"], ["t1"], perm=[1, 0, 2]),
                 helper.make_node("Transpose", ["t1"], ["t2"], perm=[2, 0, 1]),
                 helper.make_node("Transpose", ["t2"], ["r"], perm=[2, 0, 1])]
        body_in, body_out, x, declared_y, inits = info("v", [2, 3, 4]), info("r", [2, 4, 3]), [2, 3, 4], [4, 3, 2], []
        odd = lambda k: k % 2 == 1  # noqa: E731
        shapes = {"v": lambda k: [2, 3, 4] if odd(k) else [2, 4, 3], "t1": lambda k: [3, 2, 4] if odd(k) else [4, 2, 3],
                  "t2": lambda k: [4, 3, 2] if odd(k) else [3, 4, 2], "r": lambda k: [2, 4, 3] if odd(k) else [2, 3, 4],
                  "y": lambda k: [2, 4, 3] if odd(k) else [2, 3, 4]}
    else:  # a row appended each iteration, declared as if it ran once, with a wrong row width
        nodes = [helper.make_node("Concat", ["v", "row"], ["t1"], axis=0), helper.make_node("Relu", ["t1"], ["r"])]
        body_in, body_out, x, declared_y = info("v", [1, 2]), info("r", [2, 2]), [1, 2], [2, 3]
        inits = [numpy_helper.from_array(np.ones((1, 2), np.float32), "row")]
        shapes = {"v": lambda k: [k, 2], "t1": lambda k: [k + 1, 2], "r": lambda k: [k + 1, 2], "y": lambda k: [k + 1, 2]}
    nodes.append(helper.make_node("Identity", ["cond"], ["cond_out"]))
    body = helper.make_graph(nodes, "body", scalars + [body_in],
                             [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), body_out])
    graph = helper.make_graph([helper.make_node("Loop", ["trip", "c", "x"], ["y"], body=body)], name,
                              [info("x", x), helper.make_tensor_value_info("trip", TensorProto.INT64, []),
                               helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [info("y", declared_y)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), shapes


def _written_dims(graph: onnx.GraphProto) -> dict[str, list[int | None]]:
    types: dict[str, list[int | None]] = {}
    for vi in [*graph.input, *graph.output, *graph.value_info]:
        if vi.type.tensor_type.HasField("shape"):
            types[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                types.update(_written_dims(attr.g))
    return types


@pytest.mark.parametrize("name", ("transpose", "grow"))
def test_loop_carried_types_hold_in_every_iteration(name: str, opt: Path, work_dir: Path) -> None:
    import numpy as np
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    model, shapes = _loop_model(name)
    written_model, warnings = _inferred_and_checked(model, opt, work_dir, "infer-shapes{write-value-info=true}")
    assert "is declared" in warnings  # the contradiction is still reported
    written = _written_dims(written_model.graph)
    session = ort.InferenceSession(written_model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.zeros([d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim], np.float32)
    for k in (1, 2, 3):
        ran = list(session.run(None, {"x": x, "trip": np.array(k), "c": np.array(True)})[0].shape)
        assert ran == shapes["y"](k), "the model is not the one the test describes"
    problems = []
    for value, shape_at in shapes.items():
        dims = written.get(value)
        if dims is None:
            continue
        for k in (1, 2, 3):
            actual = shape_at(k)
            if len(dims) != len(actual) or any(d is not None and d != a for d, a in zip(dims, actual)):
                problems.append(f"{value}: written {dims}, iteration {k} has {actual}")
    assert not problems, "\n".join(problems)
    declared_y = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    assert written["y"] != declared_y and None in written["y"]


def test_resize_sizes_agree_with_onnx_and_onnxruntime(opt: Path, work_dir: Path) -> None:
    """Resize by scales: onnx floors the double product, onnxruntime truncates the float one, and they
    differ now and then (40 * 0.575f: 22 against 23). Written sizes are onnxruntime's, the full checker
    passes, and a size is left out only where the two differ."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    scales = [0.575, 1.8850574, 3.18617, 0.3, 0.7, 1.1, 2.2, 1 / 3]
    nodes, inputs, outputs, inits, sizes = [], [], [], [], []
    for j, s in enumerate(scales):
        inits.append(numpy_helper.from_array(np.array([1, 1, s], np.float32), f"s{j}"))
        for x in range(1, 200, 3):
            i = len(sizes)
            sizes.append((x, np.float32(s)))
            inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, 1, x]))
            outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
            nodes.append(helper.make_node("Resize", [f"x{i}", "", f"s{j}"], [f"y{i}"], mode="nearest"))
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializer=inits),
                              opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    written, _ = _inferred_and_checked(model, opt, work_dir)
    feeds = {f"x{i}": np.zeros((1, 1, x), np.float32) for i, (x, _) in enumerate(sizes)}
    ran = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    problems, disputed = [], 0
    for i, (x, s) in enumerate(sizes):
        ours, actual = _last_dim(written.graph.output[i]), ran[i].shape[2]
        theirs = int(np.floor(np.float64(x) * np.float64(s)))
        disputed += theirs != actual
        if ours is not None and ours != actual:
            problems.append(f"{x} * {s}: wrote {ours}, onnxruntime gives {actual}")
        if ours is None and theirs == actual:
            problems.append(f"{x} * {s}: wrote nothing, though onnx and onnxruntime agree on {actual}")
    assert disputed, "no size where onnx and onnxruntime differ: the sweep no longer tests that case"
    assert not problems, "\n".join(problems[:20])
