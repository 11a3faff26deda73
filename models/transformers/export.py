"""Exports small transformer and CNN models (random weights, small configs) to ONNX with dynamic batch
(and sequence) dims, through PyTorch's legacy TorchScript exporter and its dynamo exporter where each
works, and writes golden inputs/outputs from onnxruntime on the exported model.

Needs torch, transformers, torchvision, onnx, onnxruntime and onnxscript (for the dynamo exporter): it
runs on the GPU machine (CPU is enough), not in CI. The exported files are committed beside this script.

    python models/transformers/export.py --out models/transformers
"""

from __future__ import annotations

import argparse
import os
import traceback

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

SEED = 20261129
BATCH, SEQ = 2, 16


class TextModel(torch.nn.Module):
    """Token ids and mask in, the last hidden state out (one output, keyword arguments to HF)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class VisionModel(torch.nn.Module):
    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model(pixel_values=pixel_values).last_hidden_state


def _hf(kind: str):
    import transformers as tf

    common = dict(vocab_size=1000, max_position_embeddings=128)
    if kind == "bert":
        cfg = tf.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                            **common)
    elif kind == "gpt2":
        cfg = tf.GPT2Config(vocab_size=1000, n_positions=128, n_embd=64, n_layer=2, n_head=4, use_cache=False)
    elif kind == "llama":
        cfg = tf.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, use_cache=False, **common)
    elif kind == "vit":
        cfg = tf.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=128)
    else:
        raise ValueError(kind)
    try:
        model = tf.AutoModel.from_config(cfg, attn_implementation="eager")
    except Exception:  # older/newer transformers without that keyword
        model = tf.AutoModel.from_config(cfg)
    return model


def build(kind: str):
    """(module, example inputs, input names, dynamic dims per input)."""
    torch.manual_seed(SEED)
    g = torch.Generator().manual_seed(SEED)
    if kind == "mobilenet":
        import torchvision

        model = torchvision.models.mobilenet_v2(width_mult=0.35, num_classes=10)
        x = torch.randn(BATCH, 3, 64, 64, generator=g)
        return model.eval(), (x,), ["pixel_values"], {"pixel_values": {0: "batch"}}
    if kind == "tvvit":
        # torchvision's ViT (vit_b_16 in small): nn.MultiheadAttention, which works sequence-first
        # inside, as the GPU benchmark's vit exports it (not HF's ViT above).
        from torchvision.models.vision_transformer import VisionTransformer

        model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                                  mlp_dim=128, num_classes=10)
        # torchvision zero-initializes the classifier head, so its output would be all zeros
        # whatever the layers compute: the class token's features are the output instead.
        model.heads = torch.nn.Identity()
        x = torch.randn(BATCH, 3, 32, 32, generator=g)
        return model.eval(), (x,), ["pixel_values"], {"pixel_values": {0: "batch"}}
    if kind == "vit":
        x = torch.randn(BATCH, 3, 32, 32, generator=g)
        return VisionModel(_hf(kind)).eval(), (x,), ["pixel_values"], {"pixel_values": {0: "batch"}}
    model = TextModel(_hf(kind)).eval()
    ids = torch.randint(0, 1000, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    return model, (ids, mask), ["input_ids", "attention_mask"], dyn


def export(kind: str, exporter: str, folder: str) -> str:
    model, args, names, dyn = build(kind)
    path = os.path.join(folder, "model.onnx")
    os.makedirs(folder, exist_ok=True)
    with torch.no_grad():
        if exporter == "legacy":
            # Opset 14: LayerNormalization and Gelu come out decomposed, as older exports have them.
            torch.onnx.export(model, args, path, input_names=names, output_names=["output"],
                              dynamic_axes={**dyn, "output": {0: "batch"}}, opset_version=14, dynamo=False)
        else:
            shapes = {}
            for name in names:
                shapes[name] = {axis: torch.export.Dim(dim_name, min=1, max=64)
                                for axis, dim_name in dyn[name].items()}
            if kind in ("mobilenet", "tvvit"):  # torchvision's forward names its argument x
                shapes = {"x": shapes["pixel_values"]}
            program = torch.onnx.export(model, args, input_names=names, output_names=["output"],
                                        dynamic_shapes=shapes, dynamo=True, opset_version=18)
            program.save(path)
    # Goldens from onnxruntime on the exported (unoptimized) model.
    onnx.checker.check_model(path, full_check=False)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    outputs = sess.run(None, feeds)
    ref = model(*args)
    ref = ref.detach().numpy() if isinstance(ref, torch.Tensor) else ref
    err = float(np.max(np.abs(outputs[0] - ref)))
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for i, (name, value) in enumerate(feeds.items()):
        with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, name).SerializeToString())
    for i, (o, value) in enumerate(zip(sess.get_outputs(), outputs)):
        with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, o.name).SerializeToString())
    return f"ok (max |ort - torch| = {err:.2e}, {os.path.getsize(path) // 1024} KiB)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--models", default="bert,gpt2,llama,vit,mobilenet,tvvit")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}")
    for kind in args.models.split(","):
        for exporter in ("legacy", "dynamo"):
            folder = os.path.join(args.out, f"{kind}_{exporter}")
            try:
                print(f"{kind:<10} {exporter:<7} {export(kind, exporter, folder)}", flush=True)
            except Exception as e:  # keep going: the note says which exports did not work
                print(f"{kind:<10} {exporter:<7} FAILED: {type(e).__name__}: {str(e).splitlines()[0][:200]}",
                      flush=True)
                traceback.print_exc(limit=3)


if __name__ == "__main__":
    main()
