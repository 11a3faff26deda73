"""Shape inference agrees with onnx.shape_inference wherever onnx infers a static shape, on every model of
the corpus (see shape_agreement.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import roundtrip_check
import shape_agreement

CASES = roundtrip_check.corpus()


@pytest.mark.corpus
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_agrees_with_onnx(case: roundtrip_check.Case, opt: Path, work_dir: Path) -> None:
    result = shape_agreement.compare(case, opt, work_dir)
    assert not result.mismatches, f"{case.model}:\n  " + "\n  ".join(result.mismatches[:20])
