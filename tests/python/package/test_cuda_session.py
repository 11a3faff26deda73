"""onnxopt.cuda.Session: where there is no GPU (or no CUDA build) a clear onnxopt error; on the GPU
machine (tools/gpu/test.sh python) runs from numpy arrays and from torch CUDA tensors through
DLPack that match the reference kernels, a CUDA graph replayed, and a tensor's pending writes on
torch's stream ordered before the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import onnxopt
import onnxopt.cuda

REPO = Path(__file__).resolve().parents[3]
MODEL = REPO / "models/transformers/bert_legacy/model.onnx"


def _session_or_reason():
    try:
        return onnxopt.cuda.Session(onnxopt.optimize(MODEL, level=3, target="cuda")), None
    except onnxopt.UnimplementedError as e:
        return None, str(e)


def test_no_device_is_a_clear_error() -> None:
    session, reason = _session_or_reason()
    if session is not None:
        assert session.device_name  # a device: the tests below run
        return
    assert os.environ.get("ONNXOPT_REQUIRE_CUDA") != "1", reason
    assert "no usable CUDA device 0" in reason or "without CUDA" in reason, reason
    with pytest.raises(onnxopt.UnimplementedError):
        onnxopt.run(MODEL, runner="cuda")


_MAPPED_CUDA = """
import re, sys
import onnxopt, onnxopt.cuda
def mapped():
    lines = open("/proc/self/maps").read().splitlines()
    pattern = re.compile(r"/lib(cudart|cudnn|cublas|onnxopt_cuda)")
    return sorted({l.split()[-1] for l in lines if pattern.search(l)})
print(mapped())
try:
    onnxopt.cuda.Session(sys.argv[1])
except onnxopt.UnimplementedError as e:
    print(e, file=sys.stderr)
print(mapped())
"""


def test_the_cuda_provider_is_loaded_by_the_first_session() -> None:
    # The native module links no CUDA library: importing the package maps none, and the first
    # CUDA session loads the provider shipped beside the module (docs/cuda_runtime.md).
    model = REPO / "models/tiny_cnn/model.onnx"
    proc = subprocess.run([sys.executable, "-c", _MAPPED_CUDA, str(model)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    before, after = proc.stdout.splitlines()
    assert before == "[]", before
    if "without CUDA" in proc.stderr:
        assert after == "[]", after
        return
    assert "could not be loaded" not in proc.stderr, proc.stderr
    provider = Path(onnxopt.__file__).parent / "libonnxopt_cuda.so"
    assert f"'{provider}'" in after, (after, provider)
    assert "libcudart" in after, after


@pytest.fixture(scope="module")
def session():
    s, reason = _session_or_reason()
    if s is None:
        if os.environ.get("ONNXOPT_REQUIRE_CUDA") == "1":
            pytest.fail(f"no CUDA device: {reason}")
        pytest.skip("skipped: no CUDA device")
    return s


def _feeds(batch: int, seq: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(0, 100, (batch, seq)).astype(np.int64),
            "attention_mask": np.ones((batch, seq), np.int64)}


def _expect_close(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-3, atol=2e-3, err_msg=name)


def test_numpy_inputs_match_the_reference(session) -> None:
    feeds = _feeds(2, 16, 0)
    want = onnxopt.run(MODEL, feeds)
    for _ in range(3):  # eager, captured, replayed
        _expect_close(session.run(feeds), want)
    assert "replayed" in session.cuda_graph_state, session.cuda_graph_state
    assert session.last_compute_ms is not None and session.last_compute_ms > 0


def test_torch_cuda_tensors_go_in_through_dlpack(session) -> None:
    torch = pytest.importorskip("torch")
    feeds = _feeds(2, 16, 1)
    want = onnxopt.run(MODEL, feeds)
    on_gpu = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
    for _ in range(3):
        _expect_close(session.run(on_gpu), want)
    # A write queued on torch's stream just before the run: the run must see it.
    other = _feeds(2, 16, 2)
    torch.cuda.synchronize()
    big = torch.randn(4096, 4096, device="cuda")
    for _ in range(4):
        big = big @ big  # keep torch's stream busy
    on_gpu["input_ids"].copy_(torch.from_numpy(other["input_ids"]).cuda(), non_blocking=True)
    _expect_close(session.run(on_gpu), onnxopt.run(MODEL, other))
    # A mix of host and device inputs, and a non-contiguous tensor.
    mixed = {"input_ids": on_gpu["input_ids"], "attention_mask": other["attention_mask"]}
    _expect_close(session.run(mixed), onnxopt.run(MODEL, other))
    wide = torch.from_numpy(np.repeat(other["input_ids"], 2, axis=1)).cuda()[:, ::2]
    assert not wide.is_contiguous()
    _expect_close(session.run({"input_ids": wide, "attention_mask": on_gpu["attention_mask"]}),
                  onnxopt.run(MODEL, other))


def test_bad_device_inputs_are_errors(session) -> None:
    torch = pytest.importorskip("torch")
    feeds = {k: torch.from_numpy(v).cuda() for k, v in _feeds(2, 16, 3).items()}
    with pytest.raises(onnxopt.InvalidArgumentError, match="input_ids"):
        session.run({**feeds, "input_ids": feeds["input_ids"].to(torch.int32)})
    with pytest.raises(onnxopt.InvalidArgumentError, match="not an input"):
        session.run({**feeds, "typo": feeds["input_ids"]})


def test_tuning_cache_is_written_once_and_reused(session, tmp_path: Path) -> None:
    # The convolutions' timed algorithm choices go to the file in the first session and come
    # from it in the second, which adds nothing and gives the same answer.
    cnn = REPO / "models/tiny_unet/model.onnx"
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)}
    cache = tmp_path / "tuning.txt"
    want = onnxopt.cuda.Session(cnn, tuning_cache=cache, tf32="none").run(feeds)
    lines = cache.read_text().splitlines()
    assert lines[0] == "# onnxopt tuning cache v1", lines
    assert any(line.startswith("conv|") for line in lines[1:]), lines
    second = onnxopt.cuda.Session(cnn, tuning_cache=cache, tf32="none")
    _expect_close(second.run(feeds), want)
    assert cache.read_text().splitlines() == lines
