"""What a round trip through `opt` must keep: every field of the model, including fields newer than the
onnx.proto compiled into onnxopt (they travel as unknown fields), every element type, every way ONNX
stores tensor data, sparse initializers, functions, training_info and metadata."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


def _roundtrip(run_opt, work_dir, model: onnx.ModelProto, *extra) -> onnx.ModelProto:
    src = work_dir / "in.onnx"
    dst = work_dir / "out.onnx"
    onnx.save(model, src)
    proc = run_opt(src, "-O0", "-o", dst, *extra)
    assert proc.returncode == 0, proc.stderr
    return onnx.load(dst)


def _identity_model(initializers, nodes=None, outputs=None, opset=21, ir_version=10):
    nodes = nodes or [helper.make_node("Identity", [t.name], [t.name + "_out"]) for t in initializers]
    outputs = outputs or [helper.make_tensor_value_info(t.name + "_out", t.data_type, None)
                          for t in initializers]
    graph = helper.make_graph(nodes, "g", [], outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


def test_newer_fields_survive_as_unknown_fields(run_opt, work_dir):
    # metadata_props on nodes, graphs, tensors and value_info, and node overloads (IR 10) are not in
    # the onnx.proto onnxopt is built with.
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    w.metadata_props.add(key="tensor_key", value="tensor_value")
    node = helper.make_node("Identity", ["w"], ["y"], name="id0", doc_string="node doc")
    node.metadata_props.add(key="node_key", value="node_value")
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    out.metadata_props.add(key="vi_key", value="vi_value")
    model = _identity_model([w], [node], [out])
    model.graph.metadata_props.add(key="graph_key", value="graph_value")
    model.metadata_props.add(key="model_key", value="model_value")
    model.doc_string = "model doc"
    model.model_version = 7
    model.producer_name, model.producer_version = "prod", "1.2"
    model.domain = "org.example"

    back = _roundtrip(run_opt, work_dir, model)
    assert back.graph.node[0].metadata_props[0].value == "node_value"
    assert back.graph.node[0].doc_string == "node doc"
    assert back.graph.metadata_props[0].value == "graph_value"
    assert back.graph.initializer[0].metadata_props[0].value == "tensor_value"
    assert back.graph.output[0].metadata_props[0].value == "vi_value"
    assert back.metadata_props[0].value == "model_value"
    assert (back.doc_string, back.model_version, back.producer_name, back.producer_version,
            back.domain) == ("model doc", 7, "prod", "1.2", "org.example")
    onnx.checker.check_model(back, full_check=True)


def test_functions_with_newer_fields(run_opt, work_dir):
    body = [helper.make_node("Mul", ["a", "s"], ["b"]),
            helper.make_node("Constant", [], ["s"], value_float=2.0)]
    fn = helper.make_function("local", "Twice", ["a"], ["b"], body,
                              [helper.make_opsetid("", 21)], attributes=[])
    fn.doc_string = "twice"
    node = helper.make_node("Twice", ["x"], ["y"], domain="local")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, functions=[fn], opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid("local", 1)])
    model.ir_version = 10
    back = _roundtrip(run_opt, work_dir, model)
    onnx.checker.check_model(back, full_check=True)
    assert back.functions[0].name == "Twice" and back.functions[0].doc_string == "twice"
    # The function body was unsorted (Constant after its user): it comes back sorted and runnable.
    assert [n.op_type for n in back.functions[0].node] == ["Constant", "Mul"]
    x = np.array([1, 2, 3], dtype=np.float32)
    (y,) = ort.InferenceSession(back.SerializeToString()).run(None, {"x": x})
    np.testing.assert_array_equal(y, 2 * x)


TYPED_CASES = [
    # (dtype, field, values, numpy dtype)
    (TensorProto.FLOAT, "float_data", [1.5, -2.0, 3.25], np.float32),
    (TensorProto.DOUBLE, "double_data", [1.5, -2.0, 1e300], np.float64),
    (TensorProto.INT64, "int64_data", [1, -2, 2**40], np.int64),
    (TensorProto.INT32, "int32_data", [1, -2, 2**30], np.int32),
    (TensorProto.INT16, "int32_data", [1, -2, 300], np.int16),
    (TensorProto.INT8, "int32_data", [1, -2, 100], np.int8),
    (TensorProto.UINT8, "int32_data", [1, 2, 255], np.uint8),
    (TensorProto.UINT16, "int32_data", [1, 2, 65535], np.uint16),
    (TensorProto.BOOL, "int32_data", [1, 0, 1], np.bool_),
    (TensorProto.UINT32, "uint64_data", [1, 2, 2**32 - 1], np.uint32),
    (TensorProto.UINT64, "uint64_data", [1, 2, 2**64 - 1], np.uint64),
]


@pytest.mark.parametrize("dtype,field,values,np_dtype", TYPED_CASES,
                         ids=[TensorProto.DataType.Name(c[0]) for c in TYPED_CASES])
def test_typed_data_fields_keep_their_values(run_opt, work_dir, dtype, field, values, np_dtype):
    t = TensorProto(name="t", data_type=dtype, dims=[len(values)])
    getattr(t, field).extend(values)
    expected = numpy_helper.to_array(t)
    back = _roundtrip(run_opt, work_dir, _identity_model([t]))
    got = numpy_helper.to_array(back.graph.initializer[0])
    assert got.dtype == np_dtype
    np.testing.assert_array_equal(got, expected)


def test_float16_in_int32_data(run_opt, work_dir):
    values = np.array([0.5, -1.0, 65504.0, 6e-8], dtype=np.float16)
    t = TensorProto(name="h", data_type=TensorProto.FLOAT16, dims=[4])
    t.int32_data.extend(values.view(np.uint16).tolist())
    back = _roundtrip(run_opt, work_dir, _identity_model([t]))
    np.testing.assert_array_equal(numpy_helper.to_array(back.graph.initializer[0]), values)


def test_strings_and_complex(run_opt, work_dir):
    s = numpy_helper.from_array(np.array(["a", "", "ünï"], dtype=object), "s")
    c = TensorProto(name="c", data_type=TensorProto.COMPLEX64, dims=[2])
    c.float_data.extend([1.0, 2.0, -3.0, 4.5])
    back = _roundtrip(run_opt, work_dir, _identity_model([s, c]))
    by_name = {t.name: numpy_helper.to_array(t) for t in back.graph.initializer}
    assert list(by_name["s"]) == ["a", "", "ünï"]
    np.testing.assert_array_equal(by_name["c"], np.array([1 + 2j, -3 + 4.5j], dtype=np.complex64))


@pytest.mark.parametrize("dtype", [
    TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
    TensorProto.FLOAT8E5M2FNUZ, TensorProto.UINT4, TensorProto.INT4, TensorProto.FLOAT4E2M1,
    TensorProto.COMPLEX128, TensorProto.FLOAT16, TensorProto.DOUBLE],
    ids=lambda d: TensorProto.DataType.Name(d))
def test_every_element_type_keeps_its_bytes(run_opt, work_dir, dtype):
    n = 6
    bits = {TensorProto.UINT4: 4, TensorProto.INT4: 4, TensorProto.FLOAT4E2M1: 4,
            TensorProto.COMPLEX128: 128, TensorProto.DOUBLE: 64}.get(dtype, 16 if dtype in (
                TensorProto.BFLOAT16, TensorProto.FLOAT16) else 8)
    raw = np.random.default_rng(dtype).integers(0, 256, (n * bits + 7) // 8, dtype=np.uint8).tobytes()
    t = TensorProto(name="t", data_type=dtype, dims=[n], raw_data=raw)
    back = _roundtrip(run_opt, work_dir, _identity_model([t], opset=23, ir_version=11))
    assert back.graph.initializer[0].raw_data == raw
    assert back.graph.initializer[0].data_type == dtype


def test_sparse_initializer_and_training_info(run_opt, work_dir):
    values = numpy_helper.from_array(np.array([1.0, 2.0], dtype=np.float32), "sp")
    indices = numpy_helper.from_array(np.array([1, 5], dtype=np.int64), "sp_idx")
    sparse = helper.make_sparse_tensor(values, indices, [8])
    node = helper.make_node("Identity", ["sp"], ["y"])
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])])
    graph.sparse_initializer.append(sparse)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    info = model.training_info.add()
    info.initialization.name = "init_graph"
    back = _roundtrip(run_opt, work_dir, model)
    assert len(back.graph.sparse_initializer) == 1
    sp = back.graph.sparse_initializer[0]
    assert list(sp.dims) == [8] and sp.values.name == "sp"
    np.testing.assert_array_equal(numpy_helper.to_array(sp.values), [1.0, 2.0])
    np.testing.assert_array_equal(numpy_helper.to_array(sp.indices), [1, 5])
    assert back.training_info[0].initialization.name == "init_graph"


def test_value_info_and_input_defaults(run_opt, work_dir):
    # IR 3 style: an initializer that is also a graph input (an overridable default).
    w = numpy_helper.from_array(np.array([1.0, 2.0], dtype=np.float32), "w")
    nodes = [helper.make_node("Add", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], [w],
        value_info=[helper.make_tensor_value_info("t", TensorProto.FLOAT, ["M"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    back = _roundtrip(run_opt, work_dir, model)
    assert [i.name for i in back.graph.input] == ["x", "w"]
    assert [i.name for i in back.graph.initializer] == ["w"]
    assert back.graph.value_info[0].name == "t"
    assert back.graph.value_info[0].type.tensor_type.shape.dim[0].dim_param == "M"
