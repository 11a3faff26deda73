"""The round-trip property, shared by test_roundtrip.py and tools/roundtrip_report.py.

`opt IN -o OUT -O0` must keep what the original had: if onnx.checker's full check accepts IN it accepts OUT, and
where onnxruntime runs IN, OUT gives bitwise-identical outputs on the same inputs. Both sessions run with
graph optimizations disabled and one thread, so the comparison is of the two models, not of ORT's rewrites.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import onnx
from onnx import numpy_helper

REPO_ROOT = Path(__file__).resolve().parents[2]
OPT_TIMEOUT_S = 300
ERROR_PREFIX = "opt: error: "
# A round trip is import, verify, export: no optimization passes, whose rewrites may change float bits.
ROUNDTRIP_ARGS = ("-O0",)


def shared_dir() -> Path:
    return Path(os.environ.get("ONNXOPT_SHARED") or REPO_ROOT.parent / "shared")


def opt_path() -> Path:
    return Path(os.environ.get("ONNXOPT_OPT") or REPO_ROOT / "build" / "bin" / "opt")


def backend_data_dir() -> Path:
    return Path(onnx.__file__).parent / "backend" / "test" / "data"


# ---------------------------------------------------------------------------------------------------------
# The corpus


@dataclasses.dataclass(frozen=True)
class Case:
    id: str  # "<suite>/<name>", stable across machines: used as the pytest id
    model: Path
    data_dir: Path | None  # test_data_set_0 with input_N.pb, where the case ships one


def _case_in_folder(suite: str, model: Path) -> Case:
    data = model.parent / "test_data_set_0"
    return Case(f"{suite}/{model.parent.name}", model, data if data.is_dir() else None)


def corpus(shared: Path | None = None) -> list[Case]:
    """Every model of the round-trip corpus, in a fixed order."""
    shared = shared or shared_dir()
    cases = []
    real = shared / "models" / "real"
    cases += [Case("real/" + p.relative_to(real).as_posix(), p, None) for p in sorted(real.rglob("*.onnx"))]
    for suite in ("light", "pytorch-converted", "pytorch-operator", "simple"):
        folder = backend_data_dir() / suite
        # "light" keeps its models directly in the folder; the other suites use one folder per case.
        cases += [Case(f"{suite}/{p.stem}", p, None) for p in sorted(folder.glob("*.onnx"))]
        cases += [_case_in_folder(suite, p) for p in sorted(folder.glob("*/model.onnx"))]
    cases += [_case_in_folder("node", p) for p in sorted((shared / "onnx-node-tests").glob("test_*/model.onnx"))]
    # The project's own generated and exported models (models/README.md), with their goldens.
    bundled = REPO_ROOT / "models"
    cases += [_case_in_folder("bundled", p) for p in sorted(bundled.glob("*/model.onnx"))]
    cases += [_case_in_folder("bundled", p) for p in sorted(bundled.glob("*/*/model.onnx"))]
    return cases


# ---------------------------------------------------------------------------------------------------------
# Running opt


class OptMissing(Exception):
    pass


def require_opt(opt: Path | str) -> None:
    # Raised inside the test, so a missing binary reads as a failed test: a skip would read as a pass.
    if not (Path(opt).is_file() and os.access(opt, os.X_OK)):
        raise OptMissing(f"opt binary not found at {opt}: build it (cmake --build build) or set ONNXOPT_OPT")


def run_opt(opt: Path | str, *args: Any, timeout: float = OPT_TIMEOUT_S) -> subprocess.CompletedProcess:
    require_opt(opt)
    return subprocess.run(
        [str(opt), *map(str, args)], capture_output=True, text=True, errors="replace", timeout=timeout
    )


def error_line_problem(proc: subprocess.CompletedProcess, input_path: Path) -> str | None:
    """Why a failed run's stderr breaks the error contract, or None if it keeps it."""
    lines = proc.stderr.splitlines()
    if proc.returncode != 1:
        return f"exit code {proc.returncode}, expected 1; stderr: {proc.stderr.strip()[:500]!r}"
    if len(lines) != 1:
        return f"stderr has {len(lines)} lines, expected exactly one: {proc.stderr[:500]!r}"
    if not lines[0].startswith(ERROR_PREFIX):
        return f"stderr does not start with {ERROR_PREFIX!r}: {lines[0]!r}"
    if input_path.name not in lines[0]:
        return f"stderr does not name the input file {input_path.name!r}: {lines[0]!r}"
    return None


