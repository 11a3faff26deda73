"""onnxopt.serve: models served by Ray Serve on a local Ray instance, on the reference runner.

Three applications: models/tiny_cnn (batch dimension N: requests are stacked) on two replicas, the
same model with N fixed to 1 (run request by request), and the tiny Llama decoder. Clients are
threads sending HTTP requests; each answer is compared with onnxopt's own run of its inputs.
"""

from __future__ import annotations

import io
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import pytest
import ray
import requests
from ray import serve

import onnxopt
from onnxopt.serve import app

REPO = Path(__file__).resolve().parents[3]
CNN = REPO / "models/tiny_cnn/model.onnx"
LLAMA = REPO / "models/decoders/llama_kv_dynamo"


def free_port() -> int:
    # pytest-xdist may start this module's fixture in several workers at once: one port each.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fixed_batch(tmp: Path) -> Path:
    """tiny_cnn with its batch dimension fixed to 1: nothing to stack requests along."""
    m = onnx.load(CNN)
    for v in [*m.graph.input, *m.graph.output]:
        v.type.tensor_type.shape.dim[0].dim_value = 1
    path = tmp / "fixed.onnx"
    onnx.save(m, path)
    return path


def one_row_only(tmp: Path) -> Path:
    """y = Reshape(x, [1, 4]) + 1 with x and y declared [N, 4]: the declared batch dimension
    invites stacking, and a stacked run fails (its rows do not fit [1, 4])."""
    h = onnx.helper
    graph = h.make_graph(
        [h.make_node("Reshape", ["x", "shape"], ["r"]), h.make_node("Add", ["r", "one"], ["y"])],
        "one_row_only", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 4])],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 4])],
        [h.make_tensor("shape", onnx.TensorProto.INT64, [2], [1, 4]),
         h.make_tensor("one", onnx.TensorProto.FLOAT, [], [1.0])])
    path = tmp / "one_row_only.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), path)
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        port = free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        # Requests wait up to 0.5 s for others: concurrent clients share model runs.
        serve.run(app(str(CNN), replicas=2, num_cpus=0.5, max_batch_size=8,
                      batch_wait_timeout_s=0.5, name="cnn"), name="cnn", route_prefix="/cnn")
        tmp = tmp_path_factory.mktemp("serve")
        serve.run(app(str(fixed_batch(tmp)), num_cpus=0.5,
                      batch_wait_timeout_s=0.5, name="fixed"), name="fixed", route_prefix="/fixed")
        serve.run(app(str(one_row_only(tmp)), num_cpus=0.5, batch_wait_timeout_s=0.5,
                      name="rows"), name="rows", route_prefix="/rows")
        serve.run(app(str(LLAMA / "model.onnx"), num_cpus=0.5, name="llama"), name="llama",
                  route_prefix="/llama")
        yield f"http://127.0.0.1:{port}"
    finally:
        serve.shutdown()
        ray.shutdown()


def as_json(inputs):
    return {"inputs": {n: {"dtype": a.dtype.name, "shape": list(a.shape),
                           "data": a.ravel().tolist()} for n, a in inputs.items()}}


def from_json(t):
    return np.asarray(t["data"], dtype=t["dtype"]).reshape(t["shape"])


def images(seed: int, rows: int = 1):
    return {"x": np.random.default_rng(seed).standard_normal((rows, 3, 8, 8), dtype=np.float32)}


def post(served: str, route: str, inputs):
    r = requests.post(f"{served}/{route}", json=as_json(inputs), timeout=60)
    assert r.status_code == 200, r.text
    return r


def concurrent(served: str, route: str, n: int):
    # Rows 1..3 per request: the stacked run splits its outputs back by rows.
    inputs = [images(i, rows=1 + i % 3) for i in range(n)]
    with ThreadPoolExecutor(n) as pool:
        answers = list(pool.map(lambda x: post(served, route, x), inputs))
    for x, r in zip(inputs, answers):
        want = onnxopt.run(CNN, x)["probs"]
        got = from_json(r.json()["outputs"]["probs"])
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    return answers


def batches(answers):
    """{(replica, batch): [the batch size each of its requests was told]}."""
    seen: dict = {}
    for r in answers:
        key = (r.headers["x-onnxopt-replica"], r.headers["x-onnxopt-batch"])
        seen.setdefault(key, []).append(int(r.headers["x-onnxopt-batch-size"]))
    return seen


