"""The model corpus that the reference-run test (tests/python/test_reference_run.py) and the GPU
harness (tools/gpu/models_cuda.py) share: every model the project ships or reads (models/, the shared
real models under ONNXOPT_SHARED/models/real, the onnx package's light models), the models no runtime
can run (NOT_RUNNABLE, with the error each must give), the slow light models that run at a smaller
image (SMALLER_INPUT, smaller()), and the flags a model needs beyond random inputs (input_args()).
Plain python3 + numpy + onnx: no pytest, so that the GPU machine can import it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

import roundtrip_check

REPO = roundtrip_check.REPO_ROOT
SHARED = roundtrip_check.shared_dir()
LIGHT = roundtrip_check.backend_data_dir() / "light"


def models() -> list[tuple[str, Path]]:
    found = [(f"models/{p.relative_to(REPO / 'models').parent.as_posix()}", p)
              for p in sorted((REPO / "models").glob("*/model.onnx"))]
    found += [(f"models/{p.relative_to(REPO / 'models').parent.as_posix()}", p)
               for p in sorted((REPO / "models").glob("*/*/model.onnx"))]
    real = SHARED / "models" / "real"
    found += [(f"real/{p.relative_to(real).as_posix()}", p) for p in sorted(real.rglob("*.onnx"))]
    found += [(f"light/{p.stem}", p) for p in sorted(LIGHT.glob("*.onnx"))]
    return found


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
    # Also invalid ONNX: its Add adds a float constant to a double (refused at import).
    "real/polygraphy/capability.onnx": ("Add binds them to one type",
                                        "placeholder op FAKE!, Add of double and float"),
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
    **{f"real/polygraphy/weightless.{name}.onnx": ("has no data", "weights stripped")
       for name in ("conv", "qdq_conv", "sparse.conv", "sparse.matmul", "transpose_matmul",
                    "matmul.bf16", "matmul.fp16")},
}

# Light models too slow on the reference kernels at their 224x224 input (seconds of `opt run` and
# `opt check` together, measured on 2 shared cores: vgg19 155, zfnet512 22, alexnet 15, densenet121 25
# to 45): they run a copy whose image is this size instead (smaller), with the Reshape before their
# classifier and its first weight (a ConstantOfShape: light models have constant weights) resized
# to the flattened size. Every op still runs, on a smaller image: vgg19 takes about 5 s so.
SMALLER_INPUT = {"light/light_vgg19": 32, "light/light_zfnet512": 112,
                 "light/light_bvlc_alexnet": 112, "light/light_densenet121": 64}

# Models whose inputs must agree with each other, so that random ones are invalid: decoders with a
# KV cache read an attention mask as long as the cached and the new tokens together and take
# positions from it (random lengths index past the rotary tables). They run on the inputs stored
# beside them (test_data_set_0, written by their export script).
STORED_INPUTS = {"models/decoders/gptj_kv_dynamo", "models/decoders/llama_kv_dynamo",
                 "models/decoders/phi_kv_dynamo", "models/decoders/qwen2_kv_dynamo",
                 "models/decoders/mistral_kv_dynamo", "models/decoders/gemma_kv_dynamo"}


def stored_input_args(path: Path) -> list[str]:
    """--input NAME=FILE for each input_N.pb of the model's test_data_set_0."""
    args: list[str] = []
    for pb in sorted((path.parent / "test_data_set_0").glob("input_*.pb")):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(pb.read_bytes())
        args += ["--input", f"{tensor.name}={pb}"]
    return args


def manifest() -> dict[str, dict]:
    data = json.loads((REPO / "models" / "golden" / "manifest.json").read_text())
    out = {}
    for m in data["models"]:
        path = m["model"]
        path = SHARED / path[len("shared:"):] if path.startswith("shared:") else REPO / path
        out[str(path.resolve())] = m.get("inputs", {})
    return out


def input_args(model: onnx.ModelProto, path: Path, work: Path) -> list[str]:
    """--input-shape and --input flags for what the model needs beyond random values."""
    resolved = path.resolve()
    if resolved.is_relative_to(REPO) and resolved.parent.relative_to(REPO).as_posix() in STORED_INPUTS:
        return stored_input_args(resolved)
    fixed = manifest().get(str(path.resolve()), {})
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


def smaller(model: onnx.ModelProto, size: int, work: Path) -> Path:
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
