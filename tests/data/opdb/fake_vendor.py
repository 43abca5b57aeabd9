"""A vendor module as ``conformance coverage --backend privateuse1:fake_vendor`` imports it.

It brings PrivateUse1 up under the name ``fakedev`` and registers a few aten kernels with
torch.library: a forward without its backward (``_adaptive_avg_pool2d`` without
``_adaptive_avg_pool2d_backward``), and ``add.Tensor`` without ``add_.Tensor``/``add.out``.
Static coverage only asks the dispatcher what is registered; the kernels are never called, so
they refuse to run rather than pretend to compute.
"""

from __future__ import annotations

import torch
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

_setup_privateuseone_for_python_backend("fakedev")

_lib = torch.library.Library("aten", "IMPL")


def _never_called(*args: object, **kwargs: object) -> torch.Tensor:
    raise NotImplementedError("fake_vendor kernels exist for static coverage only")


for _name in ("_adaptive_avg_pool2d", "add.Tensor", "mul.Tensor", "mul_.Tensor", "mul.out"):
    _lib.impl(_name, _never_called, "PrivateUse1")
