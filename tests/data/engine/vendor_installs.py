"""A vendor-like module brought up by its own ``install()`` (the reference backend's kernels),
as ``privateuse1:vendor_installs``: the harness and its repros call ``install()`` because the
module has one. ``INSTALLS`` counts the calls."""

from __future__ import annotations

import kernels

INSTALLS: list[int] = []


def install() -> None:
    INSTALLS.append(1)
    kernels.install()
