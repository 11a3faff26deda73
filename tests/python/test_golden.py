"""Golden-output regression over models/golden/manifest.json: each model, optimized as the manifest says,
must reproduce its stored outputs (onnxruntime on the unoptimized model, tools/regen_goldens.py) within the
manifest's tolerances. The goldens are never regenerated here."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import golden  # noqa: E402

GOLDENS = golden.load_manifest()


def test_manifest_covers_bundled_and_real_models() -> None:
    assert len(GOLDENS) >= 10
    assert any("shared" in str(g.model) or g.model.is_relative_to(golden.shared_dir()) for g in GOLDENS)
    assert len({g.name for g in GOLDENS}) == len(GOLDENS)


@pytest.mark.parametrize("case", GOLDENS, ids=[g.name for g in GOLDENS])
def test_optimized_model_matches_golden(case: golden.Golden, run_opt, work_dir: Path) -> None:
    assert case.model.is_file(), f"{case.model} is missing"
    expected = golden.read_tensors(case.data, "output")
    assert expected, f"{case.data} holds no output_*.pb: run tools/regen_goldens.py"
    out = work_dir / "out.onnx"
    proc = run_opt(case.model, "-o", out, *case.args)
    assert proc.returncode == 0, proc.stderr
    sess = golden.session(out)
    actual = sess.run(None, golden.feeds(case, sess))
    assert len(actual) == len(expected)
    for output, got, want in zip(sess.get_outputs(), actual, expected):
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, output.name
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=case.rtol,
                                   atol=case.atol, err_msg=f"{case.name}: output {output.name}")
