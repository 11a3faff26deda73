"""A seeded sample of tools/fuzz_graphs.py: random valid models from the op families the passes
rewrite, optimized at -O1, -O2, -O3, --precision fp16 and -O3 --target cuda, each checked against
onnxruntime (or the reference runner for the cuda target), plus truncated and corrupted bytes of each.
Long campaigns run the tool itself (docs/robustness.md); seeds that once failed stay here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import fuzz_graphs  # noqa: E402

pytest.importorskip("onnxruntime")

# A spread of opsets, dtypes and families (each seed picks its opset, dtype and ops).
SAMPLE = list(range(40))
# Seeds that found a defect, kept as regressions (docs/robustness.md lists the defects).
REGRESSIONS = [43, 92]


@pytest.mark.parametrize("seed", SAMPLE + REGRESSIONS)
def test_random_graph(seed: int, opt: Path, work_dir: Path) -> None:
    res = fuzz_graphs.check_seed(opt, seed, work_dir)
    assert res["status"] == "ok", "\n".join(res["problems"])


def test_generator_covers_the_families() -> None:
    """The sample's models are valid and span the op families the campaign claims to cover."""
    ops: set[str] = set()
    for seed in range(60):
        ops |= {n.op_type for n in fuzz_graphs.generate(seed).graph.node}
    for op in ("MatMul", "Gemm", "Transpose", "Reshape", "Slice", "Split", "Cast", "ReduceMean", "Softmax",
               "LayerNormalization", "Conv", "BatchNormalization", "Pad", "Clip", "Constant", "Where", "Expand"):
        assert op in ops, op
