"""Progress line on a terminal and the one-screen summary of ``conformance run``.

The progress plugin rides along with the conformance plugin: it counts verdicts from the reports
the items produce (with xdist, on the controller) and redraws one status line on a TTY (count,
rate, ETA, verdicts so far). When output is not a terminal (a CI log) it prints one plain status
line every ``interval`` seconds instead, and nothing else until the summary.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

import pytest

from conformance.core.verdicts import VERDICTS
from conformance.pytest_plugin.records import VERDICT_PROP
from opdb.outcomes import CPU_DTYPE_GAP


class Progress:
    """A pytest plugin object: silences pytest's own terminal lines, shows one status line."""

    def __init__(self, stream: IO[str] | None = None, *, tty: bool | None = None,
                 interval: float = 30.0, already: int = 0) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval = interval  # seconds between status lines when not a terminal
        self.already = already  # verdicts a resumed run found on disk
        self.total = 0
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.t0 = time.monotonic()
        self.last_draw = 0.0
        self.last_log = self.t0
        self.captured = io.StringIO()  # pytest's terminal output, shown only if pytest errs
        self.config: pytest.Config | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config
        tr = config.pluginmanager.getplugin("terminalreporter")
        if tr is not None:
            from _pytest._io import TerminalWriter

            tr._tw = TerminalWriter(file=self.captured)  # keep pytest quiet; ours is the display

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = max(self.total, len(ids))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        verdict = None
        if report.when == "teardown":
            return  # carries the call's user_properties again: one count per item
        for key, value in report.user_properties:
            if key == VERDICT_PROP:
                rec = json.loads(str(value))
                verdict = rec["verdict"]
                if verdict == "pass" and rec.get("expected"):
                    verdict = "xpass"  # an expected failure that passes: its entry is stale
        if verdict is None:
            if report.when == "???":
                verdict = "crash"
            elif report.when == "call" or (report.when == "setup" and not report.passed):
                verdict = "error" if report.failed else None
        if verdict is None:
            return
        self.done += 1
        self.counts[verdict] += 1
        self.draw(report.nodeid)

    def status(self, now: float | None = None) -> str:
        """``1200/9303 13%  1m24s  14.2/s  ETA 9m30s  pass 1100  fail 50  not applicable
        3700`` (the resumed ones aside).

        Done, total, percentage, rate and ETA are those of the items that run: verdicts
        recorded without running an item (checks that do not apply,
        :mod:`conformance.pytest_plugin.inapplicable`, a third of a full run) are no work done,
        and counting them as done showed 33% at 7.6% of the work. Their count is said apart."""
        now = time.monotonic() if now is None else now
        elapsed = now - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = max(self.total - self.done, 0)
        eta = _elapsed(left / rate) if rate > 0 and self.total else "?"
        done, total = self.done, max(self.total, self.done)
        pct = f"{100 * done / total:.0f}%" if total else "?%"
        counts = "  ".join(f"{v} {self.counts[v]}" for v in (*VERDICTS, "xpass", "error")
                           if self.counts[v])
        inapplicable = sum(self._direct().values())
        if inapplicable:
            counts += f"  not applicable {inapplicable}"
        resumed = f" (+{self.already} resumed)" if self.already else ""
        return (f"{done}/{total}{resumed} {pct}  {_elapsed(elapsed)}  {rate:.1f}/s  "
                f"ETA {eta}  {counts}").rstrip()

    def _direct(self) -> Counter[str]:
        if self.config is None:
            return Counter()
        from conformance.pytest_plugin.inapplicable import direct_counts

        return direct_counts(self.config)

    def draw(self, current: str = "", *, force: bool = False) -> None:
        now = time.monotonic()
        if not self.tty:
            if force or now - self.last_log >= self.interval:
                self.last_log = now
                self.stream.write(f"conformance: {self.status(now)}\n")
                self.stream.flush()
            return
        if not force and now - self.last_draw < 0.1 and self.done < self.total:
            return
        self.last_draw = now
        line = f"\r[{self.status(now)}]  {current}"
        width = 120
        self.stream.write(line[:width].ljust(width))
        self.stream.flush()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.tty:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()
        elif self.done and time.monotonic() - self.t0 >= self.interval:
            self.draw(force=True)  # a log that had status lines gets the last one too


