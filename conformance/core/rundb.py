"""The op database of the current run, for code that only gets an :class:`OpSignature`.

A check's ``applies`` and its helpers (``grad_args``, the corpus's sibling lookup, the in-place
check's functional sibling) need derivatives and families, which live in the op database — the
one the run was given with ``--native-functions``, not the copy packaged with torch. The pytest
plugin (each worker too) hands the run's database to :func:`use`; everything else asks
:func:`current`, which falls back to the installed torch's database outside a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opdb.db import OpDB


_DB: OpDB | None = None


def use(db: OpDB | None) -> None:
    """Make ``db`` the run's database (``None``: back to the installed torch's)."""
    global _DB
    _DB = db


def current() -> OpDB:
    """The run's database (:func:`use`), else the one packaged with the installed torch."""
    if _DB is not None:
        return _DB
    from opdb import load

    return load()
