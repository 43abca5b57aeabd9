"""Rendering ``conformance upgrade``: the changes between two torch releases (and what one
backend must do about them) as a text table, markdown (for an upgrade PR) or JSON. The changes
themselves come from :mod:`opdb.upgrade`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opdb.upgrade import CHANGES, Action, action_json

#: Row order: what the backend must do first, then by change kind.
_LEVEL_ORDER = {"must": 0, "review": 1, "none": 2, "n/a": 3}


def ordered(actions: Sequence[Action]) -> list[Action]:
    kinds = list(CHANGES)
    return sorted(actions, key=lambda a: (_LEVEL_ORDER[a.level], kinds.index(a.change.kind),
                                          a.change.overload))


def summary(actions: Sequence[Action]) -> dict[str, Any]:
    by_kind = dict.fromkeys(CHANGES, 0)
    by_level: dict[str, int] = {}
    for a in actions:
        by_kind[a.change.kind] += 1
        by_level[a.level] = by_level.get(a.level, 0) + 1
    return {"changes": len(actions), "by_change": by_kind, "by_level": by_level}


def to_json(actions: Sequence[Action], head: Mapping[str, Any]) -> dict[str, Any]:
    return {**head, "summary": summary(actions), "rows": [action_json(a) for a in ordered(actions)]}


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _short(loc: str | None) -> str:
    """``.../native_functions.yaml:123`` -> ``native_functions.yaml:123``."""
    return loc.rsplit("/", 1)[-1] if loc else "-"


def render_text(actions: Sequence[Action], head: Mapping[str, Any], *,
                limit: int | None = None, width: int = 70) -> str:
    rows = ordered(actions)
    backend = head.get("backend")
    lines = [f"upgrade {head['from']} -> {head['to']}"
             + (f" for backend {backend}" if backend else "")]
    s = summary(actions)
    lines.append("changes: " + ", ".join(f"{k} {n}" for k, n in s["by_change"].items() if n))
    if backend:
        lines.append("the backend must act on {must}, review {review}; {none} need nothing".format(
            must=s["by_level"].get("must", 0), review=s["by_level"].get("review", 0),
            none=s["by_level"].get("none", 0)))
    shown = rows if limit is None else rows[:limit]
    table = [["level", "overload", "change", "detail", "old", "new", "reason"]]
    for a in shown:
        c = a.change
        table.append([a.level, c.overload, c.kind, _clip(c.detail, width), _short(c.old_loc),
                      _short(c.new_loc), _clip(a.reason, width)])
    if not backend:
        table = [r[1:6] for r in table]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines.append("")
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
              for r in table]
    if len(shown) < len(rows):
        lines.append(f"... {len(rows) - len(shown)} more rows (--limit 0 shows all)")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(actions: Sequence[Action], head: Mapping[str, Any]) -> str:
    rows = ordered(actions)
    backend = head.get("backend")
    s = summary(actions)
    out = [f"## torch upgrade: {_md(str(head['from']))} → {_md(str(head['to']))}"
           + (f" for `{backend}`" if backend else ""), ""]
    out.append("| change | count | meaning |")
    out.append("|---|---:|---|")
    out += [f"| {k} | {n} | {CHANGES[k]} |" for k, n in s["by_change"].items() if n]
    out.append("")
    if backend:
        out.append(f"**The backend must act on {s['by_level'].get('must', 0)} rows**, review "
                   f"{s['by_level'].get('review', 0)}; {s['by_level'].get('none', 0)} need "
                   "nothing.")
        out.append("")
        out.append("| level | overload | change | detail | status | reason | old | new |")
        out.append("|---|---|---|---|---|---|---|---|")
        for a in rows:
            c = a.change
            out.append(f"| {a.level} | `{c.overload}` | {c.kind} | {_md(c.detail)} | "
                       f"{a.status} | {_md(a.reason)} | {_md(_short(c.old_loc))} | "
                       f"{_md(_short(c.new_loc))} |")
    else:
        out.append("| overload | change | detail | old | new |")
        out.append("|---|---|---|---|---|")
        for a in rows:
            c = a.change
            out.append(f"| `{c.overload}` | {c.kind} | {_md(c.detail)} | "
                       f"{_md(_short(c.old_loc))} | {_md(_short(c.new_loc))} |")
    return "\n".join(out) + "\n"


__all__ = ["ordered", "render_markdown", "render_text", "summary", "to_json"]
