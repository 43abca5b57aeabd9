"""Positions that are not unique under ties: compared by the elements they pick.

``topk``, ``sort``, ``kthvalue``, ``mode`` and ``median`` return the positions (``indices``) of
the elements they select; when several elements are equal, which of their positions comes back
is unspecified, and a backend whose selection breaks ties differently is right. The hints data
(``ties`` in ``opdb/data/hints.yaml``, read into :class:`opdb.opdata.TieHint`) names such an
output; it is then compared by what it selects: every position in range along ``dim``, and
``self`` gathered at the backend's positions equal to ``self`` gathered at CPU's (NaN equal to
NaN). Where the positions are unique (``stable=True``) they are compared exactly as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from conformance.core.verdicts import CheckFailure

if TYPE_CHECKING:
    from conformance.core.call import Call
    from opdb.opdata import TieHint


def applies(call: Call, ties: TieHint, output: int) -> bool:
    """Whether output ``output`` of ``call`` is compared by the elements it picks."""
    if output != ties.output:
        return False
    if ties.unless is not None and call.argument(ties.unless) is True:
        return False
    self = call.argument("self")
    return isinstance(self, torch.Tensor) and self.dim() > 0 and \
        isinstance(call.argument("dim"), int)


def assert_same_picks(call: Call, ties: TieHint, label: str, where: str,
                      actual: torch.Tensor, expected: torch.Tensor) -> None:
    """``actual`` positions select the same elements of ``self`` along ``dim`` as CPU's
    ``expected`` (dtype and shape were compared before)."""
    __tracebackhide__ = True
    self = call.argument("self")
    d = call.argument("dim") % self.dim()
    a, e = actual.to(torch.int64), expected.to(torch.int64)
    if ties.keepdim and not call.argument("keepdim"):
        a, e = a.unsqueeze(d), e.unsqueeze(d)
    if a.numel() == 0:
        return
    size = self.shape[d]
    out = (a < 0) | (a >= size)
    if bool(out.any()):
        v = int(a[out][0])
        raise CheckFailure("value", f"{label} holds position {v}, outside [0, {size}) of self's "
                                    f"dim {d} [{where}]")
    got, want = torch.gather(self, d, a), torch.gather(self, d, e)
    bad = got != want
    if got.is_floating_point() or got.is_complex():
        bad &= ~(got.isnan() & want.isnan())
    if not bool(bad.any()):
        return
    flat = int(bad.reshape(-1).nonzero()[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), bad.shape))
    raise CheckFailure("value", f"{label} positions select other elements than CPU's (which of "
                                f"tied elements is free, the value is not): {int(bad.sum())} of "
                                f"{bad.numel()} differ, first at index {index}: position "
                                f"{int(a.reshape(-1)[flat])} selects "
                                f"{got.reshape(-1)[flat].item()!r}, CPU's position "
                                f"{int(e.reshape(-1)[flat])} selects "
                                f"{want.reshape(-1)[flat].item()!r} [{where}]")
