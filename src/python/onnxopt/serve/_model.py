"""What the replica needs to know of a model before serving it: its inputs and outputs, and
whether requests can be stacked along a batch dimension."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import onnx


@dataclass
class ModelInfo:
    inputs: List[str]
    outputs: List[str]
    # The symbol (dim_param) every input and output has as its first dimension; None when some
    # tensor's first dimension is fixed or unknown: such a model is run once per request.
    batch_dim: Optional[str]


def _first_dim(value: onnx.ValueInfoProto) -> Optional[str]:
    t = value.type.tensor_type
    if not value.type.HasField("tensor_type") or not t.HasField("shape") or not t.shape.dim:
        return None
    d = t.shape.dim[0]
    return d.dim_param if d.HasField("dim_param") and d.dim_param else None


def model_info(path: str) -> ModelInfo:
    graph = onnx.load(path, load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    inputs = [v for v in graph.input if v.name not in initializers]
    dims = {_first_dim(v) for v in [*inputs, *graph.output]}
    batch_dim = dims.pop() if len(dims) == 1 else None
    return ModelInfo([v.name for v in inputs], [v.name for v in graph.output], batch_dim)
