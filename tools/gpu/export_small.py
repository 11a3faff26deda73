"""Exports one-layer, small-vocabulary versions of gpu_bench.py's transformer models, fp16, the
way gpu_bench exports the full ones (same exporter, opset, head sizes and attention code), so the
fusions can be developed on their exact graph structure where torch is not installed.

On the GPU machine:  python3 tools/gpu/export_small.py OUT_DIR
Writes OUT_DIR/{bert,gpt2,vit}_small.onnx with the batch fixed at 2."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import torch  # noqa: E402

import gpu_bench  # noqa: E402


def small(name: str):
    torch.manual_seed(gpu_bench.SEED)
    if name == "vit":
        import torchvision

        net = torchvision.models.VisionTransformer(image_size=224, patch_size=16, num_layers=1,
                                                   num_heads=12, hidden_dim=768, mlp_dim=768)
        net.heads = torch.nn.Identity()
        return net.eval(), (torch.randn(2, 3, 224, 224),), ["pixels"]
    import transformers as tf

    if name == "bert":
        cfg = tf.BertConfig(num_hidden_layers=1, vocab_size=100, intermediate_size=768)
        model = tf.BertModel(cfg, add_pooling_layer=False)
    else:
        cfg = tf.GPT2Config(use_cache=False, n_layer=1, vocab_size=100, n_inner=768)
        model = tf.GPT2Model(cfg)
    masked = name == "bert"

    class Hidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask=None):
            if masked:
                return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return self.model(input_ids=input_ids).last_hidden_state

    ids = torch.randint(0, 100, (2, gpu_bench.SEQ))
    ex = (ids, torch.ones(2, gpu_bench.SEQ, dtype=torch.int64)) if masked else (ids,)
    return Hidden().eval(), ex, ["input_ids", "attention_mask"] if masked else ["input_ids"]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name in ("bert", "gpt2", "vit"):
        net, ex, names = small(name)
        net = net.cuda().half()
        ex = tuple(t.cuda().half() if t.is_floating_point() else t.cuda() for t in ex)
        dyn = out / f"{name}_dyn.onnx"
        gpu_bench.export(net, ex, names, dyn)
        gpu_bench.fix_batch(dyn, out / f"{name}_small.onnx", 2)
        dyn.unlink()
        print(name, (out / f"{name}_small.onnx").stat().st_size, flush=True)


if __name__ == "__main__":
    main()
