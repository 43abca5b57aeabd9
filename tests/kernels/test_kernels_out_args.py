"""The mlu kernels the ``out`` check found taking out= tensors CPU refuses (or re-laying out a
strided out=): each call is refused on mlu with the exception type CPU raises, or written as
CPU writes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import kernels

kernels.install()

F16, U8, I16, I64 = torch.float16, torch.uint8, torch.int16, torch.int64


def _t(values: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


# name -> call(device) (the out= refused by CPU)
REFUSED: dict[str, Callable[[str], Any]] = {
    "max.unary_out int out": lambda d: torch.ops.aten.max.unary_out(
        _t([1.5]).to(d), out=torch.empty(0, dtype=I64).to(d)),
    "nan_to_num.out other dtype": lambda d: torch.ops.aten.nan_to_num.out(
        _t([1], U8).to(d), out=torch.empty(0, dtype=I16).to(d)),
    "signbit.out non-bool": lambda d: torch.ops.aten.signbit.out(
        _t([1.0]).to(d), out=torch.empty(0, dtype=U8).to(d)),
    "signbit.out complex first": lambda d: torch.ops.aten.signbit.out(
        _t([1j], torch.complex64).to(d), out=torch.empty(0, dtype=U8).to(d)),
    "isposinf.out non-bool": lambda d: torch.ops.aten.isposinf.out(
        _t([1.0]).to(d), out=torch.empty(0, dtype=U8).to(d)),
    "isin.Tensor_Scalar_out non-bool": lambda d: torch.ops.aten.isin.Tensor_Scalar_out(
        _t([1], I64).to(d), 1, out=torch.empty(0, dtype=F16).to(d)),
    "masked_select.out other dtype": lambda d: torch.ops.aten.masked_select.out(
        _t([1], I16).to(d), _t([True], torch.bool).to(d), out=torch.empty(0, dtype=U8).to(d)),
    "nonzero.out not int64": lambda d: torch.ops.aten.nonzero.out(
        _t([1], I64).to(d), out=torch.empty(0, dtype=I16).to(d)),
    "nonzero_static.out not int64": lambda d: torch.ops.aten.nonzero_static.out(
        _t([1], I64).to(d), size=1, out=torch.empty(0, dtype=torch.int32).to(d)),
    "renorm.out other dtype": lambda d: torch.ops.aten.renorm.out(
        _t([[1.0]]).to(d), 2, 0, 1.0, out=torch.empty(0, dtype=F16).to(d)),
    "cat.out uncastable": lambda d: torch.ops.aten.cat.out(
        [_t([1.5]).to(d)], 0, out=torch.empty(0, dtype=I64).to(d)),
    "linspace.out overflowing bound": lambda d: torch.ops.aten.linspace.out(
        300.0, 1.0, 3, out=torch.empty(0, dtype=U8).to(d)),
    "linspace.out complex bound, real out": lambda d: torch.ops.aten.linspace.out(
        1 + 2j, 1.0, 3, out=torch.empty(0).to(d)),
    # a complex input into a complex out: ATen's complex -> complex kernel wants the input's dtype
    # (bench_mutants' seed-1 "false failure" of the unmodified backend was this mlu gap)
    "abs.out complex64 into complex128": lambda d: torch.ops.aten.abs.out(
        _t([1 + 2j], torch.complex64).to(d), out=torch.empty(0, dtype=torch.complex128).to(d)),
    "kaiser_window.out integral": lambda d: torch.ops.aten.kaiser_window.out(
        3, out=torch.empty(0, dtype=I64).to(d)),
    "multinomial.out bool out, no rows": lambda d: torch.ops.aten.multinomial.out(
        torch.zeros(0, 1, dtype=torch.bfloat16).to(d), 1, False,
        out=torch.empty(0, dtype=torch.bool).to(d)),
    # an out= on another device (CPU's call: meta; mlu's: cpu) is refused before anything else
    "multinomial.out on another device": lambda d: torch.ops.aten.multinomial.out(
        torch.zeros(0, 3, dtype=F16).to(d), 1, False,
        out=torch.empty(0, dtype=I64, device="meta" if d == "cpu" else "cpu")),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_out_refused_as_on_cpu(name: str) -> None:
    call = REFUSED[name]
    with pytest.raises(Exception) as cpu:  # noqa: PT011 - whatever CPU raises
        call("cpu")
    with pytest.raises(type(cpu.value)):
        call("mlu")


def test_linspace_reads_only_the_bounds_cpu_reads():
    """0 steps convert no bound, 1 step only ``start`` (CPU fills with it)."""
    for steps, start, end in ((0, 1 + 2j, 1 + 2j), (1, 1.0, 1 + 2j)):
        cpu = torch.ops.aten.linspace.out(start, end, steps, out=torch.empty(0))
        dev = torch.ops.aten.linspace.out(start, end, steps, out=torch.empty(0).to("mlu"))
        assert torch.equal(dev.cpu(), cpu)


def test_resize_to_the_same_sizes_keeps_a_strided_view():
    """resize_ to the sizes a tensor has is a no-op on CPU (zeros.out on a strided view then
    writes through to the base)."""
    for device in ("cpu", "mlu"):
        base = torch.full((2, 2), 7.0).to(device)
        view = base.select(-1, 1)
        view.resize_([2])
        assert view.stride() == (2,)
        torch.ops.aten.zeros.out([2], out=view)
        assert base.cpu().tolist() == [[7.0, 0.0], [7.0, 0.0]]


def test_kaiser_window_out_warns_on_resizing_a_non_empty_out():
    from conformance.inputs.out_forms import warnings_seen  # CPU's TORCH_WARN reaches stderr

    for device in ("cpu", "mlu"):
        with warnings_seen() as seen:
            torch.ops.aten.kaiser_window.out(3, out=torch.zeros(5).to(device))
        assert any("was resized" in w for w in seen), (device, seen)


@pytest.mark.parametrize("op", ["_native_batch_norm_legit.out", "native_batch_norm.out"])
@pytest.mark.parametrize("shape", [(0, 2, 0), (2, 3, 4)])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_batch_norm_outs_unchecked_only_where_cpu_returns_first(op, shape, which):
    """In eval mode on an empty input CPU's batch_norm_cpu_out returns before reading its outs:
    any dtype is accepted there; a non-empty input refuses it (RuntimeError) on both."""
    fn = getattr(torch.ops.aten, op.split(".")[0]).out

    def call(device: str) -> Any:
        x = torch.ones(shape, dtype=torch.float64, device=device)
        stats = torch.ones(shape[1], dtype=torch.float64, device=device)
        outs = [torch.empty(0, dtype=torch.float64, device=device) for _ in range(3)]
        outs[which] = torch.empty(0, dtype=torch.bool, device=device)
        r = fn(x, None, None, stats, stats.clone(), False, 0.1, 1e-5, out=outs[0],
               save_mean=outs[1], save_invstd=outs[2])
        return [(t.dtype, tuple(t.shape)) for t in r]

    if 0 in shape:
        assert call("mlu") == call("cpu")
    else:
        for device in ("cpu", "mlu"):
            with pytest.raises(RuntimeError):
                call(device)


@pytest.mark.parametrize("name", ["glu_backward.grad_input", "log_sigmoid_forward.output"])
def test_outs_resized_silently_as_cpu_resizes_them(name):
    """glu_backward_cpu_out and log_sigmoid_forward_out_cpu resize_as_ a wrong-sized out=:
    no deprecation warning, unlike resize_output."""
    import warnings

    def call(device: str) -> list[tuple[int, ...]]:
        x = torch.ones(2, 4, device=device)
        outs = {n: torch.zeros(5, device=device) for n in
                (("grad_input",) if name.startswith("glu") else ("output", "buffer"))}
        args = (torch.ones(2, 2, device=device), x, 1) if name.startswith("glu") else (x,)
        base, overload = name.split(".")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = getattr(getattr(torch.ops.aten, base), overload)(*args, **outs)
        return [tuple(t.shape) for t in (r if isinstance(r, tuple) else (r,))]

    assert call("mlu") == call("cpu")


@pytest.mark.parametrize("name", ["addbmm.out", "narrow_copy.out"])
def test_plain_resize_outs_give_no_warning(name):
    """addbmm_out_cpu (resize_as_) and narrow_copy_dense_cpu_out (resize_) resize a wrong-sized,
    non-empty out= without resize_output's deprecation warning; mlu's do the same."""
    import warnings

    def call(device: str) -> tuple[int, ...]:
        out = torch.zeros(5, device=device)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if name == "addbmm.out":
                torch.addbmm(torch.ones(2, 3, device=device), torch.ones(4, 2, 5, device=device),
                             torch.ones(4, 5, 3, device=device), out=out)
            else:
                torch.narrow_copy(torch.ones(4, 3, device=device), 0, 1, 2, out=out)
        return tuple(out.shape)

    assert call("mlu") == call("cpu")


def test_narrow_copy_out_refuses_another_dtype_as_cpu():
    """narrow_copy_dense_cpu_out requires out's dtype to be self's (no cast), after its 0-dim check."""
    for device in ("cpu", "mlu"):
        with pytest.raises(RuntimeError, match="dtype"):
            torch.narrow_copy(torch.ones(4, 3, device=device), 0, 1, 2,
                              out=torch.empty(0, dtype=torch.float64, device=device))
        with pytest.raises(RuntimeError, match="0-dim"):
            torch.narrow_copy(torch.ones((), device=device), 0, 0, 1,
                              out=torch.empty(0, dtype=torch.float64, device=device))


def _exact(d: str, dtype: torch.dtype) -> dict[str, Callable[[], Any]]:
    """Structured CPU kernels not built on TensorIterator, which hold out= to the result dtype
    (mlu: ``Overload.out_dtype_exact`` through kernels.registry), called with out= of ``dtype``."""
    x = _t([[1.0, 2.0], [3.0, 4.0]]).to(d)
    i = torch.tensor([[0, 1], [1, 0]]).to(d)

    def o() -> torch.Tensor:
        return torch.empty(0, dtype=dtype).to(d)

    return {
        "index_copy.out": lambda: torch.ops.aten.index_copy.out(x, 0, i[0], x, out=o()),
        "scatter_reduce.two_out": lambda: torch.ops.aten.scatter_reduce.two_out(
            x, 0, i, x, "sum", out=o()),
        "norm.out": lambda: torch.ops.aten.norm.out(x, 2, [0], False, out=o()),
        "linalg_vector_norm.out": lambda: torch.ops.aten.linalg_vector_norm.out(
            x, 2, None, False, out=o()),
    }


@pytest.mark.parametrize("name", sorted(_exact("cpu", torch.float64)))
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64, torch.float16])
def test_structured_out_refuses_another_dtype_as_cpu(name: str, dtype: torch.dtype) -> None:
    """``Expected out tensor to have dtype float, but got double instead``, word for word: the
    result type casts safely into these outs, and CPU still refuses them."""
    with pytest.raises(RuntimeError) as cpu:
        _exact("cpu", dtype)[name]()
    with pytest.raises(RuntimeError) as dev:
        _exact("mlu", dtype)[name]()
    assert str(dev.value) == str(cpu.value).splitlines()[0]
    assert torch.equal(_exact("mlu", torch.float32)[name]().cpu(),
                       _exact("cpu", torch.float32)[name]())


# structured, not TensorIterator, and still casting: their meta functions read out='s dtype
CASTS: dict[str, Callable[[str], Any]] = {
    "all.out uint8 into bool": lambda d: torch.ops.aten.all.out(
        _t([[1, 0]], U8).to(d), 1, out=torch.empty(0, dtype=torch.bool).to(d)),
    "any.all_out uint8 into bool": lambda d: torch.ops.aten.any.all_out(
        _t([1, 0], U8).to(d), out=torch.empty(0, dtype=torch.bool).to(d)),
    "cat.out int16 into float32": lambda d: torch.ops.aten.cat.out(
        [_t([1, 2], I16).to(d)], 0, out=torch.empty(0).to(d)),
    "pow.Scalar_out int16 into float32": lambda d: torch.ops.aten.pow.Scalar_out(
        2, _t([1, 2], I16).to(d), out=torch.empty(0).to(d)),
    "sum.IntList_out float32 into float64": lambda d: torch.ops.aten.sum.IntList_out(
        _t([1.5, 2.0]).to(d), [0], out=torch.empty(0, dtype=torch.float64).to(d)),
}


@pytest.mark.parametrize("name", sorted(CASTS))
def test_structured_out_that_casts_accepts_as_cpu(name: str) -> None:
    cpu = CASTS[name]("cpu")
    dev = CASTS[name]("mlu")
    assert dev.dtype == cpu.dtype and torch.equal(dev.cpu(), cpu)


@pytest.mark.parametrize(("mantissa", "exponent"), [
    (torch.complex64, torch.int32), (torch.float64, torch.int32), (torch.float32, torch.int64),
    (torch.float16, torch.int32)])
def test_frexp_out_takes_only_selfs_dtype_and_int32(mantissa, exponent):
    """frexp_out: mantissa must have self's dtype, exponent int32 (no cast either way)."""
    def call(d: str) -> Any:
        return torch.frexp(_t([1.5, 3.0]).to(d), out=(torch.empty(0, dtype=mantissa).to(d),
                                                       torch.empty(0, dtype=exponent).to(d)))

    with pytest.raises(RuntimeError) as cpu:
        call("cpu")
    with pytest.raises(RuntimeError) as dev:
        call("mlu")
    assert str(dev.value) == str(cpu.value).splitlines()[0]


