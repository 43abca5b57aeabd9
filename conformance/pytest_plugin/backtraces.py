"""The top frames of a crash: where a replayed call killed its process.

Crash verdicts of one root cause (a resize that memcpys onto device pages, a conjugate-copy
recursion) read alike: "the process died, SIGSEGV". Their top frames tell them apart. Once a
replay (:mod:`conformance.pytest_plugin.crashes`) has shown which side's call kills a fresh
process alone, that side is run once more to see where:

* under gdb, where it is on ``PATH`` (``OPCONFORM_DEBUGGER``: another debugger binary, or
  ``off``): ``run``, then the innermost :data:`FRAMES` frames of the thread that faulted —
  native frames, C++ names without their arguments, each with its library;
* else (no debugger, or it could not run the process: ``ptrace`` forbidden in a container)
  with faulthandler on (``PYTHONFAULTHANDLER``): the Python stack of the crashing thread, the
  repro's own lines (``<string>``) left out — coarser, it stops at the op's Python binding.

The outcome of the replay is not taken from these runs (a debugger changes timing); they only
say where. ``opdb.fingerprints.crash_key`` turns the frames into a crash's cause, by which the
report groups crashes.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

#: Environment variable naming the debugger binary (``off``: none, faulthandler only).
DEBUGGER_ENV = "OPCONFORM_DEBUGGER"

#: Frames kept per crash, innermost first (the record shows them; the key uses the first few).
FRAMES = 8

#: Seconds the debugger's run may take (gdb reads the symbols of every library torch loads).
TIMEOUT = 120.0


@dataclass(frozen=True)
class Backtrace:
    """Where a call killed its process: ``by`` (``gdb``, ``faulthandler``) and the frames,
    innermost first, as ``name (library or file)``."""

    by: str
    frames: tuple[str, ...]


def debugger() -> str | None:
    """The gdb to run replays under, or ``None`` (not on ``PATH``, or ``OPCONFORM_DEBUGGER=off``)."""
    named = os.environ.get(DEBUGGER_ENV)
    if named is not None:
        return None if named.strip().lower() in ("", "off", "none") else shutil.which(named)
    return shutil.which("gdb")


def capture(script: str, *, timeout: float = TIMEOUT, cwd: str | os.PathLike[str] | None = None,
            gdb: str | None = None) -> Backtrace | None:
    """Run ``script`` (a one-side repro) once more to see where it dies: under ``gdb`` (default:
    :func:`debugger`), else with faulthandler. ``None`` if neither run died with frames."""
    gdb = debugger() if gdb is None else (gdb or None)
    if gdb:
        # the script from a file: gdb passes a program's arguments on as one line, split at
        # white space, so a multi-line ``-c`` would not survive
        with tempfile.TemporaryDirectory(prefix="conformance-bt-") as tmp:
            path = Path(tmp) / "replay.py"
            path.write_text(script, encoding="utf-8")
            out = _run([gdb, "-batch", "-nx", "-q", "-ex", "set debuginfod enabled off",
                        "-ex", "set startup-with-shell off",
                        "-ex", "set disable-randomization off", "-ex", "set pagination off",
                        "-ex", "handle SIGPIPE nostop noprint pass", "-ex", "run",
                        "-ex", f"bt {FRAMES}", "--args", sys.executable, str(path)],
                       timeout=timeout, cwd=cwd, faulthandler=False)
        frames = gdb_frames(out or "")
        if frames:
            return Backtrace("gdb", frames)
    out = _run([sys.executable, "-c", script], timeout=timeout, cwd=cwd, faulthandler=True)
    frames = faulthandler_frames(out or "")
    return Backtrace("faulthandler", frames) if frames else None


def _run(argv: list[str], *, timeout: float, cwd: str | os.PathLike[str] | None,
         faulthandler: bool) -> str | None:
    """The process's stdout and stderr together, or ``None`` if it ran past ``timeout``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
           "PYTHONFAULTHANDLER": "1" if faulthandler else ""}
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    return out.decode("utf-8", "replace")


_GDB_SIGNAL = re.compile(r"^(?:Thread \d+ \".*\" |Program )received signal SIG\w+", re.M)
_GDB_FRAME = re.compile(r"^#\d+\s+(?:0x[0-9a-fA-F]+ in )?(.+)$")


def gdb_frames(text: str) -> tuple[str, ...]:
    """The frames of gdb's ``bt`` after the program received a signal (``()`` if it did not)."""
    m = _GDB_SIGNAL.search(text)
    if m is None:
        return ()
    frames: list[str] = []
    for line in text[m.end():].splitlines():
        got = _GDB_FRAME.match(line)
        if got is not None:
            frames.append(gdb_frame(got.group(1)))
        elif frames:
            break
    return tuple(frames[:FRAMES])


def gdb_frame(text: str) -> str:
    """One frame of gdb's ``bt`` (address and number gone) as ``name (library or file)``:
    ``at::native::resize_(at::Tensor const&, ...) () from /x/libtorch_cpu.so`` ->
    ``at::native::resize_ (libtorch_cpu.so)``; a frame of glibc's own sources
    (``../sysdeps/...``) reads ``(libc.so.6)``."""
    where = ""
    for sep in (" from ", " at "):
        head, found, tail = text.rpartition(sep)
        if found and "(" in head:
            text, where = head, tail
            break
    if where.startswith("../") or "/sysdeps/" in where:
        where = "libc.so.6"
    elif where:
        where = PurePosixPath(where.split(":", 1)[0]).name
    name = _strip_call(_strip_call(text.strip(), spaced=True), spaced=False)
    return f"{name} ({where})" if where else name


def _strip_call(text: str, *, spaced: bool) -> str:
    """``text`` less its trailing parenthesized group: gdb's argument values (``spaced``: after
    a space) or a C++ signature (right after the name; ``operator()`` kept)."""
    body = text.removesuffix(" const")
    if not body.endswith(")"):
        return text
    depth = 0
    for i in range(len(body) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(body[i], 0)
        if depth == 0:
            if spaced and body[i - 1:i] == " ":
                return body[:i - 1]
            if not spaced and i > 0 and body[i - 1] != " " and not body[:i].endswith("operator"):
                return body[:i]
            return text
    return text


_FAULT_THREAD = re.compile(r"^Current thread 0x[0-9a-fA-F]+ \(most recent call first\):$", re.M)
_PY_FRAME = re.compile(r'^  File "(.+)", line (\d+) in (.+)$')


def faulthandler_frames(text: str) -> tuple[str, ...]:
    """The crashing thread's Python frames as faulthandler prints them, the repro's own
    (``<string>``) left out: ``__call__ (_ops.py:1243)``."""
    m = _FAULT_THREAD.search(text)
    if m is None:
        return ()
    frames: list[str] = []
    for line in text[m.end():].lstrip("\n").splitlines():
        got = _PY_FRAME.match(line)
        if got is None:
            break
        path, lineno, func = got.groups()
        if path != "<string>":
            frames.append(f"{func} ({PurePosixPath(path).name}:{lineno})")
    return tuple(frames[:FRAMES])
