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

Time: the whole test takes about a minute and a half on 2 cores. The slowest case is light_densenet121
(a 224x224 input, static; about 19 s for `opt run`, 30 s for `opt check`, which runs both models); it
and the other light models with a global pooling run a cheaper but still real check (SMALLER_INPUT): a
copy of the model whose image input is 64x64, which every layer of theirs accepts.
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

# Light models with a global pooling before their classifier: a 64x64 image is as real a run as
# 224x224 for them, at a twelfth of the work.
SMALLER_INPUT = {"light/light_densenet121", "light/light_inception_v1", "light/light_inception_v2",
                 "light/light_resnet50", "light/light_shufflenet", "light/light_squeezenet"}


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


def _smaller(model: onnx.ModelProto, work: Path) -> Path:
    """A copy of an image model whose [N, C, 224, 224] input is [N, C, 64, 64], value_info dropped
    (shape inference recomputes it)."""
    for inp in model.graph.input:
        dims = inp.type.tensor_type.shape.dim
        if len(dims) == 4:
            dims[2].dim_value = 64
            dims[3].dim_value = 64
    del model.graph.value_info[:]
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")
    path = work / "smaller.onnx"
    onnx.save(model, path)
    return path


CASES = _models()


def test_every_model_is_listed() -> None:
    ids = {i for i, _ in CASES}
    assert not set(NOT_RUNNABLE) - ids, "NOT_RUNNABLE names models that are not there"
    assert not SMALLER_INPUT - ids
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
        path = _smaller(model, work_dir)
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
