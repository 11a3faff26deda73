"""`opt -O1` and `opt -O2` over the whole corpus: every model that onnx.checker accepted before it accepts
after, and onnxruntime's outputs on it match the original's within rounding of the output type
(constant folding computes with the reference kernels, whose float results may differ from
onnxruntime's in the last bits; see roundtrip_check.TOLERANCE). Model and output names must not
change."""

from __future__ import annotations

from pathlib import Path

import pytest

import roundtrip_check

CASES = roundtrip_check.corpus()


@pytest.mark.corpus
@pytest.mark.parametrize("level", ["-O1", "-O2"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_optimized_model_is_valid_and_equivalent(case: roundtrip_check.Case, level: str, opt: Path,
                                                 work_dir: Path) -> None:
    outcome = roundtrip_check.check_case(case, opt, work_dir, base_args=(level, "--verify-each"),
                                        tolerant=True)
    assert not outcome.failures, f"{case.model} at {level}:\n  " + "\n  ".join(outcome.failures)
