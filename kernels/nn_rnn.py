"""Recurrent cells and adaptive max pooling of ``mlu``.

``nn.LSTM``/``nn.GRU`` on a non-CPU device run their cells through ATen's fused kernels
``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell`` (the gate matrix products are done before,
by ``mm``/``addmm``). These are the same formulas as ATen's CUDA kernels (``RNN.cu``), including
the *workspace* layout the backward reads: the activated gates ``[i, f, g, o]`` for the LSTM,
``[r, z, n, hx, hn]`` for the GRU. The backward ops are the CUDA ones' closed forms.
"""

from __future__ import annotations

import numpy as np
import torch

from kernels._define import define
from kernels._semantics import FLOATING, opmath
from kernels._tensor import to_numpy
from kernels.nn import _adaptive_taps

__all__: list[str] = []


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _arrays(*tensors: torch.Tensor | None) -> list[np.ndarray | None]:
    return [None if t is None else opmath(to_numpy(t)) for t in tensors]


def _arg(pos: int, name: str) -> str:
    return f"argument #{pos} '{name}'"


def _check_sizes(checked: str, input_gates: torch.Tensor, hidden_gates: torch.Tensor,
                 input_bias: torch.Tensor | None, hidden_bias: torch.Tensor | None,
                 factor: int, prev_hidden: torch.Tensor) -> None:
    """CUDA's checkSizes (RNN.cu), with ATen's TensorUtils messages: 2-d gates of one size, a
    1-d bias of gates_size elements (both biases alike), a 2-d hidden state of batch *
    gates_size / factor elements. A bias that broadcasts (CPU's unfused linear ops take a [4 *
    hidden, 1] one) is refused here; its gradient could not come back in its shape."""
    def dim(t: torch.Tensor, pos: int, name: str, want: int) -> None:
        if t.dim() != want:
            raise RuntimeError(f"Expected {want}-dimensional tensor, but got {t.dim()}-dimensional "
                               f"tensor for {_arg(pos, name)} (while checking arguments for "
                               f"{checked})")

    def numel(t: torch.Tensor, pos: int, name: str, want: int) -> None:
        if t.numel() != want:
            raise RuntimeError(f"Expected tensor for {_arg(pos, name)} to have {want} elements; "
                               f"but got a tensor with {t.numel()} elements (while checking "
                               f"arguments for {checked})")

    def same(a: torch.Tensor, pa: int, na: str, b: torch.Tensor, pb: int, nb: str) -> None:
        if a.shape != b.shape:
            raise RuntimeError(f"Expected tensor for {_arg(pa, na)} to have same size as tensor "
                               f"for {_arg(pb, nb)}; but {list(a.shape)} does not equal "
                               f"{list(b.shape)} (while checking arguments for {checked})")

    dim(input_gates, 1, "input_gates", 2)
    same(input_gates, 1, "input_gates", hidden_gates, 2, "hidden_gates")
    gates_size = input_gates.shape[1]
    if input_bias is not None:
        dim(input_bias, 3, "input_bias", 1)
        numel(input_bias, 3, "input_bias", gates_size)
        if hidden_bias is not None:
            same(input_bias, 3, "input_bias", hidden_bias, 4, "hidden_bias")
    dim(prev_hidden, 5, "prev_hidden", 2)
    numel(prev_hidden, 5, "prev_hidden", input_gates.shape[0] * gates_size // factor)


def _gates(input_gates: torch.Tensor, hidden_gates: torch.Tensor,
           input_bias: torch.Tensor | None, hidden_bias: torch.Tensor | None
           ) -> tuple[np.ndarray, np.ndarray]:
    ig, hg, ib, hb = _arrays(input_gates, hidden_gates, input_bias, hidden_bias)
    assert ig is not None and hg is not None
    if ib is not None:
        ig = ig + ib
    if hb is not None:
        hg = hg + hb
    return ig, hg


@define("_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell.out", ("out0", "out1", "out2"),
        dtypes=FLOATING, kernel_name="_thnn_fused_lstm_cell_cuda", autogen_out=True)
def fused_lstm_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, cx: torch.Tensor,
                    input_bias: torch.Tensor | None = None,
                    hidden_bias: torch.Tensor | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hy, cy, workspace)``; gates in the order input, forget, cell, output."""
    _check_sizes("_thnn_fused_lstm_cell_cuda", input_gates, hidden_gates, input_bias,
                 hidden_bias, 4, cx)
    dtype = to_numpy(input_gates).dtype
    ig, hg = _gates(input_gates, hidden_gates, input_bias, hidden_bias)
    i, f, g, o = np.split(ig + hg, 4, axis=1)
    i, f, g, o = _sigmoid(i), _sigmoid(f), np.tanh(g), _sigmoid(o)
    c = opmath(to_numpy(cx))
    cy = f * c + i * g
    hy = o * np.tanh(cy)
    workspace = np.concatenate([i, f, g, o], axis=1)
    return hy.astype(dtype), cy.astype(dtype), workspace.astype(dtype)


@define("_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_lstm_cell_backward_impl.out",
        ("out0", "out1", "out2"), dtypes=FLOATING, dtype_args=(2,),
        kernel_name="_thnn_fused_lstm_cell_backward_impl_cuda", autogen_out=True)
def fused_lstm_cell_backward_impl(grad_hy: torch.Tensor | None, grad_cy: torch.Tensor | None,
                                  cx: torch.Tensor, cy: torch.Tensor, workspace: torch.Tensor,
                                  has_bias: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(grad_gates, grad_cx, grad_bias)`` from the saved activated gates."""
    dtype = to_numpy(cx).dtype
    c, c_new, ws, ghy, gcy = _arrays(cx, cy, workspace, grad_hy, grad_cy)
    assert c is not None and c_new is not None and ws is not None
    i, f, g, o = np.split(ws, 4, axis=1)
    ghy = np.zeros_like(c_new) if ghy is None else ghy
    tanh_cy = np.tanh(c_new)
    grad_o = ghy * tanh_cy
    grad_c = ghy * o * (1.0 - tanh_cy * tanh_cy)
    if gcy is not None:
        grad_c = grad_c + gcy
    grad_i = grad_c * g * i * (1.0 - i)
    grad_f = grad_c * c * f * (1.0 - f)
    grad_g = grad_c * i * (1.0 - g * g)
    grad_o = grad_o * o * (1.0 - o)
    grad_gates = np.concatenate([grad_i, grad_f, grad_g, grad_o], axis=1)
    grad_bias = grad_gates.sum(axis=0).astype(dtype) if has_bias else None
    return grad_gates.astype(dtype), (grad_c * f).astype(dtype), grad_bias


