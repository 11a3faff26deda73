"""Issue 49's correctness on the GPU machine: `opt generate --device cuda` on the tiny decoders of
models/decoders gives Hugging Face's greedy float32 ids (generate_golden.json beside each model), as
exported and after -O3 --target cuda --target-opset 23 (the ai.onnxopt ops on the CUDA kernels).
Without a device every item skips with "skipped: no CUDA device" (fails instead with
ONNXOPT_REQUIRE_CUDA=1); `tools/gpu/test.sh generate` runs this file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
import roundtrip_check  # noqa: E402
from test_cuda_acceptance import cuda_device  # noqa: E402,F401  (the fixture)
from test_generate import DECODERS, generate_args, golden_cases, printed_ids  # noqa: E402

OPT = roundtrip_check.opt_path()
PIPELINES = {"exported": None, "o3-cuda": ["-O3", "--target", "cuda", "--target-opset", "23"]}


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("name", DECODERS)
def test_cuda_generation_is_hugging_faces(name: str, pipeline: str, cuda_device: None, tmp_path: Path) -> None:
    model = ROOT / "models" / "decoders" / name / "model.onnx"
    if PIPELINES[pipeline] is not None:
        out = tmp_path / "out.onnx"
        proc = subprocess.run([str(OPT), str(model), *PIPELINES[pipeline], "-o", str(out)], capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr
        model = out
    for case in golden_cases(name):
        proc = subprocess.run([str(OPT), "generate", str(model), *generate_args(case), "--device", "cuda"],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert printed_ids(proc.stdout) == case["sequences"], f"{case['name']}: {proc.stdout}"
