"""An LSTM language model: embedding, a two-layer LSTM and a linear decoder, trained with
next-token cross entropy.

    conformance trace examples/lstm_lm.py --backend mlu --run

``make_tied`` ties the decoder to the embedding (one parameter, two gradient contributions).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab: int = 40, d: int = 16, layers: int = 2, tied: bool = False) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, d, num_layers=layers, batch_first=True)
        self.decoder = nn.Linear(d, vocab)
        if tied:
            self.decoder.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embed(tokens))
        return self.decoder(hidden)


def make(tied: bool = False) -> dict[str, Any]:
    """A batch of 3 sequences of 10 tokens; predicts each next token."""
    vocab = 40
    seq = torch.randint(0, vocab, (3, 11))
    inputs, targets = seq[:, :-1], seq[:, 1:]

    def loss(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.reshape(-1, vocab), targets.to(logits.device).reshape(-1))

    return {"model": LSTMLanguageModel(vocab, tied=tied), "input": inputs, "loss": loss}


def make_tied() -> dict[str, Any]:
    return make(tied=True)
