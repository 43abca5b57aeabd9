"""``mlu``: the NumPy reference backend behind a real PrivateUse1 device.

Bring it up with::

    import kernels
    kernels.install()                        # device + every kernel
    kernels.install(without=["mm"])          # re-register everything except aten::mm
    kernels.install(overrides={"add.Tensor": my_buggy_add})  # swap one kernel (engine tests)
    kernels.implemented()                    # frozenset of overload names registered now

``import kernels`` alone renames PrivateUse1 to ``mlu`` and creates ``torch.mlu`` (once per
process); :func:`install` registers the kernels. ``install()`` with the same arguments as the
current installation is a no-op; with other arguments it destroys the previous registrations and
registers anew. ``conformance.core.backends`` reads ``OPCONFORM_MLU_WITHOUT`` (comma list) and passes it
as ``without``. Leaving out a name the package does not implement raises ``ValueError``.

Kernel calling convention
-------------------------
A kernel (registered with :func:`kernels.registry.register` or passed in ``overrides``) is called
by the dispatcher exactly as ``torch.library.impl`` kernels are: with the overload's schema
arguments, positional arguments positionally and keyword-only arguments (``alpha=``, ``out=``,
``dtype=``...) as keywords, defaults filled in. It runs below autograd. It receives

* ``Tensor`` arguments as ``torch.Tensor`` objects on ``mlu`` — or 0-dim CPU tensors: Python
  numbers passed where the schema says ``Tensor`` arrive as *wrapped* 0-dim CPU tensors, and CPU
  0-dim tensors are allowed next to mlu ones as on CUDA;
* ``Scalar`` arguments as Python numbers, ``int[]``/``SymInt[]`` as lists of ints,
  ``ScalarType`` as ``torch.dtype``, optional arguments as ``None`` when absent.

It returns what the schema returns: a new mlu tensor (build it with ``kernels._tensor.from_numpy``
or ``kernels._tensor.empty``), a tuple of them, a Python number, or — for in-place and ``out=``
overloads — the mutated ``self``/``out`` object itself. View overloads must return
``kernels._tensor.alias(...)`` results (they share the base's storage). See ``kernels/README.md``.
"""

from __future__ import annotations

from kernels import _device
from kernels.registry import implemented, install, register, registered

__all__ = ["install", "implemented", "register", "registered", "DEVICE"]

DEVICE = _device.DEVICE_NAME

_device.setup()
