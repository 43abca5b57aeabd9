"""opdb: the op database — native_functions.yaml, derivatives.yaml, dispatcher queries, per-op data.

Nothing here executes ops or imports the engine (``conformance``)::

    import opdb
    db = opdb.load()                  # the native_functions.yaml packaged with torch
    db["add.Tensor"].kind             # "functional"
    opdb.dispatch.classify("CPU", ["add.Tensor", "matmul"])
"""

from __future__ import annotations

from opdb import dispatch
from opdb.db import OpDB, load, packaged_native_functions
from opdb.dispatch import Status
from opdb.errors import InputError
from opdb.model import Derivative, Kind, Overload, SourceLocation

__all__ = [
    "Derivative",
    "InputError",
    "Kind",
    "OpDB",
    "Overload",
    "SourceLocation",
    "Status",
    "dispatch",
    "load",
    "packaged_native_functions",
]