@pytest.mark.parametrize("overload", ["value_out", "value_reduce_out"])
@pytest.mark.parametrize("shape", [(0,), (2,)])
def test_scatter_value_not_converted_for_an_empty_index(overload, shape):
    """ATen's scatter returns before its kernel reads the Scalar when the index is empty: a
    value uint8 cannot hold is no error there (and still is with a non-empty index)."""
    fn = getattr(torch.ops.aten.scatter, overload)
    kw = {"reduce": "add"} if "reduce" in overload else {}

    def call(d: str, n: int) -> torch.Tensor:
        return fn(torch.zeros(shape, dtype=U8).to(d), 0, torch.zeros(n, dtype=I64).to(d), -1.5,
                  out=torch.empty(0, dtype=U8).to(d), **kw)

    assert torch.equal(call("mlu", 0).cpu(), call("cpu", 0))
    if shape[0]:
        for d in ("cpu", "mlu"):
            with pytest.raises(RuntimeError, match="without overflow"):
                call(d, 1)


@pytest.mark.parametrize("dtype", [I64, torch.float32])
@pytest.mark.parametrize("size", [0, 3])
def test_range_out_without_step(dtype, size):
    """range.out_ (no step) fills out as range.out with step 1 does, resizing it silently."""
    def call(d: str) -> torch.Tensor:
        return torch.ops.aten.range.out_(0, 2, out=torch.zeros(size, dtype=dtype).to(d))

    assert torch.equal(call("mlu").cpu(), call("cpu"))


