"""Numeric differential test of every pass: each textual pass test (tests/lit/passes/**.onnxtxt) is
compiled once unoptimized (-O0) and once through the pipeline of its first RUN line; onnxruntime runs
both on the same seeded random inputs and the outputs must agree within fp32 rounding.

A RUN line's `--rewrite-rules FILE` flags come along (the rules' function bodies are what
onnxruntime runs). A test file opts out with a line `# NUMERIC: skip <reason>` (random ops, test-only domains); one whose
pass changes precision on purpose (convert-precision) states its tolerance with
`# NUMERIC: tolerance RTOL ATOL`."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from roundtrip_check import REPO_ROOT

# Files marked `# NUMERIC: skip <reason>` (random ops, test-only domains, models onnxruntime rejects)
# are left out of the parametrization rather than skipped: they have no meaningful numeric check.
# inputs/ folders hold what the tests read (rules files), as lit's config excludes them.
PASS_TESTS = sorted(p for p in (REPO_ROOT / "tests" / "lit" / "passes").rglob("*.onnxtxt")
                    if "inputs" not in p.relative_to(REPO_ROOT).parts
                    and not re.search(r"^#\s*NUMERIC:\s*skip", p.read_text(), re.M))


def _pipeline(text: str) -> str | None:
    for line in text.splitlines():
        m = re.match(r"#\s*RUN:.*?--passes=('([^']*)'|(\S+))", line)
        if m:
            return m.group(2) if m.group(2) is not None else m.group(3)
    return None


def _rule_flags(text: str, case: Path) -> list[str]:
    """The `--rewrite-rules FILE` flags of the first RUN line with --passes (%S: the test's folder)."""
    for line in text.splitlines():
        if re.match(r"#\s*RUN:.*?--passes=", line):
            flags = []
            for path in re.findall(r"--rewrite-rules[= ](\S+)", line):
                flags += ["--rewrite-rules", path.replace("%S", str(case.parent))]
            return flags
    return []


def _random_input(info: onnx.ValueInfoProto, rng: np.random.Generator) -> np.ndarray:
    t = info.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else 2 for d in t.shape.dim]
    dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype == np.object_:  # strings
        return np.array([f"s{v} t" for v in rng.integers(0, 4, shape).ravel()], dtype=object).reshape(shape)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 4, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _tolerance(text: str) -> tuple[float, float] | None:
    """The file's `# NUMERIC: tolerance RTOL ATOL`, if any."""
    m = re.search(r"^#\s*NUMERIC:\s*tolerance\s+(\S+)\s+(\S+)", text, re.M)
    return (float(m.group(1)), float(m.group(2))) if m else None


def _atol(expected: np.ndarray) -> float:
    """fp32 rounding at the output's scale: a few ulps of its largest element (a transform such as
    DFT leaves rounding noise of that size in its near-zero elements, whichever side computes it)."""
    if expected.dtype.kind != "f" or expected.size == 0:
        return 1e-7
    scale = float(np.max(np.abs(expected[np.isfinite(expected)]), initial=0.0))
    return max(1e-7, 4 * float(np.spacing(np.float32(scale))))


def _run(path: Path, feeds: dict) -> list:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.mark.parametrize("case", PASS_TESTS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_pass_preserves_outputs(case: Path, run_opt, work_dir):
    text = case.read_text()
    pipeline = _pipeline(text)
    assert pipeline is not None, f"{case}: no --passes= on a RUN line"

    original, optimized = work_dir / "original.onnx", work_dir / "optimized.onnx"
    proc = run_opt(case, "-O0", "-o", original)
    assert proc.returncode == 0, proc.stderr
    proc = run_opt(case, f"--passes={pipeline}", *_rule_flags(text, case), "--verify-each", "-o",
                   optimized)
    assert proc.returncode == 0, proc.stderr
    onnx.checker.check_model(str(optimized), full_check=True)

    model = onnx.load(str(original))
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(1234)
    feeds = {i.name: _random_input(i, rng) for i in model.graph.input if i.name not in initializers}
    expected = _run(original, feeds)
    got = _run(optimized, feeds)
    assert [o.name for o in onnx.load(str(optimized)).graph.output] == [o.name for o in model.graph.output]
    for e, g in zip(expected, got):
        assert e.dtype == g.dtype and e.shape == g.shape
        if e.dtype.kind in "fc":
            rtol, atol = _tolerance(text) or (1e-6, _atol(e))
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, e)
