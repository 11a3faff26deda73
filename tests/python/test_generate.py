"""`opt generate` on the tiny decoders of models/decoders (Llama, Qwen2, Phi, GPT-J; dynamo exports
with a KV cache). Greedy generation on the reference runner gives the ids Hugging Face `generate`
gave in float32 (generate_golden.json beside each model, written by
models/decoders/generate_golden.py: one row, a batch, an end-of-sequence id, a left-padded batch
with its mask), before and after -O2 --target-opset 23 (the cache folded into Attention-23) and
-O3 --target cuda (its ai.onnxopt ops on the reference runner too); the -O2 model gives them on
onnxruntime as well. Sampling is fixed by its seed; bad input is one error line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from roundtrip_check import REPO_ROOT

DECODERS = ["llama_kv_dynamo", "qwen2_kv_dynamo", "phi_kv_dynamo", "gptj_kv_dynamo", "mistral_kv_dynamo",
            "gemma_kv_dynamo"]


def golden_cases(name: str) -> list[dict]:
    return json.loads((REPO_ROOT / "models" / "decoders" / name / "generate_golden.json").read_text())["cases"]


def generate_args(case: dict) -> list[str]:
    args = []
    for i, row in enumerate(case["input_ids"]):
        args += ["--input-ids", ",".join(map(str, row))]
        if "attention_mask" in case:
            args += ["--attention-mask", ",".join(map(str, case["attention_mask"][i]))]
    args += ["--max-new-tokens", str(case["max_new_tokens"])]
    if case["eos_token_id"] is not None:
        args += ["--eos-token-id", str(case["eos_token_id"])]
    return args


def printed_ids(stdout: str) -> list[list[int]]:
    """The sequences of `opt generate`'s "ids ROW: ..." lines, in row order."""
    rows = [line.split(":", 1) for line in stdout.splitlines() if line.startswith("ids ")]
    assert [int(head.split()[1]) for head, _ in rows] == list(range(len(rows))), stdout
    return [[int(t) for t in ids.split(",")] for _, ids in rows]


def generate(run_opt, model: Path, *args) -> list[list[int]]:
    proc = run_opt("generate", model, *args)
    assert proc.returncode == 0, proc.stderr
    return printed_ids(proc.stdout)


@pytest.mark.parametrize("name", DECODERS)
def test_greedy_generation_is_hugging_faces(name: str, run_opt) -> None:
    model = REPO_ROOT / "models" / "decoders" / name / "model.onnx"
    for case in golden_cases(name):
        assert generate(run_opt, model, *generate_args(case)) == case["sequences"], case["name"]


@pytest.mark.parametrize("pipeline", ["-O2 --target-opset 23", "-O3 --target cuda --target-opset 23"])
@pytest.mark.parametrize("name", DECODERS)
def test_optimized_decoder_generates_the_same_ids(name: str, pipeline: str, run_opt, work_dir: Path) -> None:
    model, out = REPO_ROOT / "models" / "decoders" / name / "model.onnx", work_dir / "out.onnx"
    proc = run_opt(model, *pipeline.split(), "-o", out)
    assert proc.returncode == 0, proc.stderr
    for case in golden_cases(name):
        assert generate(run_opt, out, *generate_args(case)) == case["sequences"], case["name"]


def test_generate_prints_prefill_and_decode_figures(run_opt) -> None:
    model = REPO_ROOT / "models" / "decoders" / "llama_kv_dynamo" / "model.onnx"
    proc = run_opt("generate", model, "--input-ids", "1,2,3", "--input-ids", "4,5,6", "--max-new-tokens", "4",
                   "--stream")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    steps = [line for line in lines if line.startswith("step ")]
    assert [s.split(":")[0] for s in steps] == [f"step {i}" for i in range(4)]
    # The streamed tokens are the new ids of each row.
    ids = printed_ids(proc.stdout)
    assert [[int(t) for t in s.split(": ")[1].split(",")] for s in steps] == [[r[3 + i] for r in ids] for i in range(4)]
    assert any(line.startswith("prefill ") and "ms (2 x 3 tokens)" in line for line in lines), proc.stdout
    assert any(line.startswith("decode  3 steps in ") and "tokens/s" in line for line in lines), proc.stdout


