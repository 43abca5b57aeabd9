"""A backend refusal that CPU shares can still leave the device unusable (a sticky error): the
search probes the device before it judges a failure and when it ends, so the item is the
``device_lost`` crash, blamed on that refusal (or the first one since the device last worked),
never verdicts earned on a dead device."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

DATA = Path(__file__).parent.parent.parent / "data" / "engine"


def test_a_shared_refusal_that_loses_the_device_is_the_items_crash(reference) -> None:
    import kernels
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.backends import resolve
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from opdb.opdata import load_hints, load_tolerances
    from opdb.outcomes import DEVICE_LOST

    if str(DATA) not in sys.path:
        sys.path.insert(0, str(DATA))
    module = importlib.import_module("sticky_refusal")
    module.LOST.clear()
    backend = resolve("privateuse1:sticky_refusal", without=())
    kernels.install(overrides=module.OVERRIDES)
    sig = OpSignature.of(opdb.load()["sub.Tensor"])
    v = run_check(Item(sig, CHECKS["promotion"]), backend,
                  settings=EngineSettings(max_examples=20, seed=0, database=None),
                  hints=load_hints().for_op("sub.Tensor"), tolerance_fn=load_tolerances(),
                  repro_fn=lambda call: snippet(call, backend))
    lost, module.LOST[:] = list(module.LOST), []
    assert lost and (v.verdict, v.category) == ("crash", DEVICE_LOST), v.message
    # blamed on the first refusal since the device last worked (here it may be another
    # shared refusal: mlu's documented complex32 one), the bool subtraction named if later
    assert "unusable" in v.message and "Subtraction" in v.message, v.message
    assert v.repro is not None and "sub.Tensor" in v.repro
