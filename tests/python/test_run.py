"""`opt run`: the reference executor on a model built from kernel-supported ops, against onnxruntime, with
inputs from .npy files; and errors for bad inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(5)
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")
    shape = numpy_helper.from_array(np.array([3, -1], dtype=np.int64), "shape")
    idx = numpy_helper.from_array(np.array([2, 0], dtype=np.int64), "idx")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[1, 0]),
        helper.make_node("Reshape", ["t", "shape"], ["rs"]),
        helper.make_node("ReduceMean", ["rs"], ["mean"], axes=[1], keepdims=0),
        helper.make_node("Gather", ["r", "idx"], ["g"], axis=1),
        helper.make_node("Greater", ["g", "b_pos"], ["gt"]),
        helper.make_node("Where", ["gt", "g", "zero"], ["y"]),
        helper.make_node("Shape", ["x"], ["s"]),
    ]
    inits = [w, b, shape, idx, numpy_helper.from_array(np.float32(0.25), "b_pos"),
             numpy_helper.from_array(np.float32(0.0), "zero")]
    graph = helper.make_graph(
        nodes, "run_test", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 4])],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 2]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [2])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_run_matches_onnxruntime(run_opt, work_dir: Path) -> None:
    model = _model()
    path = work_dir / "m.onnx"
    onnx.save(model, path)
    x = np.random.default_rng(9).standard_normal((5, 4)).astype(np.float32)
    np.save(work_dir / "x.npy", x)
    out = work_dir / "out"
    out.mkdir()
    proc = run_opt("run", path, "--input", f"x={work_dir / 'x.npy'}", "--save-outputs", out)
    assert proc.returncode == 0, proc.stderr
    assert "output y: float[5,2]" in proc.stdout
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for name, e in zip(["mean", "y", "s"], expected):
        got = np.load(out / f"{name}.npy")
        assert got.dtype == e.dtype and got.shape == e.shape, name
        np.testing.assert_allclose(got, e, rtol=1e-5, atol=1e-6, err_msg=name)


def test_run_with_random_inputs_is_seeded(run_opt, work_dir: Path) -> None:
    path = work_dir / "m.onnx"
    onnx.save(_model(), path)
    a = run_opt("run", path, "--seed", "4")
    b = run_opt("run", path, "--seed", "4")
    c = run_opt("run", path, "--seed", "5")
    assert a.returncode == 0 and a.stdout == b.stdout and a.stdout != c.stdout


def test_run_errors(run_opt, work_dir: Path) -> None:
    path = work_dir / "m.onnx"
    onnx.save(_model(), path)
    np.save(work_dir / "bad.npy", np.zeros((2, 2), dtype=np.float32))
    proc = run_opt("run", path, "--input", f"x={work_dir / 'bad.npy'}")
    assert proc.returncode == 1 and proc.stderr.startswith("opt: error: ")
    proc = run_opt("run", path, "--input", f"nope={work_dir / 'bad.npy'}")
    assert proc.returncode == 2 and "the model has no input 'nope'" in proc.stderr  # bad usage


def test_run_tiny_unet_matches_onnxruntime(run_opt, work_dir: Path) -> None:
    """models/tiny_unet (Resize by scales and by run-time sizes, skip connections) on the reference
    kernels: the stored golden, and onnxruntime at another spatial size (dynamic H, W)."""
    model_dir = Path(__file__).resolve().parents[2] / "models" / "tiny_unet"
    golden_in = model_dir / "test_data_set_0" / "input_0.pb"
    golden_out = numpy_helper.to_array(onnx.load_tensor(str(model_dir / "test_data_set_0" / "output_0.pb")))
    out = work_dir / "golden"
    out.mkdir()
    proc = run_opt("run", model_dir / "model.onnx", "--input", f"x={golden_in}", "--save-outputs", out)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(out / "mask.npy"), golden_out, rtol=1e-4, atol=1e-5)
    x = np.random.default_rng(3).standard_normal((2, 3, 12, 20)).astype(np.float32)
    np.save(work_dir / "x.npy", x)
    out = work_dir / "other"
    out.mkdir()
    proc = run_opt("run", model_dir / "model.onnx", "--input", f"x={work_dir / 'x.npy'}", "--save-outputs", out)
    assert proc.returncode == 0, proc.stderr
    (expected,) = ort.InferenceSession(str(model_dir / "model.onnx"),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = np.load(out / "mask.npy")
    assert got.shape == (2, 2, 12, 20)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def _sequence_optional_model() -> onnx.ModelProto:
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3]))
    nodes = [
        helper.make_node("SplitToSequence", ["x", "split"], ["seq"], axis=0),
        helper.make_node("Optional", ["x"], ["present"]),
        helper.make_node("Optional", [], ["absent"],
                         type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])),
        helper.make_node("Relu", ["x"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "seq_opt", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_value_info("seq", seq_type), helper.make_value_info("present", opt_type),
         helper.make_value_info("absent", opt_type),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.array([1, 1], dtype=np.int64), "split")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def test_run_sequence_and_optional_outputs(run_opt, work_dir: Path) -> None:
    """A sequence output prints its length and elements and saves as the folder NAME/ of numbered .npy
    files; an optional that holds a tensor is that tensor; an empty one prints so and saves no file."""
    path = work_dir / "m.onnx"
    onnx.save(_sequence_optional_model(), path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    np.save(work_dir / "x.npy", x)
    out = work_dir / "out"
    out.mkdir()
    proc = run_opt("run", path, "--input", f"x={work_dir / 'x.npy'}", "--save-outputs", out)
    assert proc.returncode == 0, proc.stderr
    assert "output seq: sequence of 2 float" in proc.stdout
    assert "  seq[1]: float[1,3]" in proc.stdout
    assert "output present: float[2,3]" in proc.stdout
    assert "output absent: optional, empty" in proc.stdout
    assert sorted(p.name for p in (out / "seq").iterdir()) == ["0.npy", "1.npy"]
    np.testing.assert_array_equal(np.load(out / "seq" / "0.npy"), x[:1])
    np.testing.assert_array_equal(np.load(out / "seq" / "1.npy"), x[1:])
    np.testing.assert_array_equal(np.load(out / "present.npy"), x)
    assert not (out / "absent.npy").exists() and not (out / "absent").exists()
    np.testing.assert_array_equal(np.load(out / "y.npy"), np.maximum(x, 0))
