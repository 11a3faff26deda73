"""Generates models/speech_rnn: a small speech-style acoustic model with recurrent layers, and goldens.

feats [T, N, 16] -> bidirectional LSTM (hidden 12, sequence_lens) -> Transpose/Reshape [T, N, 24]
-> bidirectional GRU (hidden 8, linear_before_reset=1 as PyTorch exports it, sequence_lens)
-> Transpose/Reshape [T, N, 16] -> MatMul + Add -> LogSoftmax: per-frame scores of 6 classes, plus
the GRU's final state. Opset 14, seeded random weights, dynamic `T` and `N`. Goldens:
test_data_set_0/input_{0,1}.pb and output_{0,1}.pb, from onnxruntime on this (unoptimized) model,
with T=10, N=3 and sequence lengths 10, 7, 4.

    python models/speech_rnn/make_model.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import golden  # noqa: E402  (tools/golden.py)
FEATS, LSTM_H, GRU_H, CLASSES = 16, 12, 8, 6


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(20261201)
    f32 = lambda *shape: (0.3 * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
    inits = [
        numpy_helper.from_array(f32(2, 4 * LSTM_H, FEATS), "lstm_W"),
        numpy_helper.from_array(f32(2, 4 * LSTM_H, LSTM_H), "lstm_R"),
        numpy_helper.from_array(f32(2, 8 * LSTM_H), "lstm_B"),
        numpy_helper.from_array(f32(2, 3 * GRU_H, 2 * LSTM_H), "gru_W"),
        numpy_helper.from_array(f32(2, 3 * GRU_H, GRU_H), "gru_R"),
        numpy_helper.from_array(f32(2, 6 * GRU_H), "gru_B"),
        numpy_helper.from_array(np.array([0, 0, 2 * LSTM_H], np.int64), "shape_lstm"),
        numpy_helper.from_array(np.array([0, 0, 2 * GRU_H], np.int64), "shape_gru"),
        numpy_helper.from_array(f32(2 * GRU_H, CLASSES), "fc_w"),
        numpy_helper.from_array(f32(CLASSES), "fc_b"),
    ]
    nodes = [
        helper.make_node("LSTM", ["feats", "lstm_W", "lstm_R", "lstm_B", "seq_lens"],
                         ["lstm_y", "", ""], name="lstm", hidden_size=LSTM_H,
                         direction="bidirectional"),
        helper.make_node("Transpose", ["lstm_y"], ["lstm_t"], name="lstm_t", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["lstm_t", "shape_lstm"], ["lstm_out"], name="lstm_reshape"),
        helper.make_node("GRU", ["lstm_out", "gru_W", "gru_R", "gru_B", "seq_lens"],
                         ["gru_y", "gru_h"], name="gru", hidden_size=GRU_H,
                         direction="bidirectional", linear_before_reset=1),
        helper.make_node("Transpose", ["gru_y"], ["gru_t"], name="gru_t", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["gru_t", "shape_gru"], ["gru_out"], name="gru_reshape"),
        helper.make_node("MatMul", ["gru_out", "fc_w"], ["fc"], name="fc"),
        helper.make_node("Add", ["fc", "fc_b"], ["logits"], name="fc_bias"),
        helper.make_node("LogSoftmax", ["logits"], ["scores"], name="log_softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "speech_rnn",
        [helper.make_tensor_value_info("feats", TensorProto.FLOAT, ["T", "N", FEATS]),
         helper.make_tensor_value_info("seq_lens", TensorProto.INT32, ["N"])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["T", "N", CLASSES]),
         helper.make_tensor_value_info("gru_h", TensorProto.FLOAT, [2, "N", GRU_H])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8,
                              producer_name="onnxopt models/speech_rnn/make_model.py")
    onnx.checker.check_model(model, full_check=True)  # with shape inference
    return model


def main() -> None:
    feats = np.random.default_rng(7).standard_normal((10, 3, FEATS)).astype(np.float32)
    seq_lens = np.array([10, 7, 4], np.int32)
    golden.save_with_golden(build(), HERE, {"feats": feats, "seq_lens": seq_lens})


if __name__ == "__main__":
    main()
