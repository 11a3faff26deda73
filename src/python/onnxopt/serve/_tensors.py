"""Tensors over HTTP: JSON objects {"dtype", "shape", "data"} (data flat or nested, in row-major
order) and .npy bytes. Malformed tensors raise BadRequest, which the replica answers with 400."""

from __future__ import annotations

import io
import math
from typing import Any, Dict, Mapping

import ml_dtypes  # noqa: F401  (registers bfloat16 and the float8 names with numpy)
import numpy as np


class BadRequest(ValueError):
    """What the client sent cannot be read; the message says why (HTTP 400)."""


def _dtype(name: Any) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        raise BadRequest(f"unknown dtype {name!r} (a numpy name: float32, int64, bool, ...)") \
            from None


def tensor_from_json(name: str, value: Any) -> np.ndarray:
    if not isinstance(value, Mapping) or not {"dtype", "shape", "data"} <= set(value):
        raise BadRequest(f"input {name!r}: a tensor is an object with dtype, shape and data")
    dtype = _dtype(value["dtype"])
    shape = value["shape"]
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise BadRequest(f"input {name!r}: shape {shape!r} is not a list of sizes")
    try:
        flat = np.asarray(value["data"], dtype=dtype).reshape(-1)
    except (TypeError, ValueError) as e:
        raise BadRequest(f"input {name!r}: data is not {dtype.name}: {e}") from None
    if flat.size != math.prod(shape):
        raise BadRequest(f"input {name!r}: {flat.size} values for shape {shape}")
    return flat.reshape(shape)


def tensors_from_json(body: Any, key: str = "inputs") -> Dict[str, np.ndarray]:
    if not isinstance(body, Mapping) or not isinstance(body.get(key), Mapping):
        raise BadRequest(f'the body is a JSON object {{"{key}": {{name: tensor, ...}}}}')
    return {str(n): tensor_from_json(str(n), v) for n, v in body[key].items()}


def tensor_to_json(array: np.ndarray) -> Dict[str, Any]:
    array = np.asarray(array)
    # float16/bfloat16/float8 values go out as Python floats (exact); the dtype says what they are.
    data = array.astype(np.float64) if array.dtype.kind == "V" or array.dtype.name.startswith(
        ("bfloat", "float8")) else array
    return {"dtype": array.dtype.name, "shape": list(array.shape),
            "data": data.reshape(-1).tolist()}


def npy_load(body: bytes) -> np.ndarray:
    try:
        return np.load(io.BytesIO(body), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise BadRequest(f"the body is not a .npy array: {e}") from None


def npy_dump(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, np.asarray(array), allow_pickle=False)
    return out.getvalue()
