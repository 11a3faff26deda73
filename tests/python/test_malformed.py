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


# Input that onnx.checker refuses for a type, attribute or value the spec fixes (issue 13). Each was accepted
# and its meaning guessed: -O2 took a float If condition as true, `opt run` read one byte of it as false.


def _branch(name: str, op: str = "Neg") -> onnx.GraphProto:
    return helper.make_graph([helper.make_node(op, ["X"], [f"{name}_out"])], name, [], [_value(f"{name}_out")])


@case(r"input 'cond' \('c'\) is tensor\(float\) but If-\d+ takes tensor\(bool\)")
def if_float_condition(folder: Path) -> Path:
    cond = numpy_helper.from_array(np.array(1.0, dtype=np.float32), "c")
    node = helper.make_node("If", ["c"], ["Y"], then_branch=_branch("then"), else_branch=_branch("else", "Abs"))
    return _save(_model([node], initializers=[cond]), folder / "if_float_condition.onnx")


@case(r"input 'cond' \('c'\) is tensor\(int64\) but If-\d+ takes tensor\(bool\)")
def if_condition_from_int_constant(folder: Path) -> Path:
    # The condition's type is known from a Constant node, not from a declaration.
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(1, np.int64))),
             helper.make_node("If", ["c"], ["Y"], then_branch=_branch("then"), else_branch=_branch("else", "Abs"))]
    return _save(_model(nodes), folder / "if_condition_from_int_constant.onnx")


def _loop(trip_count: np.ndarray, cond: np.ndarray, name: str) -> onnx.ModelProto:
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Neg", ["x_in"], ["x_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), _value("x_in")],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), _value("x_out")],
    )
    inits = [numpy_helper.from_array(trip_count, "M"), numpy_helper.from_array(cond, "c")]
    return _model([helper.make_node("Loop", ["M", "c", "X"], ["Y"], body=body)], initializers=inits)


@case(r"input 'M' \('M'\) is tensor\(float\) but Loop-\d+ takes tensor\(int64\)")
def loop_float_trip_count(folder: Path) -> Path:
    model = _loop(np.array(3.0, np.float32), np.array(True), "loop_float_trip_count")
    return _save(model, folder / "loop_float_trip_count.onnx")


@case(r"input 'cond' \('c'\) is tensor\(int32\) but Loop-\d+ takes tensor\(bool\)")
def loop_int_condition(folder: Path) -> Path:
    model = _loop(np.array(3, np.int64), np.array(1, np.int32), "loop_int_condition")
    return _save(model, folder / "loop_int_condition.onnx")


@case(r"input 'condition' \('c'\) is tensor\(float\) but Where-\d+ takes tensor\(bool\)")
def where_float_condition(folder: Path) -> Path:
    cond = numpy_helper.from_array(np.array([1, 0, 1, 0], np.float32), "c")
    node = helper.make_node("Where", ["c", "X", "X"], ["Y"])
    return _save(_model([node], initializers=[cond]), folder / "where_float_condition.onnx")


@case(r"input 'shape' \('s'\) is tensor\(float\) but Reshape-\d+ takes tensor\(int64\)")
def reshape_float_shape(folder: Path) -> Path:
    shape = numpy_helper.from_array(np.array([4], np.float32), "s")
    node = helper.make_node("Reshape", ["X", "s"], ["Y"])
    return _save(_model([node], initializers=[shape]), folder / "reshape_float_shape.onnx")


@case(r"node 'tr' \(Transpose\): attribute 'perm' is FLOATS but Transpose-\d+ takes INTS")
def transpose_perm_floats(folder: Path) -> Path:
    node = helper.make_node("Transpose", ["X"], ["Y"], name="tr")
    node.attribute.append(helper.make_attribute("perm", [0.0]))
    return _save(_model([node]), folder / "transpose_perm_floats.onnx")


@case(r"node 'cast' \(Cast\): attribute 'to' is STRING but Cast-\d+ takes INT")
def cast_to_as_string(folder: Path) -> Path:
    node = helper.make_node("Cast", ["X"], ["Y"], name="cast", to="float")
    return _save(_model([node]), folder / "cast_to_as_string.onnx")


@case(r"Cast-\d+ requires attribute 'to'")
def cast_without_to(folder: Path) -> Path:
    return _save(_model([helper.make_node("Cast", ["X"], ["Y"])]), folder / "cast_without_to.onnx")


