"""opt's other outputs: `--emit text` is deterministic and unchanged by a round trip; `--stats` counts ops.

All at -O0: these are properties of import and export, not of the optimization pipeline."""

from __future__ import annotations

import collections
import difflib
import re
from pathlib import Path

import onnx
import pytest

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
