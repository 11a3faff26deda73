"""Conformance of the CPU reference kernels against ONNX's node test cases, through the fold pass: each
case's inputs become initializers, `opt --passes=fold-constants` folds the graph, and the folded
outputs must equal the expected ones (rtol 1e-3, atol 1e-7 for floats as ONNX's backend runner; exact
for integers, bools and strings). Shared by test_conformance.py and tools/conformance_table.py.

Outcomes: pass; fail (folded to a wrong value, or a kernel rejected inputs ONNX accepts); unsupported
(not folded: no kernel for the op or element type, or the case is not a pure tensor computation).

A case the fold leaves unfolded (control flow such as Loop and Scan, or sequence values inside the
graph, which fold-constants does not evaluate) is then run through the reference executor
(`opt run` with the case's input .pb files): matching outputs count as pass, wrong ones as fail,
and a run the executor refuses stays unsupported. The detail of such a pass says "via opt run"."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

import roundtrip_check

FOLD = "--passes=fold-constants{size-limit=1099511627776,fold-qdq=true}"


@dataclasses.dataclass
class Result:
    case: str
    ops: list[str]
    outcome: str  # "pass", "fail", "unsupported"
    detail: str = ""


def cases() -> list[Path]:
    return sorted((roundtrip_check.shared_dir() / "onnx-node-tests").glob("test_*/model.onnx"))


def _ops(model: onnx.ModelProto) -> list[str]:
    return sorted({n.op_type for n in model.graph.node})


def _load_case(model_path: Path):
    """The model, its ops, its graph inputs (initializers left out), input and output .pb files,
    and why the case is not a pure tensor computation ("" when it is)."""
    model = onnx.load(str(model_path))
    data = model_path.parent / "test_data_set_0"
    inputs = sorted(data.glob("input_*.pb"), key=lambda p: int(re.sub(r"\D", "", p.stem)))
    outputs = sorted(data.glob("output_*.pb"), key=lambda p: int(re.sub(r"\D", "", p.stem)))
    init_names = {i.name for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in init_names]
    why = ""
    if len(inputs) != len(graph_inputs) or any(i.type.WhichOneof("value") != "tensor_type" for i in graph_inputs):
        why = "inputs are not all tensors with data"
    elif any(o.type.WhichOneof("value") != "tensor_type" for o in model.graph.output):
        why = "outputs are not all tensors"
    return model, _ops(model), graph_inputs, inputs, outputs, why


def run_case(model_path: Path, opt: Path, workdir: Path) -> Result:
    name = model_path.parent.name
    model, ops, graph_inputs, inputs, outputs, why = _load_case(model_path)
    if why:
        return Result(name, ops, "unsupported", why)
    # Inputs become initializers: the whole graph is then constant.
    for vi, path in zip(graph_inputs, inputs):
        t = onnx.TensorProto.FromString(path.read_bytes())
        t.name = vi.name
        model.graph.initializer.append(t)
    del model.graph.input[:]
    if model.ir_version < 4:
        model.ir_version = 4
    src = workdir / "case.onnx"
    out = workdir / "folded.onnx"
    onnx.save(model, str(src))
    proc = subprocess.run([str(opt), str(src), FOLD, "-o", str(out)], capture_output=True, text=True)
    if proc.returncode != 0:
        return Result(name, ops, "fail", f"opt failed: {proc.stderr.strip()[:300]}")
    if "not folding" in proc.stderr:
        return Result(name, ops, "fail", proc.stderr.strip()[:300])
    folded = onnx.load(str(out))
    values = {t.name: t for t in folded.graph.initializer}
    missing = [o.name for o in folded.graph.output if o.name not in values]
    if missing:
        left = sorted({n.op_type for n in folded.graph.node})
        ran = run_case_executor(model_path, opt, workdir)
        if ran.outcome != "unsupported":
            return ran
        return Result(name, ops, "unsupported", f"not folded: {left}; opt run: {ran.detail}")
    got = {o.name: numpy_helper.to_array(values[o.name]) for o in folded.graph.output}
    return _compare(name, ops, [o.name for o in folded.graph.output], got, outputs)


def _compare(name: str, ops: list[str], names: list[str], values: dict, outputs: list[Path],
             how: str = "") -> Result:
    for o, path in zip(names, outputs):
        expected = numpy_helper.to_array(onnx.TensorProto.FromString(path.read_bytes()))
        got = values[o]
        if got.dtype != expected.dtype or got.shape != expected.shape:
            return Result(name, ops, "fail", f"{o}: {got.dtype}{got.shape} != {expected.dtype}{expected.shape}{how}")
        if got.dtype != object and got.tobytes() == expected.tobytes():
            continue  # bitwise equal (also covers NaN in bfloat16/float8, which numpy compares as unequal)
        if got.dtype.kind in "fc" or got.dtype.name in ("bfloat16",):
            ok = np.allclose(got.astype(np.float64), expected.astype(np.float64), rtol=1e-3, atol=1e-7, equal_nan=True)
        elif got.dtype == object:
            ok = list(got.flat) == list(expected.flat)
        else:
            ok = np.array_equal(got, expected)
        if not ok:
            return Result(name, ops, "fail", f"{o}: values differ{how}")
    return Result(name, ops, "pass", how.strip(" ()"))


def run_case_executor(model_path: Path, opt: Path, workdir: Path) -> Result:
    """The case through `opt run` (the reference executor) on its input .pb files: pass or fail on
    the outputs; unsupported when the case has non-tensor inputs or outputs, or the run fails."""
    name = model_path.parent.name
    model, ops, graph_inputs, inputs, outputs, why = _load_case(model_path)
    if why:
        return Result(name, ops, "unsupported", why)
    out_dir = workdir / "run_outputs"
    out_dir.mkdir(exist_ok=True)
    for f in out_dir.glob("*.npy"):
        f.unlink()
    args = [str(opt), "run", str(model_path), "--save-outputs", str(out_dir)]
    for vi, path in zip(graph_inputs, inputs):
        args += ["--input", f"{vi.name}={path}"]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        return Result(name, ops, "unsupported", proc.stderr.strip()[:300])
    names = [o.name for o in model.graph.output]
    got = {}
    for o in names:
        f = out_dir / (re.sub(r"[/\\:]", "_", o) + ".npy")
        if not f.exists():
            return Result(name, ops, "unsupported", f"opt run wrote no {f.name}")
        got[o] = np.load(f, allow_pickle=False)
    return _compare(name, ops, names, got, outputs, " (via opt run)")
