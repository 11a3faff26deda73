"""The zoo benchmark's models (tools/bench/zoo_bench.py): models no kernel of ours was tuned for,
with random weights (seeded; nothing is downloaded: the transformers' configs are written here with
the published models' sizes). The registry is plain data, readable without torch; each builder
imports torch, torchvision, transformers or timm when called.

A builder returns a Built: the module (fp32, eval, on the CPU), a function making the example
inputs of a batch (CPU tensors; float ones in fp32), the input names and the batch axis of each
input (None: an input without a batch). Every module returns a flat tuple of tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

SEED = 20261206
SEQ = 128  # the text models' sequence length


@dataclass(frozen=True)
class Spec:
    name: str
    family: str  # torchvision, detection, unet, transformers, rnn, timm
    what: str  # a few words for the report
    dynamic: bool = True  # exported with a dynamic batch (else once per batch size)


@dataclass
class Built:
    net: object
    inputs: Callable  # (batch) -> tuple of CPU tensors
    names: list[str]
    batch_axes: dict[str, int | None] = field(default_factory=dict)


TORCHVISION = ("mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0", "shufflenet_v2_x1_0",
               "regnet_y_400mf", "resnet18", "convnext_tiny", "densenet121", "squeezenet1_1")
SEGMENTATION = ("lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large")
TIMM = {"timm_tf_efficientnet_b0": ("tf_efficientnet_b0", 224), "timm_mobilevit_xs": ("mobilevit_xs", 256),
        "timm_mobilevitv2_050": ("mobilevitv2_050", 256), "timm_convnext_atto": ("convnext_atto", 224)}

SPECS: tuple[Spec, ...] = (
    *(Spec(n, "torchvision", "classifier, 224x224") for n in TORCHVISION),
    *(Spec(n, "torchvision", "segmentation, 320x320") for n in SEGMENTATION),
    Spec("ssdlite320_mobilenet_v3_large", "detection", "SSD: NonMaxSuppression, TopK; 320x320", dynamic=False),
    Spec("fasterrcnn_mobilenet_v3_large_320_fpn", "detection", "R-CNN: RoiAlign, NMS; 320x320", dynamic=False),
    Spec("unet_diffusion", "unet", "GroupNorm, SiLU, cross-attention, Resize, ConvTranspose; 4x32x32 latent"),
    Spec("whisper_tiny_encoder", "transformers", "80x3000 log-mel in"),
    Spec("whisper_tiny_decoder", "transformers", "32 tokens over 1500 encoder states"),
    Spec("distilbert", "transformers", f"distilbert-base sizes, seq {SEQ}"),
    Spec("minilm_sentence", "transformers", f"all-MiniLM-L6-v2 sizes, mean pooling, seq {SEQ}"),
    Spec("t5_small_encoder", "transformers", f"t5-small sizes, seq {SEQ}"),
    Spec("clip_vit_b32", "transformers", "CLIP ViT-B/32 vision tower and projection, 224x224"),
    Spec("lstm_bidir", "rnn", "2-layer bidirectional LSTM, 100 frames of 80"),
    Spec("lstm_state", "rnn", "2-layer LSTM with initial h and c, 100 frames"),
    Spec("gru_bidir", "rnn", "2-layer bidirectional GRU, 100 frames"),
    Spec("gru_state", "rnn", "2-layer bidirectional GRU with initial h, 100 frames"),
    Spec("speech_lstm_gru", "rnn", "Conv1d front end, bidirectional LSTM, GRU, log-softmax"),
    *(Spec(n, "timm", f"timm {m}, {s}x{s}") for n, (m, s) in TIMM.items()),
)
REGISTRY = {s.name: s for s in SPECS}
FAMILIES = tuple(dict.fromkeys(s.family for s in SPECS))


def select(models: str) -> list[str]:
    """Names from a comma-separated list of model names and family names ('all' is every model);
    ValueError names the unknown ones."""
    out: list[str] = []
    bad = []
    for item in (m.strip() for m in models.split(",")):
        if not item:
            continue
        if item == "all":
            out += [s.name for s in SPECS]
        elif item in FAMILIES:
            out += [s.name for s in SPECS if s.family == item]
        elif item in REGISTRY:
            out.append(item)
        else:
            bad.append(item)
    if bad:
        raise ValueError(f"unknown model(s) {', '.join(bad)}")
    if not out:
        raise ValueError("no model named")
    return list(dict.fromkeys(out))


def build(name: str) -> Built:
    import torch
    from zoo_nets import Detections, Segments, TinyUNet

    torch.manual_seed(SEED)
    spec = REGISTRY[name]
    if spec.family == "rnn":
        return _rnn(name)
    if spec.family == "transformers":
        return _transformer(name)
    if name == "unet_diffusion":
        net = TinyUNet()
        return Built(net.eval(), lambda b: (_randn(b, 4, 32, 32), _randn(b, seed=1) * 500 + 500,
                                            _randn(b, 77, 256, seed=2)),
                     ["latent", "timestep", "context"])
    if spec.family == "timm":
        import timm

        model, size = TIMM[name]
        return _image(timm.create_model(model, pretrained=False), size)
    import torchvision

    if spec.family == "detection":
        make = getattr(torchvision.models.detection, name)
        return _image(Detections(make(weights=None, weights_backbone=None)), 320)
    if name in SEGMENTATION:
        make = getattr(torchvision.models.segmentation, name)
        return _image(Segments(make(weights=None, weights_backbone=None)), 320)
    return _image(getattr(torchvision.models, name)(weights=None), 224)


def _randn(*shape, seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(SEED + 7919 * seed + sum(shape))
    return torch.randn(*shape, generator=g)


def _image(net, size: int) -> Built:
    return Built(net.eval(), lambda b: (_randn(b, 3, size, size),), ["pixels"])


def _tensors(out) -> tuple:
    """A model's output as a flat tuple of tensors."""
    import torch

    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, dict):
        return tuple(t for v in out.values() for t in _tensors(v))
    if isinstance(out, (list, tuple)):
        return tuple(t for v in out for t in _tensors(v))
    return ()


