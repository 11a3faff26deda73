"""Exports tiny decoder-only LLMs with a KV cache (random weights, hidden size 64, 2 layers, grouped KV
heads) through PyTorch's dynamo exporter, and writes golden inputs/outputs from onnxruntime: Llama,
Qwen2 (biases on Q/K/V, made nonzero here), Phi (partial rotary: half of each head rotates), GPT-J
(interleaved partial rotary before the head transpose; no grouped heads), Mistral (the sliding
window in the mask and the cache) and Gemma (GELU-gated MLP, RMSNorm by 1 + weight, the
embedding scaled, tied embeddings).

Inputs: input_ids [batch, seq], attention_mask [batch, past + seq], past_key_values.{i}.key/value
[batch, kv_heads, past, head]; outputs: logits and present.{i}.key/value [batch, kv_heads, past + seq,
head]. Needs torch, transformers, onnx, onnxscript and onnxruntime; not run in CI. The exported files
are committed beside this script. WithPast and export_program are also how tools/bench/llm_bench.py
exports its full-size Llama models.

    python models/decoders/export.py --out models/decoders
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper

SEED = 20261206
BATCH, SEQ, PAST, LAYERS = 2, 4, 5, 2


def config(kind: str):
    import transformers as tf

    common = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    if kind == "llama":
        return tf.LlamaConfig(**common)
    if kind == "qwen2":
        return tf.Qwen2Config(**common)
    if kind == "phi":
        return tf.PhiConfig(partial_rotary_factor=0.5, **common)
    if kind == "mistral":  # its sliding window (4096) is longer than any test sequence
        return tf.MistralConfig(**common)
    if kind == "gemma":  # GELU-gated MLP, RMSNorm scaled by 1 + weight, tied embeddings
        return tf.GemmaConfig(head_dim=16, hidden_activation="gelu_pytorch_tanh", **common)
    if kind == "gptj":
        return tf.GPTJConfig(vocab_size=256, n_embd=64, n_layer=LAYERS, n_head=4, rotary_dim=8,
                             n_positions=128)
    raise ValueError(kind)


class WithPast(torch.nn.Module):
    """Flat tensors in and out: the cache as 2 * layers tensors, so the ONNX signature is plain.
    logits_to_keep: Hugging Face's argument (0: the logits of every position; 1: of the last only,
    as generate computes them)."""

    def __init__(self, model, logits_to_keep: int = 0):
        super().__init__()
        self.model = model
        self.logits_to_keep = logits_to_keep

    def forward(self, input_ids, attention_mask, *past):
        from transformers import DynamicCache

        pairs = [(past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2)]
        cache = DynamicCache(pairs, config=self.model.config)
        kwargs = {"logits_to_keep": self.logits_to_keep} if self.logits_to_keep else {}
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache,
                         use_cache=True, **kwargs)
        present = []
        for layer in out.past_key_values.layers:
            present += [layer.keys, layer.values]
        return (out.logits, *present)


def io_names(layers: int) -> tuple[list[str], list[str]]:
    """The exported inputs' and outputs' names (docs/llm.md)."""
    past = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    return ["input_ids", "attention_mask", *past], ["logits", *present]


def export_program(wrapped: WithPast, ids, mask, past: list, path: str, external_data=None) -> None:
    """wrapped's dynamo export (opset 18) with a dynamic batch, sequence, mask and past length,
    saved to path (external_data: ONNXProgram.save's, None: past 2 GB)."""
    names, out_names = io_names(len(past) // 2)
    batch, seq, total = torch.export.Dim("batch"), torch.export.Dim("seq"), torch.export.Dim("total")
    past_len = torch.export.Dim("past")
    shapes = ({0: batch, 1: seq}, {0: batch, 1: total}, tuple({0: batch, 2: past_len} for _ in past))
    prog = torch.onnx.export(wrapped, (ids, mask, *past), dynamo=True, input_names=names,
                             output_names=out_names, dynamic_shapes=shapes, opset_version=18)
    prog.save(path, external_data=external_data)


def export(kind: str, out_dir: str) -> str:
    import transformers as tf

    torch.manual_seed(SEED)
    cfg = config(kind)
    model = tf.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    with torch.no_grad():  # HF initializes biases to zero, which -O1 would drop as Add(x, 0)
        for module in model.modules():
            if isinstance(module, torch.nn.Linear) and module.bias is not None:
                module.bias.normal_(0.0, 0.02)
    g = torch.Generator().manual_seed(SEED)
    head = cfg.hidden_size // cfg.num_attention_heads
    ids = torch.randint(0, cfg.vocab_size, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, PAST + SEQ, dtype=torch.int64)
    kv_heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    past = [torch.randn(BATCH, kv_heads, PAST, head, generator=g) for _ in range(2 * LAYERS)]
    names, _ = io_names(LAYERS)
    wrapped = WithPast(model)
    path = os.path.join(out_dir, f"{kind}_kv_dynamo")
    os.makedirs(path, exist_ok=True)
    with torch.no_grad():
        expected = wrapped(ids, mask, *past)
        export_program(wrapped, ids, mask, past, os.path.join(path, "model.onnx"))
    import onnxruntime as ort

    onnx_model = onnx.load(os.path.join(path, "model.onnx"))
    sess = ort.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {n: t.numpy() for n, t in zip(names, (ids, mask, *past))}
    got = sess.run(None, feeds)
    err = max(float(np.abs(a - b.numpy()).max()) for a, b in zip(got, expected))
    data = os.path.join(path, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for i, n in enumerate(names):
        onnx.save_tensor(numpy_helper.from_array(feeds[n], n), os.path.join(data, f"input_{i}.pb"))
    for i, (n, v) in enumerate(zip(io_names(LAYERS)[1], got)):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(data, f"output_{i}.pb"))
    size = os.path.getsize(os.path.join(path, "model.onnx")) // 1024
    return f"{kind:6} dynamo  ok (max |ort - torch| = {err:.2e}, {size} KiB)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--models", nargs="*", default=["llama", "qwen2", "phi", "gptj", "mistral", "gemma"])
    args = ap.parse_args()
    import onnxruntime as ort
    import transformers

    # EXPORTED.txt: one line per model, the versions first; a partial run (--models) keeps the others.
    path = os.path.join(args.out, "EXPORTED.txt")
    old = open(path).read().splitlines()[1:] if os.path.exists(path) else []
    lines = {line.split()[0]: line for line in old if line.strip()}
    for kind in args.models:
        lines[kind] = export(kind, args.out)
        print(lines[kind])
    versions = (f"torch {torch.__version__}, transformers {transformers.__version__}, onnx {onnx.__version__}, "
                f"onnxruntime {ort.__version__}")
    with open(path, "w") as f:
        f.write("\n".join([versions, *lines.values()]) + "\n")


if __name__ == "__main__":
    main()
