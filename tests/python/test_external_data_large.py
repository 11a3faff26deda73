"""External data: a generated model over 2 GB round-trips with bounded memory, and small models keep their data.

The large model is written in chunks into the test's temporary folder and removed afterwards; its data is
compared through per-tensor SHA-256 hashes read in chunks, so neither the generator nor the check holds it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import peak_rss
import roundtrip_check

TENSOR_COUNT = 17
TENSOR_BYTES = 128 << 20
CHUNK_BYTES = 8 << 20
MODEL_DATA_BYTES = TENSOR_COUNT * TENSOR_BYTES  # 2.125 GiB: past protobuf's 2 GB limit


def _external(tensor: TensorProto, location: str, offset: int, length: int) -> None:
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        tensor.external_data.add(key=key, value=value)


def _write_large_model(folder: Path) -> tuple[Path, dict[str, str]]:
    """Y = X + w0 + w1 + ... + w16, each w a 128 MiB float vector in weights.bin. Returns the model and hashes."""
    elements = TENSOR_BYTES // 4
    base = np.random.default_rng(0).standard_normal(CHUNK_BYTES // 4, dtype=np.float32)
    hashes, initializers = {}, []
    with open(folder / "weights.bin", "wb") as f:
        for i in range(TENSOR_COUNT):
            digest = hashlib.sha256()
            for c in range(TENSOR_BYTES // CHUNK_BYTES):
                # Every chunk differs, so data written at a wrong offset or under the wrong name shows up.
                chunk = (base + np.float32(i * 1000 + c)).tobytes()
                digest.update(chunk)
                f.write(chunk)
            name = f"w{i}"
            hashes[name] = digest.hexdigest()
            tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[elements])
            _external(tensor, "weights.bin", i * TENSOR_BYTES, TENSOR_BYTES)
            initializers.append(tensor)
    sums = ["X"] + [f"s{i}" for i in range(TENSOR_COUNT - 1)] + ["Y"]
    nodes = [helper.make_node("Add", [sums[i], f"w{i}"], [sums[i + 1]]) for i in range(TENSOR_COUNT)]
    vector = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [elements])  # noqa: E731
    graph = helper.make_graph(nodes, "large", [vector("X")], [vector("Y")], initializer=initializers)
    model = helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "large.onnx"
    path.write_bytes(model.SerializeToString())
    return path, hashes


def _hash_range(path: Path, offset: int, length: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(offset)
        left = length
        while left:
            chunk = f.read(min(CHUNK_BYTES, left))
            assert chunk, f"{path} ends before offset {offset} + length {length}"
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def _data_file(model_path: Path, info: dict[str, str]) -> Path:
    location = info.get("location", "")
    path = model_path.parent / location
    assert location and not os.path.isabs(location), f"external location {location!r} must be relative"
    assert path.resolve().is_relative_to(model_path.parent.resolve()), f"{location!r} leaves the model's folder"
    assert path.is_file(), f"external data file {path} missing"
    return path


def _check_large_output(out: Path, expected: dict[str, str]) -> None:
    assert out.stat().st_size < 1 << 20, "the model file should hold the graph only, its data external"
    model = onnx.load(str(out), load_external_data=False)
    onnx.checker.check_model(str(out), full_check=True)
    tensors = {t.name: t for t in roundtrip_check.all_tensors(model)}
    assert set(tensors) == set(expected), f"initializers changed: {sorted(tensors)}"
    for name, digest in expected.items():
        tensor = tensors[name]
        info = roundtrip_check.external_info(tensor)
        assert info is not None, f"{name} is embedded; a model over 2 GB must use external data"
        assert tensor.data_type == TensorProto.FLOAT and list(tensor.dims) == [TENSOR_BYTES // 4], name
        data = _data_file(out, info)
        offset = int(info.get("offset", "0"))
        length = int(info.get("length", data.stat().st_size - offset))
        assert length == TENSOR_BYTES, f"{name}: external length {length}, expected {TENSOR_BYTES}"
        assert _hash_range(data, offset, length) == digest, f"{name}: data differs from the original"


@pytest.mark.large
def test_large_model_roundtrip(opt: Path, work_dir: Path) -> None:
    roundtrip_check.require_opt(opt)
    free = shutil.disk_usage(work_dir).free
    if free < 2.5 * MODEL_DATA_BYTES:
        pytest.fail(f"{work_dir} has {free >> 20} MiB free; this test needs {int(2.5 * MODEL_DATA_BYTES) >> 20}")
    folder = work_dir / "large"
    try:
        (folder / "in").mkdir(parents=True)
        (folder / "out").mkdir()
        model_path, expected = _write_large_model(folder / "in")
        # The plain round trip, and the default pipeline (whose passes must not page the weights in).
        for label, extra in (("O0", roundtrip_check.ROUNDTRIP_ARGS), ("O2", ("-O2",))):
            out = folder / "out" / f"large_{label}.onnx"
            args = [str(opt), str(model_path), "-o", str(out), *extra]
            run = peak_rss.run(args, folder)
            print(
                f"\nLARGE_MODEL_PEAK_RSS_MB[{label}]={run.peak_rss / 2**20:.1f}"
                f" (model data {MODEL_DATA_BYTES / 2**20:.0f} MiB, opt {run.seconds:.1f}s)"
            )
            assert run.returncode == 0, f"opt {label} failed on the large model: {run.stderr.strip()}"
            _check_large_output(out, expected)
            assert run.peak_rss < MODEL_DATA_BYTES / 2, (
                f"opt {label} peaked at {run.peak_rss >> 20} MiB RSS on a {MODEL_DATA_BYTES >> 20} MiB model; "
                "the bound is half"
            )
            for f in (folder / "out").iterdir():
                f.unlink()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------
# Small models


def _arrays(path: Path) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))  # with its external data
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _assert_roundtrip(outcome: roundtrip_check.Outcome) -> None:
    assert not outcome.failures, "\n".join(outcome.failures)
    assert outcome.checker_ok_after and outcome.ort_runnable and outcome.identical, outcome


@pytest.mark.parametrize("suite", ["polygraphy", "graphsurgeon"])
def test_shared_ext_weights_roundtrip(suite: str, shared_dir: Path, opt: Path, work_dir: Path) -> None:
    model = shared_dir / "models" / "real" / suite / "ext_weights.onnx"
    case = roundtrip_check.Case(f"real/{suite}/ext_weights.onnx", model, None)
    outcome = roundtrip_check.check_case(case, opt, work_dir)
    _assert_roundtrip(outcome)
    before, after = _arrays(model), _arrays(roundtrip_check.output_path(work_dir))
    assert before.keys() == after.keys()
    for name in before:
        assert before[name].tobytes() == after[name].tobytes(), f"{name} changed"


def test_external_input_stays_external(opt: Path, work_dir: Path) -> None:
    # 16 KiB, above any sensible threshold for keeping small tensors embedded.
    (work_dir / "in").mkdir()
    (work_dir / "out").mkdir()
    weights = np.random.default_rng(1).standard_normal((64, 64), dtype=np.float32)
    (work_dir / "in" / "weights.bin").write_bytes(weights.tobytes())
    tensor = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[64, 64])
    _external(tensor, "weights.bin", 0, weights.nbytes)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y"])],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", 64])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["n", 64])],
        initializer=[tensor],
    )
    model = work_dir / "in" / "model.onnx"
    onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]), model)

    outcome = roundtrip_check.check_case(roundtrip_check.Case("external", model, None), opt, work_dir / "out")
    _assert_roundtrip(outcome)
    out = roundtrip_check.output_path(work_dir / "out")
    w = next(t for t in onnx.load(str(out), load_external_data=False).graph.initializer if t.name == "W")
    info = roundtrip_check.external_info(w)
    assert info is not None, "W came from external data, so it should stay external"
    data = _data_file(out, info)
    offset = int(info.get("offset", "0"))
    assert data.read_bytes()[offset : offset + weights.nbytes] == weights.tobytes()


@pytest.mark.parametrize("flag, data_name", [("--external-data", "out.onnx.data"), ("--external-data=w.bin", "w.bin")])
def test_external_data_flag(flag: str, data_name: str, shared_dir: Path, opt: Path, work_dir: Path) -> None:
    model = shared_dir / "models" / "real" / "mnist_opset7.onnx"
    case = roundtrip_check.Case("real/mnist_opset7.onnx", model, None)
    outcome = roundtrip_check.check_case(case, opt, work_dir, (flag,))
    _assert_roundtrip(outcome)
    out = roundtrip_check.output_path(work_dir)
    data = work_dir / data_name
    assert data.is_file() and data.stat().st_size > 0, f"{flag} wrote no {data_name}"
    locations = roundtrip_check.external_locations(onnx.load(str(out), load_external_data=False))
    assert locations == {data_name}, f"external locations {locations}, expected only {data_name!r}"
    assert out.stat().st_size < model.stat().st_size / 2, "the weights should have moved to the data file"
    before, after = _arrays(model), _arrays(out)
    assert {n: a.tobytes() for n, a in before.items()} == {n: a.tobytes() for n, a in after.items()}