def calibrate(net, make_inputs, device) -> None:
    """Batch-norm statistics from two random batches, as training would have left them: with the
    default statistics (mean 0, variance 1) the activations of a randomly initialized deep CNN
    vanish or overflow fp16, and the output check would compare nothing."""
    import torch

    bns = [m for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over the batches
        m.train()
    with torch.no_grad():
        for seed in (11, 12):
            torch.manual_seed(seed)
            net(*(x.to(device) for x in make_inputs(4)))
    for m in bns:
        m.eval()


def _rnn(name: str) -> Built:
    from zoo_nets import Rnn, SpeechLstmGru

    if name == "speech_lstm_gru":
        return Built(SpeechLstmGru().eval(), lambda b: (_randn(b, 80, 200),), ["features"])
    kind, variant = name.split("_")
    bidir = variant == "bidir" or kind == "gru"
    state = variant == "state"
    net = Rnn(kind, bidir, state).eval()
    dirs = 2 if bidir else 1
    if not state:
        return Built(net, lambda b: (_randn(b, 100, 80),), ["frames"])
    names = ["frames", "h0", "c0"] if kind == "lstm" else ["frames", "h0"]

    def inputs(b):
        return (_randn(b, 100, 80), *(_randn(2 * dirs, b, 256, seed=i + 1) * 0.5 for i in range(len(names) - 1)))

    return Built(net, inputs, names, {"frames": 0, **{n: 1 for n in names[1:]}})


def _ids(b: int, seq: int, vocab: int, masked: bool = True):
    import torch

    g = torch.Generator().manual_seed(SEED + b + seq)
    ids = torch.randint(0, vocab, (b, seq), generator=g)
    mask = torch.ones(b, seq, dtype=torch.int64)
    if masked:
        mask[b // 2:, seq - seq // 8:] = 0  # padding in half of the batch
    return ids, mask


def _transformer(name: str) -> Built:
    import transformers as tf
    from zoo_nets import Hidden, MeanPooled

    if name.startswith("whisper"):
        cfg = tf.WhisperConfig(d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                               decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536,
                               num_mel_bins=80, vocab_size=51865, max_source_positions=1500,
                               max_target_positions=448, use_cache=False)
        model = tf.WhisperModel(cfg)
        if name == "whisper_tiny_encoder":
            net = Hidden(model.encoder, ["input_features"])
            return Built(net.eval(), lambda b: (_randn(b, 80, 3000),), ["input_features"])
        net = Hidden(model.decoder, ["input_ids", "encoder_hidden_states"])
        return Built(net.eval(), lambda b: (_ids(b, 32, cfg.vocab_size)[0], _randn(b, 1500, 384, seed=3)),
                     ["input_ids", "encoder_hidden_states"])
    if name == "clip_vit_b32":
        cfg = tf.CLIPVisionConfig(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                  num_attention_heads=12, image_size=224, patch_size=32, projection_dim=512)
        net = Hidden(tf.CLIPVisionModelWithProjection(cfg), ["pixel_values"], "image_embeds")
        return Built(net.eval(), lambda b: (_randn(b, 3, 224, 224),), ["pixel_values"])
    if name == "distilbert":
        cfg = tf.DistilBertConfig(dim=768, n_layers=6, n_heads=12, hidden_dim=3072, vocab_size=30522)
        net = Hidden(tf.DistilBertModel(cfg), ["input_ids", "attention_mask"])
        vocab = cfg.vocab_size
    elif name == "minilm_sentence":
        cfg = tf.BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536,
                            vocab_size=30522)
        net = MeanPooled(tf.BertModel(cfg, add_pooling_layer=False))
        vocab = cfg.vocab_size
    else:  # t5_small_encoder
        cfg = tf.T5Config(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_heads=8, vocab_size=32128,
                          relative_attention_num_buckets=32, feed_forward_proj="relu", use_cache=False)
        net = Hidden(tf.T5EncoderModel(cfg), ["input_ids", "attention_mask"])
        vocab = cfg.vocab_size
    return Built(net.eval(), lambda b: _ids(b, SEQ, vocab), ["input_ids", "attention_mask"])
