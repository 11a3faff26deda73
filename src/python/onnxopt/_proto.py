"""A ModelProto handed to the native module: its big weights apart from the rest's bytes.

Python's protobuf (upb) serializes a tensor's raw_data through a buffer that it grows by doubling
and then copies into a bytes object: a 44 MB BERT-mini took 185 ms to serialize on the 2-core
development machine, most of it page faults on fresh memory, where reading each tensor's raw_data
(one copy) takes about 20 ms. So the main graph's big initializers cross as their raw_data bytes,
and the rest of the model (nodes, small tensors) is serialized without them; the library views
the weights in those bytes objects (io::parseModelBinary's `weights`). The model given is not
changed. The result is the model that serializing it whole gives.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from . import _core

# raw_data of at least this many bytes crosses apart; the rest is serialized with the model.
# Models with less than APART_MIN_TOTAL in such tensors are serialized whole: the per-tensor work
# in Python would cost more than the copies it saves. The native module uses the same thresholds
# for the weights it hands back apart.
APART_MIN_BYTES: int = _core.APART_MIN_BYTES
APART_MIN_TOTAL: int = _core.APART_MIN_TOTAL

# Bytes per element of TensorProto.DataType codes (an estimate from dims, before any raw_data is
# read; the sub-byte and 1-byte types count as 1).
_ELEMENT_BYTES = {1: 4, 4: 2, 5: 2, 6: 4, 7: 8, 10: 2, 11: 8, 12: 4, 13: 8, 14: 8, 15: 16, 16: 2}
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL


def join_weights(data: bytes, weights: List[Tuple[int, bytes]]) -> Any:
    """The onnx.ModelProto of `data` with the raw_data the native module handed back apart."""
    import onnx

    model = onnx.load_from_string(data)
    initializers = model.graph.initializer
    for k, raw in weights:
        initializers[k].raw_data = raw
    return model


def _apart(initializers: Any) -> List[int]:
    """The indices of the initializers whose raw_data crosses apart (empty: serialize whole)."""
    found, total = [], 0
    for k, t in enumerate(initializers):
        size = _ELEMENT_BYTES.get(t.data_type, 1)
        for d in t.dims:
            size *= d
        if size >= APART_MIN_BYTES and t.data_location != _EXTERNAL and t.HasField("raw_data"):
            found.append(k)
            total += size
    return found if total >= APART_MIN_TOTAL else []


def _has_unknown_fields(*messages: Any) -> bool:
    """Whether any of these messages holds fields this onnx package does not know (copying field
    by field would drop them; serializing whole keeps them)."""
    try:
        from google.protobuf.unknown_fields import UnknownFieldSet
    except ImportError:  # an older protobuf: no way to tell
        return True
    return any(len(UnknownFieldSet(m)) > 0 for m in messages)


def _is_repeated(field: Any) -> bool:
    is_repeated = getattr(field, "is_repeated", None)  # (newer protobuf; `label` is deprecated there)
    return bool(is_repeated) if is_repeated is not None else field.label == field.LABEL_REPEATED


def _copy_fields(src: Any, dst: Any, skip: str) -> None:
    """Every set field of `src` but `skip` into the empty message `dst` (nested messages copied).
    Walks the descriptor rather than ListFields, which would read `skip` too: for a tensor's
    raw_data, that read is a copy of the weight."""
    for field in src.DESCRIPTOR.fields:
        name = field.name
        if name == skip:
            continue
        if _is_repeated(field):
            value = getattr(src, name)
            if len(value):
                getattr(dst, name).extend(value)
        elif src.HasField(name):
            if field.message_type is not None:
                getattr(dst, name).CopyFrom(getattr(src, name))
            else:
                setattr(dst, name, getattr(src, name))


def split_weights(model: Any) -> Tuple[bytes, List[Optional[bytes]]]:
    """(bytes, weights): `model` serialized without the raw_data of its main graph's big
    initializers, and one entry per initializer: its raw_data where it was left out, else None.
    Small models, and models with fields the onnx package does not know, are serialized whole
    (weights empty)."""
    graph = model.graph
    apart = _apart(graph.initializer)
    if not apart or _has_unknown_fields(model, graph, *(graph.initializer[k] for k in apart)):
        return model.SerializeToString(), []
    rest = type(model)()
    _copy_fields(model, rest, "graph")
    _copy_fields(graph, rest.graph, "initializer")
    weights: List[Optional[bytes]] = [None] * len(graph.initializer)
    apart_set = set(apart)
    for k, t in enumerate(graph.initializer):
        copy = rest.graph.initializer.add()
        raw = t.raw_data if k in apart_set else b""
        if raw:  # (an empty raw_data, a weight-stripped tensor, stays as it is)
            _copy_fields(t, copy, "raw_data")
            weights[k] = raw
        else:
            copy.CopyFrom(t)
    return rest.SerializeToString(), weights
