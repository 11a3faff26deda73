"""Issue 16's acceptance as pytest items, for the GPU machine: every corpus model at -O2 matches the
reference executor on the CUDA runtime (tools/gpu/models_cuda.py's run_model), and no ONNX node test
case gives a wrong answer or an error there (tools/gpu/conformance_cuda.py's run_case; a CPU fallback
is allowed). Without a device every item skips with "skipped: no CUDA device" (fails instead with
ONNXOPT_REQUIRE_CUDA=1). The same logic as `tools/gpu/test.sh models conformance`, one test per model
or case, for picking some out:

    python3 -m pytest -q -n 12 tests/gpu -k "bert or test_softmax"

opt and the data come from ONNXOPT_OPT and ONNXOPT_SHARED (test.sh sets both: build-gpu/bin/opt and
.gpu/shared after its data step)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "tools" / "gpu"))
sys.path.insert(0, str(ROOT / "tools"))
import conformance_cuda  # noqa: E402
import model_corpus  # noqa: E402
import models_cuda  # noqa: E402
import roundtrip_check  # noqa: E402
from conformance_table import reference_unsupported  # noqa: E402

OPT = roundtrip_check.opt_path()
NODE_CASES = sorted((roundtrip_check.shared_dir() / "onnx-node-tests").glob("test_*/model.onnx"))


@pytest.fixture(scope="session")
def cuda_device() -> None:
    """Skips (or fails, with ONNXOPT_REQUIRE_CUDA=1) when opt cannot use CUDA device 0."""
    roundtrip_check.require_opt(OPT)
    proc = subprocess.run([str(OPT), "run", str(ROOT / "models" / "tiny_cnn" / "model.onnx"), "--device", "cuda"],
                          capture_output=True, text=True, errors="replace")
    if proc.returncode != 0 and ("CUDA device" in proc.stderr or "without CUDA" in proc.stderr):
        if os.environ.get("ONNXOPT_REQUIRE_CUDA") == "1":
            pytest.fail(f"ONNXOPT_REQUIRE_CUDA=1 but: {proc.stderr.strip()}")
        pytest.skip("skipped: no CUDA device")


@pytest.mark.parametrize("case", model_corpus.models(), ids=[i for i, _ in model_corpus.models()])
def test_model_matches_the_reference_on_cuda(case: tuple[str, Path], cuda_device: None) -> None:
    case_id, path = case
    r = models_cuda.run_model(case_id, path, OPT, "cuda", "reference")
    assert r["status"] in ("pass", "expected-error"), models_cuda.line(r)
    # A plan the inputs contradict sends the whole run to the reference executor: right, but not
    # the CUDA runtime running the model.
    assert not r.get("whole_run_on_cpu"), models_cuda.line(r)


@pytest.mark.parametrize("model", NODE_CASES, ids=[p.parent.name for p in NODE_CASES])
def test_node_case_is_right_on_cuda(model: Path, cuda_device: None) -> None:
    r = conformance_cuda.run_case(model, OPT, "cuda", reference_unsupported())
    assert r["status"] in ("pass", "fallback", "unsupported"), f"{r['case']}: {r['detail']}"
