"""Elements two indexed writes land on (conformance.compare.collisions): a backend keeping another
of the values written there agrees, one keeping a value nobody wrote does not."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
from compare_calls import forward_verdict, make_context
from compare_calls import make_call as _call

from conformance.compare import collisions
from conformance.compare.context import Context
from conformance.core.call import Call
from conformance.core.verdicts import Verdict
from opdb.opdata import OpHints, load_hints
from opdb.outcomes import VALUE_UNSPECIFIED


def _ctx(call: Call) -> Context:
    return make_context(call, backend="mlu")


def _calls() -> list[Call]:
    """One call of each kind of write, with colliding positions and distinct values."""
    g = torch.Generator().manual_seed(0)

    def values(*shape: int) -> torch.Tensor:
        return torch.randperm(math.prod(shape), generator=g).to(torch.float32).reshape(shape) + 1

    return [
        _call("scatter.src", self=torch.zeros(3, 4), dim=1,
              index=torch.tensor([[0, 0, 3], [2, 1, 2], [1, 1, 1]]), src=values(3, 4)),
        _call("scatter_.src", self=torch.zeros(4, 2), dim=-2,
              index=torch.tensor([[3, 0], [3, 0], [1, 0]]), src=values(3, 2)),
        _call("index_copy", self=torch.zeros(2, 5), dim=1, index=torch.tensor([4, 0, 4]),
              source=values(2, 3)),
        _call("index_put", self=torch.zeros(3, 3), indices=[torch.tensor([0, 2, 0, -1]), None],
              values=values(4, 3)),
        _call("index_put", self=torch.zeros(3, 3), indices=[torch.tensor([[True, False, True],
                                                                         [False, True, False],
                                                                         [True, True, False]])],
              values=values(5)),  # a mask: every position once
        _call("max_unpool2d", self=values(2, 1, 2, 2),
              indices=torch.tensor([[0, 5], [5, 3], [1, 1], [2, 0]]).reshape(2, 1, 2, 2),
              output_size=[2, 3]),
        _call("max_unpool3d", self=values(1, 2, 1, 3, 2),
              indices=torch.tensor([38, 27, 34, 85, 74, 85, 71, 85, 67, 66, 84, 24])
              .reshape(1, 2, 1, 3, 2), output_size=[3, 6, 5], stride=[2, 2, 2],
              padding=[0, 0, 0]),
        _call("put", self=torch.zeros(2, 3), index=torch.tensor([-1, 5, 0, 2]),
              source=values(4)),
    ]


@pytest.mark.parametrize("call", _calls(), ids=lambda c: c.sig.name)
def test_the_places_found_are_where_cpu_writes(call: Call) -> None:
    """Every element written once holds its value on CPU, every one written more than once one
    of its values, every other one is untouched (CPU computes the places the module derives)."""
    expected = call.run("cpu").reshape(-1)
    hint = load_hints().for_op(call.sig.name).collisions
    assert hint is not None
    found = collisions.writes(call, hint, tuple(call.run("cpu").shape))
    if found is None:
        assert call.sig.name == "index_put"  # the mask: nothing can collide
        return
    counts = torch.bincount(found.positions, minlength=expected.numel())
    for place in range(expected.numel()):
        written = found.values[found.positions == place].tolist()
        if counts[place] == 0:
            assert expected[place] == 0, place
        elif counts[place] == 1:
            assert expected[place] == written[0], place
        else:
            assert expected[place] in written, place


def test_another_of_the_values_written_agrees_and_is_counted() -> None:
    call = _calls()[0]  # scatter.src: (0, 0) and (1, 2) written twice, (2, 1) three times
    ctx = _ctx(call)
    expected = call.run("cpu")
    assert ctx.hints.collisions is not None
    found = collisions.writes(call, ctx.hints.collisions, (3, 4))
    assert found is not None
    first = torch.zeros(12)  # the first write of each place stays: CPU keeps the last
    for place, value in reversed(list(zip(found.positions.tolist(), found.values.tolist(),
                                          strict=True))):
        first[place] = value
    first = first.reshape(3, 4)
    assert not torch.equal(first, expected)
    settled = collisions.uncontested(ctx, call, "out", "w", first, expected)
    assert torch.equal(settled, expected)
    assert ctx.info_elements[VALUE_UNSPECIFIED] == 3


def test_a_value_nobody_wrote_still_differs() -> None:
    call = _calls()[0]
    ctx = _ctx(call)
    expected = call.run("cpu")
    summed = expected.clone()
    summed[0, 0] = 1e6  # the writes' sum, say: neither value written there
    assert collisions.uncontested(ctx, call, "out", "w", summed, expected) is summed
    assert not ctx.info_elements[VALUE_UNSPECIFIED]


def test_accumulating_writes_are_compared_as_ever() -> None:
    call = _calls()[3]
    hint = load_hints().for_op("index_put").collisions
    assert hint is not None
    assert collisions.writes(call, hint, (3, 3)) is not None
    adding = replace(call, values=(*call.values, ("accumulate", True)))
    assert collisions.writes(adding, hint, (3, 3)) is None


def _unpool3d_first_write_stays(self, indices, output_size, stride, padding):
    """max_unpool3d keeping the first of colliding writes: as right as CPU's last."""
    k = math.prod(self.shape[-3:])
    flip = [t.cpu().reshape(-1, k).flip(-1).reshape(self.shape) for t in (self, indices)]
    return torch.ops.aten.max_unpool3d(*flip, output_size, stride, padding).to(self.device)


def _unpool3d_adding(self, indices, output_size, stride, padding):
    """max_unpool3d adding colliding writes: a value nobody wrote."""
    s, ix = self.cpu(), indices.cpu()
    n = s.shape[:-3]
    planes = torch.zeros(*n, math.prod(output_size), dtype=s.dtype)
    planes = planes.reshape(-1, planes.shape[-1]).scatter_add(
        1, ix.reshape(planes.reshape(-1, planes.shape[-1]).shape[0], -1),
        s.reshape(ix.reshape(-1, math.prod(s.shape[-3:])).shape))
    return planes.reshape(*n, *output_size).to(self.device)


@pytest.mark.parametrize(("kernel", "verdict"), [(_unpool3d_first_write_stays, "pass"),
                                                 (_unpool3d_adding, "fail")])
def test_a_backend_keeping_another_write_passes_one_adding_them_fails(reference, kernel,
                                                                      verdict):
    import kernels

    kernels.install(overrides={"max_unpool3d": kernel})
    hints = load_hints().for_op("max_unpool3d")

    def run(h: OpHints) -> Verdict:
        return forward_verdict(reference, "max_unpool3d", h, max_examples=10)

    v = run(hints)
    assert v.verdict == verdict, v.message
    if verdict == "pass":
        assert v.category == VALUE_UNSPECIFIED, (v.category, v.message)
        # the same draws compared element by element: the false failure it was
        v = run(replace(hints, collisions=None))
        assert v.verdict == "fail", v.message