@case(r"attribute 'alpha' is not an attribute of Relu-\d+")
def unknown_attribute_on_standard_op(folder: Path) -> Path:
    node = helper.make_node("Relu", ["X"], ["Y"], alpha=0.5)
    return _save(_model([node]), folder / "unknown_attribute_on_standard_op.onnx")


@case(r"Add-\d+ takes 2 to 2")
def standard_op_wrong_arity(folder: Path) -> Path:
    node = helper.make_node("Add", ["X", "X", "X"], ["Y"])
    return _save(_model([node]), folder / "standard_op_wrong_arity.onnx")


@case(r"'W'.*byte size of float\[4611686018427387904\] overflows")
def external_data_size_wraps(folder: Path) -> Path:
    # float[2^62] is 2^64 bytes, which wrapped to 0: the empty data file passed for the whole weight.
    (folder / "empty.bin").write_bytes(b"")
    weights = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2**62], data_location=TensorProto.EXTERNAL)
    weights.external_data.add(key="location", value="empty.bin")
    model = _model([helper.make_node("Add", ["X", "W"], ["Y"])], initializers=[weights])
    return _save(model, folder / "external_data_size_wraps.onnx")


@case(r"'W'.*byte size of float\[4611686018427387904\] overflows")
def raw_data_size_wraps(folder: Path) -> Path:
    weights = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[2**62], raw_data=b"")
    model = _model([helper.make_node("Add", ["X", "W"], ["Y"])], initializers=[weights])
    return _save(model, folder / "raw_data_size_wraps.onnx")


@case(r"byte size of int64\[2,1152921504606846976\] overflows")
def constant_attribute_size_wraps(folder: Path) -> Path:
    value = TensorProto(name="v", data_type=TensorProto.INT64, dims=[2, 2**60], raw_data=b"")
    nodes = [helper.make_node("Constant", [], ["c"], value=value), helper.make_node("Identity", ["X"], ["Y"])]
    return _save(_model(nodes), folder / "constant_attribute_size_wraps.onnx")


@case(r"sparse tensor 'S': the dense byte size of float\[4611686018427387904\] overflows", limit=True)
def sparse_dense_size_wraps(folder: Path) -> Path:
    # onnx.checker accepts it (it does not size the dense form); no tool could densify it.
    values = helper.make_tensor("S", TensorProto.FLOAT, [1], [1.0])
    indices = helper.make_tensor("S_indices", TensorProto.INT64, [1], [0])
    graph = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "g", [_value("X")], [_value("Y")],
                              sparse_initializer=[helper.make_sparse_tensor(values, indices, [2**62])])
    model = helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)])
    return _save(model, folder / "sparse_dense_size_wraps.onnx")


@case(r"size of type .*overflows", limit=True)
def value_type_size_wraps(folder: Path) -> Path:
    # Valid ONNX, but a type that no buffer can hold: `opt run` would size its input from it.
    model = _model([helper.make_node("Identity", ["X"], ["Y"])],
                   value_infos=([_value("X", (2**62, 16))], [_value("Y", (2**62, 16))]))
    return _save(model, folder / "value_type_size_wraps.onnx")


def _function(name: str, calls: str) -> onnx.FunctionProto:
    return helper.make_function("local", name, ["x"], ["y"], [helper.make_node(calls, ["x"], ["y"], domain="local")],
                                [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])


def _function_model(functions: list[onnx.FunctionProto]) -> onnx.ModelProto:
    model = _model([helper.make_node("F", ["X"], ["Y"], domain="local")])
    model.opset_import.append(helper.make_opsetid("local", 1))
    model.functions.extend(functions)
    return model


@case(r"functions call themselves: local\.F -> local\.F")
def recursive_function(folder: Path) -> Path:
    return _save(_function_model([_function("F", "F")]), folder / "recursive_function.onnx")


@case(r"functions call themselves: local\.(F|G) -> local\.(G|F) -> local\.(F|G)")
def mutually_recursive_functions(folder: Path) -> Path:
    return _save(_function_model([_function("F", "G"), _function("G", "F")]),
                 folder / "mutually_recursive_functions.onnx")


@case(r"output 'X' redefines a name of an enclosing graph")
def subgraph_redefines_outer_name(folder: Path) -> Path:
    then_branch = helper.make_graph([helper.make_node("Neg", ["X"], ["X"])], "then", [], [_value("X")])
    cond = numpy_helper.from_array(np.array(True), "c")
    node = helper.make_node("If", ["c"], ["Y"], then_branch=then_branch, else_branch=_branch("else"))
    return _save(_model([node], initializers=[cond]), folder / "subgraph_redefines_outer_name.onnx")


