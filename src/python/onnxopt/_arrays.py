"""numpy arrays to and from what onnxopt._core takes and returns.

In: {name: array} becomes {name: (ONNX type name, dims, raw bytes array)} for numeric tensors and
{name: (dims, [bytes])} for string tensors. bfloat16 and the float8 types (ml_dtypes) cross as
same-sized unsigned integer views; the sub-byte types (int4, uint4, float4e2m1, int2, uint2) cross
packed as ONNX stores them (the first element in the low bits of a byte).
Out: (type name, dims, raw uint8 array) becomes an array of that type without a copy (the raw
array owns the library's buffer); string tensors become object arrays of str.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

try:  # ml_dtypes: numpy types for bfloat16, float8, int4 (a dependency of the package and of onnx)
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - ml_dtypes comes with onnx
    _ml = None

_PLAIN = {
    "float": np.float32, "double": np.float64, "float16": np.float16,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_, "complex64": np.complex64, "complex128": np.complex128,
}
# ONNX name -> ml_dtypes attribute, and the element bits of the sub-byte ones.
_ML = {
    "bfloat16": "bfloat16", "float8e4m3fn": "float8_e4m3fn", "float8e4m3fnuz": "float8_e4m3fnuz",
    "float8e5m2": "float8_e5m2", "float8e5m2fnuz": "float8_e5m2fnuz",
    "float8e8m0": "float8_e8m0fnu", "int4": "int4", "uint4": "uint4",
    "float4e2m1": "float4_e2m1fn", "int2": "int2", "uint2": "uint2",
}
_SUB_BYTE_BITS = {"int4": 4, "uint4": 4, "float4e2m1": 4, "int2": 2, "uint2": 2}


def _numpy_types() -> Dict[str, Any]:
    types: Dict[str, Any] = {k: np.dtype(v) for k, v in _PLAIN.items()}
    if _ml is not None:
        for onnx_name, attr in _ML.items():
            t = getattr(_ml, attr, None)
            if t is not None:
                types[onnx_name] = np.dtype(t)
    return types


NUMPY_TYPES = _numpy_types()
_ONNX_NAME = {v: k for k, v in NUMPY_TYPES.items()}


def onnx_type_name(dtype: Any) -> str:
    """The ONNX element type name ("float", "bfloat16", ...) of a numpy dtype."""
    d = np.dtype(dtype)
    name = _ONNX_NAME.get(d)
    if name is None:
        raise TypeError(f"onnxopt: numpy dtype {d} has no ONNX element type")
    return name


def _pack(bits: int, raw: np.ndarray) -> np.ndarray:
    """Sub-byte elements (one per byte in `raw`) packed as ONNX stores them."""
    per = 8 // bits
    flat = raw.reshape(-1).astype(np.uint8) & np.uint8((1 << bits) - 1)
    pad = (-flat.size) % per
    if pad:
        flat = np.concatenate([flat, np.zeros(pad, np.uint8)])
    groups = flat.reshape(-1, per)
    out = np.zeros(groups.shape[0], np.uint8)
    for i in range(per):
        out |= groups[:, i] << np.uint8(i * bits)
    return out


def _unpack(bits: int, packed: np.ndarray, count: int) -> np.ndarray:
    per = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    parts = [(packed >> np.uint8(i * bits)) & mask for i in range(per)]
    return np.stack(parts, axis=1).reshape(-1)[:count]


def _sign_extend(bits: int, raw: np.ndarray) -> np.ndarray:
    """The low `bits` bits of each byte as a signed value (int4, int2), in int8."""
    shift = np.int8(8 - bits)
    return (raw.astype(np.int8) << shift) >> shift


def to_core(inputs: Optional[Mapping[str, Any]]) -> Tuple[dict, dict]:
    """(arrays, strings) for _core from {name: array-like}."""
    arrays: dict = {}
    strings: dict = {}
    for name, value in (inputs or {}).items():
        if not isinstance(name, str):
            raise TypeError(f"onnxopt: input names are str, not {type(name).__name__}")
        a = np.asarray(value)
        if a.dtype.kind in "USO":
            flat = [s if isinstance(s, bytes) else str(s).encode("utf-8") for s in a.reshape(-1)]
            strings[name] = ([int(d) for d in a.shape], flat)
            continue
        type_name = onnx_type_name(a.dtype)
        dims = [int(d) for d in a.shape]
        a = np.ascontiguousarray(a)
        bits = _SUB_BYTE_BITS.get(type_name)
        if bits is not None:
            raw = _pack(bits, a.view(np.uint8))
        elif type_name in _ML or a.dtype == np.bool_:
            raw = a.reshape(-1).view(np.dtype(f"u{a.dtype.itemsize}"))
        else:
            raw = a.reshape(-1)
        arrays[name] = (type_name, dims, raw)
    return arrays, strings


def from_core(value: tuple) -> np.ndarray:
    """A numpy array from a tensor _core returned: (type name, dims, raw bytes or [bytes])."""
    type_name, dims, raw = value
    shape = tuple(int(d) for d in dims)
    if type_name == "string":
        items = []
        for b in raw:
            try:
                items.append(b.decode("utf-8"))
            except UnicodeDecodeError:
                items.append(b)
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out.reshape(shape)
    dtype = NUMPY_TYPES.get(type_name)
    if dtype is None:
        raise TypeError(f"onnxopt: output element type '{type_name}' has no numpy type "
                        "(install ml_dtypes for bfloat16, float8 and int4)")
    count = int(np.prod(shape, dtype=np.int64))
    bits = _SUB_BYTE_BITS.get(type_name)
    if bits is not None:
        elems = _unpack(bits, raw, count)
        if type_name in ("int4", "int2"):
            return _sign_extend(bits, elems).astype(dtype).reshape(shape)
        if type_name in ("uint4", "uint2"):
            return elems.astype(dtype).reshape(shape)
        return elems.view(dtype).reshape(shape)  # float4e2m1: the low nibble is the value
    return raw.view(dtype).reshape(shape)


def result_from_core(items: list) -> Dict[str, Any]:
    """{name: array} (a sequence output is a list of arrays, an empty optional None)."""
    out: Dict[str, Any] = {}
    for name, kind, value in items:
        if kind == "none":
            out[name] = None
        elif kind == "sequence":
            out[name] = [from_core(v) for v in value]
        else:
            out[name] = from_core(value)
    return out