@pytest.mark.parametrize(("grad", "self_", "target", "out"), [
    (F16, F16, F16, torch.bfloat16), (F16, F16, F16, torch.float32),
    (F16, torch.float32, F16, None), (torch.float32, F16, F16, None),
    (F16, F16, torch.float32, None), (F16, F16, F16, F16)])
def test_huber_loss_backward_takes_one_dtype_as_cpus_tensor_iterator(grad, self_, target, out):
    """huber_loss_backward_out builds a TensorIterator that checks all operands' dtypes (out,
    self, target, grad_output: 'Found dtype BFloat16 but expected Half'); the functional writes
    into zeros_like(self)."""
    def call(d: str) -> torch.Tensor:
        args = [torch.full((2, 2), v, dtype=t).to(d) for v, t in
                ((0.5, grad), (1.0, self_), (0.25, target))]
        if out is None:
            return torch.ops.aten.huber_loss_backward(*args, 1, 0.5)
        return torch.ops.aten.huber_loss_backward.out(
            *args, 1, 0.5, grad_input=torch.empty(0, dtype=out).to(d))

    try:
        expected = call("cpu")
    except RuntimeError as exc:
        with pytest.raises(RuntimeError) as dev:
            call("mlu")
        assert str(dev.value) == str(exc).splitlines()[0]
    else:
        assert torch.equal(call("mlu").cpu(), expected)


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("overload", ["out", "beta_out", "beta"])
def test_kaiser_window_complex_as_cpu(n, overload):
    """window_function_checks lets complex dtypes through: a window of 0 or 1 element is
    filled (ones), a longer one is refused by CPU's arange ('"arange_cpu" not implemented for
    'ComplexFloat'', NotImplementedError)."""
    def call(d: str) -> torch.Tensor:
        if overload == "beta":
            return torch.ops.aten.kaiser_window.beta(n, False, 0.5, dtype=torch.complex64,
                                                     device=d)
        args = (n,) if overload == "out" else (n, False, 0.5)
        return getattr(torch.ops.aten.kaiser_window, overload)(
            *args, out=torch.empty(0, dtype=torch.complex64).to(d))

    if n > 1:
        for d in ("cpu", "mlu"):
            with pytest.raises(NotImplementedError, match="arange_cpu"):
                call(d)
    else:
        cpu, dev = call("cpu"), call("mlu")
        assert dev.dtype == cpu.dtype and torch.equal(dev.cpu(), cpu)