def _elapsed(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s"


def summarize(path: str | Path, *, html: str | None = None, top: int = 8) -> str:
    """The one-screen summary of a results file."""
    from conformance.store.results import read_records

    run: dict[str, Any] = {}
    verdicts: list[dict[str, Any]] = []
    for rec in read_records(path):
        if rec.get("record") == "run":
            run = rec
        elif rec.get("record") == "verdict":
            verdicts.append(rec)
    checks = list(dict.fromkeys(v["check"] for v in verdicts))
    by = Counter((v["check"], v["verdict"]) for v in verdicts)
    total = Counter(v["verdict"] for v in verdicts)
    overloads = len({v["overload"] for v in verdicts})
    lines = [f"conformance run: backend {run.get('backend', '?')} "
             f"(device {run.get('device', '?')}, torch {run.get('torch_version', '?')}, "
             f"seed {run.get('seed', '?')}, max_examples {run.get('max_examples', '?')})",
             f"{len(verdicts)} verdicts over {overloads} overloads", ""]
    cols = [v for v in VERDICTS if total[v]] or ["pass"]
    lines.append(f"{'check':<12}" + "".join(f"{c:>13}" for c in cols))
    for check in checks:
        lines.append(f"{check:<12}" + "".join(f"{by[(check, c)]:>13}" for c in cols))
    lines.append(f"{'total':<12}" + "".join(f"{total[c]:>13}" for c in cols))
    expected = sum(1 for v in verdicts if v.get("expected") and v["verdict"] == "fail")
    if expected:
        lines.append(f"({expected} of the fails are expected failures with a reason)")
    xpass = [v for v in verdicts if v.get("expected") and v["verdict"] == "pass"]
    if xpass:
        lines.append(f"xpass: {len(xpass)} expected failure(s) now pass (stale entries): "
                     + ", ".join(f"{v['overload']}::{v['check']}" for v in xpass[:top])
                     + (" ..." if len(xpass) > top else ""))
    fails = Counter((v["check"], v.get("category")) for v in verdicts if v["verdict"] == "fail")
    if fails:
        lines.append("")
        lines.append("top failure categories:")
        for (check, cat), n in fails.most_common(top):
            example = next(v["overload"] for v in verdicts
                           if v["verdict"] == "fail" and v["check"] == check
                           and v.get("category") == cat)
            lines.append(f"  {n:>5}  {check}/{cat}  (e.g. {example})")
    gaps = sum(1 for v in verdicts if v["verdict"] == "pass" and v.get("category") == CPU_DTYPE_GAP)
    if gaps:
        lines.append(f"({gaps} passes also computed dtypes CPU has no kernel for: "
                     f"{CPU_DTYPE_GAP}, informational)")
    lost = [v for v in verdicts if v["verdict"] in ("crash", "timeout")]
    if lost:
        lines.append("")
        lines.append("crashed or timed out: " + ", ".join(
            f"{v['overload']}::{v['check']}" for v in lost[:top]) + (" ..." if len(lost) > top
                                                                    else ""))
    missing = Counter(v.get("missing_op") for v in verdicts if v["verdict"] == "unsupported")
    if missing:
        lines.append(f"unsupported: {sum(missing.values())} verdicts, {len(missing)} missing "
                     f"kernels (most named: " + ", ".join(
                         f"{k} x{n}" for k, n in missing.most_common(3)) + ")")
    lines.append("")
    lines.append(f"results: {path}")
    if html:
        lines.append(f"report:  {html}")
    return "\n".join(lines)