@case(r"domain 'custom' has no opset_import")
def domain_without_opset_import(folder: Path) -> Path:
    return _save(_model([helper.make_node("Foo", ["X"], ["Y"], domain="custom")]),
                 folder / "domain_without_opset_import.onnx")


@case(r"no opset_import")
def no_opset_import(folder: Path) -> Path:
    model = _model([helper.make_node("Relu", ["X"], ["Y"])])
    del model.opset_import[:]
    return _save(model, folder / "no_opset_import.onnx")


def _sparse_model(indices: list[int]) -> onnx.ModelProto:
    values = helper.make_tensor("S", TensorProto.FLOAT, [len(indices)], [1.0] * len(indices))
    index = helper.make_tensor("S_indices", TensorProto.INT64, [len(indices)], indices)
    graph = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "g", [_value("X")], [_value("Y")],
                              sparse_initializer=[helper.make_sparse_tensor(values, index, [4])])
    return helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)])


@case(r"sparse tensor 'S': entry 1 is out of order")
def sparse_unsorted_indices(folder: Path) -> Path:
    return _save(_sparse_model([2, 1]), folder / "sparse_unsorted_indices.onnx")


@case(r"sparse tensor 'S': entry 1 repeats")
def sparse_duplicate_indices(folder: Path) -> Path:
    return _save(_sparse_model([1, 1]), folder / "sparse_duplicate_indices.onnx")


@case(r"sparse tensor 'S': entry 1 is out of order")
def sparse_unsorted_coordinates(folder: Path) -> Path:
    values = helper.make_tensor("S", TensorProto.FLOAT, [2], [1.0, 2.0])
    index = helper.make_tensor("S_indices", TensorProto.INT64, [2, 2], [1, 0, 0, 1])  # (1,0) then (0,1)
    graph = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "g", [_value("X")], [_value("Y")],
                              sparse_initializer=[helper.make_sparse_tensor(values, index, [2, 2])])
    model = helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", OPSET)])
    return _save(model, folder / "sparse_unsorted_coordinates.onnx")


@case(r"target shape holds -1 2 times")
def reshape_two_inferred_dims(folder: Path) -> Path:
    shape = numpy_helper.from_array(np.array([-1, -1], np.int64), "s")
    node = helper.make_node("Reshape", ["X", "s"], ["Y"])
    return _save(_model([node], initializers=[shape]), folder / "reshape_two_inferred_dims.onnx")


@case(r"target shape holds -2, below -1")
def reshape_shape_below_minus_one(folder: Path) -> Path:
    nodes = [helper.make_node("Constant", [], ["s"], value=numpy_helper.from_array(np.array([-2, 2], np.int64))),
             helper.make_node("Reshape", ["X", "s"], ["Y"])]
    return _save(_model(nodes), folder / "reshape_shape_below_minus_one.onnx")


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
    assert "perm is not a permutation" in proc.stderr


# Special files: not in CASES, whose harness reads every input file (a FIFO would block it too).


def _special_fifo_model(folder: Path) -> Path:
    path = folder / "fifo_model.onnx"
    os.mkfifo(path)
    return path


def _special_fifo_data(folder: Path) -> Path:
    os.mkfifo(folder / "w.bin")
    return _save(_external_model("w.bin"), folder / "fifo_data.onnx")


def _special_directory_model(folder: Path) -> Path:
    path = folder / "directory_model.onnx"
    path.mkdir()
    return path


def _special_directory_data(folder: Path) -> Path:
    (folder / "w.bin").mkdir()
    return _save(_external_model("w.bin"), folder / "directory_data.onnx")


SPECIAL_FILES = {
    "fifo_model": (_special_fifo_model, r"is a FIFO, not a regular file"),
    "fifo_data": (_special_fifo_data, r"external data file 'w\.bin': is a FIFO, not a regular file"),
    "directory_model": (_special_directory_model, r"is a directory, not a regular file"),
    "directory_data": (_special_directory_data, r"external data file 'w\.bin': is a directory"),
}


