"""`opt run` and `opt check` on models whose tensors lack their data. opt keeps a weight-stripped model as
it came (optimizing it works), but running one cannot: each way a tensor can lack data is refused before
anything runs, with one line `opt: error: MODEL: ...` naming the tensor, exit 1, and no output file. A
tensor a run does not read (an input default that is given, an unused initializer) does not stop it."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _model(nodes, initializers=(), inputs=(), outputs=("y",), sparse=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", list(inputs),
                              [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
                              initializer=list(initializers), sparse_initializer=list(sparse))
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", OPSET)])


def _stripped(name: str = "W", dtype=np.float32) -> onnx.TensorProto:
    """A [2, 3] tensor whose raw_data is present but empty (TensorRT's weightless export)."""
    t = numpy_helper.from_array(np.arange(6).reshape(2, 3).astype(dtype), name)
    t.raw_data = b""
    return t


def _no_data_field() -> onnx.TensorProto:
    return onnx.TensorProto(name="W", data_type=TensorProto.INT64, dims=[2, 3])


def _external(folder: Path, data: bytes | None) -> onnx.TensorProto:
    t = onnx.TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2, 3],
                         data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value="w.bin")
    if data is not None:
        (folder / "w.bin").write_bytes(data)
    return t


def _loop_reading(tensor: onnx.TensorProto) -> onnx.ModelProto:
    """A Loop of one iteration whose body reads `tensor`, an initializer of the body."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Identity", ["W"], ["w_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("w_out", TensorProto.FLOAT, None)], [tensor])
    trip = numpy_helper.from_array(np.array(1, np.int64), "M")
    return _model([helper.make_node("Loop", ["M", ""], ["y"], body=body, name="loop")], [trip])


def _sparse_without_values() -> onnx.ModelProto:
    values = onnx.TensorProto(name="S", data_type=TensorProto.FLOAT, dims=[2])
    indices = numpy_helper.from_array(np.array([0, 4], np.int64), "S_idx")
    sparse = helper.make_sparse_tensor(values, indices, [2, 3])
    return _model([helper.make_node("Identity", ["S"], ["y"])], sparse=[sparse])


def _constant_without_data() -> onnx.ModelProto:
    return _model([helper.make_node("Constant", [], ["y"], name="c", value=_stripped())])


# Each case: (builder of the model in `folder`, what the error line names).
CASES: dict[str, tuple[Callable[[Path], onnx.ModelProto], str]] = {
    "empty raw_data": (lambda f: _model([helper.make_node("Identity", ["W"], ["y"])], [_stripped()]),
                       "initializer 'W' (float[2,3]) has no data"),
    "no data field": (lambda f: _model([helper.make_node("Identity", ["W"], ["y"])], [_no_data_field()]),
                      "initializer 'W' (int64[2,3]) has no data"),
    "strings missing": (lambda f: _model([helper.make_node("Identity", ["W"], ["y"])],
                                         [onnx.TensorProto(name="W", data_type=TensorProto.STRING, dims=[2])]),
                        "initializer 'W' (string[2]) has no data"),
    "read by a kernel": (lambda f: _model([helper.make_node("Add", ["W", "W"], ["y"], name="add")], [_stripped()]),
                         "initializer 'W' (float[2,3]) has no data"),
    "in a loop body": (lambda f: _loop_reading(_stripped()), "initializer 'W' (float[2,3]) has no data"),
    "sparse values": (lambda f: _sparse_without_values(), "sparse initializer 'S''s values (float[2]) has no data"),
    "constant attribute": (lambda f: _constant_without_data(),
                           "node 'c' (Constant): attribute 'value' (float[2,3]) has no data"),
    "input default": (lambda f: _model([helper.make_node("Identity", ["W"], ["y"])], [_stripped()],
                                       inputs=[helper.make_tensor_value_info("W", TensorProto.FLOAT, [2, 3])]),
                      "initializer 'W' (float[2,3]) has no data"),
    "external file missing": (lambda f: _model([helper.make_node("Identity", ["W"], ["y"])], [_external(f, None)]),
                              "tensor 'W': external data file 'w.bin': not found"),
    "external file too short": (lambda f: _model([helper.make_node("Identity", ["W"], ["y"])],
                                                 [_external(f, b"\0" * 8)]),
                                "tensor 'W': external data of 24 bytes at offset 0 is outside 'w.bin' (8 bytes)"),
}


@pytest.mark.parametrize("command", ["run", "check"])
@pytest.mark.parametrize("name", list(CASES))
def test_tensor_without_data_is_refused(run_opt, work_dir: Path, name: str, command: str) -> None:
    build, named = CASES[name]
    model = work_dir / "stripped.onnx"
    onnx.save(build(work_dir), model)
    out = work_dir / "out"
    out.mkdir()
    args = ["run", model, "--save-outputs", out] if command == "run" else ["check", model, model]
    proc = run_opt(*args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    # (opt check names the runner after the file: "MODEL (the reference runner; ...): ...")
    assert lines == [lines[0]] and lines[0].startswith(f"opt: error: {model}"), proc.stderr
    assert named in lines[0]
    assert not any(out.iterdir())
    assert "output" not in proc.stdout


def test_stripped_model_still_optimizes(run_opt, work_dir: Path) -> None:
    """Negative: the importer keeps such a model as it came; optimizing it is not running it."""
    model, dst = work_dir / "stripped.onnx", work_dir / "out.onnx"
    onnx.save(_model([helper.make_node("Relu", ["W"], ["y"])], [_stripped()]), model)
    proc = run_opt(model, "-O2", "-o", dst)
    assert proc.returncode == 0, proc.stderr


def test_tensors_the_run_does_not_read_may_lack_data(run_opt, work_dir: Path) -> None:
    """Negative: an input default the run is given a value for, and an initializer nothing reads."""
    model, out = work_dir / "m.onnx", work_dir / "out"
    out.mkdir()
    unused = _stripped("unused")
    onnx.save(_model([helper.make_node("Identity", ["W"], ["y"])], [_stripped(), unused],
                     inputs=[helper.make_tensor_value_info("W", TensorProto.FLOAT, [2, 3])]), model)
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(work_dir / "w.npy", w)
    proc = run_opt("run", model, "--input", f"W={work_dir / 'w.npy'}", "--save-outputs", out)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out / "y.npy"), w)
