"""The about-to-run marker keeps the backend's call as bytes and renders its repro only where
it is read (docs/decisions.md#engine-speed): the repro read back is the one rendered at once."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import torch

import opdb
from conformance.core.backends import resolve
from conformance.core.call import Call
from conformance.core.callcodec import CallCodec, dump_call, render_call
from conformance.core.inflight import Inflight
from conformance.core.signature import DEVICE, OpSignature
from conformance.inputs.layouts import LayoutCall
from conformance.repro.snippet import snippet


def _sig(name: str) -> OpSignature:
    return OpSignature.of(opdb.load()[name])


def _calls() -> list[Call]:
    add = _sig("add.Tensor")
    return [
        Call(sig=add, values=(("self", torch.randn(3, 4)),
                              ("other", torch.tensor([1.0, float("nan")]).expand(4, 2)[:, :1].t()),
                              ("alpha", 2))),
        Call(sig=add, values=(("self", torch.randn(5000).to(torch.bfloat16)),
                              ("other", torch.randn(3, 4, dtype=torch.complex64).t()),
                              ("alpha", 2.5))),
        Call(sig=_sig("cat"), values=(("tensors", [torch.ones(2, dtype=torch.bool),
                                                   torch.arange(3)]), ("dim", 0))),
        Call(sig=_sig("add.out"), values=(("self", torch.randn(2)), ("other", torch.randn(2)),
                                          ("out", torch.empty(0)))),
        Call(sig=_sig("ones"), values=(("size", [2, 3]), ("dtype", torch.float16),
                                       ("device", DEVICE))),
        LayoutCall(sig=add, values=(("self", torch.randn(3, 4)), ("other", torch.randn(3, 4))),
                   layouts=(("self", "transposed"),)),
        Call(sig=_sig("sum"), values=(("self", torch.randn(2, 3, requires_grad=True)),)),
        Call(sig=_sig("sum"), values=(("self", torch.randn(0, 3)),)),
        Call(sig=_sig("sum"), values=(("self", torch.randn(6)[2:5]),)),
    ]


@pytest.fixture(scope="module")
def repro():
    return functools.partial(snippet, backend=resolve("mlu"))


def test_rendered_repro_is_the_one_rendered_at_once(repro):
    codec = CallCodec()  # one codec for all: the signature is shared between calls
    for call in _calls():
        want = repro(call)
        assert render_call(codec.dump(repro, call)) == want, call.describe()
        assert render_call(dump_call(repro, call)) == want, call.describe()


def test_drawn_calls_render_as_at_once_without_their_fills(repro):
    """A drawn call carries how its tensors were filled and its cached description: neither is
    kept, the repro read back is still the one rendered at once (refills and layouts too)."""
    from hypothesis import HealthCheck, given, settings

    from conformance.checks.forward import forward_refill
    from conformance.inputs.strategies import forward_calls
    from opdb.opdata import OpHints, load_hints

    codec, seen = CallCodec(), []

    def check_all(sig: OpSignature, hints: OpHints) -> None:
        @settings(max_examples=5, database=None, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(forward_calls(sig, hints))
        def check(call: Call) -> None:
            for i in range(10):
                refill = forward_refill(call.refill(i), i, hints)
                refill.describe()  # a cached property the bytes leave out
                kept = codec.dump(repro, refill)
                assert kept is not None and render_call(kept) == repro(refill)
                seen.append(bool(refill.fills))

        check()

    for name in ("add.Tensor", "sum.dim_IntList", "where.self", "mul.out"):
        check_all(_sig(name), load_hints().for_op(name))
    assert any(seen)  # fills were there to leave out


def test_a_refill_is_kept_as_its_drawn_call_and_its_number(repro):
    """A refill's tensors are not written per call: the head keeps its drawn call (with its
    fills) once, each refill's bytes say which refill it is, and the repro read back is the one
    rendered at once. A copy a check changed (``replace``) is no refill any more: kept whole."""
    from dataclasses import replace

    from conformance.core.fills import Fill

    big = Fill("float32", (64, 64), seed=7)
    other = Fill("int64", (64,), seed=3, specials=((2, 1),))
    drawn = Call(sig=_sig("add.Tensor"),
                 values=(("self", big.tensor()), ("other", other.tensor()), ("alpha", 2)),
                 fills=(("self", None, big), ("other", None, other)))
    codec = CallCodec()
    first = codec.dump(repro, drawn.refill(1))
    assert first is not None and render_call(first) == repro(drawn.refill(1))
    assert int(first.partition(b"\n")[0]) > 64 * 64 * 4  # the head: the drawn tensors, once
    for i in range(2, 16):
        refill = drawn.refill(i)
        kept = codec.dump(repro, refill)
        assert kept is not None and render_call(kept) == repro(refill), i
        assert len(kept) - len(first) < 100  # no tensor bytes of its own
    changed = replace(drawn.refill(4), notes=("out= pre-sized",))  # an even one: float32
    assert changed.origin is None
    kept = codec.dump(repro, changed)
    assert kept is not None and render_call(kept) == repro(changed)
    assert len(kept) > len(first) + 64 * 64 * 4  # its tensors written with it


def test_what_cannot_be_kept_is_rendered_at_once(repro):
    call = _calls()[0]
    assert dump_call(lambda c: "x", call) is None  # a lambda: not picklable


def test_marker_renders_the_kept_call_only_where_read(tmp_path: Path, repro):
    calls = _calls()
    marker = Inflight(tmp_path / "w.json")
    marker.start("node", "add.Tensor", "forward")
    marker.call(calls[1], repro, side="mlu")
    raw = (tmp_path / "w.json").read_text()
    assert '"repro": null' in raw and '"repro_seq": 1' in raw  # nothing rendered when written
    assert Inflight.read(tmp_path / "w.json")["repro"] == repro(calls[1])
    marker.call(calls[0], repro, side="cpu")  # an oracle call carries no repro
    assert Inflight.read(tmp_path / "w.json")["repro"] is None
    marker.call(calls[0], repro, side="mlu")
    assert Inflight.read(tmp_path / "w.json")["repro"] == repro(calls[0])
    marker.call(calls[2], lambda c: "eager", side="mlu")  # cannot be kept: rendered at once
    assert Inflight.read(tmp_path / "w.json")["repro"] == "eager"
    marker.call(calls[3], repro, side="mlu")
    assert Inflight.read(tmp_path / "w.json")["repro"] == repro(calls[3])
    marker.close()


def test_a_side_file_of_another_call_gives_no_repro(tmp_path: Path, repro):
    calls = _calls()
    marker = Inflight(tmp_path / "w.json")
    marker.start("node", "add.Tensor", "forward")
    marker.call(calls[0], repro, side="mlu")
    kept = (tmp_path / "w.json").read_bytes()
    marker.call(calls[1], repro, side="mlu")  # the side file moves on ...
    (tmp_path / "w.json").write_bytes(kept)  # ... the marker names the call before (a death
    # between the two writes)
    assert Inflight.read(tmp_path / "w.json")["repro"] is None
    marker.close()
