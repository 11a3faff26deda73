"""`opt run` and `opt check --runner reference` on every model the project ships or reads: models/ (its
generated LSTM/GRU, quantized and Resize UNet models, and the exported transformers), the shared real
models (../shared/models/real) and the onnx package's light models (issue 15's acceptance).

Each model runs on seeded random inputs (`opt run MODEL --seed 0`), is optimized at -O2, and the result
is checked against the original on the reference runner. Inputs are random unless the model needs more:

- models in models/golden/manifest.json get that manifest's shapes and fixed values (silero_vad needs
  512 samples and sr=16000: the If on sr and a Squeeze of a one-frame axis make other sizes invalid);
- inputs with no declared shape (polygraphy's attention models: MatMul inputs of unknown rank) get
  [4, 4];
- decoders with a KV cache (STORED_INPUTS: mask, cache and token lengths must agree) run on the inputs
  stored beside them.

The corpus and its lists are in model_corpus.py (shared with tools/gpu/models_cuda.py). Models
that no runtime can run are listed in NOT_RUNNABLE with why; for them the test asserts the
contract instead: exit 1 and one `opt: error:` line that says what is missing.

Time: the slowest light models (SMALLER_INPUT) run a cheaper but still real check, on a smaller image;
with that the whole test takes about two minutes on 2 shared cores (resnet50 at 224x224 is the
slowest case left, about 40 s for run and check).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import roundtrip_check
from model_corpus import NOT_RUNNABLE, SMALLER_INPUT, STORED_INPUTS, input_args, models, smaller

CASES = models()


def test_every_model_is_listed() -> None:
    ids = {i for i, _ in CASES}
    assert not set(NOT_RUNNABLE) - ids, "NOT_RUNNABLE names models that are not there"
    assert not set(SMALLER_INPUT) - ids
    assert not STORED_INPUTS - ids, "STORED_INPUTS names models that are not there"
    assert len(CASES) >= 100 and {"models/speech_rnn", "models/tiny_quant", "models/tiny_unet"} <= ids


@pytest.mark.parametrize("case", CASES, ids=[i for i, _ in CASES])
def test_reference_run_and_check(case: tuple[str, Path], run_opt, work_dir: Path) -> None:
    case_id, path = case
    if case_id in NOT_RUNNABLE:
        needle, why = NOT_RUNNABLE[case_id]
        proc = run_opt("run", path)
        problem = roundtrip_check.error_line_problem(proc, path)
        assert problem is None, f"{why}: {problem}"
        assert needle in proc.stderr, f"{why}: {proc.stderr!r}"
        return
    model = onnx.load(path, load_external_data=False)
    if case_id in SMALLER_INPUT:
        path = smaller(model, SMALLER_INPUT[case_id], work_dir)
    args = input_args(model, path, work_dir)
    start = time.monotonic()
    proc = run_opt("run", path, "--seed", "0", *args)
    run_s = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    printed = [line for line in proc.stdout.splitlines() if line.startswith("output ")]
    assert len(printed) == len(model.graph.output), proc.stdout
    optimized = work_dir / "optimized.onnx"
    proc = run_opt(path, "-o", optimized)
    assert proc.returncode == 0, proc.stderr
    start = time.monotonic()
    proc = run_opt("check", path, optimized, "--runner", "reference", "--seed", "0", *args)
    check_s = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check: passed" in proc.stdout
    print(f"{case_id}: run {run_s:.1f} s, check {check_s:.1f} s")


# ---------------------------------------------------------------------------------------------------------
# Random sequence lengths (runtime/inputs.cc inferIntRanges): at least 1 and at most the time dim T of
# the sequence they describe, read off the consuming node (LSTM/GRU/RNN input 4 by `layout`,
# ReverseSequence by `time_axis`), through a Cast, with T the size the run gives the dim.


def _lengths_model(op: str, layout: int = 0) -> onnx.ModelProto:
    t = onnx.TensorProto
    if op == "ReverseSequence":
        nodes = [helper.make_node("Cast", ["steps"], ["steps64"], to=t.INT64),
                 helper.make_node("ReverseSequence", ["x", "steps64"], ["y"], time_axis=1, batch_axis=0)]
        x = helper.make_tensor_value_info("x", t.FLOAT, ["N", "T", 4])
        inits = []
        opset = 17
    else:
        hidden = 3
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        rng = np.random.default_rng(0)
        inits = [onnx.numpy_helper.from_array(rng.standard_normal((1, gates * hidden, n)).astype(np.float32),
                                              name) for name, n in (("w", 4), ("r", hidden))]
        nodes = [helper.make_node(op, ["x", "w", "r", "", "steps"], ["y"], hidden_size=hidden,
                                  **({"layout": layout} if layout else {}))]
        x = helper.make_tensor_value_info("x", t.FLOAT, ["N", "T", 4] if layout else ["T", "N", 4])
        opset = 14
    lens = helper.make_tensor_value_info("steps", t.INT32, ["N"])
    graph = helper.make_graph(nodes, "lengths", [x, lens], [helper.make_tensor_value_info("y", t.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _printed_lengths(stdout: str) -> list[int]:
    line = next(line for line in stdout.splitlines() if line.startswith("input  steps:"))
    return [int(v) for v in line.split("[")[-1].rstrip("]").replace(".", "").split(",")]


@pytest.mark.parametrize("op,layout", [("LSTM", 0), ("GRU", 0), ("RNN", 1), ("ReverseSequence", 0)])
def test_random_sequence_lengths_fit_the_time_dim(op: str, layout: int, run_opt, work_dir: Path) -> None:
    path = work_dir / "m.onnx"
    onnx.save(_lengths_model(op, layout), path)
    shape = "6,9,4" if layout or op == "ReverseSequence" else "9,6,4"  # T = 9, N = 6
    seen = set()
    for seed in range(4):
        proc = run_opt("run", path, "--seed", seed, "--input-shape", f"x={shape}")
        assert proc.returncode == 0, proc.stderr
        lengths = _printed_lengths(proc.stdout)
        assert len(lengths) == 6 and all(1 <= n <= 9 for n in lengths), proc.stdout
        seen.update(lengths)
    assert len(seen) > 3  # the range is 1..T, not a constant
    # Unpinned, T gets the default size of a symbolic dim (1 for opt run, 2 for opt check).
    proc = run_opt("run", path)
    assert proc.returncode == 0 and set(_printed_lengths(proc.stdout)) == {1}, proc.stdout + proc.stderr
    proc = run_opt("check", path, path, "--runner", "reference")
    assert proc.returncode == 0, proc.stdout + proc.stderr
