"""`opt run` and `opt check --runner reference` on every model the project ships or reads: models/ (its
generated LSTM/GRU, quantized and Resize UNet models, and the exported transformers), the shared real
models (../shared/models/real) and the onnx package's light models (issue 15's acceptance).

Each model runs on seeded random inputs (`opt run MODEL --seed 0`), is optimized at -O2, and the result
is checked against the original on the reference runner. Inputs are random unless the model needs more:

- models in models/golden/manifest.json get that manifest's shapes and fixed values (silero_vad needs
  512 samples and sr=16000: the If on sr and a Squeeze of a one-frame axis make other sizes invalid);
- inputs with no declared shape (polygraphy's attention models: MatMul inputs of unknown rank) get
  [4, 4].

Models that no runtime can run are listed in NOT_RUNNABLE with why; for them the test asserts the
contract instead: exit 1 and one `opt: error:` line that says what is missing.

Time: the slowest light models (SMALLER_INPUT) run a cheaper but still real check, on a smaller image;
with that the whole test takes about two minutes on 2 shared cores (resnet50 at 224x224 is the
slowest case left, about 40 s for run and check).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import roundtrip_check

REPO = roundtrip_check.REPO_ROOT
SHARED = roundtrip_check.shared_dir()
LIGHT = roundtrip_check.backend_data_dir() / "light"


def _models() -> list[tuple[str, Path]]:
    models = [(f"models/{p.relative_to(REPO / 'models').parent.as_posix()}", p)
              for p in sorted((REPO / "models").glob("*/model.onnx"))]
    models += [(f"models/{p.relative_to(REPO / 'models').parent.as_posix()}", p)
               for p in sorted((REPO / "models").glob("*/*/model.onnx"))]
    real = SHARED / "models" / "real"
    models += [(f"real/{p.relative_to(real).as_posix()}", p) for p in sorted(real.rglob("*.onnx"))]
    models += [(f"light/{p.stem}", p) for p in sorted(LIGHT.glob("*.onnx"))]
    return models


# Models no runtime can run, and what `opt run`'s one error line must say.
NOT_RUNNABLE = {
    # graphsurgeon/polygraphy test graphs made of placeholder ops that exist in no operator set.
    **{f"real/graphsurgeon/{name}.onnx": ("no reference kernel for", "placeholder ops (A, O, ...)")
       for name in ("test_recursive_pattern_building", "test_toyPlugin_base_match_case",
                    "test_toyPlugin_callback_check_unmatch_case",
                    "test_toyPlugin_constant_initializer_match_case",
                    "test_toyPlugin_constant_node_match_case",
                    "test_toyPlugin_intermediate_output_to_other_node_unmatch_case",
                    "test_toyPlugin_intermediate_output_unmatch_case")},
    "real/polygraphy/toy_subgraph.onnx": ("no reference kernel for O", "placeholder op O"),
    "real/polygraphy/capability.onnx": ("no reference kernel for FAKE!", "placeholder op FAKE!"),
    "real/graphsurgeon/nested_dup_names.onnx": ("Nested is not supported", "placeholder op Nested"),
    # Custom domains: the op's kernels live in onnxruntime-extensions, not in any ONNX opset.
    "real/polygraphy/custom_op_node.onnx": ("ai.onnx.contrib", "custom op NegPos"),
    "real/superresolution_custom_domain_op18.onnx": ("com.microsoft.extensions",
                                                     "custom op DecodeImage"),
    # polygraphy's deliberately invalid graphs (they test its error reporting).
    "real/polygraphy/bad_graph_conditionally_invalid.onnx": ("inner dimensions differ",
                                                             "MatMul of [.,2] by [1,.]"),
    "real/polygraphy/bad_graph_with_dup_value_info.onnx": ("defined twice", "duplicate input"),
    "real/polygraphy/bad_graph_with_multi_level_errors.onnx": ("inner dimensions differ",
                                                               "MatMul of [.,5] by [4,.]"),
    "real/polygraphy/bad_graph_with_no_import_domains.onnx": ("no opset_import", "no opset"),
    "real/polygraphy/bad_graph_with_parallel_invalid_nodes.onnx": ("inner dimensions differ",
                                                                   "MatMul of [.,3] by [4,.]"),
    # polygraphy's "weightless" models: initializers stripped of their data (shapes only).
    **{f"real/polygraphy/weightless.{name}.onnx": ("has 0 bytes", "weights stripped")
       for name in ("conv", "qdq_conv", "sparse.conv", "sparse.matmul", "transpose_matmul",
                    "matmul.bf16", "matmul.fp16")},
}

# Light models too slow on the reference kernels at their 224x224 input (seconds of `opt run` and
# `opt check` together, measured on 2 shared cores: vgg19 155, zfnet512 22, alexnet 15, densenet121 25
# to 45): they run a copy whose image is this size instead (_smaller), with the Reshape before their
# classifier and its first weight (a ConstantOfShape: light models have constant weights) resized
# to the flattened size. Every op still runs, on a smaller image: vgg19 takes about 5 s so.
SMALLER_INPUT = {"light/light_vgg19": 32, "light/light_zfnet512": 112,
                 "light/light_bvlc_alexnet": 112, "light/light_densenet121": 64}

def _manifest() -> dict[str, dict]:
    data = json.loads((REPO / "models" / "golden" / "manifest.json").read_text())
    out = {}
    for m in data["models"]:
        path = m["model"]
        path = SHARED / path[len("shared:"):] if path.startswith("shared:") else REPO / path
        out[str(path.resolve())] = m.get("inputs", {})
    return out


def _input_args(model: onnx.ModelProto, path: Path, work: Path) -> list[str]:
    """--input-shape and --input flags for what the model needs beyond random values."""
    fixed = _manifest().get(str(path.resolve()), {})
    inits = {t.name for t in model.graph.initializer}
    args: list[str] = []
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        spec = fixed.get(inp.name, {})
        if "value" in spec:
            dtype = helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type)
            np.save(work / f"{inp.name}.npy", np.array(spec["value"], dtype=dtype))
            args += ["--input", f"{inp.name}={work / (inp.name + '.npy')}"]
        elif "shape" in spec:
            args += ["--input-shape", f"{inp.name}={','.join(map(str, spec['shape']))}"]
        elif inp.type.HasField("tensor_type") and not inp.type.tensor_type.HasField("shape"):
            args += ["--input-shape", f"{inp.name}=4,4"]
    return args


def _smaller(model: onnx.ModelProto, size: int, work: Path) -> Path:
    """A copy of a light image model whose [N, C, 224, 224] input is [N, C, size, size]: value_info
    dropped, a flattening Reshape to [1, K] made [1, -1], and the ConstantOfShape weight of the Gemm
    after it resized from K to the new flattened size."""
    inits = {t.name: t for t in model.graph.initializer}
    for inp in model.graph.input:
        dims = inp.type.tensor_type.shape.dim
        if inp.name not in inits and len(dims) == 4:
            dims[2].dim_value = size
            dims[3].dim_value = size
    del model.graph.value_info[:]
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")
    reshapes = [n for n in model.graph.node if n.op_type == "Reshape" and n.input[1] in inits]
    for r in reshapes:
        old_k = int(onnx.numpy_helper.to_array(inits[r.input[1]])[-1])
        inits[r.input[1]].CopyFrom(onnx.numpy_helper.from_array(np.array([1, -1], np.int64), r.input[1]))
        inferred = onnx.shape_inference.infer_shapes(model)
        shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
                  for v in inferred.graph.value_info}
        new_k = shapes[r.output[0]][-1]
        producers = {o: n for n in model.graph.node for o in n.output}
        for gemm in (n for n in model.graph.node if n.op_type == "Gemm" and n.input[0] == r.output[0]):
            weight = producers[gemm.input[1]]
            assert weight.op_type == "ConstantOfShape", weight.op_type
            dims = onnx.numpy_helper.to_array(inits[weight.input[0]]).copy()
            dims[dims == old_k] = new_k
            inits[weight.input[0]].CopyFrom(onnx.numpy_helper.from_array(dims, weight.input[0]))
    path = work / "smaller.onnx"
    onnx.save(model, path)
    return path


CASES = _models()


def test_every_model_is_listed() -> None:
    ids = {i for i, _ in CASES}
    assert not set(NOT_RUNNABLE) - ids, "NOT_RUNNABLE names models that are not there"
    assert not set(SMALLER_INPUT) - ids
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
        path = _smaller(model, SMALLER_INPUT[case_id], work_dir)
    args = _input_args(model, path, work_dir)
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
