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

from conformance.verdicts import Verdict


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def dumps(record: Mapping[str, Any]) -> str:
    """One JSON line (no newline), non-finite floats encoded as strings."""
    return json.dumps(_finite(dict(record)), allow_nan=False, ensure_ascii=False, default=str)


def run_record(*, backend: Any, seed: int, checks: list[str], ops: str | None,
               max_examples: int, argv: list[str] | None = None) -> dict[str, Any]:
    import torch

    from conformance import __version__

    return {
        "record": "run",
        "backend": backend.name,
        "device": backend.device,
        "dispatch_key": backend.dispatch_key,
        "torch_version": torch.__version__,
        "seed": seed,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "checks": list(checks),
        "ops": ops,
        "max_examples": max_examples,
        "argv": list(argv if argv is not None else sys.argv),
        "hostname": socket.gethostname(),
        "opconform_version": __version__,
    }


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