def _resize_calls() -> dict[str, Callable[[str], Any]]:
    A = torch.ops.aten
    x3, x4, x5 = torch.zeros(2, 3, 3), torch.zeros(2, 3, 3, 3), torch.zeros(2, 2, 2, 2, 2)
    pool = ([1, 1, 1], [1, 1, 1], [0, 0, 0], [1, 1, 1], False)
    o, i = A.max_pool3d_with_indices(x5, *pool)

    def out(d: str, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.zeros(1, dtype=dtype).to(d)  # non-empty, of the wrong size

    return {
        "normal.Tensor_float_out": lambda d: A.normal.Tensor_float_out(
            x3.to(d), 1.0, out=out(d)),
        "normal.float_Tensor_out": lambda d: A.normal.float_Tensor_out(
            0.0, x3.to(d), out=out(d)),
        "normal.Tensor_Tensor_out": lambda d: A.normal.Tensor_Tensor_out(
            x3.to(d), x3.to(d), out=out(d)),
        "max_pool3d_with_indices.out": lambda d: A.max_pool3d_with_indices.out(
            x5.to(d), *pool, out=out(d), indices=out(d, I64)),
        "max_pool3d_with_indices_backward.grad_input":
            lambda d: A.max_pool3d_with_indices_backward.grad_input(
                o.to(d), x5.to(d), *pool, i.to(d), grad_input=out(d)),
        "reflection_pad2d.out": lambda d: A.reflection_pad2d.out(
            x3.to(d), [1, 1, 1, 1], out=out(d)),
        "reflection_pad2d_backward.grad_input": lambda d: A.reflection_pad2d_backward.grad_input(
            torch.zeros(2, 5, 5).to(d), x3.to(d), [1, 1, 1, 1], grad_input=out(d)),
        "replication_pad2d_backward.grad_input":
            lambda d: A.replication_pad2d_backward.grad_input(
                torch.zeros(2, 5, 5).to(d), x3.to(d), [1, 1, 1, 1], grad_input=out(d)),
        "replication_pad3d_backward.grad_input":
            lambda d: A.replication_pad3d_backward.grad_input(
                torch.zeros(2, 5, 5, 5).to(d), x4.to(d), [1] * 6, grad_input=out(d)),
        "replication_pad2d.out (structured: warns)": lambda d: A.replication_pad2d.out(
            x3.to(d), [1, 1, 1, 1], out=out(d)),
    }


@pytest.mark.parametrize("name", sorted(_resize_calls()))
def test_resize_warning_as_cpu_gives_it(name):
    """A non-empty out= of the wrong size: resize_output's deprecation warning where CPU's
    kernel calls it (structured kernels, normal_out_impl), none where it calls a plain resize_
    (the non-structured pooling and padding kernels)."""
    from conformance.inputs.out_forms import warnings_seen  # CPU's TORCH_WARN reaches stderr

    call = _resize_calls()[name]
    warned = {}
    for device in ("cpu", "mlu"):
        with warnings_seen() as seen:
            call(device)
        warned[device] = any("was resized" in w for w in seen)
    assert warned["mlu"] == warned["cpu"], warned


@pytest.mark.parametrize("overload", ["Tensor_float_out", "float_Tensor_out", "Tensor_Tensor_out"])
def test_normal_out_on_cpu_refused_for_mlu_inputs(overload):
    """normal's out= kernel for mlu inputs does not take an out on cpu (it wrote a 0-dim std's
    samples into it through cpu's normal_)."""
    std = torch.ones((), dtype=torch.float64).to("mlu")
    args = {"Tensor_float_out": (std, 1.0), "float_Tensor_out": (0.0, std),
            "Tensor_Tensor_out": (std, std)}[overload]
    with pytest.raises(RuntimeError, match="Expected out tensor to have device"):
        getattr(torch.ops.aten.normal, overload)(*args, out=torch.empty(0, dtype=torch.float64))


@pytest.mark.parametrize("op", ["_native_batch_norm_legit.out", "native_batch_norm.out"])
@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_eval_leaves_save_outs_as_given(op, training):
    """batch_norm_cpu_out resizes and writes save_mean/save_invstd only in training: in eval
    mode non-empty ones keep their size and contents."""
    fn = getattr(torch.ops.aten, op.split(".")[0]).out

    def call(device: str) -> list[torch.Tensor]:
        x = torch.arange(27, dtype=torch.float64).reshape(3, 3, 3).to(device)
        stats = torch.ones(3, dtype=torch.float64, device=device)
        outs = [torch.full((2,), 7.0, dtype=torch.float64, device=device) for _ in range(3)]
        r = fn(x, None, None, stats, stats.clone(), training, 0.1, 1e-5, out=outs[0],
               save_mean=outs[1], save_invstd=outs[2])
        return [t.cpu() for t in r]

    for got, want in zip(call("mlu"), call("cpu"), strict=True):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want)


