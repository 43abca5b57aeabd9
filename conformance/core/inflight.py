"""The about-to-run marker (:class:`Inflight`): written before every backend call, so a
backend that kills the process still leaves a verdict behind.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch-free at run time: the CLI's help reads ITEM_CEILING
    from conformance.core.call import Call

#: The in-flight marker's fields that change with every call (:meth:`Inflight.call`);
#: ``call_started`` (``time.time()``) is when the call began: a timeout is a call that runs too
#: long, not an item (the watchdog, the controller, fork isolation read it).
_CALL_FIELDS = ("call", "side", "source", "repro", "repro_seq", "call_started")


#: The timeout (``--conformance-timeout``) is per call: a call on CPU or on the backend (its
#: read-back of a lazy result, hence a graph's compilation, included) that runs past it is a
#: hang, pinned on the side that ran it (the marker's ``side`` and ``call_started``). An item
#: whose calls keep finishing may run this many timeouts in all before it is a ``timeout`` of the
#: whole item (never pinned on CPU): a backend that compiles per new shape is not starved by an
#: item budget, and a run still ends (docs/decisions.md#per-call-timeout).
ITEM_CEILING = 10


#: The call's fields (:data:`_CALL_FIELDS`, in that order) as the marker writes them.
_CALL_LAYOUT = b", ".join(b'"%s": %%s' % key.encode() for key in _CALL_FIELDS)


def _json_text(value: str | float | None) -> bytes:
    """``json.dumps`` of a string, a number or ``None``, without its per-call overhead."""
    if value is None:
        return b"null"
    if isinstance(value, int):
        return b"%d" % value
    if isinstance(value, float):
        return repr(value).encode()
    return encode_basestring_ascii(value).encode()


class Inflight:
    """The about-to-run marker: one small file per process, rewritten before each backend call.

    Only ``write`` + ``flush`` (no fsync): the kernel keeps the bytes if the process dies.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path else None
        self.item: dict[str, Any] = {}
        self._fd: int | None = None
        self._size = 0  # bytes the marker file holds (a shorter marker is padded over them)
        self._repro_of: Call | None = None
        self._repro: str | None = None
        #: the backend calls kept in the side file (:attr:`call_path`), numbered: the marker's
        #: ``repro_seq`` names the one its ``call`` is (None: the repro is in ``repro``)
        self._seq = 0
        self._repro_seq: int | None = None
        self._call_fd: int | None = None
        self._codec: Any = None  # a conformance.core.callcodec.CallCodec, made on first use
        self._head = b"{}"  # the item's JSON as of the last start/mark (call fields apart)
        self._described_of: str | None = None  # the call description last encoded ...
        self._described = b"null"  # ... and its JSON
        #: called before every call is recorded (the watchdog's progress: its deadline is the
        #: call's); set by whoever watches the item, None otherwise
        self.on_call: Callable[[], None] | None = None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def start(self, nodeid: str, overload: str, check: str) -> None:
        self.item = {"nodeid": nodeid, "overload": overload, "check": check,
                     "started": time.time(), "pid": os.getpid(), "state": "running"}
        self._write()

    def call(self, call: Call, repro: Callable[[Call], str], *, side: str) -> None:
        """Record the call about to run on ``side`` (``cpu`` or the backend's device)."""
        if self.on_call is not None:
            self.on_call()
        if not self.path:
            return
        self.item["call"] = call.describe()
        self.item["side"] = side
        self.item["call_started"] = time.time()
        self.item["source"] = call.source  # a schema draw or a recorded call (corpus)
        # the repro is what a crash verdict carries; an oracle crash is a skip and needs none
        if side != "cpu" and self._repro_of is not call:  # one repro per call (CPU reruns)
            self._repro_of = call
            self._keep(call, repro)
        self.item["repro"] = self._repro if side != "cpu" else None
        self.item["repro_seq"] = self._repro_seq if side != "cpu" else None
        self._write_call()

    @property
    def call_path(self) -> Path | None:
        """The side file holding the backend's call in flight as bytes
        (:mod:`conformance.core.callcodec`), beside the marker."""
        return self.path.with_suffix(".call") if self.path else None

    def _keep(self, call: Call, repro: Callable[[Call], str]) -> None:
        """Keep ``call`` for its repro: as bytes in the side file, rendered only where the
        marker is read (:meth:`read`: after a death), or, where it cannot be kept so, rendered
        now. The side file is written before the marker names it (``repro_seq``): a process
        that dies between the two leaves a marker naming the call before, whose number no
        longer matches, so no repro (never the wrong one)."""
        if self._codec is None:
            from conformance.core.callcodec import CallCodec

            self._codec = CallCodec()
        data = self._codec.dump(repro, call)
        if data is None:
            self._repro, self._repro_seq = repro(call), None
            return
        self._seq += 1
        if self._call_fd is None:
            assert self.call_path is not None
            self._call_fd = os.open(self.call_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        head = b"%d\n" % self._seq
        os.pwrite(self._call_fd, head + data, 0)  # no truncation: unpickling stops at its end
        self._repro, self._repro_seq = None, self._seq

    def mark(self, state: str) -> None:
        self.item["state"] = state
        self._write()

    def finish(self) -> None:
        self.item = {}
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # nothing running
            self._size = 0

    def reopen(self) -> None:
        """Write the marker and its side file afresh from the next write on (truncated), not
        through the descriptors this object holds: in a process forked from a copy of it that
        is older than the files (a fork server's child), the sizes and call numbers it holds
        are not the files' any more."""
        self._fd = self._call_fd = None
        self._size = 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._call_fd is not None:
            os.close(self._call_fd)
            self._call_fd = None

    def _write_call(self) -> None:
        """:meth:`_write` for :meth:`call`, which runs before every example on each side: only
        the call's fields change, so the rest of the item is taken as encoded at the last
        :meth:`start` or :meth:`mark`, and the call's description as encoded for its previous
        side (each call runs on CPU, then on the backend)."""
        item = self.item
        if self._described_of is not item["call"]:
            self._described_of, self._described = item["call"], _json_text(item["call"])
        fields = _CALL_LAYOUT % (self._described, _json_text(item["side"]),
                                 _json_text(item["source"]), _json_text(item["repro"]),
                                 _json_text(item["repro_seq"]), _json_text(item["call_started"]))
        head = self._head[:-1]
        self._put(head + (b", " if head != b"{" else b"") + fields + b"}")

    def _write(self) -> None:
        if not self.path:
            return
        self._head = json.dumps({k: v for k, v in self.item.items()
                                 if k not in _CALL_FIELDS}).encode()
        self._put(json.dumps(self.item).encode())

    def _put(self, data: bytes) -> None:
        """Rewrite the marker in place through one open descriptor (no open/rename per call:
        this runs before every example). A shorter marker is padded with spaces over the
        longer one before it (JSON allows trailing whitespace) instead of truncating the
        file: one system call per example, not two."""
        if self._fd is None:
            assert self.path is not None  # callers return early without a marker file
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            self._size = 0
        os.pwrite(self._fd, data.ljust(self._size), 0)
        self._size = max(self._size, len(data))

    @staticmethod
    def read(path: str | os.PathLike[str], *, render: bool = True) -> dict[str, Any] | None:
        """The marker at ``path``, its ``repro`` rendered from the side file where the marker
        names a kept call (``repro_seq``; ``render=False``: not, for a reader of its timing
        only); ``None`` where there is no readable marker."""
        try:
            with open(path, encoding="utf-8") as fh:
                marker = json.load(fh)
        except (OSError, ValueError):  # missing, half-written or not text
            return None
        seq = marker.get("repro_seq") if isinstance(marker, dict) else None
        if render and seq is not None and marker.get("repro") is None:
            marker["repro"] = _kept_repro(Path(path).with_suffix(".call"), int(seq))
        return marker  # type: ignore[no-any-return]


def _kept_repro(path: Path, seq: int) -> str | None:
    """The repro of call number ``seq`` kept in the side file at ``path``, if it is that one."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, _, body = data.partition(b"\n")
    if head != b"%d" % seq:
        return None
    from conformance.core.callcodec import render_call

    try:
        return render_call(body)
    except Exception:  # noqa: BLE001 - a marker a reader cannot render has no repro
        return None
