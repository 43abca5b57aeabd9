"""Fixtures shared by the engine and check tests."""

from __future__ import annotations

import importlib

import pytest


@pytest.fixture()
def reference():
    """The reference backend, restored to its unmodified kernels afterwards."""
    kernels = importlib.import_module("kernels")
    from conformance.core.backends import resolve

    kernels.install(without=())
    yield resolve("mlu", without=())
    kernels.install(without=())
    resolve("mlu", without=())  # a test's lazy record of the device (bring_up) undone too