def test_concurrent_clients_get_onnxopt_answers_in_shared_runs(served):
    seen = batches(concurrent(served, "cnn", 12))
    # Every request of a model run was told that run's size, and the sizes add up.
    assert all(sizes == [len(sizes)] * len(sizes) for sizes in seen.values()), seen
    assert max(len(s) for s in seen.values()) > 1, f"no model run shared: {seen}"
    # The replicas' own records of their runs hold the same batches.
    recorded = []
    for _ in range(20):
        stats = requests.get(f"{served}/cnn/stats", timeout=30).json()
        recorded.append(tuple(stats["batches"]))
    assert any(b > 1 for run in recorded for b in run)


def test_fixed_batch_model_runs_request_by_request(served):
    inputs = [images(100 + i) for i in range(6)]
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda x: post(served, "fixed", x), inputs))
    for x, r in zip(inputs, answers):
        np.testing.assert_array_equal(from_json(r.json()["outputs"]["probs"]),
                                      onnxopt.run(CNN, x)["probs"])
    assert {r.headers["x-onnxopt-batch-size"] for r in answers} == {"1"}
    assert len({r.headers["x-onnxopt-batch"] for r in answers}) == 6


def test_failed_stacked_run_is_done_again_request_by_request(served):
    inputs = [{"x": np.full((1, 4), i, np.float32)} for i in range(6)]
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda x: post(served, "rows", x), inputs))
    for x, r in zip(inputs, answers):
        np.testing.assert_array_equal(from_json(r.json()["outputs"]["y"]), x["x"] + 1)
    assert {r.headers["x-onnxopt-batch-size"] for r in answers} == {"1"}
    # A request of two rows fails alone too, and says why.
    r = requests.post(f"{served}/rows", json=as_json({"x": np.zeros((2, 4), np.float32)}),
                      timeout=60)
    assert r.status_code == 400 and "Reshape" in r.json()["error"], r.text


def test_npy_in_npy_out(served):
    x = images(7, rows=2)["x"]
    buf = io.BytesIO()
    np.save(buf, x)
    r = requests.post(f"{served}/cnn", data=buf.getvalue(),
                      headers={"content-type": "application/x-npy"}, timeout=60)
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(np.load(io.BytesIO(r.content)), onnxopt.run(CNN, {"x": x})["probs"],
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("body, status, message", [
    ({"inputs": {"y": {"dtype": "float32", "shape": [1], "data": [0]}}}, 400,
     "missing input 'x'"),
    ({"inputs": {"x": {"dtype": "float32", "shape": [1, 3, 4, 4], "data": [0] * 48}}}, 400,
     "Gemm: inner dimensions differ (32 vs 128)"),
    ({"inputs": {"x": {"dtype": "float32", "shape": [1, 3, 8, 8], "data": [0] * 5}}}, 400,
     "input 'x': 5 values for shape [1, 3, 8, 8]"),
    ({"inputs": {"x": {"dtype": "quux", "shape": [1], "data": [0]}}}, 400, "unknown dtype 'quux'"),
    ({"x": 1}, 400, 'the body is a JSON object {"inputs"'),
])
def test_bad_request_is_a_4xx_with_the_message(served, body, status, message):
    # Sent beside good requests: a bad one in a shared run answers for itself only.
    with ThreadPoolExecutor(3) as pool:
        good = [pool.submit(post, served, "cnn", images(i)) for i in range(2)]
        bad = requests.post(f"{served}/cnn", json=body, timeout=60)
        for g in good:
            g.result()
    assert bad.status_code == status, bad.text
    error = bad.json()["error"]
    assert message in error and "\n" not in error


def test_not_json_and_generate_on_a_non_decoder(served):
    r = requests.post(f"{served}/cnn", data=b"{", timeout=60)
    assert r.status_code == 400 and r.json()["error"].startswith("the body is not JSON")
    r = requests.post(f"{served}/cnn/generate", json={"input_ids": [1, 2]}, timeout=60)
    assert r.status_code == 400 and "no KV-cache inputs" in r.json()["error"]


def golden():
    return json.loads((LLAMA / "generate_golden.json").read_text())["cases"]


def test_generate_returns_the_golden_greedy_ids(served):
    cases = golden()
    assert {c["name"] for c in cases} == {"greedy", "batch", "eos", "padded"}
    for case in cases:
        body = {k: case[k] for k in ("input_ids", "attention_mask", "max_new_tokens",
                                     "eos_token_id") if case.get(k) is not None}
        r = requests.post(f"{served}/llama/generate", json=body, timeout=60)
        assert r.status_code == 200, r.text
        assert r.json()["sequences"] == case["sequences"], case["name"]


def test_generate_streams_tokens(served):
    case = golden()[0]
    r = requests.post(f"{served}/llama/generate", json={
        "input_ids": case["input_ids"], "max_new_tokens": 8, "stream": True}, stream=True,
        timeout=60)
    assert r.status_code == 200
    lines = [json.loads(line) for line in r.iter_lines() if line]
    steps = [line["tokens"] for line in lines[:-1]]
    prompt = len(case["input_ids"][0])
    assert steps == [[t] for t in case["sequences"][0][prompt:prompt + 8]]
    assert lines[-1]["sequences"] == [case["sequences"][0][:prompt + 8]]


def test_generate_bad_prompt_is_a_4xx(served):
    r = requests.post(f"{served}/llama/generate", json={"input_ids": [[1, 2], [3]], "stream": True},
                      timeout=60)
    assert r.status_code == 400 and r.json()["error"], r.text
    r = requests.post(f"{served}/llama/generate", json={"input_ids": "abc"}, timeout=60)
    assert r.status_code == 400, r.text


def replica_actors(app_name: str):
    return [a for a in ray.util.list_named_actors(all_namespaces=True)
            if a["name"].startswith(f"SERVE_REPLICA::{app_name}#")]


def test_killed_replica_is_replaced(served):
    before = {a["name"] for a in replica_actors("cnn")}
    assert len(before) == 2
    victim = sorted(before)[0]
    ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=True)
    deadline = time.monotonic() + 25
    while time.monotonic() < deadline:
        now = {a["name"] for a in replica_actors("cnn")}
        if victim not in now and len(now) == 2:
            break
        time.sleep(0.5)
    assert victim not in now and len(now) == 2, now
    # Serve routes to the new replica once it is up; every request is answered right.
    wait_running("cnn", 2)
    answers = concurrent(served, "cnn", 8)
    assert all(r.headers["x-onnxopt-replica"] not in victim for r in answers)


