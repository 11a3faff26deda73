"""opt on malformed input: exit code 1, one "opt: error: " line naming the file, and nothing written.

Every bad file is generated here, in the test's temporary folder. Each case writes its model (and any data
files) into in/; opt writes to out/, which must stay empty, or keep a pre-existing output untouched.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import roundtrip_check

IR_VERSION = 8
OPSET = 17


def _value(name: str, dims: tuple[int, ...] = (4,)) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(dims))


def _model(nodes, inputs=("X",), outputs=("Y",), initializers=(), value_infos=None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        value_infos[0] if value_infos else [_value(n) for n in inputs],
        value_infos[1] if value_infos else [_value(n) for n in outputs],
        initializer=list(initializers),
    )
    return helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)])


def _valid_model() -> onnx.ModelProto:
    weights = numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(16, 4), "W")
    return _model(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])],
        value_infos=([_value("X", (2, 16))], [_value("Y", (2, 4))]),
        initializers=[weights],
    )


def _external_model(location: str, offset: int = 0, length: int = 16) -> onnx.ModelProto:
    """Y = X + W, with W (4 floats, 16 bytes) stored externally at `location`."""
    weights = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[4], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        weights.external_data.add(key=key, value=value)
    return _model([helper.make_node("Add", ["X", "W"], ["Y"])], initializers=[weights])


def _float_bytes(n: int) -> bytes:
    return np.arange(n, dtype=np.float32).tobytes()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _save(model: onnx.ModelProto, path: Path) -> Path:
    return _write(path, model.SerializeToString())


# Each builder writes one malformed model into `folder` (in/) and returns its path. The file is named after
# the case so that the error line's mention of it is checked for real. `reason` is a case-insensitive regex
# the error line must match: opt has to fail for the planted defect, not for something incidental.
Builder = Callable[[Path], Path]
CASES: dict[str, Builder] = {}
REASONS: dict[str, str] = {}


def case(reason: str) -> Callable[[Builder], Builder]:
    def register(builder: Builder) -> Builder:
        CASES[builder.__name__] = builder
        REASONS[builder.__name__] = reason
        return builder

    return register


@case(r"protobuf|truncated|parse")
def truncated_protobuf(folder: Path) -> Path:
    data = _valid_model().SerializeToString()
    return _write(folder / "truncated_protobuf.onnx", data[: len(data) // 2])


@case(r"protobuf|parse|not .*model")
def random_bytes(folder: Path) -> Path:
    return _write(folder / "random_bytes.onnx", random.Random(7).randbytes(4096))


@case(r"protobuf|parse|not .*model")
def text_file(folder: Path) -> Path:
    return _write(folder / "text_file.onnx", b"This is a README, not a model.\nSecond line.\n")


@case(r"empty")
def empty_file(folder: Path) -> Path:
    return _write(folder / "empty_file.onnx", b"")


@case(r"syntax|parse")
def textual_syntax_error(folder: Path) -> Path:
    text = '<ir_version: 8, opset_import: ["" : 17]>\ng (float[4] X) => (float[4] Y) {\n  Y = Relu(X\n'
    return _write(folder / "textual_syntax_error.onnxtxt", text.encode())


@case(r"ir.?version.*99|99.*ir.?version")
def unknown_ir_version(folder: Path) -> Path:
    model = _valid_model()
    model.ir_version = 99
    return _save(model, folder / "unknown_ir_version.onnx")


@case(r"graph")
def no_graph(folder: Path) -> Path:
    model = onnx.ModelProto(ir_version=IR_VERSION, opset_import=[helper.make_opsetid("", OPSET)])
    return _save(model, folder / "no_graph.onnx")


@case(r"ghost")
def dangling_node_input(folder: Path) -> Path:
    model = _model([helper.make_node("Add", ["X", "ghost"], ["Y"])])
    return _save(model, folder / "dangling_node_input.onnx")


@case(r"'T'.*(twice|duplicate|more than once)")
def duplicate_definition(folder: Path) -> Path:
    nodes = [
        helper.make_node("Relu", ["X"], ["T"]),
        helper.make_node("Neg", ["X"], ["T"]),
        helper.make_node("Identity", ["T"], ["Y"]),
    ]
    return _save(_model(nodes), folder / "duplicate_definition.onnx")


@case(r"cycl")
def cycle(folder: Path) -> Path:
    nodes = [
        helper.make_node("Add", ["X", "B"], ["A"]),
        helper.make_node("Relu", ["A"], ["B"]),
        helper.make_node("Identity", ["B"], ["Y"]),
    ]
    return _save(_model(nodes), folder / "cycle.onnx")


@case(r"nowhere")
def graph_output_undefined(folder: Path) -> Path:
    model = _model([helper.make_node("Relu", ["X"], ["Y"])], outputs=("Y", "nowhere"))
    return _save(model, folder / "graph_output_undefined.onnx")


@case(r"'X'.*(twice|duplicate|more than once)")
def duplicate_graph_input(folder: Path) -> Path:
    model = _model([helper.make_node("Add", ["X", "X"], ["Y"])], inputs=("X", "X"))
    return _save(model, folder / "duplicate_graph_input.onnx")


@case(r"ghost")
def if_branch_undefined_name(folder: Path) -> Path:
    then_branch = helper.make_graph([helper.make_node("Add", ["X", "ghost"], ["t"])], "then", [], [_value("t")])
    else_branch = helper.make_graph([helper.make_node("Neg", ["X"], ["e"])], "else", [], [_value("e")])
    nodes = [
        helper.make_node("ReduceSum", ["X"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"]),
        helper.make_node("If", ["c"], ["Y"], then_branch=then_branch, else_branch=else_branch),
    ]
    zero = numpy_helper.from_array(np.array(0, dtype=np.float32), "zero")
    return _save(_model(nodes, initializers=[zero]), folder / "if_branch_undefined_name.onnx")


@case(r"alpha|attribute")
def attribute_undefined_type(folder: Path) -> Path:
    node = helper.make_node("LeakyRelu", ["X"], ["Y"])
    node.attribute.add(name="alpha", type=onnx.AttributeProto.UNDEFINED, f=0.5)
    return _save(_model([node]), folder / "attribute_undefined_type.onnx")


@case(r"1000|data.?type|element type")
def unknown_tensor_data_type(folder: Path) -> Path:
    weights = TensorProto(name="W", data_type=1000, dims=[4], raw_data=_float_bytes(4))
    model = _model([helper.make_node("Add", ["X", "W"], ["Y"])], initializers=[weights])
    return _save(model, folder / "unknown_tensor_data_type.onnx")


@case(r"'W'.*(12|size|bytes)")
def raw_data_size_mismatch(folder: Path) -> Path:
    weights = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[4], raw_data=_float_bytes(3))
    model = _model([helper.make_node("Add", ["X", "W"], ["Y"])], initializers=[weights])
    return _save(model, folder / "raw_data_size_mismatch.onnx")


@case(r"negative|-4")
def negative_dim(folder: Path) -> Path:
    weights = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[-4], raw_data=_float_bytes(4))
    model = _model([helper.make_node("Add", ["X", "W"], ["Y"])], initializers=[weights])
    return _save(model, folder / "negative_dim.onnx")


@case(r"missing\.bin")
def external_data_missing_file(folder: Path) -> Path:
    return _save(_external_model("missing.bin"), folder / "external_data_missing_file.onnx")


@case(r"absolute")
def external_data_absolute_location(folder: Path) -> Path:
    # The file exists and holds the right bytes: only the absolute location is wrong.
    data = folder.parent / "absolute.bin"
    data.write_bytes(_float_bytes(4))
    return _save(_external_model(str(data.resolve())), folder / "external_data_absolute_location.onnx")


@case(r"\.\./x\.bin|outside|leaves|escapes")
def external_data_escapes_folder(folder: Path) -> Path:
    (folder.parent / "x.bin").write_bytes(_float_bytes(4))
    return _save(_external_model("../x.bin"), folder / "external_data_escapes_folder.onnx")


@case(r"short\.bin|beyond|outside|past|end of")
def external_data_beyond_end(folder: Path) -> Path:
    (folder / "short.bin").write_bytes(_float_bytes(4))
    return _save(_external_model("short.bin", offset=8, length=16), folder / "external_data_beyond_end.onnx")


@case(r"length|12")
def external_data_length_mismatch(folder: Path) -> Path:
    (folder / "w.bin").write_bytes(_float_bytes(8))
    return _save(_external_model("w.bin", length=12), folder / "external_data_length_mismatch.onnx")


@case(r"offset|sixteen")
def external_data_bad_offset(folder: Path) -> Path:
    (folder / "w.bin").write_bytes(_float_bytes(4))
    model = _external_model("w.bin")
    next(e for e in model.graph.initializer[0].external_data if e.key == "offset").value = "sixteen"
    return _save(model, folder / "external_data_bad_offset.onnx")


# ---------------------------------------------------------------------------------------------------------


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture
def bad_input(request: pytest.FixtureRequest, work_dir: Path) -> Path:
    """The malformed model of case `request.param`, in work_dir/in, beside an empty work_dir/out."""
    (work_dir / "in").mkdir()
    (work_dir / "out").mkdir()
    return CASES[request.param](work_dir / "in")


def _case_of(bad: Path) -> str:
    return bad.stem  # builders name their file after the case


def _assert_rejected(proc, bad: Path, reason: str | None = None) -> None:
    problem = roundtrip_check.error_line_problem(proc, bad)
    assert problem is None, f"{bad.name}: {problem}"
    if reason is not None:
        # Without the file's name, which spells the case's name and would match its own reason.
        why = proc.stderr.replace(str(bad), "").replace(bad.name, "")
        assert re.search(reason, why, re.I), f"the error does not say why ({reason!r}): {proc.stderr.strip()}"


@pytest.mark.parametrize("bad_input", sorted(CASES), indirect=True)
def test_rejected_without_output(bad_input: Path, run_opt) -> None:
    out_dir = bad_input.parent.parent / "out"
    inputs_before = _hashes(bad_input.parent)
    proc = run_opt(bad_input, "-o", out_dir / "out.onnx")
    _assert_rejected(proc, bad_input, REASONS[_case_of(bad_input)])
    assert sorted(os.listdir(out_dir)) == [], "a failed run left files in the output folder"
    assert _hashes(bad_input.parent) == inputs_before, "a failed run modified its input folder"


@pytest.mark.parametrize("bad_input", sorted(CASES), indirect=True)
def test_rejected_keeps_existing_output(bad_input: Path, run_opt) -> None:
    out_dir = bad_input.parent.parent / "out"
    out = out_dir / "out.onnx"
    _save(_valid_model(), out)
    before = (out.read_bytes(), out.stat().st_mtime_ns)
    proc = run_opt(bad_input, "-o", out)
    _assert_rejected(proc, bad_input)
    assert (out.read_bytes(), out.stat().st_mtime_ns) == before, "a failed run changed the existing output"
    assert sorted(os.listdir(out_dir)) == ["out.onnx"], "a failed run left files in the output folder"


def test_rejected_in_place_keeps_input(work_dir: Path, run_opt) -> None:
    # Output path == input path: the input must survive the failure byte for byte.
    bad = dangling_node_input(work_dir)
    before = _hashes(work_dir)
    proc = run_opt(bad, "-o", bad)
    _assert_rejected(proc, bad)
    assert _hashes(work_dir) == before


def _onnx_accepts(path: Path) -> bool:
    """Whether onnx itself parses the file, passes its checker, and reads every tensor's data."""
    try:
        if path.suffix == ".onnxtxt":
            onnx.parser.parse_model(path.read_text())
            return True
        onnx.checker.check_model(str(path), full_check=True)
        model = onnx.load(str(path))  # the checker does not read external data
        for tensor in roundtrip_check.all_tensors(model):
            numpy_helper.to_array(tensor)
        return model.HasField("graph")
    except Exception:
        return False


def test_cases_are_malformed_for_onnx(work_dir: Path) -> None:
    # Guards the generators: a case that onnx accepts would be a generator bug, not a test of opt.
    accepted = []
    for name, build in sorted(CASES.items()):
        folder = work_dir / name / "in"
        folder.mkdir(parents=True)
        if _onnx_accepts(build(folder)):
            accepted.append(name)
    assert not accepted, f"onnx accepts these 'malformed' cases: {accepted}"


def test_enough_cases() -> None:
    assert len(CASES) >= 18
