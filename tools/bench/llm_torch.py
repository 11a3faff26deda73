"""The torch side of tools/bench/llm_bench.py: the Llama configurations, the fp16 model with seeded
random weights, its export with the KV cache (models/decoders/export.py's wrapper), Hugging Face's
greedy ids, prefill and generate timings, the copy bandwidth and the bytes a decode step reads.
torch and transformers are imported inside the functions, so that the report needs neither."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

SEED = 20261207
COMMON = dict(rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=None, pad_token_id=None)
SIZES = {
    "tiny": dict(vocab_size=256, hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=8192, tie_word_embeddings=True,
                 initializer_range=0.1),
    "1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
               num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
               rope_theta=500000.0, tie_word_embeddings=True),
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=8192,
               rope_theta=500000.0, tie_word_embeddings=False),
}


def head_dim(cfg) -> int:
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


def median_ms(seconds: list[float]) -> dict:
    ms = sorted(1e3 * s for s in seconds)
    return {"ms": statistics.median(ms), "min_ms": ms[0], "max_ms": ms[-1], "runs": len(ms)}


# --- the model and its export -------------------------------------------------------------------


def build_torch(size: str, device: str):
    import torch
    import transformers as tf

    torch.manual_seed(SEED)
    cfg = tf.LlamaConfig(**SIZES[size], **COMMON)
    with torch.device(device):
        try:
            model = tf.AutoModelForCausalLM.from_config(cfg, dtype=torch.float16, attn_implementation="sdpa")
        except TypeError:  # transformers before `dtype`
            model = tf.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float16, attn_implementation="sdpa")
    model.eval()
    gc = model.generation_config
    gc.eos_token_id, gc.pad_token_id, gc.bos_token_id = None, 0, None
    return model


def fingerprint(model) -> float:
    """A sum of weights (on the host, in float64: the same in every process) that tells whether a
    rebuilt model has the weights a cached export has."""
    import torch

    with torch.no_grad():
        rows = [model.model.layers[0].mlp.down_proj.weight[:64], model.lm_head.weight[:64]]
        return round(sum(float(r.double().cpu().sum()) for r in rows), 6)


def set_attention(model, name: str) -> None:
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(name)
    else:
        model.config._attn_implementation = name


def export_model(model, path: Path, external: bool) -> None:
    """The model with its KV cache through models/decoders/export.py's wrapper, eager attention
    (the pattern the attention fusion reads), the last position's logits."""
    import warnings

    import torch
    from export import WithPast, export_program

    cfg, dev = model.config, model.device
    g = torch.Generator().manual_seed(SEED)
    ids = torch.randint(0, cfg.vocab_size, (2, 4), generator=g).to(dev)
    mask = torch.ones(2, 9, dtype=torch.int64, device=dev)
    past = [torch.randn(2, cfg.num_key_value_heads, 5, head_dim(cfg), generator=g).to(dev, torch.float16)
            for _ in range(2 * cfg.num_hidden_layers)]
    set_attention(model, "eager")
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            export_program(WithPast(model, logits_to_keep=1), ids, mask, past, str(path), external_data=external)
    finally:
        set_attention(model, "sdpa")


# --- torch ---------------------------------------------------------------------------------------


def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def torch_greedy(model, rows, n: int) -> list[list[int]]:
    """Hugging Face generate's greedy ids (a dynamic cache, eager)."""
    import torch

    ids = torch.tensor(rows, device=model.device)
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                             do_sample=False)
    return out[:, ids.shape[1]:].tolist()


def torch_prefill(model, rows, warmup: int, runs: int, compiled: bool) -> dict:
    import torch

    dev = model.device.type

    def first_token(x):
        return model(input_ids=x, use_cache=True, logits_to_keep=1).logits[:, -1].argmax(-1)

    fn = torch.compile(first_token, mode="reduce-overhead") if compiled else first_token
    x = torch.tensor(rows, device=model.device)
    times = []
    t_ready = time.monotonic()
    with torch.inference_mode():
        for i in range(warmup + runs):
            if compiled and hasattr(torch.compiler, "cudagraph_mark_step_begin"):
                torch.compiler.cudagraph_mark_step_begin()
            sync(dev)
            t0 = time.perf_counter()
            fn(x).cpu()
            times.append(time.perf_counter() - t0)
            if i == 0:
                t_ready = time.monotonic() - t_ready
    out = median_ms(times[warmup:])
    out["first_call_s"] = round(t_ready, 1)
    return out


def torch_decode(model, rows, warmup: int, steps: int) -> dict:
    """Hugging Face generate with a static cache (on a GPU, its decoding steps compiled with
    torch.compile(mode="reduce-overhead")), each step timed by a stopping criterion."""
    import torch
    import transformers as tf

    dev = model.device.type

    class Clock(tf.StoppingCriteria):
        def __init__(self):
            self.ticks = []

        def __call__(self, input_ids, scores, **kwargs):
            sync(dev)
            self.ticks.append(time.perf_counter())
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    ids = torch.tensor(rows, device=model.device)
    n = 1 + warmup + steps
    kwargs = dict(attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n, do_sample=False,
                  cache_implementation="static")
    if dev == "cuda" and hasattr(tf, "CompileConfig"):
        kwargs["compile_config"] = tf.CompileConfig(mode="reduce-overhead")
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    t_ready = time.monotonic()
    with torch.inference_mode():
        for attempt in range(2):  # the first compiles and records the CUDA graphs
            clock = Clock()
            sync(dev)
            t0 = time.perf_counter()
            model.generate(ids, stopping_criteria=tf.StoppingCriteriaList([clock]), **kwargs)
            if attempt == 0:
                t_ready = time.monotonic() - t_ready
    ticks = [t0, *clock.ticks]
    step_s = [b - a for a, b in zip(ticks, ticks[1:])]
    out = median_ms(step_s[1 + warmup:])
    out.update(prefill_ms=1e3 * step_s[0], first_call_s=round(t_ready, 1),
               compiled_graphs=torch._dynamo.utils.counters["stats"]["unique_graphs"] - graphs)
    return out


def copy_bandwidth(device: str) -> dict:
    """Device-to-device copy of a large buffer with torch: bytes read + written per second."""
    import torch

    n = (1 << 30) if device == "cuda" else (1 << 26)
    x = torch.empty(n, dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    times = []
    for i in range(25):
        sync(device)
        t0 = time.perf_counter()
        y.copy_(x)
        sync(device)
        times.append(time.perf_counter() - t0)
    s = statistics.median(times[5:])
    del x, y
    return {"bytes": n, "ms": 1e3 * s, "gb_per_s": 2 * n / s / 1e9}


def model_bytes(model) -> dict:
    """The bytes a decode step reads of the weights, and of the KV cache per token and row."""
    cfg = model.config
    unique = list({id(p): p for p in model.parameters()}.values())
    total = sum(p.numel() * p.element_size() for p in unique)
    embed = model.model.embed_tokens.weight
    tied = embed is model.lm_head.weight
    read = total - (0 if tied else embed.numel() * embed.element_size())
    kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim(cfg) * 2
    return {"params": sum(p.numel() for p in unique), "weight_bytes": total, "weight_bytes_read_per_step": read,
            "kv_bytes_per_token": kv, "tied_embeddings": tied}
