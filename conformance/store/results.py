"""The results file (JSONL): one writer per run, every record flushed as soon as it is known.

Format: docs/ARCHITECTURE.md "The results file". Non-finite floats become the strings
``"NaN"``, ``"Infinity"``, ``"-Infinity"``; the encoder runs with ``allow_nan=False`` so a bare
``NaN`` can never reach the file.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sys
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from conformance.core.verdicts import Verdict


def finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, dict):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def dumps(record: Mapping[str, Any]) -> str:
    """One JSON line (no newline), non-finite floats encoded as strings."""
    return json.dumps(finite(dict(record)), allow_nan=False, ensure_ascii=False, default=str)


def run_record(*, backend: Any, seed: int, checks: list[str], ops: str | None,
               max_examples: int, argv: list[str] | None = None,
               run_id: str | None = None,
               probed: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The results file's first record: what ran, where, with what settings; ``assumes``: the
    properties the backend declared; ``probed``: those its device showed without being
    declared (:mod:`conformance.core.probes`), each with its evidence."""
    import torch

    from conformance import __version__

    return {
        "record": "run",
        "backend": backend.name,
        "device": backend.device,
        "dispatch_key": backend.dispatch_key,
        # read by a crash settled after the run died (conformance.pytest_plugin.crashes)
        "host_memory": backend.host_memory,
        "assumes": sorted(backend.assumes),
        "compile_backend": getattr(backend, "compile_backend", "aot_eager"),  # the compile check's
        "shapes": getattr(backend, "shapes", "free"),  # how shapes were drawn (Backend.shapes)
        "probed": dict(probed or {}),
        "torch_version": torch.__version__,
        "seed": seed,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "checks": list(checks),
        "ops": ops,
        "max_examples": max_examples,
        "argv": list(argv if argv is not None else sys.argv),
        "hostname": socket.gethostname(),
        "opconform_version": __version__,
        "run_id": run_id,
    }


#: Fields of the run record that must agree for ``--resume`` to continue a results file.
RESUME_FIELDS = ("backend", "assumes", "shapes", "torch_version", "seed", "checks", "ops",
                 "max_examples")


class ResumeState:
    """What an interrupted results file already holds: its run record and finished items."""

    def __init__(self, run: dict[str, Any], done: dict[str, dict[str, Any]],
                 dropped: int) -> None:
        self.run = run
        self.done = done  # test id (``add.Tensor::forward``) -> its verdict record
        self.dropped = dropped  # bytes of a half-written last line removed


def repair_tail(path: str | os.PathLike[str]) -> int:
    """Cut a half-written last line (the process died mid-write) off ``path``; bytes removed.

    Only the tail can be damaged: every record is written whole and flushed before the next
    begins, so everything up to the last newline is intact.
    """
    with open(path, "rb+") as fh:
        data = fh.read()
        keep = data.rfind(b"\n") + 1
        tail = data[keep:]
        if tail.strip():
            try:
                json.loads(tail)
                fh.write(b"\n")  # a whole record that only lacks its newline
                return 0
            except ValueError:
                pass
        if keep < len(data):
            fh.truncate(keep)
        return len(data) - keep


def load_for_resume(path: str | os.PathLike[str]) -> ResumeState | None:
    """Read an interrupted results file to continue it; ``None`` if there is none (or empty).

    Raises :class:`~opdb.errors.InputError` if the file is not a results file or holds verdicts
    twice (it was not written by one run).
    """
    from opdb.errors import InputError

    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return None
    dropped = repair_tail(path)
    run: dict[str, Any] | None = None
    done: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                raise InputError("damaged record in the middle of the file; cannot resume it",
                                 file=str(path), line=lineno) from None
            kind = rec.get("record") if isinstance(rec, dict) else None
            if kind == "run":
                if run is not None:
                    raise InputError("a second run record: the file holds more than one run "
                                     "(merge shards with `conformance merge`)", file=str(path),
                                     line=lineno)
                run = rec
            elif kind == "verdict":
                key = f"{rec.get('overload')}::{rec.get('check')}"
                if key in done:
                    raise InputError(f"{key} recorded twice", file=str(path), line=lineno)
                done[key] = rec
    if run is None:
        raise InputError("no run record: not a results file written by `conformance run`",
                         file=str(path), line=1)
    return ResumeState(run, done, dropped)


def resume_mismatch(run: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """The first setting in which a new run differs from the file it would continue."""
    for key in RESUME_FIELDS:
        old_v, new_v = run.get(key), new.get(key)
        if key == "checks" and isinstance(old_v, list) and isinstance(new_v, list):
            old_v, new_v = sorted(old_v), sorted(new_v)
        if key == "assumes":  # a file written before properties were declared assumed none
            old_v, new_v = sorted(old_v or []), sorted(new_v or [])
        if key == "shapes":  # a file written before shape menus drew shapes freely
            old_v, new_v = old_v or "free", new_v or "free"
        if old_v != new_v:
            return f"{key} was {run.get(key)!r}, this run has {new.get(key)!r}"
    return None


class ResultsWriter:
    """Appends records to a JSONL file, one ``write`` + flush per record."""

    def __init__(self, path: str | os.PathLike[str], *, truncate: bool = True) -> None:
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = open(self.path, "w" if truncate else "a", encoding="utf-8")

    def write(self, record: Mapping[str, Any] | Verdict) -> None:
        obj = record.to_json() if isinstance(record, Verdict) else record
        self._fh.write(dumps(obj) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def read_records(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Records of a results file; a damaged line (a crash mid-write) ends the reading."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                return


def read_verdicts(path: str | os.PathLike[str]) -> list[Verdict]:
    return [Verdict.from_json(r) for r in read_records(path) if r.get("record") == "verdict"]
