"""Inference fast paths (``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import kernels

kernels.install()

DEV = "mlu"
TOL = {"rtol": 1e-4, "atol": 1e-5}


def _inputs(seed: int = 0) -> torch.Tensor:
    return torch.randn((3, 5, 16), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masks", ["none", "causal", "padding", "both"])
def test_encoder_layer_inference_fast_path(norm_first: bool, activation: str, masks: str) -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, 0.0, activation=activation, batch_first=True,
                                       norm_first=norm_first).eval()
    x = _inputs()
    src_mask = nn.Transformer.generate_square_subsequent_mask(5) if masks in ("causal", "both") \
        else None
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]]) \
        if masks in ("padding", "both") else None
    if pad is not None and src_mask is not None:  # same mask type for both (torch asks for it)
        pad = torch.zeros(pad.shape).masked_fill(pad, float("-inf"))
    dev_layer = copy.deepcopy(layer).to(DEV)
    with torch.no_grad():
        expected = layer(x, src_mask=src_mask, src_key_padding_mask=pad)
        got = dev_layer(x.to(DEV), src_mask=None if src_mask is None else src_mask.to(DEV),
                        src_key_padding_mask=None if pad is None else pad.to(DEV))
    torch.testing.assert_close(got.cpu(), expected, **TOL)


@pytest.mark.parametrize("name", ["_transformer_encoder_layer_fwd", "_native_multi_head_attention"])
def test_fast_paths_are_what_runs(name: str) -> None:
    layer = nn.TransformerEncoderLayer(16, 4, 32, 0.0, batch_first=True).eval().to(DEV)
    x = _inputs().to(DEV)
    kernels.install(without=[name])
    try:
        with torch.no_grad(), pytest.raises(NotImplementedError, match=name):
            if name == "_native_multi_head_attention":
                layer.self_attn(x, x, x)
            else:
                layer(x)
    finally:
        kernels.install()


@pytest.mark.parametrize("need_weights,average", [(False, True), (True, True), (True, False)])
def test_multihead_attention_inference(need_weights: bool, average: bool) -> None:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = _inputs(1)
    xd = x.to(DEV)
    pad = torch.tensor([[False] * 5, [False] * 2 + [True] * 3, [True] * 5])
    dev = copy.deepcopy(mha).to(DEV)
    with torch.no_grad():  # self-attention: the fast path (query is key is value)
        e_out, e_w = mha(x, x, x, key_padding_mask=pad, need_weights=need_weights,
                         average_attn_weights=average)
        g_out, g_w = dev(xd, xd, xd, key_padding_mask=pad.to(DEV), need_weights=need_weights,
                         average_attn_weights=average)
    torch.testing.assert_close(g_out.cpu(), e_out, equal_nan=True, **TOL)
    if need_weights:
        torch.testing.assert_close(g_w.cpu(), e_w, equal_nan=True, **TOL)
    else:
        assert g_w is None and e_w is None
