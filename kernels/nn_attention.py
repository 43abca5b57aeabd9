"""Inference fast paths of ``nn.MultiheadAttention`` / ``nn.TransformerEncoderLayer`` on ``mlu``.

In ``eval()`` under ``torch.no_grad()`` those modules skip their Python code and call one fused
ATen op — ``_native_multi_head_attention`` / ``_transformer_encoder_layer_fwd`` — for every device
in ``["cpu", "cuda", <the PrivateUse1 name>]``, so a PrivateUse1 backend without these kernels
breaks plain inference. ATen's own implementations (``aten/src/ATen/native/transformers``) are
compositions of other ops; these kernels are the same compositions, written with torch ops on the
mlu tensors (each one dispatches to an mlu kernel), including ATen's quirks: ``q`` is scaled
before ``q @ k^T``; a floating mask is turned into a boolean one (non-zero = masked); a fully
masked row comes out NaN, as CPU's does in torch 2.13.

Training and ``scaled_dot_product_attention`` do not come here: for a PrivateUse1 device torch's
SDPA picks the math path (``_scaled_dot_product_attention_math``), a CompositeImplicitAutograd
decomposition into bmm/softmax/etc.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from kernels.registry import register

__all__: list[str] = []


def _bool_mask(mask: torch.Tensor | None, mask_type: int | None, batch: int, heads: int,
               lq: int, lk: int) -> torch.Tensor | None:
    if mask is None:
        return None
    m = mask if mask.dtype == torch.bool else mask != 0
    if mask_type == 1:  # key padding (B, S)
        m = m.view(batch, 1, 1, lk)
    return m.expand(batch, heads, lq, lk)


def _mha_checks(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, embed_dim: int,
                num_head: int, qkv_weight: torch.Tensor, qkv_bias: torch.Tensor) -> None:
    """ATen's ``native_multi_head_attention_cpu`` argument checks, in its order."""
    def check(ok: bool, message: str) -> None:
        if not ok:
            raise RuntimeError(message)

    check(query.dim() == 3, f"expected 3-D `query`, got {query.dim()}-D tensor")
    check(query.shape[2] == embed_dim,
          f"passed-in embed_dim {embed_dim} didn't match last dim of query {query.shape[2]}")
    check(key.dim() == 3, f"expected 3-D `key`, got {key.dim()}-D tensor")
    check(value.dim() == 3, f"expected 3-D `value`, got {value.dim()}-D tensor")
    check(query.shape == key.shape == value.shape,
          "expected `query`/`key`/`value` shapes to match")
    check(qkv_weight.dim() == 2, f"expected 2-D `qkv_weight`, got {qkv_weight.dim()}-D tensor")
    check(qkv_weight.shape[0] == 3 * embed_dim,
          "expected `qkv_weight` first dim to be 3x embed_dim")
    check(qkv_weight.shape[1] == embed_dim, "expected `qkv_weight` second dim to be embed_Dim")
    check(qkv_bias.dim() == 1, f"expected 1-D `qkv_bias`, got {qkv_bias.dim()}-D tensor")
    check(qkv_bias.shape[0] == 3 * embed_dim,
          "expected `qkv_bias` first dim and first dim of query to be equal")
    # num_head 0: ATen's D % num_head is undefined behaviour; refuse it with the same check
    check(num_head != 0 and embed_dim % num_head == 0,
          "`embed_dim` must divide evenly by `num_heads`")


@register("_native_multi_head_attention")
def native_multi_head_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                embed_dim: int, num_head: int, qkv_weight: torch.Tensor,
                                qkv_bias: torch.Tensor, proj_weight: torch.Tensor,
                                proj_bias: torch.Tensor, mask: torch.Tensor | None = None,
                                need_weights: bool = True, average_attn_weights: bool = True,
                                mask_type: int | None = None
                                ) -> tuple[torch.Tensor, torch.Tensor | None]:
    _mha_checks(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias)
    b, lq, e = query.shape
    lk = key.shape[1]
    d = e // num_head
    w_q, w_k, w_v = qkv_weight.split(e)
    b_q, b_k, b_v = qkv_bias.split(e)
    q = F.linear(query, w_q, b_q).view(b, lq, num_head, d).transpose(1, 2)
    k = F.linear(key, w_k, b_k).view(b, lk, num_head, d).transpose(1, 2)
    v = F.linear(value, w_v, b_v).view(b, lk, num_head, d).transpose(1, 2)
    q = q / math.sqrt(d)
    scores = torch.matmul(q, k.transpose(-2, -1))
    masked = _bool_mask(mask, mask_type, b, num_head, lq, lk)
    if masked is not None:
        scores = scores.masked_fill(masked, float("-inf"))
    attn = torch.softmax(scores, dim=-1)  # a row with every key masked is NaN, as on CPU
    out = torch.matmul(attn, v).transpose(1, 2).reshape(b, lq, e)
    out = F.linear(out, proj_weight, proj_bias)
    if not need_weights:
        return out, None
    return out, attn.mean(dim=1) if average_attn_weights else attn


@register("_transformer_encoder_layer_fwd")
def transformer_encoder_layer_fwd(src: torch.Tensor, embed_dim: int, num_heads: int,
                                  qkv_weight: torch.Tensor, qkv_bias: torch.Tensor,
                                  proj_weight: torch.Tensor, proj_bias: torch.Tensor,
                                  use_gelu: bool, norm_first: bool, eps: float,
                                  norm_weight_1: torch.Tensor, norm_bias_1: torch.Tensor,
                                  norm_weight_2: torch.Tensor, norm_bias_2: torch.Tensor,
                                  ffn_weight_1: torch.Tensor, ffn_bias_1: torch.Tensor,
                                  ffn_weight_2: torch.Tensor, ffn_bias_2: torch.Tensor,
                                  mask: torch.Tensor | None = None, mask_type: int | None = None
                                  ) -> torch.Tensor:
    if src.numel() == 0:  # ATen returns a copy of an empty input before any check
        return src.clone()
    shape = (embed_dim,)
    x = src
    if norm_first:
        x = F.layer_norm(x, shape, norm_weight_1, norm_bias_1, eps)
    x = native_multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias,
                                    proj_weight, proj_bias, mask, False, True, mask_type)[0]
    x = x + src
    if not norm_first:
        x = F.layer_norm(x, shape, norm_weight_1, norm_bias_1, eps)
    residual = x
    if norm_first:
        x = F.layer_norm(x, shape, norm_weight_2, norm_bias_2, eps)
    h = F.linear(x, ffn_weight_1, ffn_bias_1)
    h = F.gelu(h) if use_gelu else F.relu(h)
    x = F.linear(h, ffn_weight_2, ffn_bias_2) + residual
    if not norm_first:
        x = F.layer_norm(x, shape, norm_weight_2, norm_bias_2, eps)
    return x