# ---------------------------------------------------------------------------------------------------------
# Tensors, including those nested in attributes, subgraphs and functions


def _graph_tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        yield from _node_tensors(node)


def _node_tensors(node: onnx.NodeProto) -> Iterator[onnx.TensorProto]:
    for attr in node.attribute:
        if attr.HasField("t"):
            yield attr.t
        yield from attr.tensors
        if attr.HasField("sparse_tensor"):
            yield attr.sparse_tensor.values
            yield attr.sparse_tensor.indices
        for sparse in attr.sparse_tensors:
            yield sparse.values
            yield sparse.indices
        if attr.HasField("g"):
            yield from _graph_tensors(attr.g)
        for g in attr.graphs:
            yield from _graph_tensors(g)


def all_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    yield from _graph_tensors(model.graph)
    for function in model.functions:
        for node in function.node:
            yield from _node_tensors(node)


def external_info(tensor: onnx.TensorProto) -> dict[str, str] | None:
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return None
    return {entry.key: entry.value for entry in tensor.external_data}


def external_locations(model: onnx.ModelProto) -> set[str]:
    return {info["location"] for t in all_tensors(model) if (info := external_info(t)) and "location" in info}


# ---------------------------------------------------------------------------------------------------------
# Inputs


class Unsupported(Exception):
    pass


