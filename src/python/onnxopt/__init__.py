"""onnxopt: an ONNX graph optimizer, in process.

Work in progress (issue 21): this module wraps onnxopt._core, the native module built from
src/python/module.cc by `pip install .`. What is here so far is optimize / optimize_file over
paths, bytes and onnx.ModelProto, list_passes and the error classes; check, run and
onnxopt.cuda follow (docs/python.md once written).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Union

from . import _core
from ._core import (  # noqa: F401  (re-exported)
    Error,
    InternalError,
    InvalidArgumentError,
    IoError,
    NotFoundError,
    ResourceExhaustedError,
    UnimplementedError,
)

ModelLike = Union[str, os.PathLike, bytes, "onnx.ModelProto"]  # noqa: F821


def _source(model: ModelLike) -> _core.Source:
    src = _core.Source()
    if isinstance(model, (str, os.PathLike)):
        src.path = os.fspath(model)
        src.name = src.path
    elif isinstance(model, (bytes, bytearray, memoryview)):
        src.data = bytes(model)
        src.name = "<bytes>"
    else:
        serialize = getattr(model, "SerializeToString", None)
        if serialize is None:
            raise TypeError(f"onnxopt: a model is a path, bytes or onnx.ModelProto, not {type(model)!r}")
        if model.ByteSize() >= 2**31:
            raise InvalidArgumentError(
                "onnxopt: a ModelProto of 2 GiB or more cannot be serialized; pass its path, or "
                "use optimize_file")
        src.data = serialize()
        src.name = "<ModelProto>"
    return src


def _args(level: int, passes: Optional[Union[str, Iterable[str]]], target_opset: Optional[int],
          precision: Optional[str], fold_size_limit: Optional[int], keep_initializer_inputs: bool,
          target: Optional[str], disable: Iterable[str]) -> _core.OptimizeArgs:
    a = _core.OptimizeArgs()
    a.level = level
    if passes is not None:
        a.passes = passes if isinstance(passes, str) else ",".join(passes)
    a.target_opset = target_opset or 0
    a.precision = precision or ""
    a.fold_size_limit = fold_size_limit
    a.keep_initializer_inputs = keep_initializer_inputs
    a.target = target or ""
    a.disabled_passes = list(disable)
    return a


def optimize(model: ModelLike, *, level: int = 2, passes=None, target_opset=None, precision=None,
             fold_size_limit=None, keep_initializer_inputs: bool = False, target=None,
             disable: Iterable[str] = ()) -> "onnx.ModelProto":  # noqa: F821
    """Optimizes `model` (a path, serialized bytes or onnx.ModelProto) as `opt` does; returns
    the optimized onnx.ModelProto. Errors raise onnxopt.Error subclasses with opt's messages."""
    import onnx

    data, _summary = _core.optimize(
        _source(model), _args(level, passes, target_opset, precision, fold_size_limit,
                              keep_initializer_inputs, target, disable))
    return onnx.load_from_string(data)


def optimize_file(input: Union[str, os.PathLike], output: Union[str, os.PathLike], *,
                  level: int = 2, passes=None, target_opset=None, precision=None,
                  fold_size_limit=None, keep_initializer_inputs: bool = False, target=None,
                  disable: Iterable[str] = (), external_data: Optional[str] = None) -> dict:
    """Optimizes the model at `input` and writes it to `output` atomically (with its external
    data file when `external_data` names one); returns the summary dict."""
    return _core.optimize_file(
        _source(input), _args(level, passes, target_opset, precision, fold_size_limit,
                              keep_initializer_inputs, target, disable),
        os.fspath(output), external_data)


def list_passes() -> Any:
    """Every registered pass: id, summary and options."""
    return _core.list_passes()


__version__ = getattr(_core, "__version__", "0")
