"""The fork server (:mod:`conformance.pytest_plugin.forkserver`): its children run what they are
asked, hand back their record, and their exit code comes back; a server that is gone says so."""

from __future__ import annotations

import json
import os
import signal
from typing import cast

import pytest

from conformance.pytest_plugin.forkserver import ForkServer, Runner

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")


class _Passed:
    def __init__(self, nodeid: str, recorded_only: bool) -> None:
        self.seen = (nodeid, recorded_only)

    def to_json(self) -> dict[str, object]:
        return {"nodeid": self.seen[0], "recorded_only": self.seen[1]}


def _run(nodeid: str, recorded_only: bool) -> _Passed:
    if nodeid == "dies":
        os.kill(os.getpid(), signal.SIGKILL)
    return _Passed(nodeid, recorded_only)


_runner = cast(Runner, _run)  # a record with to_json() is all a child reads of a Verdict


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _spawn(server: ForkServer, nodeid: str, recorded_only: bool) -> tuple[int, bytes]:
    r, w = os.pipe()
    try:
        pid = server.spawn(nodeid, recorded_only, w)
    finally:
        os.close(w)
    return pid, _read_all(r)


def test_children_run_the_item_asked_and_their_exit_codes_come_back() -> None:
    server = ForkServer.start(_runner)
    try:
        pid, data = _spawn(server, "add.Tensor::autograd", True)
        assert pid not in (os.getpid(), server.pid)
        assert json.loads(data) == {"record": {"nodeid": "add.Tensor::autograd",
                                               "recorded_only": True}}
        assert server.reap() == 0
        _, data = _spawn(server, "dies", False)  # killed before it wrote: no record
        assert data == b"" and server.reap() == -signal.SIGKILL
        _, data = _spawn(server, "neg::autograd", False)  # the server lives on
        assert json.loads(data)["record"]["nodeid"] == "neg::autograd" and server.reap() == 0
    finally:
        server.close()


def test_a_server_that_is_gone_says_so() -> None:
    server = ForkServer.start(_runner)
    os.kill(server.pid, signal.SIGKILL)
    os.waitpid(server.pid, 0)
    r, w = os.pipe()
    try:
        with pytest.raises((RuntimeError, OSError)):
            server.spawn("add.Tensor::autograd", False, w)
    finally:
        os.close(r)
        os.close(w)
        server.close()
