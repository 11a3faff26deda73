"""Model-local functions (FunctionProto): -O1 and up inline their calls (inline-functions), and `opt run` /
`opt check` run a model that still has them; both agree with onnxruntime, which inlines them itself."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


def _model() -> onnx.ModelProto:
    """A dense layer as a function with an attribute reference (the activation's alpha), called twice
    (once without the attribute), a function that calls it, and a call inside an If branch."""
    rng = np.random.default_rng(3)
    act = helper.make_node("LeakyRelu", ["u"], ["y"])
    act.attribute.append(helper.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT))
    dense = helper.make_function(
        "local", "Dense", ["x", "w", "b"], ["y"],
        [helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["u"]), act],
        [helper.make_opsetid("", 17)], attributes=["alpha"])
    block = helper.make_function(
        "local", "Block", ["x", "w", "b"], ["y"],
        [helper.make_node("Dense", ["x", "w", "b"], ["d"], domain="local", alpha=0.2),
         helper.make_node("Tanh", ["d"], ["y"])],
        [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    then_g = helper.make_graph(
        [helper.make_node("Block", ["h", "w2", "b2"], ["a"], domain="local")], "then", [],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 4])])
    else_g = helper.make_graph(
        [helper.make_node("Dense", ["h", "w2", "b2"], ["e"], domain="local")], "else", [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3, 4])])
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in [("w1", (5, 4)), ("b1", (4,)), ("w2", (4, 4)), ("b2", (4,))]]
    graph = helper.make_graph(
        [helper.make_node("Dense", ["x", "w1", "b1"], ["h"], domain="local", alpha=0.1),
         helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
        "functions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [3, 4])], inits)
    model = helper.make_model(graph, functions=[dense, block],
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _ort(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_optimized_model_has_no_calls_and_matches(run_opt, work_dir: Path) -> None:
    src, dst = work_dir / "f.onnx", work_dir / "f.opt.onnx"
    onnx.save(_model(), src)
    proc = run_opt(src, "-O2", "-o", dst)
    assert proc.returncode == 0, proc.stderr
    out = onnx.load(dst)
    assert not out.functions
    assert {i.domain for i in out.opset_import} == {""}
    ops = [n.op_type for n in out.graph.node]
    for n in out.graph.node:
        for a in n.attribute:
            ops += [m.op_type for m in a.g.node] if a.type == onnx.AttributeProto.GRAPH else []
    assert "Dense" not in ops and "Block" not in ops
    x = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    for c in (True, False):
        feeds = {"x": x, "c": np.array(c)}
        for e, g in zip(_ort(src, feeds), _ort(dst, feeds)):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_run_and_check_take_a_model_with_functions(run_opt, work_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv("ONNXOPT_PYTHON", sys.executable)  # the onnxruntime runner's interpreter
    src = work_dir / "f.onnx"
    onnx.save(_model(), src)
    x = np.random.default_rng(6).standard_normal((3, 5)).astype(np.float32)
    np.save(work_dir / "x.npy", x)
    np.save(work_dir / "c.npy", np.array(True))
    out = work_dir / "out"
    out.mkdir()
    proc = run_opt("run", src, "--input", f"x={work_dir / 'x.npy'}", "--input", f"c={work_dir / 'c.npy'}",
                   "--save-outputs", out)
    assert proc.returncode == 0, proc.stderr
    for name, e in zip(["y", "h"], _ort(src, {"x": x, "c": np.array(True)})):
        np.testing.assert_allclose(np.load(out / f"{name}.npy"), e, rtol=1e-5, atol=1e-6, err_msg=name)
    proc = run_opt("check", src, "--runner", "reference", "--against", "onnxruntime")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_function_for_another_opset_is_left_and_named(run_opt, work_dir: Path) -> None:
    """Negative: a body written for opset 18 in an opset-17 model is not inlined; `opt run` then says
    which node it cannot run."""
    fn = helper.make_function("local", "Neg18", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])],
                              [helper.make_opsetid("", 18)])
    graph = helper.make_graph([helper.make_node("Neg18", ["x"], ["y"], domain="local")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, functions=[fn],
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    model.ir_version = 8
    src, dst = work_dir / "n.onnx", work_dir / "n.opt.onnx"
    onnx.save(model, src)
    proc = run_opt(src, "-O2", "-o", dst)
    assert proc.returncode == 0, proc.stderr
    assert [n.op_type for n in onnx.load(dst).graph.node] == ["Neg18"]
    proc = run_opt("run", src)
    assert proc.returncode == 1
    assert "Neg18" in proc.stderr and "local" in proc.stderr


def _expansion_bomb(levels: int, calls: int) -> onnx.ModelProto:
    """Functions f0..f{levels-1}, each calling the next `calls` times in a chain (the last is one Neg),
    and one call of f0: a few KB whose inlining multiplies the node count by `calls` at every level
    (inline-functions unrolls 16 levels)."""
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    fns = []
    for i in range(levels):
        if i == levels - 1:
            nodes = [helper.make_node("Neg", ["x"], ["y"])]
        else:
            nodes, prev = [], "x"
            for j in range(calls):
                nodes.append(helper.make_node(f"f{i + 1}", [prev], [f"t{j}"], domain="local"))
                prev = f"t{j}"
            nodes.append(helper.make_node("Identity", [prev], ["y"]))
        fns.append(helper.make_function("local", f"f{i}", ["x"], ["y"], nodes, opsets))
    graph = helper.make_graph([helper.make_node("f0", ["x"], ["y"], domain="local", name="call0")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, functions=fns, opset_imports=opsets)
    model.ir_version = 8
    return model


@pytest.mark.parametrize("how", ["-O2", "--passes=inline-functions", "run"])
def test_expansion_bomb_is_refused_at_once(run_opt, work_dir: Path, how: str) -> None:
    """30 functions each calling the next 4 times: 4^16 calls once unrolled 16 levels, billions of
    nodes. Counted before anything is inlined and refused past the node limit, within a second or
    two, by the optimizer and by `opt run` (which inlines before it runs)."""
    src, dst = work_dir / "bomb.onnx", work_dir / "bomb.opt.onnx"
    onnx.save(_expansion_bomb(30, 4), src)
    assert src.stat().st_size < 8192
    args = ["run", src] if how == "run" else [src, how, "-o", dst]
    start = time.monotonic()
    proc = run_opt(*args, timeout=60)
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr
    assert elapsed < 3, f"took {elapsed:.1f} s"
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"opt: error: {src}: "), proc.stderr
    assert "inlining the model-local functions would make" in first
    assert "more than 16777216 (the limit; opt --max-nodes)" in first
    assert "node 'call0' (local.f0) alone expands to" in first
    assert not dst.exists()


def test_expansion_count_is_the_inlined_node_count(run_opt, work_dir: Path) -> None:
    """5 levels of 3 calls inline to 81 Neg + 40 Identity = 121 nodes: --max-nodes 121 inlines
    them all, 120 refuses and says 121."""
    src, dst = work_dir / "small.onnx", work_dir / "small.opt.onnx"
    onnx.save(_expansion_bomb(5, 3), src)
    proc = run_opt(src, "--passes=inline-functions", "--max-nodes", "121", "-o", dst)
    assert proc.returncode == 0, proc.stderr
    assert len(onnx.load(dst).graph.node) == 121
    dst.unlink()
    proc = run_opt(src, "--passes=inline-functions", "--max-nodes", "120", "-o", dst)
    assert proc.returncode == 1
    assert "would make 121 nodes, more than 120" in proc.stderr
    assert not dst.exists()