def _random_tensor(elem_type: int, shape: list[int], rng: np.random.Generator) -> np.ndarray:
    if elem_type == onnx.TensorProto.STRING:
        return rng.choice(np.array(["a", "bc", "def", ""], dtype=object), size=shape)
    if elem_type == onnx.TensorProto.UNDEFINED:
        raise Unsupported("tensor of undefined element type")
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype.kind in "iu" or dtype.name in ("int4", "uint4", "int2", "uint2"):
        return rng.integers(0, 4, size=shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    # float16/32/64, and bfloat16 / float8 through ml_dtypes
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def random_value(type_proto: onnx.TypeProto, rng: np.random.Generator, sizes: dict[str, int], default: int) -> Any:
    """A random value of `type_proto`; symbolic dims take sizes[name] (one size per name), unknown ones `default`."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        tt = type_proto.tensor_type
        if not tt.HasField("shape"):
            shape = [default]  # unknown rank: a vector is the most likely to fit
        else:
            shape = [
                d.dim_value if d.HasField("dim_value") and d.dim_value >= 0
                else sizes.setdefault(d.dim_param, default) if d.dim_param
                else default
                for d in tt.shape.dim
            ]
        return _random_tensor(tt.elem_type, shape, rng)
    if kind == "sequence_type":
        return [random_value(type_proto.sequence_type.elem_type, rng, sizes, default) for _ in range(2)]
    if kind == "optional_type":
        return random_value(type_proto.optional_type.elem_type, rng, sizes, default)
    raise Unsupported(f"input of type {kind}")


def _read_value(path: Path, type_proto: onnx.TypeProto) -> Any:
    data = path.read_bytes()
    kind = type_proto.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.to_list(onnx.SequenceProto.FromString(data))
    if kind == "optional_type":
        return numpy_helper.to_optional(onnx.OptionalProto.FromString(data))
    if kind == "map_type":
        return numpy_helper.to_dict(onnx.MapProto.FromString(data))
    return numpy_helper.to_array(onnx.TensorProto.FromString(data))


def _hint_rng() -> np.random.Generator:
    return np.random.default_rng(1)


def _silero(with_sr: bool = True) -> dict[str, np.ndarray]:
    # 512 samples at 16 kHz is the model's frame; shorter input fails its reflect padding.
    feeds = {
        "input": _hint_rng().standard_normal((1, 512), dtype=np.float32),
        "state": np.zeros((2, 1, 128), np.float32),
    }
    return feeds | ({"sr": np.array(16000, np.int64)} if with_sr else {})


def _qkv(*names: str) -> dict[str, np.ndarray]:
    rng = _hint_rng()  # the inputs declare no shape; these graphs multiply q by k untransposed, so square ones
    return {name: rng.standard_normal((2, 8, 8), dtype=np.float32) for name in names}


# Real models whose inputs carry meaning that random values of the declared type miss.
INPUT_HINTS: dict[str, Callable[[], dict[str, np.ndarray]]] = {
    "real/silero_vad.onnx": lambda: _silero(),
    "real/silero_vad_op18_ifless.onnx": lambda: _silero(),
    "real/silero_vad_half.onnx": lambda: _silero(with_sr=False),
    "real/polygraphy/attention.onnx": lambda: _qkv("q", "k", "v"),
    "real/polygraphy/attention_same_qkv.onnx": lambda: _qkv("q"),
    "real/polygraphy/multi_attention.onnx": lambda: _qkv("q", "q1", "k", "k2", "v", "v2"),
    "real/polygraphy/roialign.onnx": lambda: {"batch_indices": np.zeros(3, np.int64)},
}


def make_feeds(
    model: onnx.ModelProto,
    names: list[str],
    data_dir: Path | None,
    default_dim: int,
    hints: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Inputs for the graph inputs `names`: hinted or test_data_set_0's where there are some, else seeded random."""
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    given: dict[str, Any] = dict(hints or {})
    if data_dir is not None:
        files = sorted(data_dir.glob("input_*.pb"), key=lambda p: int(re.sub(r"\D", "", p.stem)))
        given |= {value_info.name: _read_value(f, value_info.type) for value_info, f in zip(graph_inputs, files)}
    types = {i.name: i.type for i in graph_inputs}
    rng = np.random.default_rng(0)
    sizes: dict[str, int] = {}
    feeds = {}
    for name in names:
        if name in given:
            feeds[name] = given[name]
        elif name in types:
            feeds[name] = random_value(types[name], rng, sizes, default_dim)
        else:
            raise Unsupported(f"onnxruntime input {name!r} is not a graph input")
    return feeds


# ---------------------------------------------------------------------------------------------------------
# Running in onnxruntime

# Tensor types numpy holds natively; ORT's Python API converts only these, so the others (bfloat16, float8,
# int4, ...) travel as OrtValues and come back as RawTensor.
_NUMPY_TENSOR_TYPES = {
    f"tensor({t})"
    for t in (
        "float float16 double int8 int16 int32 int64 uint8 uint16 uint32 uint64 bool string complex64 complex128"
    ).split()
}


@dataclasses.dataclass(frozen=True)
class RawTensor:
    type: str
    shape: tuple[int, ...]
    data: bytes


def _session(path: Path):
    import onnxruntime as ort  # imported late: the malformed/external-data tests do not need it

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _ort_input(value: Any, as_ort_value: bool) -> Any:
    import onnxruntime as ort

    if isinstance(value, np.ndarray) and value.dtype.type.__module__.startswith("ml_dtypes"):
        tensor = numpy_helper.from_array(value)  # ONNX's byte layout (packed for 4- and 2-bit types) is ORT's
        ort_value = ort.OrtValue.ortvalue_from_shape_and_type(list(value.shape), tensor.data_type)
        if tensor.raw_data:
            ctypes.memmove(ort_value.data_ptr(), tensor.raw_data, len(tensor.raw_data))
        return ort_value
    if as_ort_value:
        if not isinstance(value, np.ndarray) or value.dtype == object:
            raise Unsupported("a non-numeric or non-tensor input to a model with bfloat16/float8/int4 outputs")
        return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(value))
    return value


def _ort_output(value: Any) -> Any:
    if value.is_tensor() and value.data_type() not in _NUMPY_TENSOR_TYPES:
        size = value.tensor_size_in_bytes()
        data = ctypes.string_at(value.data_ptr(), size) if size else b""
        return RawTensor(value.data_type(), tuple(value.shape()), data)
    return value.numpy()


