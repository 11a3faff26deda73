"""onnxopt.generate: the tiny decoders of models/decoders give Hugging Face's greedy ids
(generate_golden.json beside each, written by models/decoders/generate_golden.py), the same as
`opt generate` (tests/python/test_generate.py); the callback streams each step and can stop it;
sampling is fixed by its seed; bad input raises with opt's message."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import onnxopt

REPO = Path(__file__).resolve().parents[3]
DECODERS = REPO / "models" / "decoders"
NAMES = ["llama_kv_dynamo", "qwen2_kv_dynamo", "phi_kv_dynamo", "gptj_kv_dynamo", "mistral_kv_dynamo",
         "gemma_kv_dynamo"]


def cases(name: str) -> list[dict]:
    return json.loads((DECODERS / name / "generate_golden.json").read_text())["cases"]


@pytest.mark.parametrize("name", NAMES)
def test_generate_is_hugging_faces_greedy(name: str) -> None:
    model = DECODERS / name / "model.onnx"
    for case in cases(name):
        ids = onnxopt.generate(model, case["input_ids"], max_new_tokens=case["max_new_tokens"],
                               eos_token_id=case["eos_token_id"], attention_mask=case.get("attention_mask"))
        assert ids.dtype == np.int64 and ids.tolist() == case["sequences"], case["name"]


def test_one_row_in_one_row_out_and_models_as_bytes() -> None:
    model = DECODERS / "llama_kv_dynamo" / "model.onnx"
    case = cases("llama_kv_dynamo")[0]
    prompt = np.array(case["input_ids"][0])
    ids = onnxopt.generate(model.read_bytes(), prompt, max_new_tokens=32)
    assert ids.ndim == 1 and ids.tolist() == case["sequences"][0]


def test_callback_streams_each_step_and_can_stop() -> None:
    model = DECODERS / "qwen2_kv_dynamo" / "model.onnx"
    case = cases("qwen2_kv_dynamo")[1]  # two rows
    seen = []

    def callback(step: int, tokens: list[int]) -> bool:
        seen.append((step, tokens))
        return step < 4

    ids = onnxopt.generate(model, case["input_ids"], max_new_tokens=32, callback=callback)
    prompt = len(case["input_ids"][0])
    assert [s for s, _ in seen] == [0, 1, 2, 3, 4]
    assert ids.tolist() == [row[:prompt + 5] for row in case["sequences"]]
    assert [t for _, t in seen] == [[row[prompt + i] for row in case["sequences"]] for i in range(5)]

    def raising(step: int, tokens: list[int]) -> None:
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        onnxopt.generate(model, case["input_ids"], max_new_tokens=4, callback=raising)


def test_sampling_is_fixed_by_its_seed() -> None:
    model = DECODERS / "phi_kv_dynamo" / "model.onnx"
    kw = dict(max_new_tokens=12, temperature=1.2, top_k=40, top_p=0.9)
    first = onnxopt.generate(model, [5, 6, 7], seed=1, **kw)
    assert first.shape == (15,)
    assert onnxopt.generate(model, [5, 6, 7], seed=1, **kw).tolist() == first.tolist()
    assert onnxopt.generate(model, [5, 6, 7], seed=2, **kw).tolist() != first.tolist()


def test_bad_input_raises_with_the_reason() -> None:
    model = DECODERS / "gptj_kv_dynamo" / "model.onnx"
    with pytest.raises(onnxopt.InvalidArgumentError, match=r"input id 256 \(row 0, position 0\) is out of"):
        onnxopt.generate(model, [256])
    with pytest.raises(onnxopt.InvalidArgumentError, match="different lengths"):
        onnxopt.generate(model, [[1, 2], [3]])
    padded = onnxopt.generate(model, [[0, 1, 2], [3, 4, 5]], attention_mask=[[0, 1, 1], [1, 1, 1]],
                              max_new_tokens=2)
    assert padded.shape == (2, 5)
    cnn = REPO / "models" / "tiny_cnn" / "model.onnx"
    with pytest.raises(onnxopt.InvalidArgumentError, match=f"{cnn}: no KV-cache inputs"):
        onnxopt.generate(cnn, [1])


def test_step_wise_generator_is_the_whole_generation() -> None:
    model = DECODERS / "llama_kv_dynamo" / "model.onnx"
    case = cases("llama_kv_dynamo")[1]  # two rows
    gen = onnxopt.Generator(model, max_new_tokens=32)
    assert gen.done  # nothing started
    gen.start(case["input_ids"])
    steps = []
    while not gen.done:
        steps.append(gen.step())
    prompt = len(case["input_ids"][0])
    assert steps == [[row[prompt + i] for row in case["sequences"]] for i in range(32)]
    assert gen.sequences.tolist() == case["sequences"]
    stats = gen.stats
    assert stats["batch"] == 2 and stats["prompt_tokens"] == prompt and stats["decode_steps"] == 31
    assert stats["prefill_ms"] > 0 and stats["decode_tokens_per_second"] > 0
    with pytest.raises(onnxopt.InvalidArgumentError, match="after the generation is done"):
        gen.step()
    gen.start(case["input_ids"][:1])  # a new prompt: the model is not read again
    assert gen.step() == [case["sequences"][0][prompt]]
