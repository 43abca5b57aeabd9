"""The jinja2 environment and the package's own CSS/JS, shared by the report and diff pages."""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any

from reports.results import VERDICTS
from reports.tables import NOT_TESTED

if TYPE_CHECKING:
    import jinja2

#: Verdict names that have their own CSS class; other verdicts are styled ``other``.
STYLED_VERDICTS: tuple[str, ...] = (*VERDICTS, NOT_TESTED)

TEMPLATE_EXTENSIONS = ("html", "j2", "htm", "xml")


def environment() -> jinja2.Environment:
    """The jinja2 environment for reports/templates, autoescape on for ``*.html.j2``."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        # select_autoescape() matches the *last* extension; .html.j2 ends in "j2", so name it.
        autoescape=jinja2.select_autoescape(
            enabled_extensions=TEMPLATE_EXTENSIONS, default_for_string=True, default=True
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.policies["json.dumps_kwargs"] = {"sort_keys": False, "separators": (",", ":"),
                                         "allow_nan": False}
    env.filters["pct"] = pct
    env.filters["num"] = lambda n: f"{n:,}"
    env.filters["vclass"] = verdict_class
    return env


def static_asset(name: str) -> str:
    """Text of a file in reports/templates (CSS/JS inlined into the page)."""
    return resources.files("reports").joinpath("templates").joinpath(name).read_text(
        encoding="utf-8")


def inline_asset(name: str) -> Any:
    """Our own CSS/JS file, as markup to inline verbatim (a file of this package, not user
    data); refuses one that would close its own element."""
    import markupsafe

    text = static_asset(name)
    if "</script" in text.lower() or "</style" in text.lower():
        raise ValueError("inlined asset must not close its own element")
    return markupsafe.Markup(text)


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def verdict_class(verdict: str) -> str:
    """CSS class suffix of a verdict (``other`` for verdicts this version does not know)."""
    return verdict.replace(" ", "-") if verdict in STYLED_VERDICTS else "other"
