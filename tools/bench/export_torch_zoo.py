#!/usr/bin/env python3
"""Benchmark inputs (not a test): eight models as users export them from torch, at the sizes they use.

Transformers (a BERT-mini, a DistilBERT-ish, a two-layer GPT-2 with GPT-2 small's width and vocabulary),
CNNs (torchvision's resnet18, mobilenet_v3_small, efficientnet_b0) and RNNs (an LSTM language model, a
bidirectional GRU over speech features), with random weights (no download) and dynamic batch (and
sequence) dims, each through torch.onnx.export's TorchScript exporter (dynamo=False) and its dynamo
exporter (dynamo=True) where each works. Every export is checked against torch in onnxruntime. The models
are written to an ignored folder (build/torch_zoo by default), not committed; tools/bench/python_bench.py
--models DIR times the tools on them.

Needs torch, torchvision, transformers, onnx, onnxruntime and onnxscript (CPU is enough).

    python tools/bench/export_torch_zoo.py [--out build/torch_zoo] [--models bert_mini,gru]
"""

from __future__ import annotations

import argparse
import traceback
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261206
BATCH, SEQ = 2, 32


class TextModel(torch.nn.Module):
    """Token ids and mask in, the last hidden state out (keyword arguments to transformers)."""

    def __init__(self, model: torch.nn.Module, mask: bool = True):
        super().__init__()
        self.model, self.mask = model, mask

    def forward(self, input_ids, attention_mask):
        if not self.mask:
            return self.model(input_ids=input_ids).last_hidden_state
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class LstmLm(torch.nn.Module):
    """Embedding, a two-layer LSTM, a projection back to the vocabulary."""

    def __init__(self, vocab: int = 10000, dim: int = 256, hidden: int = 512):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.lstm = torch.nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, input_ids):
        out, _ = self.lstm(self.embed(input_ids))
        return self.head(out)


class GruSpeech(torch.nn.Module):
    """A strided Conv1d front end over 80 log-mel features, a two-layer bidirectional GRU, a classifier."""

    def __init__(self, features: int = 80, hidden: int = 256, classes: int = 32):
        super().__init__()
        self.front = torch.nn.Sequential(torch.nn.Conv1d(features, hidden, 3, stride=2, padding=1),
                                         torch.nn.ReLU())
        self.gru = torch.nn.GRU(hidden, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.head = torch.nn.Linear(2 * hidden, classes)

    def forward(self, features):
        x = self.front(features).transpose(1, 2)
        out, _ = self.gru(x)
        return self.head(out).log_softmax(-1)


def _hf(kind: str) -> torch.nn.Module:
    import transformers as tf

    if kind == "bert_mini":
        cfg = tf.BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
    elif kind == "distilbert":
        cfg = tf.DistilBertConfig(dim=384, n_layers=4, n_heads=6, hidden_dim=1536)
    elif kind == "gpt2":
        cfg = tf.GPT2Config(n_layer=2, use_cache=False)
    else:
        raise ValueError(kind)
    try:
        return tf.AutoModel.from_config(cfg, attn_implementation="eager")
    except Exception:  # transformers without that keyword
        return tf.AutoModel.from_config(cfg)


MODELS = ("bert_mini", "distilbert", "gpt2", "resnet18", "mobilenet_v3", "efficientnet_b0", "lstm_lm",
          "gru_speech")


def build(kind: str):
    """(module, example inputs, input names, dynamic dims per input)."""
    torch.manual_seed(SEED)
    g = torch.Generator().manual_seed(SEED)
    if kind in ("resnet18", "mobilenet_v3", "efficientnet_b0"):
        import torchvision

        make = {"resnet18": torchvision.models.resnet18, "mobilenet_v3": torchvision.models.mobilenet_v3_small,
                "efficientnet_b0": torchvision.models.efficientnet_b0}[kind]
        x = torch.randn(BATCH, 3, 224, 224, generator=g)
        return make(weights=None).eval(), (x,), ["pixel_values"], {"pixel_values": {0: "batch"}}
    if kind == "lstm_lm":
        ids = torch.randint(0, 10000, (BATCH, SEQ), generator=g)
        return LstmLm().eval(), (ids,), ["input_ids"], {"input_ids": {0: "batch", 1: "seq"}}
    if kind == "gru_speech":
        x = torch.randn(BATCH, 80, 200, generator=g)
        return GruSpeech().eval(), (x,), ["features"], {"features": {0: "batch", 2: "frames"}}
    model = TextModel(_hf(kind), mask=kind != "gpt2").eval()
    ids = torch.randint(0, 1000, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    mask[1, SEQ - 4:] = 0
    dims = {0: "batch", 1: "seq"}
    if kind == "gpt2":  # the mask is not an input of the graph
        return model, (ids, mask), ["input_ids", "attention_mask"], {"input_ids": dims}
    return model, (ids, mask), ["input_ids", "attention_mask"], {"input_ids": dims, "attention_mask": dims}


def export(kind: str, exporter: str, path: Path) -> str:
    model, args, names, dims = build(kind)
    if kind == "gpt2":
        model, args, names = _Gpt2Ids(model), args[:1], names[:1]
    with torch.no_grad():
        want = model(*args).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "legacy":
            torch.onnx.export(model, args, str(path), input_names=names, output_names=["output"],
                              dynamic_axes={**dims, "output": {0: "batch"}}, opset_version=17, dynamo=False)
        else:
            # By position: torch.export names the arguments after forward's parameters.
            shapes = tuple({a: torch.export.Dim.DYNAMIC for a in dims.get(n, {})} for n in names)
            torch.onnx.export(model, args, str(path), input_names=names, output_names=["output"],
                              dynamic_shapes=shapes, dynamo=True, external_data=False)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    got = sess.run(None, feeds)[0]
    err = float(np.max(np.abs(got - want)))
    if err > 1e-3:
        raise RuntimeError(f"onnxruntime differs from torch by {err:.3g}")
    return f"ok (max |ort - torch| = {err:.2e}, {path.stat().st_size / 2**20:.1f} MiB)"


class _Gpt2Ids(torch.nn.Module):
    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids, None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "torch_zoo")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--exporters", default="legacy,dynamo")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log = [f"torch {torch.__version__}, onnxruntime {ort.__version__}"]
    for kind in args.models.split(","):
        for exporter in args.exporters.split(","):
            path = args.out / f"{kind}_{exporter}.onnx"
            try:
                line = export(kind, exporter, path)
            except Exception as e:  # reported, the others still export
                traceback.print_exc()
                path.unlink(missing_ok=True)
                line = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            log.append(f"{kind:16s} {exporter:7s} {line}")
            print(log[-1], flush=True)
    (args.out / "EXPORTED.txt").write_text("\n".join(log) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
