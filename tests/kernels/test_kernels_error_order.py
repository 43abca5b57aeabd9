"""The mlu reference backend against CPU where CPU's answer depends on the *order* of its checks
or on an empty result: the exception type CPU raises first (argument and dtype checks before
index bounds), and results CPU returns without computing (an empty result skips the dtype
dispatch and the bound checks). Each case runs on both devices; both must raise the same
exception type, or both return results of the same dtypes, shapes and values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import kernels

kernels.install()

A = torch.ops.aten
Make = Callable[[str], Any]


def t(*values: Any, dtype: torch.dtype = torch.float32, shape: tuple[int, ...] | None = None
      ) -> Callable[[str], torch.Tensor]:
    def make(device: str) -> torch.Tensor:
        x = torch.tensor(list(values), dtype=dtype)
        return (x.reshape(shape) if shape is not None else x).to(device)
    return make


def z(*shape: int, dtype: torch.dtype = torch.float32) -> Callable[[str], torch.Tensor]:
    return lambda device: torch.zeros(shape, dtype=dtype, device=device)


def ar(*shape: int, dtype: torch.dtype = torch.float32) -> Callable[[str], torch.Tensor]:
    n = 1
    for s in shape:
        n *= s
    return lambda device: torch.arange(n, dtype=torch.float64).to(dtype).reshape(shape).to(device)


L = torch.int64
I32 = torch.int32

def _adam_step(d: str) -> tuple[torch.Tensor, ...]:
    params, grads, avgs, sqs, maxs = (t(v)(d) for v in (-5.1, -2.5, -1.0, -0.5, 1e-3))
    A._fused_adam_([params], [grads], [avgs], [sqs], [maxs], [t(0.5)(d)], lr=t(0.5, shape=())(d),
                   beta1=0.9, beta2=-0.16, weight_decay=0.0, eps=1e-8, amsgrad=True,
                   maximize=False)
    return params, avgs, sqs, maxs


CASES: dict[str, Callable[[str], Any]] = {
    # put_: index dtype, same dtype, numel, empty self, then bounds
    "put_ index int32": lambda d: A.put_(z(1)(d), t(4, dtype=I32)(d), t(1.0)(d)),
    "put_ source dtype": lambda d: A.put_(z(1)(d), t(4, dtype=L)(d), t(1, dtype=I32)(d)),
    "put_ numel": lambda d: A.put_(z(1)(d), t(4, 1, dtype=L)(d), t(1.0)(d)),
    "put_ empty self": lambda d: A.put_(z(0)(d), t(4, dtype=L)(d), t(1.0)(d)),
    "put_ bounds": lambda d: A.put_(z(1)(d), t(4, dtype=L)(d), t(1.0)(d)),
    # index_add / index_reduce: ATen's index_func_meta_impl before bounds
    "index_add dtypes": lambda d: A.index_add(z(1, dtype=torch.float64)(d), 0,
                                              t(4, dtype=L)(d), t(1.0)(d)),
    "index_add index 2-d": lambda d: A.index_add(z(1)(d), 0, t(4, dtype=L, shape=(1, 1))(d),
                                                 t(1.0)(d)),
    "index_add index float": lambda d: A.index_add(z(1)(d), 0, t(4.0)(d), t(1.0)(d)),
    "index_add bounds": lambda d: A.index_add(z(1)(d), 0, t(4, dtype=L)(d), t(1.0)(d)),
    "index_reduce dtypes": lambda d: A.index_reduce(
        z(1, dtype=I32)(d), 0, t(4, dtype=L)(d), t(1j, dtype=torch.complex64)(d), "prod"),
    # index_fill_: index dtype, index rank, complex value, then bounds
    "index_fill_ rank": lambda d: A.index_fill_(z(1, 1, dtype=torch.int8)(d), 0,
                                                t(4, dtype=L, shape=(1, 1))(d), 1),
    "index_fill_ complex": lambda d: A.index_fill_(z(1, dtype=torch.int8)(d), 0,
                                                   t(4, dtype=L)(d), 1j),
    "index_fill_ bounds": lambda d: A.index_fill_(z(1, dtype=torch.int8)(d), 0,
                                                  t(4, dtype=L)(d), 1),
    # advanced indexing: out-of-bounds indices are not read when the result is empty
    "index empty result": lambda d: A.index(z(1, 0)(d), [t(1, dtype=L)(d)]),
    "index empty dim": lambda d: A.index(z(0, 0)(d), [t(1, dtype=L)(d)]),
    "index empty dim, empty index": lambda d: A.index(z(0, 0)(d), [z(0, dtype=L)(d)]),
    "index nonempty result": lambda d: A.index(z(1, 0)(d), [None, t(0, dtype=L, shape=(1, 1))(d)]),
    "index mask of an empty tensor": lambda d: A.index(z(2, 0)(d), [t(True, False,
                                                                      dtype=torch.bool)(d)]),
    "index broadcast": lambda d: A.index(ar(2, 3)(d), [t(1, 0, dtype=L)(d),
                                                       t(1, 2, dtype=L, shape=(2, 1))(d)]),
    "index_out dtype": lambda d: A.index(z(3)(d), [t(0, 1, dtype=L)(d)],
                                         out=z(0, dtype=torch.bool)(d)),
    "index_out too many indices": lambda d: A.index(z()(d), [z(0, dtype=L)(d)],
                                                    out=z(0, dtype=torch.bool)(d)),
    "_unsafe_index empty result": lambda d: A._unsafe_index(z(1, 0)(d), [t(2, dtype=L)(d)]),
    "index_put empty result": lambda d: A.index_put(z(1, 0)(d), [t(2, dtype=L)(d)], z(1, 0)(d)),
    # _index_put_impl_: indices, value shape, dtypes, bounds
    "_index_put_impl_ value shape": lambda d: A._index_put_impl_(
        z(3, dtype=torch.float16)(d), [t(7, dtype=L)(d)], z(2, dtype=torch.bool)(d)),
    "_index_put_impl_ dtypes": lambda d: A._index_put_impl_(
        z(3, dtype=torch.float16)(d), [t(7, dtype=L)(d)], z(1, dtype=torch.bool)(d)),
    "_index_put_impl_ value rank": lambda d: A._index_put_impl_(
        z(3, 2)(d), [t(0, 1, 2, dtype=L)(d)], z(1, 1, 2)(d)),
    "_index_put_impl_ too many indices": lambda d: A._index_put_impl_(
        z(dtype=torch.float16)(d), [t(0, dtype=L)(d)], z(1, dtype=torch.bool)(d)),
    # _pdist_forward: CPU's internal op (the 2-D and p >= 0 checks are torch.pdist's)
    "_pdist_forward one row": lambda d: A._pdist_forward(t(True, dtype=torch.bool)(d), 1.0),
    "_pdist_forward empty 3-d": lambda d: A._pdist_forward(z(0, 0, 0, dtype=L)(d), -1.0),
    "_pdist_forward no columns": lambda d: A._pdist_forward(z(3, 0)(d), -1.0),
    "_pdist_forward integral": lambda d: A._pdist_forward(z(2, 1, 1, dtype=torch.int16)(d), 1.0),
    "_pdist_forward 1-d": lambda d: A._pdist_forward(z(3)(d), 2.0),
    "_pdist_forward 3-d": lambda d: A._pdist_forward(ar(3, 2, 2)(d), 1.5),
    "_pdist_forward negative p": lambda d: A._pdist_forward(ar(3, 2)(d), -0.5),
    # _cdist_forward: mixed dtypes refused only when there is something to compute
    "_cdist_forward mixed dtypes": lambda d: A._cdist_forward(
        z(1, 1, 4, dtype=torch.float16)(d), z(1, 1, 4, dtype=torch.float64)(d), 2.0, 1),
    "_cdist_forward mixed dtypes, empty": lambda d: A._cdist_forward(
        z(1, 0, 4, dtype=torch.float16)(d), z(1, 1, 4, dtype=torch.float64)(d), 2.0, 1),
    # adaptive pooling: an empty result skips the dtype dispatch (2-d average) or the kernel
    "_adaptive_avg_pool2d empty bool": lambda d: A._adaptive_avg_pool2d(
        z(3, 1, 1, dtype=torch.bool)(d), [0, 1]),
    "_adaptive_avg_pool2d bool": lambda d: A._adaptive_avg_pool2d(
        z(3, 1, 1, dtype=torch.bool)(d), [1, 1]),
    "adaptive_avg_pool1d empty int out": lambda d: A.adaptive_avg_pool1d(
        z(3, 1, 1, dtype=I32)(d), [0], out=z(0, dtype=I32)(d)),
    "_adaptive_avg_pool3d empty bool": lambda d: A._adaptive_avg_pool3d(
        z(3, 1, 1, 1, dtype=torch.bool)(d), [0, 1, 1]),
    "_adaptive_avg_pool3d empty": lambda d: A._adaptive_avg_pool3d(z(3, 1, 1, 1)(d), [0, 1, 1]),
    "adaptive_max_pool2d empty": lambda d: A.adaptive_max_pool2d(z(0, 1, 1)(d), [0, 0]),
    "adaptive_max_pool2d empty bfloat16": lambda d: A.adaptive_max_pool2d(
        z(2, 4, 4, dtype=torch.bfloat16)(d), [1, 0]),
    "adaptive_max_pool2d empty int": lambda d: A.adaptive_max_pool2d(
        z(2, 4, 4, dtype=I32)(d), [1, 0]),
    "adaptive_max_pool1d empty": lambda d: A.adaptive_max_pool1d(z(0, 1)(d), [0]),
    "_adaptive_avg_pool2d_backward empty grad": lambda d: A._adaptive_avg_pool2d_backward(
        z(0, 0, 0)(d), z(0, 0, 0, dtype=torch.bool)(d)),
    "_adaptive_avg_pool2d_backward dtypes": lambda d: A._adaptive_avg_pool2d_backward(
        z(0, 1, 1)(d), z(0, 1, 1, dtype=torch.bool)(d)),
    "_adaptive_avg_pool2d_backward ranks": lambda d: A._adaptive_avg_pool2d_backward(
        z(1, 1, 1)(d), z(0, 1, 1, 1)(d)),
    "_adaptive_avg_pool3d_backward empty grad": lambda d: A._adaptive_avg_pool3d_backward(
        z(0, 0, 0, 0)(d), z(0, 0, 0, 0, dtype=torch.bool)(d)),
    # normal: std's checks, the output's dtype dispatched (empty: none), then mul_/add_ casts
    "normal.Tensor_float_out 0-dim mean": lambda d: A.normal.Tensor_float_out(
        t(1.0, shape=())(d), 0.0, out=z(0)(d)),
    "normal.Tensor_float complex": lambda d: A.normal.Tensor_float(
        t(1j, dtype=torch.complex64, shape=())(d), 0.0).abs() * 0,
    "normal.Tensor_float int": lambda d: A.normal.Tensor_float(t(1, dtype=L)(d), 0.0),
    "normal.Tensor_Tensor empty bool": lambda d: A.normal.Tensor_Tensor(
        z(0, 4, dtype=torch.bool)(d), z(0, 4, dtype=torch.bool)(d)),
    "normal.Tensor_Tensor_out int operands": lambda d: A.normal.Tensor_Tensor_out(
        t(-1, dtype=torch.int16)(d), t(0, dtype=torch.int16)(d), out=z(0)(d)),
    "normal.float_Tensor_out uint8 std": lambda d: A.normal.float_Tensor_out(
        -1.5, z(3, 1, 1, dtype=torch.uint8)(d), out=z(0)(d)),
    "normal.float_Tensor complex std": lambda d: A.normal.float_Tensor(
        1.0, t(1j, dtype=torch.complex64)(d)),
    "normal.float_Tensor empty int": lambda d: A.normal.float_Tensor(1.0, z(0, dtype=I32)(d)),
    "normal.Tensor_Tensor negative std": lambda d: A.normal.Tensor_Tensor(t(1.0)(d), t(-1.0)(d)),
    "normal.Tensor_Tensor empty int8 mean": lambda d: A.normal.Tensor_Tensor(
        z(0, dtype=torch.int8)(d), z(0)(d)),
    # linspace: 0 steps read neither bound
    "linspace NaN start, 0 steps, bool": lambda d: A.linspace.Tensor_Tensor(
        t(float("nan"), shape=())(d), t(0.0, shape=())(d), 0, dtype=torch.bool, device=d),
    "linspace.out inf start, 0 steps, int64": lambda d: A.linspace.Tensor_Scalar_out(
        t(float("inf"), dtype=torch.float16, shape=())(d), 0, 0, out=z(0, dtype=L)(d)),
    # embedding_renorm_: dispatched on the indices' type; self's dtype refused by row.norm()
    "embedding_renorm_ empty int64": lambda d: A.embedding_renorm_(
        z(4, 0, dtype=L)(d), z(4, 0, dtype=L)(d), 1.0, 2.0),
    "embedding_renorm no indices int64": lambda d: A.embedding_renorm(
        z(2, 4, dtype=L)(d), z(0, dtype=L)(d), 1.0, 2.0),
    "embedding_renorm_ int64 row": lambda d: A.embedding_renorm_(
        z(2, 4, dtype=L)(d), z(1, dtype=L)(d), 1.0, 2.0),
    "embedding_renorm_ 3-d": lambda d: A.embedding_renorm_(
        z(2, 4, 2)(d), z(1, dtype=L)(d), 1.0, 2.0),
    "embedding_renorm_ float indices": lambda d: A.embedding_renorm_(
        z(2, 4)(d), z(1)(d), 1.0, 2.0),
    "embedding_renorm_ out of range": lambda d: A.embedding_renorm_(
        z(2, 4)(d), t(5, dtype=L)(d), 1.0, 2.0),
    "embedding_renorm_ negative row": lambda d: A.embedding_renorm_(
        ar(2, 4)(d), t(-1, dtype=L)(d), 1.0, 2.0),
    "embedding_renorm_ complex": lambda d: A.embedding_renorm_(
        ar(2, 4, dtype=torch.complex64)(d), t(1, dtype=L)(d), 1.0, 2.0),
    # lerp with a Scalar weight: shapes and the out= cast before the dtype dispatch
    "lerp.Scalar_out shapes": lambda d: A.lerp.Scalar_out(
        z(2, dtype=torch.bool)(d), z(3, dtype=torch.bool)(d), False, out=z(0, dtype=torch.bool)(d)),
    "lerp.Scalar_out cast": lambda d: A.lerp.Scalar_out(
        z(dtype=torch.int16)(d), z(dtype=torch.int16)(d), True, out=z(0, dtype=torch.bool)(d)),
    "lerp.Scalar_out int": lambda d: A.lerp.Scalar_out(
        z(dtype=torch.int16)(d), z(dtype=torch.int16)(d), True, out=z(0, dtype=I32)(d)),
    "lerp.Scalar int": lambda d: A.lerp.Scalar(z(2, dtype=L)(d), z(2, dtype=L)(d), 0.5),
    # FFT primitives: out= is copy_ (any dtype); CPU's plan refuses empty and 0-dim inputs
    "_fft_c2c.out float": lambda d: A._fft_c2c(t(1 + 2j, 3 - 1j, dtype=torch.complex64)(d), [0],
                                               0, True, out=z(0)(d)),
    "_fft_c2r.out complex": lambda d: A._fft_c2r(t(1 + 2j, 3 - 1j, dtype=torch.complex64)(d),
                                                 [0], 0, 3, out=z(0, dtype=torch.complex64)(d)),
    "_fft_c2c no dims": lambda d: A._fft_c2c(t(1 + 2j, dtype=torch.complex64)(d), [], 1, False),
    "_fft_c2c 0-dim": lambda d: A._fft_c2c(t(1j, dtype=torch.complex64, shape=())(d), [0], 0,
                                           False),
    "_fft_c2c empty": lambda d: A._fft_c2c(z(2, 0, dtype=torch.complex64)(d), [0], 0, False),
    "_fft_c2r no dims": lambda d: A._fft_c2r(t(1j, dtype=torch.complex64)(d), [], 0, 3),
    "_fft_r2c empty": lambda d: A._fft_r2c(z(0)(d), [0], 0, True),
    # binary_cross_entropy_backward: one TensorIterator, shapes then one dtype
    "bce_backward bool target": lambda d: A.binary_cross_entropy_backward(
        z(2)(d), z(2, dtype=torch.bool)(d), z(2, dtype=torch.bool)(d)),
    "bce_backward float64 self": lambda d: A.binary_cross_entropy_backward(
        z(2)(d), z(2, dtype=torch.float64)(d), z(2)(d)),
    "bce_backward shapes": lambda d: A.binary_cross_entropy_backward(
        z(2)(d), z(3)(d), z(2, dtype=torch.bool)(d)),
    "bce_backward bool": lambda d: A.binary_cross_entropy_backward(
        z(2, dtype=torch.bool)(d), z(2, dtype=torch.bool)(d), z(2, dtype=torch.bool)(d)),
    # mish_backward: the result is allocated like self
    "mish_backward bool self": lambda d: A.mish_backward(z(0)(d), z(0, dtype=torch.bool)(d)),
    "mish_backward float16 self": lambda d: A.mish_backward(
        ar(2)(d), ar(2, dtype=torch.float16)(d)),
    # native_layer_norm(_backward): weight's shape checked; empty inputs compute nothing
    "layer_norm weight shape": lambda d: A.native_layer_norm(ar(2, 3)(d), [3], z(2)(d), None,
                                                             1e-5),
    "layer_norm_backward weight shape": lambda d: A.native_layer_norm_backward(
        z(0)(d), z(0, dtype=torch.bool)(d), [3, 1, 3], z(0, dtype=torch.bool)(d),
        z(0, dtype=torch.float16)(d), z(0)(d), None, [True, True, False]),
    "layer_norm_backward empty bfloat16": lambda d: A.native_layer_norm_backward(
        *(z(3, 0, dtype=torch.bfloat16)(d),) * 2, [3, 0], *(z(3, 0, dtype=torch.bfloat16)(d),) * 4,
        [True, True, True]),
    "layer_norm_backward no rows": lambda d: A.native_layer_norm_backward(
        z(0, 2)(d), z(0, 2)(d), [2], z(0, 1)(d), z(0, 1)(d), ar(2)(d), ar(2)(d),
        [True, True, True]),
    # scatter/gather take int32 indices too
    "scatter.src int32 index": lambda d: A.scatter.src(
        z(2, 2, dtype=I32)(d), -1, t(1, 0, dtype=I32, shape=(2, 1))(d),
        t(5, 6, dtype=I32, shape=(2, 1))(d)),
    "scatter.value int32 index": lambda d: A.scatter.value(z(2, dtype=I32)(d), -1,
                                                           t(1, dtype=I32)(d), -1),
    "gather int32 index": lambda d: A.gather(ar(2, 2)(d), -1, t(1, 0, dtype=I32, shape=(2, 1))(d)),
    "gather int16 index": lambda d: A.gather(ar(2, 2)(d), -1,
                                             t(1, 0, dtype=torch.int16, shape=(2, 1))(d)),
    # min/max out= of an empty input: the identity
    "min.unary_out empty bool": lambda d: A.min.unary_out(z(1, 0, dtype=torch.bool)(d),
                                                          out=z(0, dtype=torch.bool)(d)),
    "max.unary_out empty int16": lambda d: A.max.unary_out(z(0, dtype=torch.int16)(d),
                                                           out=z(0, dtype=torch.int16)(d)),
    "min.unary_out empty float": lambda d: A.min.unary_out(z(0)(d), out=z(0)(d)),
    "max.unary_out empty complex": lambda d: A.max.unary_out(
        z(0, dtype=torch.complex64)(d), out=z(0, dtype=torch.complex64)(d)),
    "min empty": lambda d: A.min(z(0)(d)),
    # multinomial: rank, dtype, number of samples, then values (none for no rows)
    "multinomial no rows": lambda d: A.multinomial(z(0, 0)(d), 2, True),
    "multinomial no rows, without replacement": lambda d: A.multinomial(z(0, 0)(d), 2, False),
    "multinomial 0 samples": lambda d: A.multinomial(z(2, 0)(d), 0, True),
    "multinomial.out no rows": lambda d: A.multinomial(z(0, 3)(d), 2, True,
                                                       out=z(0, dtype=L)(d)),
    "repeat_interleave no repeats": lambda d: A.repeat_interleave.Tensor(z(0, dtype=L)(d),
                                                                         output_size=2),
    # histc: a range +-1 cannot widen puts the values in the middle bin
    "histc narrow range": lambda d: A.histc(t(4.9e31, 4.9e31)(d), 5, 0, 0),
    # ... and a range of two doubles that meet in the dtype puts them in bin 0
    "histc.out float16 range rounding to [0, 0]": lambda d: A.histc(
        t(-1.0, float("nan"), -3.0, -0.0, dtype=torch.float16)(d), 3, -1.7457927963184557e-93,
        0, out=z(0, dtype=torch.float16)(d)),
    "histc float32 range meeting in the dtype": lambda d: A.histc(t(1e30)(d), 5, 1e30 - 1e14,
                                                                  1e30),
    "histc bfloat16 data widened by 1 only as doubles": lambda d: A.histc(
        t(512.0, dtype=torch.bfloat16)(d), 3, 0, 0),
    "_cdist_forward compute_mode": lambda d: A._cdist_forward(z(0, 0)(d), z(0, 0)(d), 0.0, 3),
    "index_fill value before bounds": lambda d: A.index_fill(
        z(1, dtype=torch.uint8)(d), 0, t(4, dtype=L)(d), 300),
    # mean.out is sum_out(out, dtype=out.dtype).div_(n) on CPU
    "mean.out complex into float": lambda d: A.mean.out(
        t(1 + 2j, 3 - 1j, dtype=torch.complex64)(d), None, False, out=z(0)(d)),
    "mean.out float into int": lambda d: A.mean.out(ar(2)(d), None, False, out=z(0, dtype=I32)(d)),
    # reflection/replication padding backward: grad sizes, then (empty: zeros like self)
    "reflection_pad1d_backward empty bool": lambda d: A.reflection_pad1d_backward(
        z(0, 4, 2, dtype=torch.bool)(d), z(0, 4, 2, dtype=torch.bool)(d), [0, 0],
        grad_input=z(0, dtype=torch.bool)(d)),
    "reflection_pad1d_backward empty, self's dtype": lambda d: A.reflection_pad1d_backward(
        z(0, 2, dtype=torch.float16)(d), z(0, 2, dtype=torch.bool)(d), [0, 0]),
    "reflection_pad1d_backward int64": lambda d: A.reflection_pad1d_backward(
        z(1, 4, dtype=L)(d), z(1, 2, dtype=L)(d), [1, 1]),
    "reflection_pad1d_backward grad width": lambda d: A.reflection_pad1d_backward(
        z(1, 5)(d), z(1, 2)(d), [1, 1]),
    "reflection_pad1d_backward dtypes": lambda d: A.reflection_pad1d_backward(
        z(1, 4)(d), z(1, 2, dtype=torch.float64)(d), [1, 1]),
    "reflection_pad2d_backward": lambda d: A.reflection_pad2d_backward(
        ar(1, 4, 4)(d), z(1, 2, 2)(d), [1, 1, 1, 1]),
    "replication_pad1d_backward empty int32": lambda d: A.replication_pad1d_backward(
        z(0, 4, 4, dtype=I32)(d), z(0, 4, 4, dtype=I32)(d), [0, 0]),
    "replication_pad2d_backward.grad_input empty": lambda d: A.replication_pad2d_backward(
        z(0, 0, 1, dtype=I32)(d), z(0, 0, 1, dtype=torch.bool)(d), [0, 0, 0, 0],
        grad_input=z(0)(d)),
    "replication_pad2d_backward grad height": lambda d: A.replication_pad2d_backward(
        z(0, 1, 0, dtype=torch.complex128)(d), z(0, 1, 0, dtype=torch.bool)(d), [0, 0, 1, 0]),
    "index shapes mismatch": lambda d: A.index(z(3, 2)(d), [z(0, dtype=L)(d), z(2, dtype=L)(d)]),
    "_adaptive_avg_pool2d no channels": lambda d: A._adaptive_avg_pool2d(
        z(3, 0, 1, 4, dtype=torch.int8)(d), [1, 3]),
    "_adaptive_avg_pool2d empty height": lambda d: A._adaptive_avg_pool2d(
        z(3, 1, 0, 4)(d), [1, 3]),
    "_adaptive_avg_pool3d no channels": lambda d: A._adaptive_avg_pool3d(
        z(3, 0, 1, 1, 4)(d), [1, 1, 3]),
    # group norm of no rows or no elements
    "native_group_norm empty": lambda d: A.native_group_norm(
        *(z(0, dtype=torch.float16)(d),) * 3, 0, 0, 3, 1, 0.05),
    "group_norm no rows": lambda d: A.group_norm(z(0, 3, 2, dtype=torch.bfloat16)(d), 3, None,
                                                 None, 0.04, False),
    # _cummax_helper/_cummin_helper: dispatch, then values and indices as self's type and int64
    "_cummax_helper values dtype": lambda d: A._cummax_helper(
        z(1, dtype=torch.bfloat16)(d), z(1, dtype=L)(d), z(1, dtype=torch.bool)(d), 0),
    "_cummin_helper empty, values dtype": lambda d: A._cummin_helper(
        z(0)(d), z(0, dtype=L)(d), z(0, dtype=L)(d), 0),
    "_cummax_helper indices dtype": lambda d: A._cummax_helper(
        z(1, dtype=I32)(d), z(1, dtype=I32)(d), z(1, dtype=I32)(d), 0),
    "_cummax_helper complex": lambda d: A._cummax_helper(
        z(1, dtype=torch.complex64)(d), z(1, dtype=torch.complex64)(d), z(1, dtype=L)(d), 0),
    # vector norms without identity: only an empty reduced dim (or no dims) is refused
    "vector_norm -3 over a full dim": lambda d: A.linalg_vector_norm(z(0, 2)(d), -3, [-1]),
    "vector_norm -3 over an empty dim": lambda d: A.linalg_vector_norm(z(0, 2)(d), -3, [0]),
    "vector_norm inf of an empty tensor": lambda d: A.linalg_vector_norm(z(0, 2)(d),
                                                                         float("inf")),
    "pairwise_distance empty int8": lambda d: A.pairwise_distance(
        z(0, 3, 1, dtype=torch.int8)(d), z(0, 3, 1, dtype=torch.int8)(d), -1, 0.05, True),
    # fused Adam: bias corrections in double (NaN for a negative beta to a fractional step)
    "_fused_adam_ negative beta2": lambda d: _adam_step(d),
    "reflection_pad1d_backward padding too large, empty": lambda d: A.reflection_pad1d_backward(
        z(0, 2)(d), z(0, 2, dtype=torch.bool)(d), [2, 0]),
    "_pdist_forward float16": lambda d: A._pdist_forward(z(3, 2, dtype=torch.float16)(d), 2.0),
    "native_group_norm no elements per group": lambda d: A.native_group_norm(
        z(2, 4, 0)(d), None, None, 2, 4, 0, 2, 6e-5),
    "index_reduce bool before bounds": lambda d: A.index_reduce(
        z(dtype=torch.bool)(d), 0, t(4, dtype=I32, shape=())(d), z(dtype=torch.bool)(d), "prod"),
    "_cdist_forward float16 direct kernel": lambda d: A._cdist_forward(
        z(1, 2, 4, dtype=torch.float16)(d), z(1, 2, 4, dtype=torch.float64)(d), 1.0, None),
    "layer_norm_backward reads M statistics": lambda d: A.native_layer_norm_backward(
        ar(2, 2)(d), ar(2, 2)(d), [2, 2], ar(2, 2)(d), ar(2, 2)(d), ar(2, 2)(d), ar(2, 2)(d),
        [True, True, True]),
    "index_reduce.out out dtype first": lambda d: A.index_reduce(
        z(dtype=torch.bool)(d), 0, t(4, dtype=I32, shape=())(d), z(dtype=torch.bool)(d), "prod",
        out=z(0)(d)),
    # orthogonal polynomials: a size-1 operand broadcast against size 0 or 4
    "chebyshev_polynomial_t broadcast": lambda d: A.special_chebyshev_polynomial_t(
        ar(2, 1, 2, dtype=L)(d), ar(4, 2, dtype=L)(d)),
    "hermite_polynomial_h empty": lambda d: A.special_hermite_polynomial_h(
        z(1, 1)(d), z(0)(d)),
    "laguerre_polynomial_l.out empty": lambda d: A.special_laguerre_polynomial_l(
        z(1, 1, 1)(d), z(0, 0)(d), out=z(0)(d)),
    # promotion check findings of 2026-11-30 (issue 9): result dtypes and refusals as CPU's
    "huber_loss in self's dtype": lambda d: A.huber_loss(
        t(1.0)(d), t(2.5, dtype=torch.float64)(d), 0, 1.0),
    "mse_loss_backward into a bool self": lambda d: A.mse_loss_backward(
        t(1.0, dtype=torch.float64, shape=())(d), z(dtype=torch.bool)(d), z(dtype=torch.bool)(d),
        0),
    "linalg_cross of mixed dtypes, empty": lambda d: A.linalg_cross(
        z(0, 3, dtype=torch.float64)(d), z(0, 3, dtype=torch.uint8)(d)),
    "linalg_cross.out bool into float32": lambda d: A.linalg_cross(
        z(3, dtype=torch.bool)(d), z(3, dtype=torch.bool)(d), out=z(0)(d)),
    "lerp of int64 with a float16 0-dim weight": lambda d: A.lerp(
        t(1, dtype=L, shape=())(d), t(3, dtype=L, shape=())(d),
        t(0.25, dtype=torch.float16, shape=())(d)),
    "lerp.Tensor_out complex128 0-dim weight": lambda d: A.lerp(
        t(1, dtype=torch.complex64)(d), t(3, dtype=torch.complex64)(d),
        t(0.25, dtype=torch.complex128, shape=())(d), out=z(0, dtype=torch.complex64)(d)),
    "lerp.Tensor_out float16 weight of float16 into float32": lambda d: A.lerp(
        t(1, dtype=torch.float16)(d), t(3, dtype=torch.float16)(d),
        t(0.25, dtype=torch.float16)(d), out=z(0)(d)),
    "leaky_relu_backward int16 grad, slope beyond int16": lambda d: A.leaky_relu_backward(
        t(1, dtype=torch.int16, shape=())(d), t(-1.0, dtype=torch.float16, shape=())(d),
        2147483648, False),
    "leaky_relu_backward NaN slope of an in-place result": lambda d: A.leaky_relu_backward(
        t(1.0)(d), t(1.0)(d), float("nan"), True),
    "softplus_backward int8 self, beta beyond int8": lambda d: A.softplus_backward(
        t(1.0, dtype=torch.bfloat16, shape=())(d), t(1, dtype=torch.int8, shape=())(d), 128,
        True),
    "native_group_norm numel != N * C * HxW": lambda d: A.native_group_norm(
        z(dtype=torch.bfloat16)(d), None, None, 1, 0, 0, 1, 0.0625),
    "_native_batch_norm_legit.out of a 0-dim input": lambda d: A._native_batch_norm_legit(
        z()(d), None, None, z()(d), t(1.0, shape=())(d), True, 0.1, 1e-5, out=z(0)(d),
        save_mean=z(0)(d), save_invstd=z(0)(d)),
    "native_batch_norm eval, one running stat, 1-d input": lambda d: A.native_batch_norm(
        z(2)(d), None, None, None, z(2)(d), False, 0.1, 1e-5),
    "native_batch_norm.out training, one running stat, 1-d input": lambda d:
        A.native_batch_norm(z(2)(d), None, None, z(2)(d), None, True, 0.1, 1e-5, out=z(0)(d),
                            save_mean=z(0)(d), save_invstd=z(0)(d)),
    "batch norm reads a float16 running_var of a float32 input as float32": lambda d:
        A._native_batch_norm_legit_no_training(ar(3, 2, 2)(d), None, None, z(2)(d),
                                               z(2, dtype=torch.float16)(d), 0.1, 1e-5),
    "batch norm of float16 with float32 statistics saves float32": lambda d:
        A._native_batch_norm_legit(ar(3, 2, 2, dtype=torch.float16)(d), None, None, z(2)(d),
                                   t(1.0, 1.0)(d), True, 0.1, 1e-5),
    "upsample_nearest2d_backward of a 1-d grad": lambda d: A.upsample_nearest2d_backward(
        z(0)(d), [1, 1], [0, 0, 1, 1]),
    "upsample_bilinear2d_backward output size 0": lambda d: A.upsample_bilinear2d_backward(
        z(1, 1, 0, 2)(d), [0, 2], [1, 1, 1, 1], False),
    "upsample_nearest2d output size 0": lambda d: A.upsample_nearest2d(
        z(1, 1, 2, 2)(d), [0, 3]),
    "upsample_bilinear2d output size -2 (F.interpolate's .vec passes it on)": lambda d:
        A.upsample_bilinear2d(z(1, 1, 2, 2)(d), [-2, 1], False),
    "upsample_nearest2d_backward grad of another shape": lambda d: A.upsample_nearest2d_backward(
        z(1, 1, 3, 2)(d), [2, 2], [1, 1, 1, 1]),
    "replication_pad3d_backward.grad_input rank before out dtype": lambda d:
        A.replication_pad3d_backward(z(0, dtype=torch.int8)(d), z(0, dtype=torch.bool)(d),
                                     [0] * 6, grad_input=z(0, dtype=L)(d)),
    "reflection_pad3d_backward of a 3-d self": lambda d: A.reflection_pad3d_backward(
        z(1, 1, 1)(d), z(1, 1, 1)(d), [0] * 6),
    "native_dropout p > 1: bernoulli_'s range check": lambda d: A.native_dropout(
        t(1.0, 2.0)(d), 2.0, None),
    "native_dropout.out p < 0": lambda d: A.native_dropout(
        t(1.0, 2.0)(d), -0.5, True, out0=z(0)(d), out1=z(0, dtype=torch.bool)(d)),
    "native_dropout p = 1 keeps nothing": lambda d: A.native_dropout(t(1.0, 2.0)(d), 1.0, None),
    # std_var_out: a float out sends a one-element result of a half input to std_var_all_cpu
    "std.out bfloat16 into float32": lambda d: A.std.out(
        t(1.0, 2.0, dtype=torch.bfloat16)(d), None, False, False, out=z(0)(d)),
    "var.correction_out float16 [1, 3] over dim 1 into float64": lambda d: A.var.correction_out(
        ar(1, 3, dtype=torch.float16)(d), [1], correction=0, out=z(0, dtype=torch.float64)(d)),
    "std.out float16 [2, 3] over dim 1 into float32": lambda d: A.std.out(
        z(2, 3, dtype=torch.float16)(d), [1], False, False, out=z(0)(d)),
    "std.out bfloat16 into bfloat16": lambda d: A.std.out(
        t(1.0, 2.0, dtype=torch.bfloat16)(d), None, False, False, out=z(0, dtype=torch.bfloat16)(d)),
    "std.out empty bfloat16 into float32": lambda d: A.std.out(
        z(0, dtype=torch.bfloat16)(d), None, False, False, out=z(0)(d)),
    # bmm: an empty result or contraction returns before the kernel's dtype check, in batch2's dtype
    "bmm of mixed dtypes, empty result": lambda d: A.bmm(
        z(2, 0, 4, dtype=torch.float64)(d), z(2, 4, 3, dtype=torch.complex64)(d)),
    "bmm of mixed dtypes, no contraction": lambda d: A.bmm(
        z(2, 3, 0, dtype=torch.complex64)(d), z(2, 0, 3, dtype=torch.float64)(d)),
    "bmm.out of mixed dtypes into batch1's dtype": lambda d: A.bmm.out(
        z(2, 0, 4, dtype=torch.float64)(d), z(2, 4, 3, dtype=torch.complex64)(d),
        out=z(0, dtype=torch.float64)(d)),
    "bmm of mixed dtypes": lambda d: A.bmm(
        z(2, 1, 4, dtype=torch.float64)(d), z(2, 4, 3, dtype=torch.complex64)(d)),
    "_euclidean_dist of an empty float and complex: clamp_min_ refuses complex": lambda d:
        A._euclidean_dist(z(2, 0, 2, dtype=torch.float64)(d), z(2, 0, 2, dtype=torch.complex64)(d)),
    # set_: an unchanged geometry is checked against the new storage; a changed one grows it
    # (the grown bytes are uninitialised: compare the geometry only)
    "set_ float32 [2, 2] onto a bool tensor's 4 bytes": lambda d:
        A.set_.source_Tensor_storage_offset(z(2, 2)(d), z(2, 2, dtype=torch.bool)(d), 0, [2, 2], []),
    "set_ unchanged size and stride past a smaller storage": lambda d:
        A.set_.source_Tensor_storage_offset(z(4)(d), z(2)(d), 0, [4], [1]),
    "set_ own storage at offset 1": lambda d:
        A.set_.source_Tensor_storage_offset(z(2)(d), z(2)(d), 1, [2], []),
    "set_ a new size grows the storage": lambda d:
        torch.tensor(A.set_.source_Tensor_storage_offset(z(2)(d), z(2)(d), 0, [4], []).stride()),
    "set_ unchanged size, no stride keeps a strided self's strides": lambda d:
        torch.tensor(A.set_.source_Tensor_storage_offset(z(3, 6)(d)[:, ::2], z(30)(d), 1, [3, 3],
                                                         []).stride()),
    "set_ unchanged size, no stride keeps a transposed self's strides": lambda d:
        torch.tensor(A.set_.source_Tensor_storage_offset(z(3, 4)(d).t(), z(30)(d), 0, [4, 3],
                                                         []).stride()),
    "set_ unchanged size, other stride grows the storage": lambda d:
        torch.tensor(A.set_.source_Tensor_storage_offset(z(4)(d), z(2)(d), 0, [4], [2]).stride()),
    # _transformer_encoder_layer_fwd: an empty src is copied before any check; then
    # _native_multi_head_attention's argument checks, in ATen's order
    "_transformer_encoder_layer_fwd of a 3-d qkv_weight": lambda d:
        A._transformer_encoder_layer_fwd(z(2, 2, 2)(d), 2, 1, *[z(2, 2, 2)(d)] * 4, False, False,
                                         1e-5, *[z(2, 2, 2)(d)] * 8),
    "_transformer_encoder_layer_fwd with no heads": lambda d:
        A._transformer_encoder_layer_fwd(z(2, 2, 2)(d), 2, 0, *[z(2, 2, 2)(d)] * 4, False, False,
                                         1e-5, *[z(2, 2, 2)(d)] * 8),
    "_transformer_encoder_layer_fwd embed_dim off query's last dim": lambda d:
        A._transformer_encoder_layer_fwd(z(2, 2, 2)(d), 0, 1, *[z(2, 2, 2)(d)] * 4, False, False,
                                         1e-5, *[z(2, 2, 2)(d)] * 8),
    "_transformer_encoder_layer_fwd of an empty src": lambda d:
        A._transformer_encoder_layer_fwd(ar(2, 0, 2)(d), 0, 0, *[z(2, 2, 2)(d)] * 4, False, False,
                                         1e-5, *[z(2, 2, 2)(d)] * 8),
    "_native_multi_head_attention of a 1-d qkv_bias": lambda d: A._native_multi_head_attention(
        *[z(1, 2, 2)(d)] * 3, 2, 1, z(6, 2)(d), z(6, 1)(d), z(2, 2)(d), z(2)(d)),
    # transposed convolution: slow_conv_transpose's shape checks (output padding, output size)
    "conv_transpose2d output_padding not below stride or dilation": lambda d:
        A.conv_transpose2d(z(1, 2, 3, 3)(d), z(2, 1, 2, 2)(d), output_padding=[0, 1]),
    "conv_transpose2d output_padding below dilation": lambda d:
        A.conv_transpose2d(ar(1, 2, 3, 3)(d), ar(2, 1, 2, 2)(d), output_padding=[0, 1],
                           dilation=[2, 2]),
    "conv_transpose1d output_padding (a 2-d kernel of height 1)": lambda d:
        A.conv_transpose1d(z(1, 2, 3)(d), z(2, 1, 2)(d), output_padding=[1]),
    "conv_transpose3d output size 0": lambda d:
        A.conv_transpose3d(z(1, 2, 2, 2, 2)(d), z(2, 2, 2, 2, 1)(d), padding=[0, 0, 1]),
    "conv_transpose2d of int64, output size -1": lambda d:
        A.conv_transpose2d(z(1, 2, 1, 1, dtype=L)(d), z(2, 1, 1, 1, dtype=L)(d), padding=[1, 1]),
    # default-run findings of 2026-12-02 (issue 26): CPU's checks of empty and 0-dim inputs
    "reflection_pad1d.out of a 2-d input with no channels": lambda d: A.reflection_pad1d(
        z(0, 2)(d), [0, 0], out=z(0)(d)),
    "reflection_pad2d of a 3-d input with no channels": lambda d: A.reflection_pad2d(
        z(0, 2, 2, dtype=I32)(d), [0, 0, 0, 0]),
    "replication_pad1d of a batch of no rows": lambda d: A.replication_pad1d(
        z(0, 2, 2)(d), [1, 1]),
    "unique_consecutive.out over a full dim of [2, 0]": lambda d: A.unique_consecutive(
        z(2, 0, dtype=L)(d), False, False, 0, out0=z(0, dtype=L)(d), out1=z(0, dtype=L)(d),
        out2=z(0, dtype=L)(d)),
    "unique_dim_consecutive over the empty dim of [2, 0]": lambda d: A.unique_dim_consecutive(
        z(2, 0, dtype=L)(d), 1),
    "unique_dim over a full dim of [2, 0]": lambda d: A.unique_dim(z(2, 0, dtype=L)(d), 0),
    "_cummax_helper of a 0-dim self": lambda d: A._cummax_helper(
        t(1.5, dtype=torch.float16, shape=())(d), t(1.5, dtype=torch.float16, shape=())(d),
        t(4, dtype=L, shape=())(d), 0),
    "native_batch_norm_backward of a 0-dim input, mixed dtypes": lambda d:
        A.native_batch_norm_backward(t(1.0, shape=())(d), t(1.5, dtype=torch.float16, shape=())(d),
                                     None, None, None, None, None, False, 0.0625, [False] * 3),
    "native_batch_norm_backward of a 0-dim input, grad_weight": lambda d:
        A.native_batch_norm_backward(t(1.0, shape=())(d), t(1.5, shape=())(d), None, None, None,
                                     None, None, False, 0.0625, [False, True, False]),
    "native_batch_norm_backward of a 1-d input": lambda d: A.native_batch_norm_backward(
        z(2)(d), z(2, dtype=torch.float16)(d), None, None, None, None, None, False, 0.1,
        [True] * 3),
    "native_batch_norm_backward of an int64 0-dim input": lambda d: A.native_batch_norm_backward(
        z(dtype=L)(d), z(dtype=L)(d), None, None, None, None, None, True, 0.1, [False] * 3),
    "logspace.Tensor_Scalar_out complex end into float64": lambda d: A.logspace.Tensor_Scalar_out(
        t(1.37, dtype=torch.float64, shape=())(d), complex(1.5, 0.5), 2, 0.0,
        out=z(0, dtype=torch.float64)(d)),
    "logspace.out one step of a complex start": lambda d: A.logspace.out(
        complex(1.5, 0.5), 1.0, 1, 2.0, out=z(0)(d)),
    "logspace.out one step past int8": lambda d: A.logspace.out(
        1e40, 1.0, 1, 2.0, out=z(0, dtype=torch.int8)(d)),
    "logspace.out bool": lambda d: A.logspace.out(1.0, 2.0, 2, 2.0, out=z(0, dtype=torch.bool)(d)),
    # all-checks run of 2026-12-02: dims out of range, negative sizes, refused as CPU refuses
    "cross.out dim one past the rank": lambda d: A.cross.out(
        ar(3, 2, 2)(d), ar(3, 2, 2)(d), 3, out=z(0)(d)),
    "glu dim below the rank, odd halving dim": lambda d: A.glu(z(2, 1)(d), -3),
    "glu.out dim past the rank": lambda d: A.glu(z(1, 2)(d), 2, out=z(0)(d)),
    "glu_backward dim past the rank": lambda d: A.glu_backward(z(0, 2, dtype=torch.float64)(d),
                                                               z(0, 2, dtype=torch.float64)(d), 2),
    # nll_loss: the forward's meta checks a 1-D input's target size (ValueError), then the batch
    "nll_loss empty target of a batch": lambda d: A.nll_loss(z(3, 3)(d), z(0, dtype=L)(d)),
    "nll_loss_forward 0-dim target of a batch": lambda d: A.nll_loss_forward(
        z(3, 3)(d), z(dtype=L)(d), None, 1, -100),
    "nll_loss_forward 1-d input, 3 targets": lambda d: A.nll_loss_forward(
        z(3)(d), z(3, dtype=L)(d), None, 1, -100),
    "nll_loss_backward 1-d input, 1 target": lambda d: A.nll_loss_backward(
        t(1.0, shape=())(d), z(3)(d), z(1, dtype=L)(d), None, 1, -100, t(1.0, shape=())(d)),
    "nll_loss_backward 1-d input, 3 targets: the first counts": lambda d: A.nll_loss_backward(
        t(1.0, shape=())(d), z(3)(d), t(2, 0, 1, dtype=L)(d), None, 1, -100,
        t(1.0, shape=())(d)),
    # adaptive average pooling: a negative output size is the result's resize_ (RuntimeError)
    "_adaptive_avg_pool2d negative output size": lambda d: A._adaptive_avg_pool2d(
        z(2, 2, 2)(d), [-2, 1]),
    "_adaptive_avg_pool2d.out negative output size, bool": lambda d: A._adaptive_avg_pool2d(
        z(2, 2, 2, dtype=torch.bool)(d), [-2, 0], out=z(0, dtype=torch.bool)(d)),
    "_adaptive_avg_pool3d negative output size": lambda d: A._adaptive_avg_pool3d(
        z(2, 2, 2, 2, 2, dtype=torch.float16)(d), [-2, 1, 1]),
    # FFT primitives: dims out of range and a result size below 1 are RuntimeError
    "_fft_c2c dims past the rank": lambda d: A._fft_c2c(z(2, 2, dtype=torch.complex128)(d),
                                                       [0, 1, 2], 0, False),
    "_fft_c2c dim below the rank": lambda d: A._fft_c2c(z(2, 2, dtype=torch.complex128)(d),
                                                       [-3], 0, True),
    "_fft_c2c dim -1": lambda d: A._fft_c2c(ar(2, 2, dtype=torch.complex128)(d), [-1], 0, True),
    "_fft_r2c dim past the rank": lambda d: A._fft_r2c(ar(2, 2)(d), [0, 2], 0, True),
    "_fft_c2r negative last_dim_size": lambda d: A._fft_c2r(
        z(2, 2, dtype=torch.complex128)(d), [0], 0, -2),
    "_fft_c2r last_dim_size 0": lambda d: A._fft_c2r(z(2, 2, dtype=torch.complex128)(d), [0], 0, 0),
    # isin of a Scalar: the wrapped Scalar's dtype (complex128), then test_elements'
    "isin.Scalar_Tensor_out complex element": lambda d: A.isin.Scalar_Tensor(
        0.5 + 0.25j, z(0, dtype=torch.float16)(d), out=z(0, dtype=torch.float16)(d)),
    "isin.Scalar_Tensor bool test_elements": lambda d: A.isin.Scalar_Tensor(
        1.0, z(2, dtype=torch.bool)(d)),
    # narrow_copy: CPU's kernel, not narrow's checks (a dim past the rank is RuntimeError)
    "narrow_copy dim past the rank": lambda d: A.narrow_copy(z(2, 2, dtype=torch.float64)(d),
                                                             2, 0, 0),
    "narrow_copy.out dim past the rank": lambda d: A.narrow_copy(z(2, 2)(d), 2, 0, 0,
                                                                 out=z(0)(d)),
    "narrow_copy dim below the rank": lambda d: A.narrow_copy(z(2, 2)(d), -3, 0, 0),
    "narrow_copy start out of range": lambda d: A.narrow_copy(z(2, 2)(d), 1, 3, 0),
    "narrow_copy negative length": lambda d: A.narrow_copy(z(2, 2)(d), 1, 3, -1),
    "narrow_copy negative start": lambda d: A.narrow_copy(ar(2, 3)(d), 1, -2, 2),
    # vector norms: a complex order is refused after the input's dtype, before anything else
    "dist complex p": lambda d: A.dist(ar(2, dtype=torch.float64)(d), ar(2, dtype=torch.uint8)(d),
                                       0.5 + 0.25j),
    "linalg_vector_norm complex ord, dim out of range": lambda d: A.linalg_vector_norm(
        ar(2)(d), 1j, [3]),
    "linalg_vector_norm int64 input, complex ord": lambda d: A.linalg_vector_norm(
        ar(2, dtype=L)(d), 1j),
    "renorm complex p": lambda d: A.renorm(ar(2, 2)(d), 1j, 0, 1.0),
    "linalg__powsum complex ord of int64": lambda d: A.linalg__powsum(ar(2, dtype=L)(d), 1j),
    "linalg_vector_norm empty, complex ord": lambda d: A.linalg_vector_norm(z(0, 2)(d), 1j),
    "norm.Scalar complex p": lambda d: A.norm.Scalar(t(1.0, shape=())(d), 0.5 + 0.25j),
    "embedding_dense_backward.out negative num_weights, scaled by frequency": lambda d:
        A.embedding_dense_backward(t(1, 1, 1, 1, dtype=torch.int8, shape=(1, 4))(d),
                                   z(1, dtype=L)(d), -2, -1, True, out=z(0, dtype=torch.int8)(d)),
    # scatter out= overloads: scatter_meta_impl's dim, dtypes, shapes, out=, then reduce
    "scatter.reduce_out empty src": lambda d: A.scatter.reduce_out(
        z(2, 2, dtype=L)(d), 0, t(0, 1, 1, 0, dtype=L, shape=(2, 2))(d), z(0, 2, dtype=L)(d),
        reduce="add", out=z(0, dtype=L)(d)),
    "scatter_add.out empty src": lambda d: A.scatter_add.out(
        z(2, 2)(d), 0, t(0, 1, 1, 0, dtype=L, shape=(2, 2))(d), z(0, 2)(d), out=z(0)(d)),
    "scatter.value_reduce_out dim past the rank, empty": lambda d: A.scatter.value_reduce_out(
        z(2, 0, dtype=torch.complex128)(d), 2, z(2, 0, dtype=L)(d), 0, reduce="add",
        out=z(0, dtype=torch.complex128)(d)),
    "scatter.src_out dim past the rank, src dtype": lambda d: A.scatter.src_out(
        z(2, 2)(d), 2, t(0, dtype=L, shape=(1, 1))(d), z(2, 2, dtype=L)(d), out=z(0)(d)),
    "scatter.value_out index rank of a 0-dim self": lambda d: A.scatter.value_out(
        z()(d), 0, t(0, 0, dtype=L, shape=(1, 2))(d), 1.0, out=z(0)(d)),
    "scatter.value_out index too large, int out": lambda d: A.scatter.value_out(
        z(2, 2)(d), 0, z(2, 3, dtype=L)(d), 1.0, out=z(0, dtype=L)(d)),
    "scatter.reduce_out bad reduce, int out": lambda d: A.scatter.reduce_out(
        z(2, 2)(d), 0, z(1, 2, dtype=L)(d), z(2, 2)(d), reduce="max", out=z(0, dtype=L)(d)),
}


def _answer(fn: Callable[[str], Any], device: str) -> tuple[str, Any]:
    try:
        out = fn(device)
    except Exception as exc:  # noqa: BLE001 - the error is the answer
        return "raised", type(exc)
    outs = out if isinstance(out, tuple) else (out,)
    return "returned", [o.cpu() for o in outs]


@pytest.mark.parametrize("case", list(CASES))
def test_same_answer_as_cpu(case: str) -> None:
    kind, cpu = _answer(CASES[case], "cpu")
    mlu_kind, mlu = _answer(CASES[case], "mlu")
    assert mlu_kind == kind, f"mlu {mlu_kind} {mlu}, but CPU {kind} {cpu} [{case}]"
    if kind == "raised":
        assert mlu is cpu, f"mlu raised {mlu.__name__}, CPU {cpu.__name__} [{case}]"
        return
    assert len(mlu) == len(cpu)
    for m, c in zip(mlu, cpu, strict=True):
        assert (m.dtype, m.shape) == (c.dtype, c.shape), f"{m.dtype}{list(m.shape)}, but " \
            f"should be {c.dtype}{list(c.shape)} [{case}]"
        torch.testing.assert_close(m, c, equal_nan=True, msg=lambda s: f"{s} [{case}]")
