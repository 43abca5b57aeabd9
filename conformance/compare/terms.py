"""The magnitude of the terms each result element sums (``scale: terms`` in
``opdb/data/tolerances.yaml``).

A sum of products — a GEMM's element ``sum_k a_ik * b_kj``, a dot, a batched matmul — rounds
each partial sum, so two correct implementations that sum in different orders (MKL's blocked
FMA kernel, OpenBLAS', a device's tiles) differ by a few units in the last place of the terms'
total magnitude ``sum_k |a_ik| * |b_kj|``, not of the result: where the terms cancel, the
result is far smaller than the terms and any other order is "wrong" by many of its own ulps.
The standard error bound of such a sum (Higham, *Accuracy and Stability of Numerical
Algorithms*, 3.1) is ``gamma_K * sum |terms|``. That total is the same call made on the
inputs' absolute values, in float64: ``|A| @ |B|`` for ``mm``, ``|beta| |C| + |alpha| |A| @ |B|``
for ``addmm``. It holds for any op that is linear in each of its floating inputs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from conformance.core.call import Call


def _magnitude(value: Any, is_out: bool, widen: bool) -> Any:
    """``value``'s absolute value, floating/complex tensors widened to float64 (``widen``) or
    kept in their dtype's kind (a complex one's magnitude is real: its real dtype); an out=
    tensor: an empty one of that dtype, which the call resizes; everything else as it is."""
    if isinstance(value, list | tuple):
        return type(value)(_magnitude(v, is_out, widen) for v in value)
    if isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex()):
        dtype = torch.float64 if widen else value.real.dtype if value.is_complex() \
            else value.dtype
        if is_out:
            return torch.empty(0, dtype=dtype)
        return value.detach().abs().to(dtype)
    if isinstance(value, float | complex) or (isinstance(value, int)
                                              and not isinstance(value, bool)):
        return abs(value)
    return value


def _magnitude_run(call: Call, shape: torch.Size, position: tuple[int, int] | None,
                   widen: bool) -> torch.Tensor | None:
    """The call on absolute values (:func:`terms_magnitude`), widened or in its own dtypes;
    ``None`` where it raises or answers in another shape."""
    outs = {a.name for a in call.sig.args if a.is_out}
    values = tuple((name, _magnitude(v, name in outs, widen)) for name, v in call.values)
    before = torch.get_default_dtype()
    if widen:
        torch.set_default_dtype(torch.float64)
    try:
        answer = replace(call, values=values).run("cpu")
    except Exception:  # noqa: BLE001 - any refusal only means no terms scale for this call
        return None
    finally:
        torch.set_default_dtype(before)
    if isinstance(answer, list | tuple):
        if position is not None and position[1] >= 2 and len(answer) == position[1]:
            answer = answer[position[0]]
        else:
            answer = next((a for a in answer if isinstance(a, torch.Tensor)
                           and a.shape == shape), None)
    if not isinstance(answer, torch.Tensor) or answer.shape != shape:
        return None
    return answer.detach().abs()


def terms_overflow(call: Call, shape: torch.Size, position: tuple[int, int] | None,
                   wide: torch.Tensor | None) -> torch.Tensor | None:
    """Per element of a result of ``shape``, whether the terms' total overflows in the call's
    own dtypes but not in float64 (the call on absolute values is not finite there, and is
    when widened): some partial sum may then overflow in any order, although every term is
    finite (a float32 mean over 771 values of 1e36). An infinite input is no such evidence:
    its total is infinite either way. ``wide``: :func:`terms_magnitude` of the same call (the
    comparison has computed it). ``None`` where either call gives no answer of ``shape``."""
    if wide is None:
        return None
    total = _magnitude_run(call, shape, position, widen=False)
    if total is None or not (total.is_floating_point() or total.is_complex()):
        return None
    return ~total.isfinite() & wide.isfinite()


def terms_magnitude(call: Call, shape: torch.Size, position: tuple[int, int] | None = None
                    ) -> torch.Tensor | None:
    """Per element of a result of ``shape`` (result ``position[0]`` of ``position[1]`` for a
    ``_foreach_*`` call), the total magnitude of the terms it sums: ``call`` run on CPU with
    every floating/complex input replaced by its absolute value in float64 (Python numbers by
    theirs), under float64 as the default dtype. ``None`` where that call raises or answers in
    another shape (no ulps are then allowed)."""
    total = _magnitude_run(call, shape, position, widen=True)
    return None if total is None else total.to(torch.float64)