@define("_thnn_fused_gru_cell", "_thnn_fused_gru_cell.out", ("out0", "out1"),
        dtypes=FLOATING, kernel_name="_thnn_fused_gru_cell_cuda", autogen_out=True)
def fused_gru_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, hx: torch.Tensor,
                   input_bias: torch.Tensor | None = None, hidden_bias: torch.Tensor | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(hy, workspace)``; gates in the order reset, update, new."""
    _check_sizes("_thnn_fused_gru_cell_cuda", input_gates, hidden_gates, input_bias,
                 hidden_bias, 3, hx)
    dtype = to_numpy(input_gates).dtype
    ig, hg = _gates(input_gates, hidden_gates, input_bias, hidden_bias)
    ir, iz, inn = np.split(ig, 3, axis=1)
    hr, hz, hn = np.split(hg, 3, axis=1)
    h = opmath(to_numpy(hx))
    r = _sigmoid(ir + hr)
    z = _sigmoid(iz + hz)
    n = np.tanh(inn + r * hn)
    hy = n + z * (h - n)
    workspace = np.concatenate([r, z, n, h, hn], axis=1)
    return hy.astype(dtype), workspace.astype(dtype)


@define("_thnn_fused_gru_cell_backward", "_thnn_fused_gru_cell_backward.out",
        ("out0", "out1", "out2", "out3", "out4"), dtypes=FLOATING,
        kernel_name="_thnn_fused_gru_cell_backward_cuda")
def fused_gru_cell_backward(grad_hy: torch.Tensor, workspace: torch.Tensor, has_bias: bool
                            ) -> tuple[np.ndarray | None, ...]:
    """``(grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)``."""
    dtype = to_numpy(grad_hy).dtype
    gh, ws = _arrays(grad_hy, workspace)
    assert gh is not None and ws is not None
    r, z, n, h, hn = np.split(ws, 5, axis=1)
    grad_z = gh * (h - n) * z * (1.0 - z)
    grad_n = gh * (1.0 - z) * (1.0 - n * n)
    grad_r = grad_n * hn * r * (1.0 - r)
    grad_input = np.concatenate([grad_r, grad_z, grad_n], axis=1)
    grad_hidden = np.concatenate([grad_r, grad_z, grad_n * r], axis=1)
    out: list[np.ndarray | None] = [grad_input, grad_hidden, gh * z]
    if has_bias:
        out += [grad_input.sum(axis=0), grad_hidden.sum(axis=0)]
    else:
        out += [None, None]
    return tuple(None if a is None else a.astype(dtype) for a in out)


# --------------------------------------------------------------------------------------------
# adaptive max pooling


def _adaptive_max(x: np.ndarray, output_size: list[int]) -> tuple[np.ndarray, np.ndarray]:
    if len(output_size) != 2:
        raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    if x.ndim not in (3, 4):
        raise RuntimeError(
            f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(x.shape)}"
        )
    if 0 in x.shape[1:]:
        raise RuntimeError(
            "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch "
            f"dimensions, but input has sizes {list(x.shape)}"
        )
    h, w = x.shape[-2:]
    if 0 in (*x.shape[:-2], *output_size):  # an empty result: CPU computes nothing
        shape = (*x.shape[:-2], *(int(o) for o in output_size))
        return np.empty(shape, x.dtype), np.empty(shape, np.int64)
    taps_h, _ = _adaptive_taps(h, int(output_size[0]))
    taps_w, _ = _adaptive_taps(w, int(output_size[1]))
    floating = x.dtype.kind == "f" or x.dtype.name == "bfloat16"
    low = -np.inf if floating else np.iinfo(x.dtype).min
    best = np.full((*x.shape[:-2], *output_size), low, dtype=x.dtype)
    index = np.zeros(best.shape, dtype=np.int64)
    first = True
    for ih, _, vh in taps_h:  # ATen scans the window row by row, the first maximum wins,
        rows = np.take(x, ih, axis=-2)  # a NaN always wins
        for iw, _, vw in taps_w:
            v = np.take(rows, iw, axis=-1)
            upd = np.ones(best.shape, dtype=bool) if first else v > best
            if floating:
                upd |= np.isnan(v)
            valid = np.ones(best.shape[-2:], dtype=bool)
            if vh is not None:
                valid &= vh[:, None]
            if vw is not None:
                valid &= vw[None, :]
            upd &= valid
            np.copyto(best, v, where=upd)
            np.copyto(index, (ih[:, None] * w + iw[None, :]).astype(np.int64), where=upd)
            first = False
    return best, index


define("adaptive_max_pool2d", "adaptive_max_pool2d.out", dtypes=FLOATING,
       kernel_name="adaptive_max_pool2d", arrays=True)(_adaptive_max)


@define("adaptive_max_pool2d_backward", "adaptive_max_pool2d_backward.grad_input",
        ("grad_input",), dtypes=FLOATING, kernel_name="adaptive_max_pool2d_backward")
def adaptive_max_pool2d_backward(grad_output: torch.Tensor, self: torch.Tensor,
                                 indices: torch.Tensor) -> np.ndarray:
    x = to_numpy(self)
    go = opmath(to_numpy(grad_output))
    hw = x.shape[-1] * x.shape[-2]
    planes = go.size // max(go.shape[-1] * go.shape[-2], 1) if go.size else 0
    flat = to_numpy(indices).reshape(planes, -1) + (np.arange(planes) * hw)[:, None]
    gx = np.zeros(planes * hw, dtype=go.dtype)
    np.add.at(gx, flat.ravel(), go.reshape(-1))
    return gx.reshape(x.shape).astype(x.dtype, copy=False)