@pytest.mark.parametrize("name", sorted(SPECIAL_FILES))
def test_special_file_refused_without_blocking(name: str, work_dir: Path, run_opt) -> None:
    # open() on a FIFO waited for a writer forever: the model and its data must be regular files.
    build, reason = SPECIAL_FILES[name]
    (work_dir / "in").mkdir()
    (work_dir / "out").mkdir()
    bad = build(work_dir / "in")
    proc = run_opt(bad, "-o", work_dir / "out" / "out.onnx", timeout=20)
    _assert_rejected(proc, bad, reason)
    assert os.listdir(work_dir / "out") == []


def _opsets_model(*opsets: tuple[str, int]) -> onnx.ModelProto:
    # Squeeze's axes are an attribute up to opset 12 and an input from 13: which opset wins shows.
    node = helper.make_node("Squeeze", ["X"], ["Y"], axes=[0])
    model = _model([node], value_infos=([_value("X", (1, 4))], [_value("Y", (4,))]))
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid(domain, version) for domain, version in opsets)
    return model


@pytest.mark.parametrize("opsets", [(("", 11), ("", 11)), (("", 13), ("", 11)), (("ai.onnx", 11), ("", 11))],
                         ids=["same_version", "last_wins", "alias"])
def test_default_domain_imported_twice_is_accepted(opsets, work_dir: Path, run_opt) -> None:
    # A model on PyPI lists the default domain twice; onnx.checker and onnxruntime accept it, and take the last.
    model = _opsets_model(*opsets)
    onnx.checker.check_model(model, full_check=True)
    path = _save(model, work_dir / "twice.onnx")
    out = work_dir / "out.onnx"
    proc = run_opt(path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    versions = {opsets[0][1], opsets[1][1]}
    if len(versions) > 1:
        assert re.search(r"opt: warning: opset_import lists domain '' twice, with versions 13 and 11; the last, 11, "
                         r"is used", proc.stderr), proc.stderr
    else:
        assert "warning" not in proc.stderr, proc.stderr
    written = onnx.load(str(out))
    assert [(o.domain, o.version) for o in written.opset_import] == [(opsets[0][0], 11)]
    onnx.checker.check_model(written, full_check=True)


def test_run_and_check_print_load_warnings(work_dir: Path, run_opt) -> None:
    # opt run and opt check read models as opt IN does, with the same warnings (they dropped them before).
    path = _save(_opsets_model(("", 13), ("", 11)), work_dir / "twice.onnx")
    warning = ("opt: warning: opset_import lists domain '' twice, with versions 13 and 11; the last, 11, is "
               "used (as onnxruntime does)\n")
    proc = run_opt("run", path)
    assert proc.returncode == 0 and proc.stderr.count(warning) == 1, proc.stderr
    proc = run_opt("check", path, path)  # each model is read once
    assert proc.returncode == 0 and proc.stderr.count(warning) == 2, proc.stderr


FORGED = "opt: error: forged"


def _forged_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(FORGED)]


def test_names_cannot_forge_diagnostic_lines(work_dir: Path, run_opt) -> None:
    # A name holding a newline was printed raw: a warning about it could start a line "opt: error: ...".
    name = "a\n" + FORGED
    # A warning: the output is declared float[5], but Relu of a float[4] is float[4]. (A declared
    # int64 would bind Relu's T to two types: an error, which the verifier gives at import.)
    node = helper.make_node("Relu", ["X"], [name], name=name)
    model = _model([node, helper.make_node("Identity", ["X"], ["Y"])])
    model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [5]))
    path = _save(model, work_dir / "warning.onnx")
    proc = run_opt(path, "-o", work_dir / "out.onnx")
    assert "declared" in proc.stderr and "a\\nopt: error: forged" in proc.stderr, proc.stderr
    assert _forged_lines(proc.stderr) == [], proc.stderr

    # A load warning naming a domain.
    model = _opsets_model(("", 13), ("", 11))
    model.opset_import.extend([helper.make_opsetid(name, 1), helper.make_opsetid(name, 2)])
    path = _save(model, work_dir / "domain.onnx")
    proc = run_opt(path, "-o", work_dir / "out2.onnx")
    assert proc.returncode == 0 and "lists domain 'a\\nopt: error: forged' twice" in proc.stderr, proc.stderr
    assert _forged_lines(proc.stderr) == [], proc.stderr

    # An error naming a value.
    model = _model([helper.make_node("Add", ["X", name], ["Y"])])
    path = _save(model, work_dir / "error.onnx")
    proc = run_opt(path, "-o", work_dir / "out3.onnx")
    assert proc.returncode == 1 and "a\\nopt: error: forged" in proc.stderr, proc.stderr
    assert _forged_lines(proc.stderr) == [], proc.stderr
