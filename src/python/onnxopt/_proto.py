"""A ModelProto handed to the native module: its big weights apart from the rest's bytes.

Python's protobuf (upb) serializes a tensor's raw_data through a buffer that it grows by doubling
and then copies into a bytes object: a 44 MB BERT-mini took 185 ms to serialize on the 2-core
development machine, most of it page faults on fresh memory, where reading each tensor's raw_data
(one copy) takes about 20 ms. So the main graph's big initializers cross as their raw_data bytes,
and the rest of the model (nodes, small tensors) is serialized without them; the library views
the weights in those bytes objects (io::parseModelBinary's `weights`). The model given is not
changed. The result is the model that serializing it whole gives.

optimize goes further (`lazy`): a big weight crosses as a placeholder, the caller's TensorProto
itself, whose raw_data the library reads only where a pass reads the bytes (cse comparing weights
of one shape, fold-constants, a Conv taking a BatchNormalization's scale). A weight the result
holds unchanged comes back as the caller's initializer index, and the result copies that
TensorProto (one copy, `CopyFrom`, where reading raw_data out and setting it back made two).
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
# The same for the types whose raw_data size follows from dims exactly, that may cross as
# placeholders (not the sub-byte types, strings or codes this table does not know).
_EXACT_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 14: 8,
                15: 16, 16: 2, 17: 1, 18: 1, 19: 1, 20: 1}
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL


class Split:
    """A model handed to the native module: `data` (the model without the big weights' raw_data),
    `weights` (raw_data bytes apart, or None), `placeholders` (the caller's TensorProto and its
    size in bytes, or None), and what join_weights needs: the caller's model and its initializers
    as `data` holds them (`stripped`)."""

    def __init__(self, data: bytes, weights: List[Optional[bytes]],
                 placeholders: List[Optional[Tuple[Any, int]]], model: Any = None,
                 stripped: Any = None) -> None:
        self.data, self.weights, self.placeholders = data, weights, placeholders
        self.model, self.stripped = model, stripped

    def join(self, data: bytes, weights: List[Tuple[int, Any]]) -> Any:
        """The onnx.ModelProto of `data` with the raw_data the native module handed back apart:
        bytes, or the index of the caller's initializer whose raw_data the result holds unchanged.
        That TensorProto is copied whole where the result's equals it but for raw_data (the
        same name, dims, type and fields), else its raw_data is read."""
        import onnx

        model = onnx.load_from_string(data)
        initializers = model.graph.initializer
        for k, raw in weights:
            if isinstance(raw, int):
                given = self.model.graph.initializer[raw]
                if initializers[k] == self.stripped[raw]:
                    initializers[k].CopyFrom(given)
                    continue
                raw = given.raw_data
            initializers[k].raw_data = raw
        return model


def join_weights(data: bytes, weights: List[Tuple[int, bytes]]) -> Any:
    """The onnx.ModelProto of `data` with the raw_data bytes the native module handed back apart."""
    return Split(b"", [], []).join(data, weights)


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


def _exact_size(t: Any) -> Optional[int]:
    """raw_data's size in bytes that dims and type give, where they give it exactly."""
    size = _EXACT_BYTES.get(t.data_type)
    if size is None:
        return None
    for d in t.dims:
        if d < 0:
            return None
        size *= d
    return size


def split_weights(model: Any, lazy: bool = False) -> Split:
    """`model` serialized without the raw_data of its main graph's big initializers, with one
    entry per initializer in `weights` (its raw_data where it was left out, else None) and, with
    `lazy`, in `placeholders` (the TensorProto where it was left out unread). Small models, and
    models with fields the onnx package does not know, are serialized whole (both lists empty)."""
    graph = model.graph
    apart = _apart(graph.initializer)
    if not apart or _has_unknown_fields(model, graph, *(graph.initializer[k] for k in apart)):
        return Split(model.SerializeToString(), [], [])
    rest = type(model)()
    _copy_fields(model, rest, "graph")
    _copy_fields(graph, rest.graph, "initializer")
    weights: List[Optional[bytes]] = [None] * len(graph.initializer)
    placeholders: List[Optional[Tuple[Any, int]]] = [None] * len(graph.initializer)
    apart_set = set(apart)
    for k, t in enumerate(graph.initializer):
        copy = rest.graph.initializer.add()
        size = _exact_size(t) if lazy and k in apart_set else None
        if size:  # (its raw_data's size is checked where it is read; see the module's doc)
            _copy_fields(t, copy, "raw_data")
            placeholders[k] = (t, size)
            continue
        raw = t.raw_data if k in apart_set else b""
        if raw:  # (an empty raw_data, a weight-stripped tensor, stays as it is)
            _copy_fields(t, copy, "raw_data")
            weights[k] = raw
        else:
            copy.CopyFrom(t)
    if not lazy:
        placeholders = []
    return Split(rest.SerializeToString(), weights, placeholders, model, rest.graph.initializer)
