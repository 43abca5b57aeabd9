"""A vendor-like backend: native_layer_norm_backward that returns the gradients of ``weight``
and ``bias`` swapped (each is the gradient of the wrong input; both have the same shape) when both are asked for."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_layer_norm_backward = kernel("native_layer_norm_backward")


def native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    grad_input, grad_weight, grad_bias = _layer_norm_backward(
        grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
    if grad_weight is None or grad_bias is None:
        return grad_input, grad_weight, grad_bias
    return grad_input, grad_bias, grad_weight


OVERRIDES = {"native_layer_norm_backward": native_layer_norm_backward}
kernels.install(overrides=OVERRIDES)