def run_session(session: Any, feeds: dict[str, Any]) -> list[Any]:
    # run() returns numpy arrays only, so outputs numpy cannot hold need run_with_ort_values, all OrtValues.
    raw = any(o.type.startswith("tensor(") and o.type not in _NUMPY_TENSOR_TYPES for o in session.get_outputs())
    feeds = {name: _ort_input(value, raw) for name, value in feeds.items()}
    if not raw:
        return session.run(None, feeds)
    return [_ort_output(v) for v in session.run_with_ort_values(None, feeds)]


# ---------------------------------------------------------------------------------------------------------
# Comparing outputs


# Tolerances for optimized models: folding and fusion may reorder float arithmetic, so outputs are
# compared within rounding of the output type rather than bitwise.
TOLERANCE = {np.dtype(np.float16): (1e-2, 1e-3), np.dtype(np.float32): (1e-4, 1e-5),
             np.dtype(np.float64): (1e-9, 1e-12)}


def _array_diff(a: np.ndarray, b: np.ndarray, where: str, structure_only: bool, tolerant: bool = False) -> str | None:
    if a.dtype != b.dtype:
        return f"{where}: dtype {a.dtype} != {b.dtype}"
    if a.shape != b.shape:
        return f"{where}: shape {a.shape} != {b.shape}"
    if structure_only:
        return None
    # Bitwise: stricter than np.array_equal(equal_nan=True), which also ignores the sign of zero.
    same = np.array_equal(a, b) if a.dtype == object else a.tobytes() == b.tobytes()
    if same:
        return None
    if tolerant and a.dtype in TOLERANCE:
        rtol, atol = TOLERANCE[a.dtype]
        x, y = a.astype(np.float64), b.astype(np.float64)
        if np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            return None
    if a.dtype.kind in "fc":
        bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        return f"{where}: {int(bad.sum())} of {a.size} elements differ (max abs diff {np.nanmax(np.abs(a - b))})"
    return f"{where}: values differ"


def value_diff(a: Any, b: Any, where: str, structure_only: bool = False, tolerant: bool = False) -> str | None:
    """How two ORT output values differ (tensors, sequences, maps, optionals), or None if they do not."""
    if a is None or b is None:
        return None if a is None and b is None else f"{where}: {type(a).__name__} vs {type(b).__name__}"
    for kind in ((list, tuple), RawTensor, dict):
        if isinstance(a, kind) != isinstance(b, kind):
            return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: sequence of {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if diff := value_diff(x, y, f"{where}[{i}]", structure_only, tolerant):
                return diff
        return None
    if isinstance(a, RawTensor):
        if (a.type, a.shape) != (b.type, b.shape):
            return f"{where}: {a.type}{list(a.shape)} vs {b.type}{list(b.shape)}"
        return None if structure_only or a.data == b.data else f"{where}: {a.type} values differ"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{where}: map keys differ"
        for k in a:
            if diff := value_diff(a[k], b[k], f"{where}[{k!r}]", structure_only, tolerant):
                return diff
        return None
    return _array_diff(np.asarray(a), np.asarray(b), where, structure_only, tolerant)


def outputs_diff(a: list[Any], b: list[Any], names: list[str], structure_only: bool = False,
                 tolerant: bool = False) -> str | None:
    for name, x, y in zip(names, a, b):
        if diff := value_diff(x, y, f"output {name!r}", structure_only, tolerant):
            return diff
    return None


# ---------------------------------------------------------------------------------------------------------
# One case


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())}"[:300]


@dataclasses.dataclass
class Outcome:
    case: str
    checker_ok: bool = False  # the original passes check_model(full_check=True)
    checker_error: str = ""
    opt_ok: bool = False  # opt exited 0 and wrote the output
    opt_error: str = ""
    checker_ok_after: bool | None = None  # the output passes the full check (when the original did)
    ort_runnable: bool = False  # ORT created a session for the original and ran it
    ort_note: str = ""  # why not, or "nondeterministic" when the original differs from itself
    identical: bool | None = None  # bitwise-identical ORT outputs (when runnable and opt succeeded)
    failures: list[str] = dataclasses.field(default_factory=list)


def output_path(workdir: Path) -> Path:
    return workdir / "out.onnx"


