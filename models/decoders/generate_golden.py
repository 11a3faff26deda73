"""Writes generate_golden.json beside each tiny decoder of export.py: the token ids Hugging Face
`generate` produces from fixed prompts, greedy, in float32, on the same random-weight model that
export.py exported (same configuration, same seed).

The model is rebuilt here rather than read back from ONNX: torch.manual_seed(SEED), then the
configuration and the bias initialization of export.py. Before writing anything, the rebuilt model
is run on the stored inputs (test_data_set_0) and must reproduce the stored outputs, so the ids
belong to the weights committed in model.onnx.

Cases, per model:
  - "greedy": one prompt of 6 ids, 32 new tokens, no end-of-sequence id (exactly 32 tokens).
  - "batch": two prompts of 5 ids each (no padding: every mask entry is 1), 32 new tokens.
  - "eos": the "greedy" prompt with eos_token_id set to the 10th token greedy produced: generation
    stops after that token.
  - "padded": two prompts, the first of 3 ids left-padded with 2 pad ids (0) and masked, the
    second of 5 ids: a batch of rows of different lengths, as a tokenizer pads them.
Each case stores the prompt (and its attention_mask where one is given) and the whole sequences
(prompt, then the new ids), as `generate` returns them. Needs torch and transformers (the versions are written into each file); not run in CI:

    python models/decoders/generate_golden.py
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import LAYERS, SEED, config  # noqa: E402

NEW_TOKENS = 32
PROMPT_SEED = 49


def rebuild(kind: str):
    """export.py's model, weights included."""
    import transformers as tf

    torch.manual_seed(SEED)
    cfg = config(kind)
    model = tf.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear) and module.bias is not None:
                module.bias.normal_(0.0, 0.02)
    return cfg, model


def check_weights(model, path: str) -> float:
    """The largest difference between the rebuilt model's logits and the stored ones."""
    from transformers import DynamicCache

    data = os.path.join(path, "test_data_set_0")
    read = lambda name: numpy_helper.to_array(onnx.load_tensor(os.path.join(data, name)))  # noqa: E731
    ids, mask = read("input_0.pb"), read("input_1.pb")
    past = [torch.from_numpy(read(f"input_{2 + i}.pb")) for i in range(2 * LAYERS)]
    cache = DynamicCache([(past[2 * i], past[2 * i + 1]) for i in range(LAYERS)], config=model.config)
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                    past_key_values=cache, use_cache=True)
    return float(np.abs(out.logits.numpy() - read("output_0.pb")).max())


def greedy(model, prompt: torch.Tensor, eos: int | None, mask: torch.Tensor | None = None) -> list[list[int]]:
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = 0 if eos is None else eos
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt) if mask is None else mask,
                             do_sample=False, max_new_tokens=NEW_TOKENS, use_cache=True)
    return out.tolist()


def golden(kind: str, out_dir: str) -> str:
    import transformers

    cfg, model = rebuild(kind)
    path = os.path.join(out_dir, f"{kind}_kv_dynamo")
    err = check_weights(model, path)
    if err > 1e-4:
        raise SystemExit(f"{kind}: the rebuilt model is not the exported one (logits differ by {err})")
    g = torch.Generator().manual_seed(PROMPT_SEED)
    one = torch.randint(0, cfg.vocab_size, (1, 6), generator=g)
    two = torch.randint(0, cfg.vocab_size, (2, 5), generator=g)
    padded = torch.randint(0, cfg.vocab_size, (2, 5), generator=g)
    mask = torch.ones_like(padded)
    padded[0, :2], mask[0, :2] = 0, 0
    first = greedy(model, one, None)
    eos = first[0][one.shape[1] + 9]
    cases = [
        {"name": "greedy", "input_ids": one.tolist(), "max_new_tokens": NEW_TOKENS, "eos_token_id": None,
         "sequences": first},
        {"name": "batch", "input_ids": two.tolist(), "max_new_tokens": NEW_TOKENS, "eos_token_id": None,
         "sequences": greedy(model, two, None)},
        {"name": "eos", "input_ids": one.tolist(), "max_new_tokens": NEW_TOKENS, "eos_token_id": eos,
         "sequences": greedy(model, one, eos)},
        {"name": "padded", "input_ids": padded.tolist(), "attention_mask": mask.tolist(),
         "max_new_tokens": NEW_TOKENS, "eos_token_id": None, "sequences": greedy(model, padded, None, mask)},
    ]
    doc = {"produced_by": "models/decoders/generate_golden.py: Hugging Face generate, greedy, float32",
           "versions": f"torch {torch.__version__}, transformers {transformers.__version__}",
           "cases": cases}
    # One case a line: the ids stay readable and a diff shows which case changed.
    lines = [f' "{key}": {json.dumps(doc[key])},' for key in ("produced_by", "versions")]
    lines += [' "cases": [', ",\n".join(f"  {json.dumps(c)}" for c in cases), " ]"]
    with open(os.path.join(path, "generate_golden.json"), "w") as f:
        f.write("{\n" + "\n".join(lines) + "\n}\n")
    return f"{kind:6} ok (rebuilt logits within {err:.1e} of the stored ones)"


def main():
    out_dir = os.path.dirname(os.path.abspath(__file__))
    for kind in sys.argv[1:] or ["llama", "qwen2", "phi", "gptj", "mistral", "gemma"]:
        print(golden(kind, out_dir))


if __name__ == "__main__":
    main()