def wait_running(app_name: str, replicas: int) -> None:
    deadline = time.monotonic() + 25
    while time.monotonic() < deadline and dict(serve.status().applications[app_name].deployments[
            app_name].replica_states) != {"RUNNING": replicas}:
        time.sleep(0.5)


def test_stream_of_a_killed_replica_ends_short_and_the_next_is_served(served):
    # The stream has begun (its first step arrived): the replica is generating when it dies. The
    # client sees the stream cut before its sequences line; it is not left waiting.
    r = requests.post(f"{served}/llama/generate", json={
        "input_ids": [1, 2, 3], "max_new_tokens": 4000, "stream": True}, stream=True, timeout=60)
    lines = r.iter_lines()
    assert json.loads(next(lines))["tokens"]
    (victim,) = [a["name"] for a in replica_actors("llama")]
    ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=True)
    rest = []
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        rest.extend(json.loads(line) for line in lines if line)
    assert all("sequences" not in line for line in rest)
    wait_running("llama", 1)
    case = golden()[0]
    r = requests.post(f"{served}/llama/generate", json={
        "input_ids": case["input_ids"], "max_new_tokens": case["max_new_tokens"]}, timeout=60)
    assert r.status_code == 200 and r.json()["sequences"] == case["sequences"], r.text


def test_command_line_usage_errors(tmp_path, capsys):
    from onnxopt.serve import main

    assert main([str(tmp_path / "none.onnx")]) == 2
    assert "none.onnx: no such model file" in capsys.readouterr().err
    (tmp_path / "garbage.onnx").write_bytes(b"garbage")
    assert main([str(tmp_path / "garbage.onnx")]) == 2
    assert "garbage.onnx: not an ONNX model: " in capsys.readouterr().err
    with pytest.raises(ValueError, match="garbage.onnx: not an ONNX model: "):
        app(str(tmp_path / "garbage.onnx"))
    assert main([str(CNN), "--replicas", "0"]) == 2
    assert "--replicas must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(CNN), "--runner", "onnxruntime"])
