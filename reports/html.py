"""The self-contained HTML report: the jinja2 rendering of :func:`reports.page.page_data`.

Everything from a results file reaches the page in one of two ways, both escaped:
the summary through jinja2 with autoescape on, and the matrix data through ``|tojson`` inside a
``<script type="application/json">`` element, which the page's script reads with ``JSON.parse``
and puts into the DOM with ``textContent`` only.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reports.tables import NOT_TESTED, Counts
from reports.templating import environment, inline_asset, verdict_class


def _bar(counts: Counts, order: Sequence[str]) -> list[dict[str, Any]]:
    """Segments of a stacked bar: verdict, css class, count, width (% of total)."""
    total = counts.total or 1
    segs = []
    rest = [v for v in counts.by_verdict if v not in order]
    for v in [*order, *rest]:
        n = counts.by_verdict.get(v, 0)
        if n:
            segs.append({"verdict": v, "cls": verdict_class(v), "n": n,
                         "w": round(100 * n / total, 3)})
    return segs


def pack_strings(data: Mapping[str, Any]) -> dict[str, Any]:
    """Replace ``strings`` (messages, repros: most of a full run's bytes) by ``strings_gz``,
    the JSON list gzip-compressed and base64-encoded; the page inflates it with the browser's
    ``DecompressionStream``. A full run's report shrinks about four-fold."""
    out = dict(data)
    raw = json.dumps(out.pop("strings"), separators=(",", ":"), allow_nan=False)
    out["strings_gz"] = base64.b64encode(gzip.compress(raw.encode("utf-8"), 6, mtime=0)).decode()
    return out


def unpack_strings(data: Mapping[str, Any]) -> list[str]:
    """The inverse of :func:`pack_strings` (for tests and tools reading a report's data)."""
    raw = gzip.decompress(base64.b64decode(data["strings_gz"]))
    return list(json.loads(raw.decode("utf-8")))


def render(data: Mapping[str, Any]) -> str:
    """The HTML page for :func:`page_data`'s output."""
    env = environment()
    order = ["pass", "fail", "unsupported", "crash", "timeout", "skip", NOT_TESTED]
    summary = data["summary"]

    def counts(d: Mapping[str, Any]) -> Counts:
        return Counts(d["total"], d["tested"], d["passed"], d["by_verdict"])

    overall = counts(summary["overloads"])
    checks = [(k, counts(c), _bar(counts(c), order)) for k, c in summary["checks"].items()]
    static = summary["static"]
    static_bar = None
    if static:
        total = sum(static.values()) or 1
        static_bar = [{"status": s, "n": n, "w": round(100 * n / total, 3)}
                      for s, n in static.items() if n]
    template = env.get_template("report.html.j2")
    cross = data.get("cross")  # rendered as a table: kept out of the page's JSON
    return template.render(
        data=pack_strings({k: v for k, v in data.items() if k != "cross"}),
        cross=cross,
        overall=overall,
        overall_bar=_bar(overall, order),
        checks=checks,
        static=static,
        static_bar=static_bar,
        verdict_order=order,
        css=inline_asset("report.css"),
        js=inline_asset("report.js"),
    )


def write_html(
    results: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    coverage: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    title: str | None = None,
) -> None:
    """Render results files (and optionally a static coverage JSON) into one HTML file."""
    from reports.files import write_text
    from reports.ops import annotate
    from reports.page import page_data
    from reports.results import read
    from reports.tables import frame

    res = read(results)
    df = frame(res)
    ann = annotate(df["overload"].unique(), coverage)
    html = render(page_data(df, ann, title=title))
    write_text(os.fspath(output), html)
