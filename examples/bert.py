"""A BERT-style encoder, written here (no transformers): token, position and segment
embeddings, post-norm encoder layers (multi-head self-attention with a padding mask, GELU
feed-forward), and a masked-language-model head with a tied decoder.

    conformance trace examples/bert.py --backend mlu --run

Dropout is 0: random streams differ between devices by design (as CUDA's differ from CPU's),
so ``--run`` could not compare a model that draws random numbers.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        ctx = scores.softmax(-1) @ v
        return self.out(ctx.transpose(1, 2).reshape(b, s, d))


class EncoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ff: int) -> None:
        super().__init__()
        self.attn = SelfAttention(d, heads)
        self.norm1 = nn.LayerNorm(d, eps=1e-12)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))
        self.norm2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.attn(x, pad))
        return self.norm2(x + self.ff(x))


class Bert(nn.Module):
    def __init__(self, vocab: int = 50, d: int = 32, heads: int = 4, ff: int = 64,
                 layers: int = 2, max_len: int = 16) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, d, padding_idx=0)
        self.positions = nn.Embedding(max_len, d)
        self.segments = nn.Embedding(2, d)
        self.norm = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(d, heads, ff) for _ in range(layers))
        self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d, eps=1e-12))
        self.bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, ids: torch.Tensor, segments: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.norm(self.tokens(ids) + self.positions(pos) + self.segments(segments))
        pad = ids == 0
        for layer in self.layers:
            x = layer(x, pad)
        return F.linear(self.transform(x), self.tokens.weight, self.bias)  # tied decoder


def make() -> dict[str, Any]:
    """Two sequences of 12 tokens (the second padded), masked-LM loss on three positions."""
    vocab = 50
    ids = torch.randint(1, vocab, (2, 12))
    ids[1, 9:] = 0
    segments = torch.zeros_like(ids)
    segments[:, 6:] = 1
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[0, 7], labels[1, 4] = 5, 9, 13

    def loss(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.reshape(-1, vocab), labels.to(logits.device).reshape(-1))

    return {"model": Bert(vocab), "input": (ids, segments), "loss": loss}