def _ic(self_: torch.Tensor, index: torch.Tensor, source: torch.Tensor, dim: int = 0
        ) -> Callable[[str], Any]:
    return lambda d: torch.ops.aten.index_copy.out(
        self_.to(d), dim, index.to(d), source.to(d), out=torch.empty(0, dtype=self_.dtype).to(d))


_L = torch.tensor([0, 1])
INDEX_COPY_REFUSED: dict[str, Callable[[str], Any]] = {
    "scalar source, 3 indices": _ic(torch.zeros(()), torch.tensor([0, 0, 0]), torch.tensor(1.0)),
    "dimensionality": _ic(torch.zeros(2, 2), _L, torch.ones(2)),
    "int32 index": _ic(torch.zeros(2, 2), _L.int(), torch.ones(2, 2)),
    "source dtype": _ic(torch.zeros(2, 2), _L, torch.ones(2, 2, dtype=torch.bool)),
    "scalar source dtype": _ic(torch.zeros(()), torch.tensor([0]), torch.tensor(True)),
    "slice shapes": _ic(torch.zeros(2, 3, 4), _L, torch.ones(2, 3, 5), dim=1),
    "index count": _ic(torch.zeros(2, 2), torch.tensor([0]), torch.ones(2, 2)),
}


@pytest.mark.parametrize("name", sorted(INDEX_COPY_REFUSED))
def test_index_copy_checks_its_arguments_as_atens_meta(name):
    """index_copy's meta function: index rank, a scalar source's one index, dimensionality, an
    int64 index, source's dtype, slice shapes, the index count: CPU's type and message."""
    with pytest.raises(Exception) as cpu:  # noqa: PT011 - whatever CPU raises
        INDEX_COPY_REFUSED[name]("cpu")
    with pytest.raises(type(cpu.value)) as dev:
        INDEX_COPY_REFUSED[name]("mlu")
    assert str(dev.value) == str(cpu.value).splitlines()[0]


