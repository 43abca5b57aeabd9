"""A lazy backend (``Backend.lazy``, as torch_xla's tensors are): a refusal that surfaces only
when the result is read back is the call's refusal, judged as such, not ``error_accepts``."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from test_injected_bugs import _buggy, _run

from conformance.core.verdicts import CheckFailure


def test_a_lazy_refusal_on_read_back_is_a_refusal(reference):
    backend = _buggy("lazy_refuses")
    import lazy_refuses  # on sys.path once _buggy has run

    assert backend.lazy
    v = _run(backend, "sub.Tensor", "promotion")
    # CPU refuses bool - bool with a RuntimeError; so does the backend, once its graph runs
    # (the reference backend's own failures of this item, a complex32 gap, may remain)
    assert v.category != "error_accepts", v.message
    assert "error_accepts" not in {f.category for f in v.failures}, v.failures

    # one such call judged with and without the read-back
    import opdb
    from conformance.compare.context import Context
    from conformance.core.backends import bring_up
    from conformance.core.call import Call
    from conformance.core.inflight import Inflight
    from conformance.core.signature import OpSignature
    from opdb.opdata import load_hints, load_tolerances

    sig = OpSignature.of(opdb.load()["sub.Tensor"])
    call = Call(sig, (("self", torch.tensor([True, False])), ("other", torch.tensor([True, True]))))
    with pytest.raises(RuntimeError) as refused:
        call.run("cpu")

    def judge(record):
        ctx = Context(backend=record, sig=sig, hints=load_hints().for_op(sig.name),
                      tolerance_fn=load_tolerances(), inflight=Inflight(None),
                      repro_fn=lambda c: "")
        ctx.expect_same_error(call, refused.value)

    try:
        judge(backend)  # the backend raised RuntimeError too, inside its call: agreement
        assert not lazy_refuses.PENDING
        eager = bring_up(dataclasses.replace(backend, lazy=False))
        with pytest.raises(CheckFailure) as judged:  # not read back: it "accepted" the call
            judge(eager)
        assert judged.value.category == "error_accepts"
    finally:
        lazy_refuses.PENDING.clear()
