"""The torch modules of the zoo benchmark that are written here rather than taken from a library
(tools/bench/zoo_models.py builds them): wrappers that give a library model a batch tensor in and a
flat tuple of tensors out, a small diffusion-style UNet, the RNN models."""

from __future__ import annotations

import torch
from torch import nn


class Detections(nn.Module):
    """A torchvision detector on a batch tensor: boxes, scores and labels of each image."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixels):
        dets = self.model(list(pixels.unbind(0)))
        return tuple(t for d in dets for t in (d["boxes"], d["scores"], d["labels"]))

class Segments(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixels):
        return self.model(pixels)["out"]

class ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, temb: int):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.time = nn.Linear(temb, cout)
        self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        h = self.conv1(nn.functional.silu(self.norm1(x)))
        h = h + self.time(nn.functional.silu(t))[:, :, None, None]
        h = self.conv2(nn.functional.silu(self.norm2(h)))
        return self.skip(x) + h

class Attention(nn.Module):
    def __init__(self, dim: int, ctx: int, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(dim, dim, bias=False), nn.Linear(ctx, dim, bias=False), \
            nn.Linear(ctx, dim, bias=False)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, ctx):
        b, n, d = x.shape
        split = lambda t: t.reshape(b, -1, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        o = nn.functional.scaled_dot_product_attention(split(self.q(x)), split(self.k(ctx)), split(self.v(ctx)))
        return self.out(o.transpose(1, 2).reshape(b, n, d))

class SpatialTransformer(nn.Module):
    """GroupNorm, 1x1 in, self-attention, cross-attention to the context, a GEGLU MLP, 1x1 out."""

    def __init__(self, dim: int, ctx: int):
        super().__init__()
        self.norm, self.proj_in = nn.GroupNorm(32, dim), nn.Conv2d(dim, dim, 1)
        self.ln1, self.self_attn = nn.LayerNorm(dim), Attention(dim, dim)
        self.ln2, self.cross_attn = nn.LayerNorm(dim), Attention(dim, ctx)
        self.ln3, self.ff_in, self.ff_out = nn.LayerNorm(dim), nn.Linear(dim, 8 * dim), nn.Linear(4 * dim, dim)
        self.proj_out = nn.Conv2d(dim, dim, 1)

    def forward(self, x, ctx):
        b, c, h, w = x.shape
        y = self.proj_in(self.norm(x)).flatten(2).transpose(1, 2)
        y = y + self.self_attn(self.ln1(y), self.ln1(y))
        y = y + self.cross_attn(self.ln2(y), ctx)
        a, gate = self.ff_in(self.ln3(y)).chunk(2, dim=-1)
        y = y + self.ff_out(a * nn.functional.gelu(gate))
        return x + self.proj_out(y.transpose(1, 2).reshape(b, c, h, w))

class TinyUNet(nn.Module):
    """A diffusion-style UNet of a small configuration: 4x32x32 latent, channels 64/128/128, a
    timestep embedding, cross-attention to a 77x256 context, strided-conv downsampling, one
    upsampling by nearest Resize + conv and one by ConvTranspose."""

    def __init__(self, ch=(64, 128, 128), ctx: int = 256):
        super().__init__()
        temb = 4 * ch[0]
        self.ch0 = ch[0]
        self.time = nn.Sequential(nn.Linear(ch[0], temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(4, ch[0], 3, padding=1)
        self.down0, self.attn0 = ResBlock(ch[0], ch[0], temb), SpatialTransformer(ch[0], ctx)
        self.pool0 = nn.Conv2d(ch[0], ch[0], 3, stride=2, padding=1)
        self.down1, self.attn1 = ResBlock(ch[0], ch[1], temb), SpatialTransformer(ch[1], ctx)
        self.pool1 = nn.Conv2d(ch[1], ch[1], 3, stride=2, padding=1)
        self.mid1, self.mid_attn, self.mid2 = ResBlock(ch[1], ch[2], temb), SpatialTransformer(ch[2], ctx), \
            ResBlock(ch[2], ch[2], temb)
        self.up1 = nn.ConvTranspose2d(ch[2], ch[2], 4, stride=2, padding=1)
        self.dec1, self.dattn1 = ResBlock(ch[2] + ch[1], ch[1], temb), SpatialTransformer(ch[1], ctx)
        self.up0 = nn.Conv2d(ch[1], ch[1], 3, padding=1)
        self.dec0, self.dattn0 = ResBlock(ch[1] + ch[0], ch[0], temb), SpatialTransformer(ch[0], ctx)
        self.out = nn.Sequential(nn.GroupNorm(32, ch[0]), nn.SiLU(), nn.Conv2d(ch[0], 4, 3, padding=1))

    def forward(self, latent, timestep, context):
        half = self.ch0 // 2
        freqs = torch.exp(-9.210340371976184 * torch.arange(half, device=latent.device) / half)
        angles = timestep[:, None].float() * freqs[None]
        t = self.time(torch.cat([angles.cos(), angles.sin()], dim=-1).to(latent.dtype))
        h0 = self.attn0(self.down0(self.conv_in(latent), t), context)
        h1 = self.attn1(self.down1(self.pool0(h0), t), context)
        m = self.mid2(self.mid_attn(self.mid1(self.pool1(h1), t), context), t)
        u1 = self.dattn1(self.dec1(torch.cat([self.up1(m), h1], 1), t), context)
        u0 = self.up0(nn.functional.interpolate(u1, scale_factor=2.0, mode="nearest"))
        u0 = self.dattn0(self.dec0(torch.cat([u0, h0], 1), t), context)
        return self.out(u0)

class Rnn(nn.Module):
    """An LSTM or GRU over feature frames (batch first), a linear head on every frame; with
    initial states as inputs where `state`, the final states as outputs too."""

    def __init__(self, kind: str, bidirectional: bool, state: bool, features: int = 80, hidden: int = 256):
        super().__init__()
        cls = nn.LSTM if kind == "lstm" else nn.GRU
        self.rnn = cls(features, hidden, num_layers=2, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), 32)
        self.state = state

    def forward(self, frames, *state):
        if not self.state:
            out, _ = self.rnn(frames)
            return self.head(out)
        init = state if isinstance(self.rnn, nn.LSTM) else state[0]
        out, final = self.rnn(frames, init)
        return (self.head(out), *(final if isinstance(final, tuple) else (final,)))

class SpeechLstmGru(nn.Module):
    """The issue's speech model: a strided Conv1d, a bidirectional LSTM, a GRU, log-softmax."""

    def __init__(self, features: int = 80, hidden: int = 256):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(features, hidden, 3, stride=2, padding=1), nn.ReLU())
        self.lstm = nn.LSTM(hidden, hidden, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 32)

    def forward(self, features):
        x, _ = self.lstm(self.front(features).transpose(1, 2))
        x, _ = self.gru(x)
        return self.head(x).log_softmax(-1)

class Hidden(nn.Module):
    """A transformers model's named inputs by position, its last hidden state (or what `pick`
    takes) out."""

    def __init__(self, model, names: list[str], pick: str = "last_hidden_state"):
        super().__init__()
        self.model, self.names, self.pick = model, names, pick

    def forward(self, *args):
        return getattr(self.model(**dict(zip(self.names, args))), self.pick)

class MeanPooled(nn.Module):
    """A sentence encoder: the masked mean of the last hidden state, L2-normalized."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        h = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        m = attention_mask[..., None].to(h.dtype)
        return nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-6), dim=-1)
