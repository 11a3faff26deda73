"""opt's other outputs: `--emit text` is deterministic and unchanged by a round trip; `--stats` counts ops
(both at -O0: properties of import and export); graph outputs listed twice, or that are inputs or
initializers, survive -O1 and up."""

from __future__ import annotations

import collections
import difflib
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import roundtrip_check

# The model suites; the per-op node tests add little here beyond time.
MODELS = [c for c in roundtrip_check.corpus() if not c.id.startswith("node/")]


def _diff(a: str, b: str) -> str:
    return "\n".join(list(difflib.unified_diff(a.splitlines(), b.splitlines(), "before", "after", lineterm=""))[:40])


@pytest.mark.parametrize("case", MODELS, ids=[c.id for c in MODELS])
def test_emit_text_is_stable(case: roundtrip_check.Case, run_opt, work_dir: Path) -> None:
    out = work_dir / "out.onnx"
    converted = run_opt(case.model, "-o", out, "-O0")
    text = run_opt(case.model, "--emit", "text", "-O0")
    if converted.returncode != 0:
        # Whether opt may reject the model is test_roundtrip's call; here both modes must agree.
        assert roundtrip_check.error_line_problem(text, case.model) is None, text.stderr
        return
    assert text.returncode == 0 and text.stdout.strip(), text.stderr
    again = run_opt(case.model, "--emit", "text", "-O0")
    assert again.stdout == text.stdout, "--emit text differs between two runs:\n" + _diff(text.stdout, again.stdout)
    after = run_opt(out, "--emit", "text", "-O0")
    assert after.stdout == text.stdout, "the round trip changed the IR:\n" + _diff(text.stdout, after.stdout)


def test_stats_counts_ops(shared_dir: Path, run_opt) -> None:
    model = shared_dir / "models" / "real" / "mnist_opset7.onnx"
    proc = run_opt(model, "--stats", "-O0")
    assert proc.returncode == 0, proc.stderr
    histogram = collections.Counter(n.op_type for n in onnx.load(str(model)).graph.node)
    for op, count in histogram.items():
        assert re.search(rf"^\s*{op}\b.*\b{count}\s*$", proc.stdout, re.M), f"no '{op} {count}' line in:\n{proc.stdout}"


# Graph outputs that are not simply one node output each: a value listed twice, an output that is a
# graph input or an initializer itself, an Identity of either. Valid ONNX that -O1 and up must accept
# (an eliminated Identity once gave its listed-twice output two definitions), and the result must
# compute the same outputs in onnxruntime.
_W = np.arange(6, dtype=np.float32).reshape(2, 3)
_OUTPUT_CASES = {
    # name: (nodes, outputs)
    "identity-listed-twice": ([("Relu", ["x"], ["r"]), ("Identity", ["r"], ["y"])], ["y", "y"]),
    "value-listed-twice": ([("Relu", ["x"], ["y"])], ["y", "y"]),
    "value-listed-twice-and-used": ([("Relu", ["x"], ["y"]), ("Neg", ["y"], ["z"])], ["y", "z", "y"]),
    "two-identities-of-one-value": ([("Relu", ["x"], ["r"]), ("Identity", ["r"], ["y"]),
                                     ("Identity", ["r"], ["z"])], ["y", "z", "z", "y"]),
    "identity-of-input-listed-twice": ([("Identity", ["x"], ["y"])], ["y", "y"]),
    "input-is-output": ([("Relu", ["x"], ["y"])], ["x", "y", "x"]),
    "initializer-is-output": ([("Add", ["x", "w"], ["y"])], ["w", "y", "w"]),
    "identity-of-initializer-listed-twice": ([("Identity", ["w"], ["c"]), ("Add", ["x", "c"], ["y"])],
                                             ["c", "y", "c"]),
    "common-subexpressions-as-outputs": ([("Relu", ["x"], ["y"]), ("Relu", ["x"], ["z"])], ["y", "z", "z"]),
    "folded-constant-listed-twice": ([("Add", ["w", "w"], ["c"]), ("Add", ["x", "c"], ["y"])], ["c", "y", "c"]),
    "identity-chain-listed-twice": ([("Relu", ["x"], ["r"]), ("Identity", ["r"], ["a"]),
                                     ("Identity", ["a"], ["y"])], ["y", "a", "y"]),
}


def _outputs_model(nodes, outputs) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, ins, outs) for op, ins, outs in nodes], "outputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 3]) for o in outputs],
        [numpy_helper.from_array(_W, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _ort_run(path: Path, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


@pytest.mark.parametrize("level", ["-O1", "-O2", "-O3"])
@pytest.mark.parametrize("case", sorted(_OUTPUT_CASES))
def test_unusual_graph_outputs_survive_optimization(case: str, level: str, run_opt, work_dir: Path) -> None:
    model = _outputs_model(*_OUTPUT_CASES[case])
    onnx.checker.check_model(model, full_check=True)
    src = work_dir / "in.onnx"
    onnx.save(model, src)
    out = work_dir / "out.onnx"
    proc = run_opt(src, "-o", out, level, "--verify-each")
    assert proc.returncode == 0, proc.stderr
    optimized = onnx.load(out)
    onnx.checker.check_model(optimized, full_check=True)
    assert [o.name for o in optimized.graph.output] == [o.name for o in model.graph.output]
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    for expected, got in zip(_ort_run(src, x), _ort_run(out, x), strict=True):
        np.testing.assert_array_equal(got, expected)
    check = run_opt("check", src, out)
    assert check.returncode == 0, check.stdout + check.stderr


_SHAPE_SPECS = {
    "overflowing dim": "x=99999999999999999999,3",
    "overflowing size": "x=4611686018427387904,4",
    "too large": "x=1000000000,3",
    "malformed dim": "x=a,3",
    "no dims": "x",
    "no name": "=2,3",
    "not the declared shape": "x=2,4",
    "unknown input": "z=2,3",
}


@pytest.mark.parametrize("command", ["run", "check", "bench", "optimize --check"])
@pytest.mark.parametrize("problem", list(_SHAPE_SPECS), ids=list(_SHAPE_SPECS))
def test_input_shape_errors_name_the_model(run_opt, work_dir: Path, command: str, problem: str) -> None:
    """Every --input-shape error is one line `opt: error: MODEL: ...` (the flag shapes an input of
    that model), whatever the command; nothing is written."""
    model, out = work_dir / "relu.onnx", work_dir / "out.onnx"
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    spec = "--input-shape=" + _SHAPE_SPECS[problem]
    args = {"run": ["run", model, spec], "check": ["check", model, model, spec],
            "bench": ["bench", model, "--device", "reference", "--iters", "1", spec],
            "optimize --check": [model, "-o", out, "--check", spec]}[command]
    proc = run_opt(*args)
    assert proc.returncode == (2 if problem == "unknown input" else 1), proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"opt: error: {model}: --input-shape"), proc.stderr
    assert not out.exists()
