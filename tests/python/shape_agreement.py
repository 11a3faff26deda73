"""Agreement of `opt --infer-shapes` with onnx.shape_inference.infer_shapes, shared by
test_shape_inference.py and tools/shape_report.py.

Wherever onnx infers a fully static shape for a value, ours must be the same (element type and dims),
except where the model declares a type that our inference provably contradicts: onnx keeps the declared
type, ours wins and says so in a warning (a wrong declared value_info must not reach Shape folding).
Counts of values with known rank and fully known shape are reported for both."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import onnx

import roundtrip_check


@dataclasses.dataclass
class Agreement:
    case: str
    ours_ranked: int = 0
    ours_static: int = 0
    onnx_ranked: int = 0
    onnx_static: int = 0
    onnx_failed: str = ""
    mismatches: list[str] = dataclasses.field(default_factory=list)
    overridden: list[str] = dataclasses.field(default_factory=list)  # declared types ours replaced


def _types(graph: onnx.GraphProto, out: dict[str, onnx.TypeProto], prefix: str = "") -> None:
    """Name -> type for node outputs (value_info and graph outputs), recursively into subgraphs."""
    produced = {o for n in graph.node for o in n.output if o}
    for vi in list(graph.value_info) + list(graph.output):
        if vi.name in produced and vi.HasField("type"):
            out[prefix + vi.name] = vi.type
    for n in graph.node:
        for a in n.attribute:
            subs = ([a.g] if a.HasField("g") else []) + list(a.graphs)
            for i, g in enumerate(subs):
                _types(g, out, f"{prefix}{n.name or n.output[0]}/{a.name}{i}/")


def _shape(t: onnx.TypeProto) -> tuple[int, list | None]:
    if t.WhichOneof("value") != "tensor_type":
        return 0, None
    tt = t.tensor_type
    if not tt.HasField("shape"):
        return tt.elem_type, None
    return tt.elem_type, [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]


def compare(case: roundtrip_check.Case, opt: Path, workdir: Path) -> Agreement:
    result = Agreement(case.id)
    out = workdir / "inferred.onnx"
    proc = subprocess.run([str(opt), str(case.model), "-O0", "--infer-shapes", "-o", str(out)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        try:
            onnx.checker.check_model(str(case.model), full_check=True)
        except Exception:
            return result  # an invalid model that opt rejects too: nothing to compare
        result.mismatches.append(f"opt failed: {proc.stderr.strip()[:300]}")
        return result
    warned = set(re.findall(r"output '([^']*)' is declared .* but inferred .*; using the inferred type",
                            proc.stderr))
    ours: dict[str, onnx.TypeProto] = {}
    _types(onnx.load(str(out), load_external_data=False).graph, ours)
    try:
        model = onnx.load(str(case.model), load_external_data=False)
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as e:  # onnx cannot infer this model at all
        result.onnx_failed = f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
        inferred = None
    theirs: dict[str, onnx.TypeProto] = {}
    if inferred is not None:
        _types(inferred.graph, theirs)
    for name, t in ours.items():
        elem, dims = _shape(t)
        if dims is not None:
            result.ours_ranked += 1
            result.ours_static += all(isinstance(d, int) for d in dims)
    for name, t in theirs.items():
        elem, dims = _shape(t)
        if dims is None:
            continue
        result.onnx_ranked += 1
        if not all(isinstance(d, int) for d in dims):
            continue
        result.onnx_static += 1
        if name in warned or any(name.endswith("/" + w) for w in warned):
            result.overridden.append(name)
            continue
        mine = ours.get(name)
        if mine is None:
            result.mismatches.append(f"{name}: onnx infers {onnx.helper.tensor_dtype_to_np_dtype(elem) if elem else '?'}{dims}, ours nothing")
            continue
        my_elem, my_dims = _shape(mine)
        if my_dims != dims or (my_elem and elem and my_elem != elem):
            result.mismatches.append(f"{name}: onnx infers elem {elem} {dims}, ours elem {my_elem} {my_dims}")
    return result
