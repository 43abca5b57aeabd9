"""How a result tensor is read for comparison: its *form*, its comparable parts, its values.

Most results are plain strided (or sparse) tensors. A few are tensors whose values cannot be read
as they are, and comparing them naively made the harness itself fail:

- **lazy conjugation and negation** (``conj()``, ``mH``, ``adjoint``, ``_neg_view``; fft results
  CPU returns as a conjugated view): a *conj* or *neg bit* says "negate/conjugate when read".
  ``view_as_real``, byte views and ``numpy()`` refuse such tensors, so :func:`plain` resolves them
  on a copy. Whether the bit is set is metadata: :func:`bits` (a view op's contract, compared in
  ``conformance.checks``).
- **nested tensors** (``_nested_tensor_from_tensor_list``): no ``sizes()``; compared component by
  component (:func:`parts`: ``unbind()``).
- **legacy-batched tensors** (``_add_batch_dim`` outside ``vmap``: ``torch._vmap_internals``'
  BatchedTensor): most ops, ``equal`` among them, have no batching rule; compared as the plain
  tensor under the batch dimensions (:func:`parts`), the vmap levels being metadata.
- **complex32** (``complex`` of float16 parts): CPU has no ``equal`` kernel for it
  (:func:`equal`).

Nothing here knows a backend or an op: a form is read the same way on CPU and on the device.
"""

from __future__ import annotations

from typing import Any

import torch


def result_bits(out: Any) -> list[Any]:
    """A comparable snapshot of a result: per leaf, dtype, shape and raw bytes (so NaN == NaN
    and -0.0 != 0.0)."""
    from torch.utils._pytree import tree_flatten

    from conformance.core import readback

    snap: list[Any] = []
    for leaf in tree_flatten(out)[0]:
        if not isinstance(leaf, torch.Tensor):
            snap.append(repr(leaf))
            continue
        kind = readback.form(leaf)
        for _, part in readback.parts(leaf.detach()):  # nested components, batched values
            t = readback.plain(part)  # conj/neg bits resolved (numpy() refuses them)
            if t.layout != torch.strided or t.is_meta:
                snap.append((str(t.dtype), tuple(t.shape), kind))
                continue
            t = t.contiguous().reshape(-1)
            raw = t.view(torch.uint8) if t.numel() and t.dtype != torch.bool \
                else t.to(torch.uint8)
            snap.append((str(t.dtype), tuple(part.shape), kind, readback.bits(part),
                         bytes(raw.numpy().tobytes())))
    return snap


def materialize(results: Any) -> None:
    """Read every device tensor in ``results`` (any nesting of tuples, lists and dicts) back to
    host memory once, values discarded: a lazy tensor's pending computation runs now and
    raises here if it fails. A CPU or meta tensor is left alone."""
    from torch.utils._pytree import tree_flatten

    for leaf in tree_flatten(results)[0]:
        if isinstance(leaf, torch.Tensor) and leaf.device.type not in ("cpu", "meta"):
            leaf.detach().to("cpu")


#: legacy vmap levels (c10's ``kVmapNumLevels``)
_VMAP_LEVELS = 64


def _legacy_batched(t: torch.Tensor) -> bool:
    return bool(torch._C._functorch.is_legacy_batchedtensor(t))


def unbatch(t: torch.Tensor) -> tuple[torch.Tensor, tuple[int, ...]]:
    """A legacy-batched tensor as the plain tensor holding its values (its batch dimensions in
    front, outermost level first) and its vmap levels, innermost first. The tensor does not
    expose its levels; ``torch._remove_batch_dim(t, level, batch_size, 0)`` ignores
    ``batch_size`` for a level ``t`` has and expands to it for one ``t`` lacks, so a level whose
    removal gives the same size for batch sizes 0 and 1 is one of ``t``'s."""
    levels: list[int] = []
    while _legacy_batched(t):
        for level in range(_VMAP_LEVELS - 1, -1, -1):
            r = torch._remove_batch_dim(t, level, 0, 0)
            if r.shape == torch._remove_batch_dim(t, level, 1, 0).shape:
                t = r
                levels.append(level)
                break
        else:  # no level found: not a form this module knows how to read
            raise RuntimeError("a batched tensor none of whose vmap levels can be removed")
    return t, tuple(levels)


def form(t: torch.Tensor) -> str:
    """What kind of tensor ``t`` is, as far as it must be the same kind as CPU's: ``strided
    tensor``, ``sparse_csr tensor`` (any layout), ``nested tensor``, ``tensor batched at vmap
    levels (1,)``."""
    if t.is_nested:
        return "nested tensor"
    if _legacy_batched(t):
        return f"tensor batched at vmap levels {unbatch(t)[1]}"
    return f"{str(t.layout).removeprefix('torch.')} tensor"


def parts(t: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """``t`` as the tensors its values are compared by, each with a label suffix: itself
    (``""``), a nested tensor's components (``".unbind()[1]"``), a batched tensor's values
    (``" (unbatched)"``). May raise what reading the form raises on a backend (a nested tensor
    whose backend has no ``unbind`` kernel)."""
    if t.is_nested:
        return [(f".unbind()[{k}]", c) for k, c in enumerate(t.unbind())]
    if _legacy_batched(t):
        return [(" (unbatched)", unbatch(t)[0])]
    return [("", t)]


def bits(t: torch.Tensor) -> tuple[bool, bool]:
    """``(is_conj, is_neg)``: whether ``t`` is a lazily conjugated / negated view."""
    return t.is_conj(), t.is_neg()


def plain(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values with no conj/neg bit set, resolved on a copy (``t`` is left as it is; a
    tensor without either bit is returned itself). A negated view of a dtype negation is not
    defined for (CPU's ``_neg_view`` accepts bool; its own ``resolve_neg`` then raises ``"neg_cpu"
    not implemented for 'Bool'``) is read as the values it stores: that is all CPU can say."""
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        try:
            t = t.resolve_neg()
        except (RuntimeError, NotImplementedError):
            t = torch._neg_view(t)  # flips the bit back: a view of the stored values
    return t


def equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``torch.equal`` of two tensors of the same dtype, complex32 included (CPU has no
    ``equal`` kernel for it; its real view holds the same values as float16 pairs)."""
    if a.dtype == torch.complex32 and b.dtype == torch.complex32:
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    return bool(torch.equal(a, b))
