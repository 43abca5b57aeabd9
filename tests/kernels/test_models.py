"""End-to-end: a small CNN and a small transformer encoder train identically on ``mlu`` and CPU.

Each model is built once on CPU, deep-copied, and moved with ``.to("mlu")``; three optimizer steps
(SGD with momentum and weight decay, AdamW) run on both devices from the same initial state and
data. Losses, parameters and buffers (batch-norm running statistics) must agree within float32
tolerance. Dropout is 0 for the comparison; train-mode dropout is checked on its own in
``tests/test_kernels_nn.py``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import nn

import kernels

kernels.install()

DEV = "mlu"
TOL = {"rtol": 1e-4, "atol": 1e-5}


class SmallCNN(nn.Module):
    """conv (stride/padding/dilation/groups) + batch norm + relu + max/avg/adaptive pools + linear."""

    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            # no bias before batch norm: its gradient is zero up to rounding, which AdamW would
            # blow up to full-size steps in different directions on the two devices
            nn.Conv2d(3, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),  # 12 -> 6
            nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2),  # 6 -> 3
            nn.ReLU(),
            nn.Conv2d(8, 12, 3, padding=2, dilation=2, bias=False),  # 3 -> 3
            nn.BatchNorm2d(12),
            nn.ReLU(),
            nn.AvgPool2d(2, stride=1, padding=1, ceil_mode=True, count_include_pad=False),  # -> 4
            nn.AdaptiveAvgPool2d((2, 2)),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(48, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class TinyEncoder(nn.Module):
    """embedding + transformer encoder (multi-head attention, layer norm, gelu) + linear head."""

    def __init__(self, vocab: int = 23, d: int = 16, heads: int = 4, ff: int = 32,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout, activation="gelu",
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        for lay in self.enc.layers:
            # the key bias shifts every attention logit of a row equally, so softmax makes its
            # gradient zero up to rounding noise, which AdamW would amplify to full-size steps
            lay.self_attn.in_proj_bias.requires_grad_(False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.vocab = vocab

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        seq = tokens.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(seq, device=tokens.device)
        return self.head(self.norm(self.enc(self.emb(tokens), mask=mask, is_causal=True)))


def _cnn_case() -> tuple[nn.Module, torch.Tensor, torch.Tensor, Callable[..., torch.Tensor]]:
    torch.manual_seed(0)
    model = SmallCNN()
    x = torch.randn(4, 3, 12, 12)
    y = torch.randint(0, 5, (4,))
    return model, x, y, nn.functional.cross_entropy


def _encoder_case() -> tuple[nn.Module, torch.Tensor, torch.Tensor, Callable[..., torch.Tensor]]:
    torch.manual_seed(0)
    model = TinyEncoder()
    tokens = torch.randint(0, 23, (3, 6))
    target = torch.randint(0, 23, (3, 6))

    def loss(out: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), tgt.reshape(-1))

    return model, tokens, target, loss


CASES = {"cnn": _cnn_case, "encoder": _encoder_case}
OPTIMIZERS: dict[str, Callable[[Iterator[nn.Parameter]], torch.optim.Optimizer]] = {
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "sgd_momentum_per_tensor": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9,
                                                         nesterov=True, foreach=False),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=1e-2),
    "adamw_per_tensor": lambda p: torch.optim.AdamW(p, lr=1e-2, foreach=False),
}


def _train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss_fn: Callable[..., Any],
           make_opt: Callable[..., torch.optim.Optimizer], device: str, steps: int = 3
           ) -> tuple[list[torch.Tensor], dict[str, torch.Tensor], torch.Tensor]:
    model = copy.deepcopy(model).to(device)
    opt = make_opt(model.parameters())
    x, y = x.to(device), y.to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach().cpu())
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    model.eval()
    evaluated = model(x).detach().cpu()
    return losses, state, evaluated


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_training_matches_cpu(case: str, opt: str) -> None:
    model, x, y, loss_fn = CASES[case]()
    cpu_losses, cpu_state, cpu_eval = _train(model, x, y, loss_fn, OPTIMIZERS[opt], "cpu")
    dev_losses, dev_state, dev_eval = _train(model, x, y, loss_fn, OPTIMIZERS[opt], DEV)
    for step, (c, d) in enumerate(zip(cpu_losses, dev_losses, strict=True)):
        torch.testing.assert_close(d, c, **TOL, msg=lambda m, s=step: f"loss at step {s}: {m}")
    assert cpu_state.keys() == dev_state.keys()
    for name, value in cpu_state.items():
        torch.testing.assert_close(dev_state[name], value, **TOL,
                                   msg=lambda m, n=name: f"{n} after 3 steps: {m}")
    torch.testing.assert_close(dev_eval, cpu_eval, **TOL)
    # the losses really moved: the comparison is not between two untouched models
    assert not torch.equal(dev_losses[0], dev_losses[-1])


def test_parameters_live_on_mlu_and_optimizer_state_too() -> None:
    model, x, y, loss_fn = _cnn_case()
    model = model.to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn(model(x.to(DEV)), y.to(DEV)).backward()
    opt.step()
    for p in model.parameters():
        assert p.device.type == DEV and p.grad is not None and p.grad.device.type == DEV
        assert opt.state[p]["exp_avg"].device.type == DEV
    bn = model.features[1]
    assert bn.running_mean.device.type == DEV
    assert int(bn.num_batches_tracked.cpu()) == 1


def _dropout_run(seed: int) -> list[float]:
    torch.manual_seed(0)
    model = TinyEncoder(dropout=0.2).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    _, tokens, target, loss_fn = _encoder_case()
    tokens, target = tokens.to(DEV), target.to(DEV)
    torch.manual_seed(seed)  # seeds the mlu generator too: dropout masks are reproducible
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = loss_fn(model(tokens), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_encoder_trains_with_dropout_on_mlu() -> None:
    """Train-mode dropout inside attention and the feed-forward block (``native_dropout`` and its
    backward): reproducible under a seed, different under another, and the loss goes down."""
    first, again, other = _dropout_run(1), _dropout_run(1), _dropout_run(2)
    assert first == again
    assert first != other
    assert first[-1] < first[0]


MORE_OPTIMIZERS: dict[str, Callable[[Iterator[nn.Parameter]], torch.optim.Optimizer]] = {
    "adam_amsgrad": lambda p: torch.optim.Adam(p, lr=1e-2, amsgrad=True),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-3, momentum=0.9),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-2),
    "adamw_fused": lambda p: torch.optim.AdamW(p, lr=1e-2, fused=True),
}


@pytest.mark.parametrize("opt", sorted(MORE_OPTIMIZERS))
def test_other_optimizers_with_grad_clipping(opt: str) -> None:
    """Other optimizers' default paths (foreach slow paths, fused), gradient clipping
    (``_foreach_norm``) and ``zero_grad(set_to_none=False)`` (``_foreach_zero_``) on the CNN."""
    model, x, y, loss_fn = _cnn_case()
    params = {}
    for device in ("cpu", DEV):
        m = copy.deepcopy(model).to(device)
        optimizer = MORE_OPTIMIZERS[opt](m.parameters())
        for _ in range(3):
            optimizer.zero_grad(set_to_none=False)
            loss_fn(m(x.to(device)), y.to(device)).backward()
            nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            optimizer.step()
        params[device] = [p.detach().cpu() for p in m.parameters()]
    for c, d in zip(params["cpu"], params[DEV], strict=True):
        torch.testing.assert_close(d, c, **TOL)
