"""A small headless-Chromium driver (standard library only) for checking reports in a real browser
(a test helper: it does not ship in the ``reports`` package).

It speaks the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (file descriptors 3 and 4,
NUL-separated JSON), so it needs no network port, no websocket library and no npm. Used by the
browser tests and ``benchmarks/bench_report.py``::

    with Chromium() as browser:
        page = browser.open("report.html")
        page.wait_for("window.__report && window.__report.ready")
        page.type("#search", "add")
        png = page.screenshot()
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

#: The browser binary: Debian's chromium, or $OPCONFORM_CHROMIUM (e.g. a google-chrome path).
CHROMIUM = os.environ.get("OPCONFORM_CHROMIUM", "/usr/bin/chromium")

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-dev-shm-usage", "--mute-audio", "--hide-scrollbars",
)


class BrowserError(RuntimeError):
    """The browser died, timed out, or a DevTools command failed."""


def available(binary: str | None = None) -> bool:
    return os.access(binary or CHROMIUM, os.X_OK)


class Chromium:
    """One headless Chromium process; :meth:`open` gives a :class:`Page`."""

    def __init__(self, binary: str | None = None, *, width: int = 1440, height: int = 900,
                 timeout: float = 30.0) -> None:
        binary = binary or CHROMIUM
        if not available(binary):
            raise BrowserError(f"{binary} not found or not executable")
        self.width, self.height, self.timeout = width, height, timeout
        self.profile = tempfile.mkdtemp(prefix="opconform-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Move the child's ends above 9 so the shell's "3<&N 4>&M" cannot clobber them.
        for name in ("to_child_r", "from_child_w"):
            fd = locals()[name]
            high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
            os.close(fd)
            if name == "to_child_r":
                to_child_r = high
            else:
                from_child_w = high
        self._log = open(os.path.join(self.profile, "chromium.log"), "w+b")  # noqa: SIM115
        args = [binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
                f"--window-size={width},{height}", "about:blank"]
        # bash (dash refuses fds > 9) puts our pipe ends on fds 3 (commands in), 4 (replies out).
        script = f'exec "$@" 3<&{to_child_r} 4>&{from_child_w}'
        self.proc = subprocess.Popen(
            [shutil.which("bash") or "/bin/bash", "-c", script, "chromium", *args],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    # -- protocol ----------------------------------------------------------------------------
    def send(self, method: str, params: dict[str, Any] | None = None, *,
             session: str | None = None, timeout: float | None = None) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        try:
            os.write(self._to_child, data)
        except OSError as exc:
            raise BrowserError(f"chromium is gone ({exc}); stderr: {self._stderr()}") from None
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._read(deadline, method)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return dict(reply.get("result") or {})
            self.events.append(reply)

    def _read(self, deadline: float, what: str) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"timed out waiting for {what}")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium closed the pipe; stderr: {self._stderr()}")
            self._buf += chunk
        raw, _, self._buf = self._buf.partition(b"\0")
        return dict(json.loads(raw))

    def wait_event(self, method: str, *, session: str | None = None,
                   timeout: float | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + (timeout or self.timeout)
        for i, ev in enumerate(self.events):
            if ev.get("method") == method and (session is None or ev.get("sessionId") == session):
                return self.events.pop(i)
        while True:
            ev = self._read(deadline, method)
            if ev.get("method") == method and (session is None or ev.get("sessionId") == session):
                return ev
            self.events.append(ev)

    def _stderr(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-500:]

    # -- pages -------------------------------------------------------------------------------
    def open(self, path_or_url: str | os.PathLike[str]) -> Page:
        url = str(path_or_url)
        if "://" not in url:
            url = Path(url).resolve().as_uri()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        page = Page(self, session)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Emulation.setDeviceMetricsOverride", {
            "width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        page.navigate(url)
        return page

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close", timeout=5)
                except BrowserError:
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            for fd in (self._to_child, self._from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab, attached with a flat session."""

    def __init__(self, browser: Chromium, session: str) -> None:
        self.browser = browser
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None,
             timeout: float | None = None) -> dict[str, Any]:
        return self.browser.send(method, params, session=self.session, timeout=timeout)

    def navigate(self, url: str) -> None:
        res = self.call("Page.navigate", {"url": url})
        if "errorText" in res:
            raise BrowserError(f"cannot open {url}: {res['errorText']}")
        if res.get("loaderId"):  # a same-document navigation (only the #hash changed) has none
            self.browser.wait_event("Page.loadEventFired", session=self.session)

    def eval(self, expression: str, *, await_promise: bool = False) -> Any:
        """Evaluate JS in the page and return its (JSON-able) value; JS exceptions raise."""
        res = self.call("Runtime.evaluate", {
            "expression": expression, "returnByValue": True, "awaitPromise": await_promise})
        if "exceptionDetails" in res:
            det = res["exceptionDetails"]
            text = det.get("exception", {}).get("description") or det.get("text")
            raise BrowserError(f"JS error in {expression[:60]!r}: {text}")
        return res.get("result", {}).get("value")

    def wait_for(self, condition: str, *, timeout: float = 15.0) -> Any:
        """Poll a JS expression until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(condition)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {condition!r}")
            time.sleep(0.02)

    def errors(self) -> list[str]:
        """Uncaught exceptions and console errors seen so far."""
        out = []
        for ev in self.browser.events:
            if ev.get("sessionId") != self.session:
                continue
            if ev.get("method") == "Runtime.exceptionThrown":
                d = ev["params"]["exceptionDetails"]
                out.append(str(d.get("exception", {}).get("description") or d.get("text")))
            elif ev.get("method") == "Runtime.consoleAPICalled" and ev["params"]["type"] == "error":
                out.append(" ".join(str(a.get("value", a.get("description")))
                                    for a in ev["params"]["args"]))
        return out

    def center(self, selector: str) -> tuple[float, float]:
        """Viewport coordinates of the middle of the first element matching ``selector``."""
        js = (f"(function(){{var e=document.querySelector({json.dumps(selector)});"
              "if(!e)return null;e.scrollIntoView({block:'nearest'});"
              "var r=e.getBoundingClientRect();return [r.left+r.width/2,r.top+r.height/2];})()")
        got = self.eval(js)
        if not got:
            raise BrowserError(f"no element matches {selector!r}")
        return float(got[0]), float(got[1])

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) in the middle of the element."""
        x, y = self.center(selector)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {
                "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def type(self, selector: str, text: str) -> None:
        """Focus an input by clicking it and type ``text`` as keyboard input."""
        self.click(selector)
        self.call("Input.insertText", {"text": text})

    def screenshot(self, path: str | os.PathLike[str] | None = None) -> bytes:
        png = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(png)
        return png
