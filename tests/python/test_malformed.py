"""opt on malformed and hostile input: exit code 1, one "opt: error: " line naming the file and the problem,
and nothing written.

Every bad file is generated here, in the test's temporary folder. Each case writes its model (and any data
files) into in/; opt writes to out/, which must stay empty, or keep a pre-existing output untouched. Cases
that break one of opt's limits (tools/opt: --max-nodes, --max-initializers, the subgraph nesting depth) are
valid ONNX and run with the arguments in ARGS; crashes the fuzzers found (tools/fuzz.sh) become cases here.
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
ARGS: dict[str, tuple[str, ...]] = {}
LIMIT_CASES: set[str] = set()  # valid ONNX that breaks one of opt's limits


def case(reason: str, args: tuple[str, ...] = (), limit: bool = False) -> Callable[[Builder], Builder]:
    def register(builder: Builder) -> Builder:
        CASES[builder.__name__] = builder
        REASONS[builder.__name__] = reason
        ARGS[builder.__name__] = args
        if limit:
            LIMIT_CASES.add(builder.__name__)
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


@case(r"syntax.*literal")
def textual_bad_float_literal(folder: Path) -> Path:
    # Found by tools/fuzz.sh (fuzz_text): onnx's parser threw std::invalid_argument from std::stof.
    text = ('<ir_version: 8, opset_import: ["" : 17]>\n'
            'g (float[3] X) => (float[3] Y) <float[3] W = {1.0,   , 2.0}> {\n  Y = Add(X, W)\n}\n')
    return _write(folder / "textual_bad_float_literal.onnxtxt", text.encode())


def _nested_ifs(depth: int) -> str:
    body = "  r0 = Identity(x)"
    for k in range(1, depth + 1):
        body = (f"  r{k} = If (c) <then_branch = t{k} () => (float[2] r{k - 1}) {{\n{body}\n}}, "
                f"else_branch = e{k} () => (float[2] s{k}) {{\n  s{k} = Identity(x)\n}}>")
    return ('<ir_version: 8, opset_import: ["" : 17]>\n'
            f"g (bool c, float[2] x) => (float[2] r{depth}) {{\n{body}\n}}\n")


@case(r"nest deeper than 32")
def deep_subgraph_nesting(folder: Path) -> Path:
    return _write(folder / "deep_subgraph_nesting.onnxtxt", _nested_ifs(40).encode())


@case(r"more than 10 nodes", args=("--max-nodes", "10"), limit=True)
def too_many_nodes(folder: Path) -> Path:
    nodes = [helper.make_node("Relu", ["X" if i == 0 else f"t{i}"], [f"t{i + 1}" if i < 29 else "Y"])
             for i in range(30)]
    return _save(_model(nodes), folder / "too_many_nodes.onnx")


@case(r"more than 2 initializers", args=("--max-initializers", "2"), limit=True)
def too_many_initializers(folder: Path) -> Path:
    inits = [numpy_helper.from_array(np.full(4, i, np.float32), f"w{i}") for i in range(3)]
    nodes = [helper.make_node("Sum", ["X", "w0", "w1", "w2"], ["Y"])]
    return _save(_model(nodes, initializers=inits), folder / "too_many_initializers.onnx")


@case(r"element count overflows")
def element_count_overflow(folder: Path) -> Path:
    weights = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2**40, 2**40, 2**20])
    model = _model([helper.make_node("Add", ["X", "W"], ["Y"])], initializers=[weights])
    return _save(model, folder / "element_count_overflow.onnx")


@case(r"string tensor cannot hold raw_data")
def string_tensor_raw_data(folder: Path) -> Path:
    weights = TensorProto(name="W", data_type=TensorProto.STRING, dims=[2], raw_data=b"abcd")
    model = _model([helper.make_node("Identity", ["X"], ["Y"])], initializers=[weights])
    return _save(model, folder / "string_tensor_raw_data.onnx")


@case(r"index 99 is out of range")
def sparse_index_out_of_range(folder: Path) -> Path:
    values = helper.make_tensor("S", TensorProto.FLOAT, [2], [1.0, 2.0])
    indices = helper.make_tensor("S_indices", TensorProto.INT64, [2], [0, 99])
    graph = helper.make_graph([helper.make_node("Add", ["X", "S"], ["Y"])], "g", [_value("X")], [_value("Y")],
                              sparse_initializer=[helper.make_sparse_tensor(values, indices, [4])])
    model = helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)])
    return _save(model, folder / "sparse_index_out_of_range.onnx")


@case(r"no then_branch")
def if_without_branches(folder: Path) -> Path:
    model = _model([helper.make_node("If", ["X"], ["Y"])])
    return _save(model, folder / "if_without_branches.onnx")


@case(r"body takes 0 inputs")
def loop_body_arity(folder: Path) -> Path:
    body = helper.make_graph([], "body", [], [])
    model = _model([helper.make_node("Loop", ["", ""], ["Y"], body=body)])
    return _save(model, folder / "loop_body_arity.onnx")


@case(r"opset_import .*version -3")
def negative_opset_version(folder: Path) -> Path:
    model = _model([helper.make_node("Identity", ["X"], ["Y"])])
    model.opset_import[0].version = -3
    return _save(model, folder / "negative_opset_version.onnx")


@case(r"unknown element type 99")
def unknown_output_element_type(folder: Path) -> Path:
    model = _model([helper.make_node("Identity", ["X"], ["Y"])])
    model.graph.output[0].type.tensor_type.elem_type = 99
    return _save(model, folder / "unknown_output_element_type.onnx")


@case(r"protobuf|not .*model")
def gzip_compressed_model(folder: Path) -> Path:
    import gzip

    return _write(folder / "gzip_compressed_model.onnx", gzip.compress(_valid_model().SerializeToString()))


@case(r"outside the model's folder")
def external_data_symlink_escape(folder: Path) -> Path:
    outside = folder.parent / "outside.bin"
    outside.write_bytes(_float_bytes(4))
    os.symlink(outside, folder / "link.bin")
    return _save(_external_model("link.bin"), folder / "external_data_symlink_escape.onnx")


@case(r"length '-16'")
def external_data_negative_length(folder: Path) -> Path:
    (folder / "w.bin").write_bytes(_float_bytes(4))
    return _save(_external_model("w.bin", length=-16), folder / "external_data_negative_length.onnx")


@case(r"dims \[2,2\] that do not match its type")
def input_default_contradicts_type(folder: Path) -> Path:
    # Found by tools/fuzz.sh (fuzz_pipeline): an input whose default initializer has another shape than the
    # input declares passed import, and freezing it into a constant then failed the verifier.
    model = _model([helper.make_node("Identity", ["X"], ["Y"])], inputs=("X",), outputs=("Y",))
    model.graph.initializer.append(numpy_helper.from_array(np.ones((2, 2), np.float32), "X"))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    model.ir_version = 3
    return _save(model, folder / "input_default_contradicts_type.onnx")


@case(r"int32_data cannot hold uint64")
def int32_data_holding_wide_values(folder: Path) -> Path:
    # Found by tools/fuzz.sh (fuzz_import): a uint64 tensor stored in int32_data made the importer read 8
    # bytes from each 4-byte value (a stack-buffer-overflow under ASan).
    weights = TensorProto(name="W", data_type=TensorProto.UINT64, dims=[2], int32_data=[1, 2])
    model = _model([helper.make_node("Identity", ["X"], ["Y"])], initializers=[weights])
    return _save(model, folder / "int32_data_holding_wide_values.onnx")


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
    proc = run_opt(bad_input, "-o", out_dir / "out.onnx", *ARGS[_case_of(bad_input)])
    _assert_rejected(proc, bad_input, REASONS[_case_of(bad_input)])
    assert sorted(os.listdir(out_dir)) == [], "a failed run left files in the output folder"
    assert _hashes(bad_input.parent) == inputs_before, "a failed run modified its input folder"


@pytest.mark.parametrize("bad_input", sorted(CASES), indirect=True)
def test_rejected_keeps_existing_output(bad_input: Path, run_opt) -> None:
    out_dir = bad_input.parent.parent / "out"
    out = out_dir / "out.onnx"
    _save(_valid_model(), out)
    before = (out.read_bytes(), out.stat().st_mtime_ns)
    proc = run_opt(bad_input, "-o", out, *ARGS[_case_of(bad_input)])
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
        if name in LIMIT_CASES:
            continue
        folder = work_dir / name / "in"
        folder.mkdir(parents=True)
        if _onnx_accepts(build(folder)):
            accepted.append(name)
    assert not accepted, f"onnx accepts these 'malformed' cases: {accepted}"


def test_enough_cases() -> None:
    assert len(CASES) >= 30


def test_limit_cases_are_valid_onnx(work_dir: Path) -> None:
    # A limit case must fail because of the limit alone: onnx accepts it.
    for name in sorted(LIMIT_CASES):
        folder = work_dir / name / "in"
        folder.mkdir(parents=True)
        assert _onnx_accepts(CASES[name](folder)), name


def test_no_crash_on_inconsistent_attributes(work_dir: Path, run_opt) -> None:
    # A Transpose whose perm does not fit its input's rank crashed shape inference (out-of-bounds read).
    # It is a warning, not an error (the model is only as wrong as it was), and never a crash.
    node = helper.make_node("Transpose", ["X"], ["Y"])
    node.attribute.add(name="perm", type=onnx.AttributeProto.INTS)
    model = _save(_model([node]), work_dir / "empty_perm.onnx")
    proc = run_opt(model, "-o", work_dir / "out.onnx")
    assert proc.returncode == 0, proc.stderr
    assert "perm does not match" in proc.stderr