def check_case(
    case: Case,
    opt: Path,
    workdir: Path,
    opt_args: tuple[str, ...] = (),
    base_args: tuple[str, ...] = ROUNDTRIP_ARGS,
    tolerant: bool = False,
) -> Outcome:
    """Runs `opt IN -o OUT *base_args *opt_args` with OUT in `workdir` (an empty folder) and checks the property.

    With `tolerant`, float outputs may differ within TOLERANCE (optimized models); else bitwise."""
    result = Outcome(case.id)
    fail = result.failures.append
    try:
        onnx.checker.check_model(str(case.model), full_check=True)
        result.checker_ok = True
    except Exception as e:
        result.checker_error = _one_line(e)

    out = output_path(workdir)
    try:
        proc = run_opt(opt, case.model, "-o", out, *base_args, *opt_args)
    except subprocess.TimeoutExpired:
        fail(f"opt timed out after {OPT_TIMEOUT_S}s")
        return result
    if proc.returncode == 0:
        if not out.is_file():
            fail("opt exited 0 but wrote no output")
            return result
        result.opt_ok = True
        try:
            out_model = onnx.load(str(out), load_external_data=False)
        except Exception as e:
            fail(f"output is not a readable model: {_one_line(e)}")
            return result
        stray = sorted({p.name for p in workdir.iterdir()} - {out.name} - external_locations(out_model))
        if stray:
            sizes = ", ".join(f"{name} ({(workdir / name).stat().st_size} bytes)" for name in stray)
            fail(f"files beside the output that it does not reference: {sizes}")
    else:
        result.opt_error = proc.stderr.strip()[:500]
        if problem := error_line_problem(proc, case.model):
            fail(problem)
        elif result.checker_ok:
            fail(f"opt rejected a model onnx.checker accepts: {result.opt_error}")
        if leftovers := sorted(p.name for p in workdir.iterdir()):
            fail(f"failed run left files in the output folder: {leftovers}")
        return result

    if result.checker_ok:
        try:
            onnx.checker.check_model(str(out), full_check=True)
            result.checker_ok_after = True
        except Exception as e:
            result.checker_ok_after = False
            fail(f"output fails onnx.checker: {_one_line(e)}")

    compare_in_ort(case, out, result, tolerant)
    return result


def compare_in_ort(case: Case, out: Path, result: Outcome, tolerant: bool = False) -> None:
    try:
        original = _session(case.model)
    except Exception as e:
        result.ort_note = "no session: " + _one_line(e)
        return
    model = onnx.load(str(case.model), load_external_data=False)
    input_names = [i.name for i in original.get_inputs()]
    output_names = [o.name for o in original.get_outputs()]
    # A symbolic or unknown dim gets 2, and 1 if the model rejects that (fixed reshapes, broadcasts).
    for default_dim in (2, 1):
        try:
            hints = INPUT_HINTS[case.id]() if case.id in INPUT_HINTS else None
            feeds = make_feeds(model, input_names, case.data_dir, default_dim, hints)
            expected = run_session(original, feeds)
            break
        except Exception as e:
            result.ort_note = "original does not run: " + _one_line(e)
    else:
        return
    result.ort_runnable = True
    result.ort_note = ""

    fail = result.failures.append
    try:
        roundtrip = _session(out)
    except Exception as e:
        result.identical = False
        fail(f"onnxruntime runs the original but cannot load the output: {_one_line(e)}")
        return
    if [i.name for i in roundtrip.get_inputs()] != input_names:
        fail(f"inputs changed: {input_names} -> {[i.name for i in roundtrip.get_inputs()]}")
    if (names := [o.name for o in roundtrip.get_outputs()]) != output_names:
        result.identical = False
        fail(f"outputs changed: {output_names} -> {names}")
        return
    try:
        actual = run_session(roundtrip, feeds)
    except Exception as e:
        result.identical = False
        fail(f"onnxruntime runs the original but not the output: {_one_line(e)}")
        return
    diff = outputs_diff(expected, actual, output_names, tolerant=tolerant)
    if diff and outputs_diff(expected, run_session(original, feeds), output_names):
        # Unseeded random ops: the original differs from itself, so only types and shapes can be compared.
        result.ort_note = "nondeterministic"
        diff = outputs_diff(expected, actual, output_names, structure_only=True)
    result.identical = diff is None
    if diff:
        fail(f"outputs differ: {diff}")
