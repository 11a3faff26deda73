"""onnxopt: an ONNX graph optimizer with its own runtimes, in process.

    import onnxopt
    model = onnxopt.optimize("model.onnx")              # -> onnx.ModelProto, as `opt -O2` makes it
    report = onnxopt.check("model.onnx", model)         # same outputs? (CheckReport)
    outputs = onnxopt.run(model, {"x": x})               # {name: numpy array}
    ids = onnxopt.generate("decoder.onnx", [1, 2, 3], max_new_tokens=32)  # a decoder's tokens

The work happens in onnxopt._core, a native module over the same C++ library as the `opt` tool
(src/python/module.cc), without the GIL. Models cross as serialized bytes or paths, never as
protobuf objects, so this package shares no protobuf ABI with the onnx package. Errors raise
onnxopt.Error subclasses whose message is what `opt` prints after "opt: error: "; warnings about
accepted input are OnnxoptWarning. docs/python.md lists the API.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple,
                    Union)

from . import _core
from ._arrays import result_from_core, to_core
from ._proto import Split, split_weights
from ._core import (  # noqa: F401  (re-exported)
    Error,
    InternalError,
    InvalidArgumentError,
    IoError,
    NotFoundError,
    ResourceExhaustedError,
    UnimplementedError,
)
from ._report import CheckInput, CheckReport, TensorCheck, report_from_core  # noqa: F401

if TYPE_CHECKING:
    import onnx

__all__ = [
    "optimize", "optimize_file", "check", "run", "generate", "Generator", "infer_shapes", "list_passes", "runners",
    "CheckReport", "TensorCheck", "CheckInput", "OnnxoptWarning", "Error", "InvalidArgumentError",
    "NotFoundError", "IoError", "UnimplementedError", "ResourceExhaustedError", "InternalError",
]

__version__: str = _core.__version__

ModelLike = Union[str, "os.PathLike[str]", bytes, "onnx.ModelProto"]
"""A model: a path (its external data is read beside it), serialized ModelProto bytes, or an
onnx.ModelProto (serialized here; under 2 GiB)."""

# The runner "onnxruntime" runs the package's copy of ort_runner.py with this interpreter
# (unless ONNXOPT_ORT_RUNNER / ONNXOPT_PYTHON say otherwise), which must have onnxruntime.
_core.set_ort_runner(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin",
                                  "ort_runner.py"), sys.executable)


class OnnxoptWarning(UserWarning):
    """A warning about accepted input (what `opt` prints as "warning: ...")."""


def _warn(messages: Iterable[str]) -> None:
    for m in messages:
        warnings.warn(m, OnnxoptWarning, stacklevel=3)


def _source(model: ModelLike, what: str = "model", lazy: bool = False) -> _core.Source:
    return _split_source(model, what, lazy)[0]


def _split_source(model: ModelLike, what: str = "model",
                  lazy: bool = False) -> Tuple[_core.Source, Split]:
    """The Source of `model` and, for a ModelProto, how its weights crossed (placeholders with
    `lazy`: optimize reads only the weights its passes read)."""
    src = _core.Source()
    split = Split(b"", [], [])
    if isinstance(model, (str, os.PathLike)):
        src.path = os.fspath(model)
        src.name = src.path
    elif isinstance(model, (bytes, bytearray, memoryview)):
        src.data = bytes(model)
        src.name = "<bytes>"
    else:
        serialize = getattr(model, "SerializeToString", None)
        if serialize is None:
            raise TypeError(f"onnxopt: {what} is a path, bytes or onnx.ModelProto, "
                            f"not {type(model).__name__}")
        try:  # (no ByteSize() check first: it costs as much as serializing)
            # The big weights cross as their raw_data bytes: cheaper than serializing them.
            split = split_weights(model, lazy)
            src.data, src.weights, src.placeholders = split.data, split.weights, split.placeholders
        except ValueError as e:  # protobuf refuses messages of 2 GiB or more
            raise InvalidArgumentError(
                f"<ModelProto>: cannot be serialized ({e}); save it with external data and pass "
                "its path (optimize_file writes models of any size)") from None
        src.name = "<ModelProto>"
    return src, split


def _args(level: int, passes: Optional[Union[str, Iterable[str]]], target_opset: Optional[int],
          precision: Optional[str], fold_size_limit: Optional[int], keep_initializer_inputs: bool,
          target: Optional[str], disable: Iterable[str],
          quantize: Optional[Dict[str, Any]] = None) -> _core.OptimizeArgs:
    if not isinstance(level, int) or isinstance(level, bool):
        raise TypeError(f"onnxopt: level is an int (0..3), not {type(level).__name__}")
    a = _core.OptimizeArgs()
    a.level = level
    if passes is not None:
        a.passes = passes if isinstance(passes, str) else ",".join(passes)
    a.target_opset = target_opset or 0
    a.precision = precision or ""
    a.fold_size_limit = fold_size_limit
    a.keep_initializer_inputs = keep_initializer_inputs
    a.target = target or ""
    a.disabled_passes = [disable] if isinstance(disable, str) else list(disable)
    if quantize is None:  # no weight quantization
        quantize = _quantize(None, None, True, (), True, False)
    a.quantize = quantize["quantize"] or ""
    if quantize["block_size"] is not None:
        a.quantize_block_size = quantize["block_size"]
    a.quantize_symmetric = quantize["quantize_symmetric"]
    exclude = quantize["quantize_exclude"]
    a.quantize_exclude = [exclude] if isinstance(exclude, str) else list(exclude)
    a.quantize_lm_head = quantize["quantize_lm_head"]
    a.quantize_embeddings = quantize["quantize_embeddings"]
    return a


def _quantize(quantize: Optional[str], block_size: Optional[int], quantize_symmetric: bool,
              quantize_exclude: Iterable[str], quantize_lm_head: bool,
              quantize_embeddings: bool) -> Dict[str, Any]:
    return dict(quantize=quantize, block_size=block_size, quantize_symmetric=quantize_symmetric,
                quantize_exclude=quantize_exclude, quantize_lm_head=quantize_lm_head,
                quantize_embeddings=quantize_embeddings)


def optimize(model: ModelLike, *, level: int = 2,
             passes: Optional[Union[str, Iterable[str]]] = None,
             target_opset: Optional[int] = None, precision: Optional[str] = None,
             fold_size_limit: Optional[int] = None, keep_initializer_inputs: bool = False,
             target: Optional[str] = None, disable: Iterable[str] = (),
             quantize: Optional[str] = None, block_size: Optional[int] = None,
             quantize_symmetric: bool = True, quantize_exclude: Iterable[str] = (),
             quantize_lm_head: bool = True,
             quantize_embeddings: bool = False) -> "onnx.ModelProto":
    """Optimizes `model` as `opt` does and returns the optimized onnx.ModelProto.

    level: 0..3 (opt -O0..-O3; 2 is opt's default). passes: a pipeline instead of the level's,
    as a string ("fold-constants,dce") or a list of pass ids (list_passes() names them).
    target_opset: convert to this default-domain opset. precision: "fp16" or "bf16" (range
    analysis on seeded random inputs keeps values past the type's range in float32).
    fold_size_limit: the largest tensor constant folding may create, in bytes.
    keep_initializer_inputs: initializers that are also graph inputs stay overridable.
    target: "cuda" rewrites for onnxopt's CUDA runtime (with level=3). disable: pass ids to skip.
    quantize: "int4" or "int8", weight-only quantization of constant MatMul/Gemm weights as
    `opt --quantize weights=...` (the model must import opset 21+: target_opset=21); block_size
    (default 32), quantize_symmetric (False: unsigned values with zero points), quantize_exclude
    (globs of node or weight names left float), quantize_lm_head and quantize_embeddings are
    opt's --block-size, --quantize-asymmetric, --quantize-exclude, --quantize-lm-head and
    --quantize-embeddings (docs/quantization.md).

    The model's result must be under 2 GiB (a protobuf limit): use optimize_file for larger ones.
    Raises onnxopt.Error subclasses (InvalidArgumentError for a malformed model or option,
    NotFoundError for a missing file, ...) with opt's message.
    """
    args = _args(level, passes, target_opset, precision, fold_size_limit, keep_initializer_inputs,
                 target, disable,
                 _quantize(quantize, block_size, quantize_symmetric, quantize_exclude,
                           quantize_lm_head, quantize_embeddings))
    src, split = _split_source(model, lazy=True)
    result = _core.optimize(src, args)
    if result is None:  # a raw_data that does not fit its dims: the import that reads all names it
        src, split = _split_source(model)
        result = _core.optimize(src, args)
    data, summary, weights = result
    _warn(summary["warnings"])
    return split.join(data, weights)


def optimize_file(input: Union[str, "os.PathLike[str]"], output: Union[str, "os.PathLike[str]"],
                  *, level: int = 2, passes: Optional[Union[str, Iterable[str]]] = None,
                  target_opset: Optional[int] = None, precision: Optional[str] = None,
                  fold_size_limit: Optional[int] = None, keep_initializer_inputs: bool = False,
                  target: Optional[str] = None, disable: Iterable[str] = (),
                  external_data: Optional[str] = None, quantize: Optional[str] = None,
                  block_size: Optional[int] = None, quantize_symmetric: bool = True,
                  quantize_exclude: Iterable[str] = (), quantize_lm_head: bool = True,
                  quantize_embeddings: bool = False) -> Dict[str, Any]:
    """Optimizes the model at `input` (external data read beside it) and writes it to `output`
    as `opt IN -o OUT` does: atomically (no half-written file on error), with the weights in one
    external data file when the model is over 2 GiB, or always in `external_data` (a file name
    beside `output`) when given. Models of any size. Returns the summary: pipeline, seconds,
    nodes_before/after, initializers_before/after, statistics, warnings. Options as optimize."""
    summary = _core.optimize_file(
        _source(input), _args(level, passes, target_opset, precision, fold_size_limit,
                              keep_initializer_inputs, target, disable,
                              _quantize(quantize, block_size, quantize_symmetric,
                                        quantize_exclude, quantize_lm_head, quantize_embeddings)),
        os.fspath(output), external_data)
    _warn(summary["warnings"])
    return dict(summary)


def check(original: ModelLike, optimized: ModelLike, *,
          inputs: Optional[Mapping[str, Any]] = None, runner: str = "reference",
          per_layer: bool = False, atol: Optional[float] = None, rtol: Optional[float] = None,
          seed: int = 0, max_iterations: Optional[int] = None,
          max_memory: Optional[int] = None) -> CheckReport:
    """Runs both models on the same inputs and compares every output, as `opt check` does.

    inputs: {name: numpy array} for some or all inputs; the others get seeded random values
    (`seed`) as opt check makes them. runner: "reference" (the CPU kernels, in process),
    "onnxruntime" (this interpreter runs onnxruntime, which must be installed) or "cuda".
    per_layer: also compare every value both models name alike (first_failing_value says where
    they first part). atol/rtol: the tolerance (default: by element type). The returned
    CheckReport is true when everything is within tolerance; it raises only when a model cannot
    be read or run. max_iterations, max_memory: what each run may spend on the host, as opt
    check's --max-iterations and --max-memory (bytes); None keeps their defaults.
    """
    arrays, strings = to_core(inputs)
    d = _core.check(_source(original, "original"), _source(optimized, "optimized"), arrays,
                    strings, runner, per_layer, atol, rtol, seed, max_iterations, max_memory)
    return report_from_core(d)


def run(model: ModelLike, inputs: Optional[Mapping[str, Any]] = None, *,
        runner: str = "reference", seed: int = 0, max_iterations: Optional[int] = None,
        max_memory: Optional[int] = None) -> Dict[str, Any]:
    """Runs `model` and returns {output name: numpy array} (a sequence output: a list of arrays;
    an empty optional: None). Inputs not given get seeded random values, as `opt run` makes them.
    runner: "reference" (CPU, in process), "onnxruntime" or "cuda" (a fresh session per call;
    onnxopt.cuda.Session keeps one). max_iterations, max_memory: what the run may spend on the
    host, as opt run's --max-iterations and --max-memory (bytes); None keeps their defaults."""
    arrays, strings = to_core(inputs)
    return result_from_core(_core.run(_source(model), arrays, strings, runner, seed,
                                      max_iterations, max_memory))


def _rows(ids: Any, what: str) -> Tuple[List[List[int]], bool]:
    """A prompt (or its mask) as rows of ints, and whether it was one flat row. Arrays and tensors
    cross through tolist(); rows may differ in length (the library says what is wrong then)."""
    values = list(ids.tolist() if hasattr(ids, "tolist") else ids)
    if all(isinstance(t, int) for t in values):
        return [values], True
    try:
        return [[int(t) for t in row] for row in values], False
    except TypeError:
        raise TypeError(f"onnxopt: {what} is a sequence of ints or of rows of ints") from None


def _generate_args(runner: str, max_new_tokens: int, max_length: Optional[int],
                   eos_token_id: Optional[int], temperature: float, top_k: int, top_p: float,
                   seed: int) -> _core.GenerateArgs:
    args = _core.GenerateArgs()
    args.runner = runner
    args.max_new_tokens = max_new_tokens
    args.max_length = max_length or 0
    args.eos_token_id = -1 if eos_token_id is None else eos_token_id
    args.temperature = temperature
    args.top_k = top_k
    args.top_p = top_p
    args.seed = seed
    return args


def generate(model: ModelLike, input_ids: Any, *, max_new_tokens: int = 32,
             max_length: Optional[int] = None, eos_token_id: Optional[int] = None,
             temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
             attention_mask: Any = None, runner: str = "reference",
             callback: Optional[Callable[[int, List[int]], Optional[bool]]] = None) -> Any:
    """Generates tokens with a decoder exported with its KV cache, as `opt generate` does: a
    prefill run on the prompt, then one run per token with the cache the run before returned.

    input_ids: one prompt (a sequence of ints) or a batch (rows; a 2-D array). Rows of different
    lengths must be padded to one length and given an attention_mask (1 a token, 0 padding).
    temperature 0 is greedy; above 0 the next token is sampled from softmax(logits / temperature)
    among the top_k most likely (0: all) whose probability reaches top_p, seeded by `seed`. A row
    that takes eos_token_id is finished and padded with it; generation stops after
    max_new_tokens, at max_length (prompt included), or when every row is finished. callback:
    called after each step with its index (0: the prefill) and each row's token; returning False
    stops. runner: "reference" (the CPU kernels) or "cuda" where built.

    Returns a numpy int64 array: the prompt, then the new ids, per row (one row: 1-D, as given).
    """
    import numpy as np

    args = _generate_args(runner, max_new_tokens, max_length, eos_token_id, temperature, top_k,
                          top_p, seed)
    rows, flat = _rows(input_ids, "input_ids")
    mask = [] if attention_mask is None else _rows(attention_mask, "attention_mask")[0]
    sequences, _ = _core.generate(_source(model), rows, mask, args, callback)
    out = np.asarray(sequences, dtype=np.int64)
    return out[0] if flat else out


class Generator:
    """Step-wise generation with a decoder that has a KV cache, the model read once:

        gen = onnxopt.Generator("decoder.onnx", max_new_tokens=16)
        gen.start([[1, 2, 3]])
        while not gen.done:
            tokens = gen.step()          # one id per row; the first step is the prefill
        gen.sequences, gen.stats         # rows of ids (prompt, then new); prefill/decode times

    The options are generate()'s; start() takes a new prompt (and mask) and forgets the last."""

    def __init__(self, model: ModelLike, *, runner: str = "reference", max_new_tokens: int = 32,
                 max_length: Optional[int] = None, eos_token_id: Optional[int] = None,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0):
        self._session = _core.Generator(_source(model), _generate_args(
            runner, max_new_tokens, max_length, eos_token_id, temperature, top_k, top_p, seed))

    def start(self, input_ids: Any, attention_mask: Any = None) -> None:
        mask = [] if attention_mask is None else _rows(attention_mask, "attention_mask")[0]
        self._session.start(_rows(input_ids, "input_ids")[0], mask)

    def step(self) -> List[int]:
        return list(self._session.step())

    @property
    def done(self) -> bool:
        return bool(self._session.done)

    @property
    def sequences(self) -> Any:
        import numpy as np

        return np.asarray(self._session.sequences, dtype=np.int64)

    @property
    def stats(self) -> Dict[str, Any]:
        """batch, prompt_tokens, prefilled, prefill_ms, decode_steps, decode_ms,
        decode_tokens_per_second."""
        return dict(self._session.stats)


def infer_shapes(model: ModelLike) -> "onnx.ModelProto":
    """The model with onnxopt's inferred types and shapes written as value_info (every opset
    onnxopt knows, not only those onnx's inference covers)."""
    import onnx

    data, messages = _core.infer_shapes(_source(model))
    _warn(messages)
    return onnx.load_from_string(data)


def list_passes() -> List[Dict[str, Any]]:
    """Every registered pass: {"id", "summary", "options": [{"name", "type", "default", "help"}]}."""
    return list(_core.list_passes())


def runners() -> List[str]:
    """The runner names check and run take."""
    return list(_core.runners())


def __getattr__(name: str) -> Any:
    if name == "cuda":  # onnxopt.cuda without an explicit import
        import importlib

        return importlib.import_module(".cuda", __name__)
    raise AttributeError(f"module 'onnxopt' has no attribute '{name}'")