def test_sampling_is_fixed_by_its_seed(run_opt) -> None:
    model = REPO_ROOT / "models" / "decoders" / "qwen2_kv_dynamo" / "model.onnx"
    args = ["--input-ids", "7,8,9", "--max-new-tokens", "16", "--temperature", "1.5", "--top-k", "50", "--top-p",
            "0.95"]
    first = generate(run_opt, model, *args, "--seed", "3")
    assert len(first[0]) == 3 + 16
    assert generate(run_opt, model, *args, "--seed", "3") == first
    assert generate(run_opt, model, *args, "--seed", "4") != first
    greedy = golden_cases("qwen2_kv_dynamo")[0]
    assert generate(run_opt, model, *generate_args(greedy), "--temperature", "1.0", "--top-k", "1") == \
        greedy["sequences"]


@pytest.mark.parametrize("args, reason", [
    (["--input-ids", "1,256"], "input id 256 (row 0, position 1) is out of the vocabulary (0..255)"),
    (["--input-ids", "1,2", "--input-ids", "3"],
     "rows of input_ids have different lengths (2 and 1) and no attention_mask says which ids are padding"),
    (["--input-ids", "1,2", "--top-p", "0"], "top_p must be in (0, 1], not 0"),
])
def test_bad_prompt_is_one_error_line(args: list[str], reason: str, run_opt) -> None:
    model = REPO_ROOT / "models" / "decoders" / "llama_kv_dynamo" / "model.onnx"
    proc = run_opt("generate", model, *args)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"opt: error: {model}: {reason}"]


def test_model_without_cache_is_refused(run_opt) -> None:
    model = REPO_ROOT / "models" / "transformers" / "llama_dynamo" / "model.onnx"
    proc = run_opt("generate", model, "--input-ids", "1,2")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"opt: error: {model}: no KV-cache inputs (past_key_values.{{i}}.key/value): generation needs a decoder "
        "exported with its cache"]


def ort_greedy(model: Path, prompt: list[list[int]], new_tokens: int) -> list[list[int]]:
    """Greedy generation on onnxruntime, the loop written out: the oracle for the fused model."""
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    seq = np.array(prompt, dtype=np.int64)
    past = {i.name: np.zeros((len(prompt), i.shape[1], 0, i.shape[3]), np.float32)
            for i in sess.get_inputs() if i.name.startswith("past_key_values.")}
    fed = seq
    for _ in range(new_tokens):
        out = dict(zip(names, sess.run(None, {"input_ids": fed, "attention_mask": np.ones_like(seq), **past})))
        fed = out["logits"][:, -1].argmax(-1)[:, None].astype(np.int64)
        seq = np.concatenate([seq, fed], axis=1)
        past = {n: out[n.replace("past_key_values", "present")] for n in past}
    return seq.tolist()


@pytest.mark.parametrize("name", DECODERS)
def test_optimized_decoder_generates_hugging_faces_ids_on_onnxruntime(name: str, run_opt, work_dir: Path) -> None:
    model, out = REPO_ROOT / "models" / "decoders" / name / "model.onnx", work_dir / "o2.onnx"
    proc = run_opt(model, "-O2", "--target-opset", "23", "-o", out)
    assert proc.returncode == 0, proc.stderr
    fused = any(n.op_type == "Attention" for n in onnx.load(str(out)).graph.node)
    # Mistral's sliding-window cache keys are not provably as long as its mask (test_llm_fusions).
    assert fused == (name != "mistral_kv_dynamo")
    for case in golden_cases(name)[:2]:  # one row, and a batch (no mask, no end-of-sequence id)
        assert ort_greedy(out, case["input_ids"], case["max_new_tokens"]) == case["sequences"], case["name"]


def test_generate_on_cuda_or_a_clear_error(run_opt) -> None:
    """The cuda runner of the registry: on a machine without a GPU (or a build without CUDA) one error
    line naming the file; with one, Hugging Face's greedy ids (fp32)."""
    model = REPO_ROOT / "models" / "decoders" / "llama_kv_dynamo" / "model.onnx"
    case = golden_cases("llama_kv_dynamo")[1]
    proc = run_opt("generate", model, *generate_args(case), "--device", "cuda")
    if proc.returncode == 1:
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"opt: error: {model}: cuda runner: no usable CUDA device 0"), \
            proc.stderr
        assert proc.stdout == ""
        return
    assert proc.returncode == 0, proc.stderr
    assert printed_ids(proc.stdout) == case["sequences"]


def test_unknown_device_is_a_usage_error(run_opt) -> None:
    model = REPO_ROOT / "models" / "decoders" / "llama_kv_dynamo" / "model.onnx"
    proc = run_opt("generate", model, "--input-ids", "1,2", "--device", "tpu")
    assert proc.returncode == 2 and "--device" in proc.stderr, proc.stderr
