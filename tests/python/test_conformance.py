"""Every ONNX node test case the reference kernels fold must come out right: no case may fail
(see conformance.py). Cases outside the kernels' coverage are reported as unsupported."""

from __future__ import annotations

from pathlib import Path

import pytest

import conformance

CASES = conformance.cases()


def test_cases_present() -> None:
    assert len(CASES) >= 1700, f"node tests missing: found {len(CASES)}"


@pytest.mark.parametrize("path", CASES, ids=[p.parent.name for p in CASES])
def test_folding_matches_onnx(path: Path, opt: Path, work_dir: Path) -> None:
    result = conformance.run_case(path, opt, work_dir)
    assert result.outcome != "fail", f"{result.case} ({', '.join(result.ops)}): {result.detail}"
