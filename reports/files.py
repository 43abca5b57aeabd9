"""Writing report files: one atomic text write shared by every output (HTML, tables, diffs,
baselines, JUnit, summaries)."""

from __future__ import annotations

import os

from opdb.errors import InputError


def write_text(output: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``output`` atomically (temp file + rename); errors → InputError."""
    output = os.fspath(output)
    tmp = output + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, output)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"cannot write: {exc.strerror}", file=output) from None
