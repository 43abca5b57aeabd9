"""Child processes of an isolated item: :func:`run_child`, the body of every forked child, and
:class:`ForkServer`, a process forked from the test process before its first backward that forks
the isolated items which backpropagate.

Why a server: torch's autograd engine refuses to run in a child forked after its parent ran any
backward ("Unable to handle autograd's threading in combination with fork-based
multiprocessing"), so an autograd item of an overload whose CPU kernel is known to kill the
process could not be forked from a test worker that had checked gradients before: it ran in the
worker, and its death cost xdist a fresh worker (~5 CPU-s to start and collect; 10 of an
all-checks run's 17 starts). The server is forked at the process's first item, before any
backward, and forks such items on request; its children backpropagate as a fresh process does.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from conformance.core.verdicts import Verdict

#: What a server child runs, given the item's node id and whether to run its recorded calls only.
Runner = Callable[[str, bool], "Verdict"]


def run_child(run: Callable[[], Verdict], out_fd: int) -> NoReturn:
    """In a forked child: run the item, write its record (or the harness error) to ``out_fd`` as
    JSON, and end the process, never returning into pytest. The child computes on one thread
    (OpenMP's pool does not survive a fork: a child's parallel region would hang)."""
    from conformance.pytest_plugin.records import json_safe

    code = 0
    try:
        import torch

        torch.set_num_threads(1)
        try:
            out: dict[str, Any] = {"record": json_safe(run().to_json())}
        except Exception:  # noqa: BLE001 - a harness error: the parent raises it
            import traceback

            out = {"error": traceback.format_exc()}
        data = memoryview(json.dumps(out).encode())
        while data:
            data = data[os.write(out_fd, data):]
    except BaseException:  # noqa: BLE001 - whatever happens, the child must not go on
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class ForkServer:
    """The server's end in the test process: :meth:`spawn` has it fork a child that runs an item
    and writes its record to a descriptor handed over the socket; :meth:`reap` is that child's
    exit code once it has ended. One child at a time (the test process runs items in turn)."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock

    @classmethod
    def start(cls, runner: Runner) -> ForkServer:
        """Fork the server. Call it before this process runs any backward: the server's children
        inherit the autograd engine as it is now."""
        ours, theirs = socket.socketpair()
        gc.freeze()  # the server's collections leave the inherited heap alone (see isolation)
        pid = os.fork()
        if pid == 0:
            ours.close()
            _serve(theirs, runner)
        gc.unfreeze()
        theirs.close()
        return cls(pid, ours)

    def spawn(self, nodeid: str, recorded_only: bool, out_fd: int) -> int:
        """Have the server fork a child running ``nodeid`` (its recorded calls alone where
        ``recorded_only``) that writes its record to ``out_fd``; the child's process id."""
        request = json.dumps({"nodeid": nodeid, "recorded_only": recorded_only}).encode()
        socket.send_fds(self.sock, [request + b"\n"], [out_fd])
        reply = _message(self.sock)
        if "pid" not in reply:
            raise RuntimeError(f"the fork server (process {self.pid}) ended: {nodeid} not run")
        return int(reply["pid"])

    def reap(self) -> int:
        """The exit code of the child :meth:`spawn` started, once it has ended (negative: the
        signal that ended it)."""
        reply = _message(self.sock)
        if "code" not in reply:
            raise RuntimeError(f"the fork server (process {self.pid}) ended before its child")
        return int(reply["code"])

    def close(self) -> None:
        """End the server (it reads the closed socket's end and exits) and wait for it."""
        self.sock.close()
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:  # reaped already
            pass


def _message(sock: socket.socket, fds: list[int] | None = None) -> dict[str, Any]:
    """One newline-ended JSON message from ``sock`` (``{}`` at end of stream); a descriptor sent
    with it is appended to ``fds``."""
    data = b""
    while not data.endswith(b"\n"):
        if fds is not None and not data:
            chunk, got, _, _ = socket.recv_fds(sock, 1 << 16, 1)
            fds.extend(got)
        else:
            chunk = sock.recv(1 << 16)
        if not chunk:
            return {}
        data += chunk
    return dict(json.loads(data))


def _serve(sock: socket.socket, runner: Runner) -> NoReturn:
    """The server's loop: fork a child per request, report its pid, then its exit code; end when
    the test process closes its end (or dies)."""
    try:
        while True:
            fds: list[int] = []
            request = _message(sock, fds)
            if not request or not fds:
                break
            pid = os.fork()
            if pid == 0:
                sock.close()
                run_child(functools.partial(runner, str(request["nodeid"]),
                                            bool(request["recorded_only"])), fds[0])
            os.close(fds[0])
            sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            _, status = os.waitpid(pid, 0)
            sock.sendall(json.dumps({"code": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    except BaseException:  # noqa: BLE001 - the server never returns into pytest
        pass
    os._exit(0)