def _sr(self_: torch.Tensor, index: torch.Tensor, src: torch.Tensor, reduce: str = "sum",
        out: torch.dtype | None = None) -> Callable[[str], Any]:
    return lambda d: torch.ops.aten.scatter_reduce.two_out(
        self_.to(d), 0, index.to(d), src.to(d), reduce,
        out=torch.empty(0, dtype=out or self_.dtype).to(d))


_F, _I = torch.zeros(2, 2), torch.zeros(2, 2, dtype=I64)
SCATTER_REDUCE_REFUSED: dict[str, Callable[[str], Any]] = {
    "src dtype": _sr(_F, _I, torch.ones(2, 2, dtype=torch.bool)),
    "src dtype, empty": _sr(torch.zeros(2, 0), torch.zeros(2, 0, dtype=I64),
                            torch.ones(2, 0, dtype=torch.bool)),
    "src dtype before the reduction's name": _sr(_F, _I, torch.ones(2, 2, dtype=torch.bool),
                                                 "foo"),
    "src dtype before out's": _sr(_F, _I, torch.ones(2, 2, dtype=torch.bool),
                                  out=torch.float64),
    "out's dtype before the reduction's name": _sr(_F, _I, torch.ones(2, 2), "foo",
                                                   out=torch.float64),
    "index larger than self": _sr(_F, torch.zeros(3, 2, dtype=I64), torch.ones(2, 2)),
    "index larger than src": _sr(_F, _I, torch.ones(1, 2)),
}


@pytest.mark.parametrize("name", sorted(SCATTER_REDUCE_REFUSED))
def test_scatter_reduce_checks_in_scatter_meta_impls_order(name):
    """scatter_meta_impl: index and src dtypes, shapes, out='s dtype, then the reduction."""
    with pytest.raises(RuntimeError) as cpu:
        SCATTER_REDUCE_REFUSED[name]("cpu")
    with pytest.raises(RuntimeError) as dev:
        SCATTER_REDUCE_REFUSED[name]("mlu")
    assert str(dev.value) == str(cpu.value).splitlines()[0]
