"""-O2 --target-opset 23 on decoder LLMs exported from PyTorch: models/transformers' Llamas (both
exporters, no cache) and models/decoders' Llama, Qwen2, Phi and GPT-J (dynamo, with a KV cache;
Phi's rotary is partial, GPT-J's partial and interleaved, before the head transpose). Every rotary
embedding becomes RotaryEmbedding and every attention Attention, with the grouped KV heads and the
cache folded in (past_key_values.{i}.* in, present.{i}.* out of the op itself); the result matches
the original on onnxruntime and on the reference kernels."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from roundtrip_check import REPO_ROOT

LAYERS = 2
# Not decoders/mistral_kv_dynamo: its keys are the sliding-window cache's (`past + seq - Max(0,
# past - 4095)` long), which its mask (`past + seq`) matches only below the window, so
# fuse-attention leaves it.
MODELS = ["transformers/llama_dynamo", "transformers/llama_legacy", "decoders/llama_kv_dynamo",
          "decoders/qwen2_kv_dynamo", "decoders/phi_kv_dynamo", "decoders/gptj_kv_dynamo",
          "decoders/gemma_kv_dynamo"]


def _inputs(model_dir: Path) -> list[np.ndarray]:
    files = sorted((model_dir / "test_data_set_0").glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
    return [numpy_helper.to_array(onnx.load_tensor(str(f))) for f in files]


def _run(path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})


@pytest.mark.parametrize("name", MODELS)
def test_decoder_fuses_to_opset23_ops(name: str, run_opt, work_dir: Path) -> None:
    model_dir = REPO_ROOT / "models" / name
    src, out = model_dir / "model.onnx", work_dir / "o2.onnx"
    proc = run_opt(src, "-O2", "--target-opset", "23", "-o", out)
    assert proc.returncode == 0, proc.stderr
    graph = onnx.load(str(out)).graph
    ops = Counter(n.op_type for n in graph.node)
    assert ops["RotaryEmbedding"] == 2 * LAYERS, ops
    assert ops["Attention"] == LAYERS, ops
    for gone in ("Neg", "Slice", "Softmax"):
        assert ops[gone] == 0, f"{gone} left: {ops}"
    cached = any(i.name.startswith("past_key_values.") for i in graph.input)
    for node in (n for n in graph.node if n.op_type == "Attention"):
        if not cached:
            assert len(node.output) == 1
            continue
        # The cache goes through the op: past in as inputs 4 and 5, present out as outputs 1 and 2.
        layer = node.output[1].split(".")[1]
        assert list(node.input[4:6]) == [f"past_key_values.{layer}.key", f"past_key_values.{layer}.value"]
        assert list(node.output[1:3]) == [f"present.{layer}.key", f"present.{layer}.value"]
    if cached:
        assert not any(n.op_type == "Concat" and set(n.input) & {i.name for i in graph.input} for n in graph.node)

    inputs = _inputs(model_dir)
    for expected, got in zip(_run(src, inputs), _run(out, inputs)):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    feeds = [f"--input={i.name}={p}" for i, p in zip(onnx.load(str(src)).graph.input,
                                                    sorted((model_dir / "test_data_set_0").glob("input_*.pb")))]
    proc = run_opt("check", src, out, *feeds)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# The gated MLP's op (Llama's and Qwen2's SwiGLU, Gemma's GELU gate), by model.
GATED = {"transformers/llama_dynamo": "SwiGlu", "transformers/llama_legacy": "SwiGlu",
         "decoders/llama_kv_dynamo": "SwiGlu", "decoders/qwen2_kv_dynamo": "SwiGlu",
         "decoders/gemma_kv_dynamo": "GeGlu"}


@pytest.mark.parametrize("name", MODELS)
def test_decoder_fuses_to_cuda_target_ops(name: str, run_opt, work_dir: Path) -> None:
    """-O3 --target cuda: each layer's Q, K and V projections are one product and a Split; Llama's
    and Qwen2's SwiGLU MLP is one gate/up product and SwiGlu, and their residual Adds feeding
    RMSNormalization are SkipRMSNormalization (Gemma's GELU-gated MLP: GeGlu). The result still
    matches on onnxruntime (which inlines the ai.onnxopt functions)."""
    model_dir = REPO_ROOT / "models" / name
    src, out = model_dir / "model.onnx", work_dir / "o3.onnx"
    proc = run_opt(src, "-O3", "--target", "cuda", "--target-opset", "23", "-o", out)
    assert proc.returncode == 0, proc.stderr
    graph = onnx.load(str(out)).graph
    ops = Counter(n.op_type for n in graph.node)
    assert ops["Split"] == LAYERS, ops
    for node in (n for n in graph.node if n.op_type == "Split"):
        assert len(node.output) == 3 and len(node.input) == 2, node
    gated = name in GATED
    for glu in ("SwiGlu", "GeGlu"):
        assert ops[glu] == (LAYERS if GATED.get(name) == glu else 0), ops
    assert ops["SkipRMSNormalization"] == (2 * LAYERS if gated else 0), ops
    if gated:
        # Per layer: QKV, gate/up, o_proj and down; and the LM head.
        assert ops["MatMul"] + ops["MatMulBias"] == 4 * LAYERS + 1, ops
        assert ops["Sigmoid"] == 0 and ops["RMSNormalization"] == 1, ops
    inputs = _inputs(model_dir)
    for expected, got in zip(_run(src, inputs), _run(out, inputs)):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_cuda_target_decoder_reoptimizes_to_itself(run_opt, work_dir: Path) -> None:
    """-O3 --target cuda on its own output: -O1 inlines SwiGlu and SkipRMSNormalization, the
    fusions make them again (SwiGlu from its body's Split halves), and the packed QKV stays."""
    src = REPO_ROOT / "models" / "decoders" / "llama_kv_dynamo" / "model.onnx"
    once, twice = work_dir / "once.onnx", work_dir / "twice.onnx"
    for a, b in [(src, once), (once, twice)]:
        proc = run_opt(a, "-O3", "--target", "cuda", "--target-opset", "23", "-o", b)
        assert proc.returncode == 0, proc.stderr
    ops = [Counter(n.op_type for n in onnx.load(str(p)).graph.node) for p in (once, twice)]
    assert ops[0] == ops[1]
    assert ops[1]["SwiGlu"] == LAYERS
