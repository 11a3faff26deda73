"""LSTM, GRU and RNN folded by the reference kernels against onnxruntime, over the options ONNX's node
test cases leave out: directions, sequence_lens, initial states, peepholes, clip, input_forget,
linear_before_reset, activation functions with alpha/beta, every optional output. Each case is written
as a node test case (model + test_data_set_0 from onnxruntime) and run through conformance.run_case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import conformance

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 3
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}

CASES = [
    ("LSTM", {"direction": "forward"}, dict(outputs=3)),
    ("LSTM", {"direction": "reverse"}, dict(outputs=3, lens=True)),
    ("LSTM", {"direction": "bidirectional"}, dict(outputs=3, lens=True, initial=True, peepholes=True)),
    ("LSTM", {"direction": "bidirectional", "clip": 0.5}, dict(outputs=2, initial=True)),
    ("LSTM", {"direction": "bidirectional"}, dict(outputs=3, zero_len=True, initial=True)),
    ("GRU", {"direction": "reverse"}, dict(outputs=2, zero_len=True, initial=True)),
    ("LSTM", {"input_forget": 1}, dict(outputs=3, peepholes=True, lens=True)),
    ("LSTM", {"activations": ["HardSigmoid", "LeakyRelu", "Softsign"], "activation_alpha": [0.3, 0.2],
              "activation_beta": [0.4]}, dict(outputs=3)),
    ("LSTM", {"direction": "bidirectional",
              "activations": ["Sigmoid", "Tanh", "Tanh", "Sigmoid", "Relu", "Softplus"]}, dict(outputs=3)),
    ("LSTM", {"activations": ["Sigmoid", "Elu", "ThresholdedRelu"], "activation_alpha": [0.5, 0.1]},
     dict(outputs=1)),
    ("GRU", {"direction": "forward"}, dict(outputs=2)),
    ("GRU", {"direction": "reverse", "linear_before_reset": 1}, dict(outputs=2, lens=True)),
    ("GRU", {"direction": "bidirectional"}, dict(outputs=2, lens=True, initial=True)),
    ("GRU", {"direction": "bidirectional", "linear_before_reset": 1, "clip": 0.7}, dict(outputs=2, lens=True)),
    ("GRU", {"activations": ["HardSigmoid", "Tanh"]}, dict(outputs=2, initial=True)),
    ("RNN", {"direction": "bidirectional"}, dict(outputs=2, lens=True, initial=True)),
    ("RNN", {"direction": "reverse", "activations": ["Relu"]}, dict(outputs=2, lens=True)),
    ("RNN", {"activations": ["Sigmoid"], "clip": 0.3}, dict(outputs=1)),
]


def _case_id(case) -> str:
    op, attrs, opts = case
    keys = [f"{k}={v}" if not isinstance(v, list) else f"{k}={'-'.join(map(str, v))}" for k, v in attrs.items()]
    return "_".join([op] + keys + sorted(k for k, v in opts.items() if v is True))


def _make_case(folder: Path, op: str, attrs: dict, opts: dict, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    g = GATES[op]
    f32 = lambda *shape: (0.5 * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
    feeds = {"X": f32(SEQ, BATCH, INPUT), "W": f32(dirs, g * HIDDEN, INPUT), "R": f32(dirs, g * HIDDEN, HIDDEN),
             "B": f32(dirs, 2 * g * HIDDEN)}
    names = ["X", "W", "R", "B"]
    if opts.get("lens") or opts.get("zero_len") or opts.get("initial") or opts.get("peepholes"):
        names.append("sequence_lens")
        if opts.get("zero_len"):  # a batch entry of no steps: Y_h and Y_c are zero there
            feeds["sequence_lens"] = np.array([2, 0, SEQ][:BATCH], np.int32)
        elif opts.get("lens"):
            feeds["sequence_lens"] = np.array([SEQ, 2, 4][:BATCH], np.int32)
        else:
            names[-1] = ""
    if opts.get("initial") or opts.get("peepholes"):
        names.append("initial_h" if opts.get("initial") else "")
        if opts.get("initial"):
            feeds["initial_h"] = f32(dirs, BATCH, HIDDEN)
        if op == "LSTM":
            names.append("initial_c" if opts.get("initial") else "")
            if opts.get("initial"):
                feeds["initial_c"] = f32(dirs, BATCH, HIDDEN)
            if opts.get("peepholes"):
                names.append("P")
                feeds["P"] = f32(dirs, 3 * HIDDEN)
    out_names = ["Y", "Y_h", "Y_c"][: opts["outputs"]]
    node = helper.make_node(op, names, out_names, hidden_size=HIDDEN, **attrs)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT32 if n == "sequence_lens" else TensorProto.FLOAT,
                                            list(feeds[n].shape)) for n in names if n]
    shapes = {"Y": [SEQ, dirs, BATCH, HIDDEN], "Y_h": [dirs, BATCH, HIDDEN], "Y_c": [dirs, BATCH, HIDDEN]}
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n]) for n in out_names]
    model = helper.make_model(helper.make_graph([node], "rnn_case", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    folder.mkdir(parents=True)
    path = folder / "model.onnx"
    onnx.save(model, str(path))

    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    results = sess.run(None, {n: feeds[n] for n in names if n})
    data = folder / "test_data_set_0"
    data.mkdir()
    for i, n in enumerate(n for n in names if n):
        (data / f"input_{i}.pb").write_bytes(numpy_helper.from_array(feeds[n], n).SerializeToString())
    for i, (n, v) in enumerate(zip(out_names, results)):
        (data / f"output_{i}.pb").write_bytes(numpy_helper.from_array(v, n).SerializeToString())
    return path


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_recurrent_matches_onnxruntime(case, opt: Path, work_dir: Path) -> None:
    op, attrs, opts = case
    path = _make_case(work_dir / "case", op, attrs, opts, seed=CASES.index(case))
    result = conformance.run_case(path, opt, work_dir)
    assert result.outcome == "pass", f"{result.case}: {result.outcome} {result.detail}"
