"""The ``conformance`` command line: a thin dispatcher over ``conformance.commands.*``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# name -> module; each module defines register(subparsers) which adds its parser and
# sets ``func`` (called with the parsed namespace, returns an exit status).
COMMANDS: dict[str, str] = {
    "ops": "conformance.commands.ops",
    "coverage": "conformance.commands.coverage",
    "run": "conformance.commands.run",
    "report": "conformance.commands.report",
    "diff": "conformance.commands.diff",
    "trace": "conformance.commands.trace",
    "baseline": "conformance.commands.baseline",
    "gate": "conformance.commands.gate",
    "merge": "conformance.commands.merge",
    "upgrade": "conformance.commands.upgrade",
}


def _selected(argv: Sequence[str]) -> list[str]:
    """The commands whose modules must be imported: just the one named, or all for --help."""
    for arg in argv:
        if arg in COMMANDS:
            return [arg]
        if not arg.startswith("-"):
            break
    return list(COMMANDS)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Build the parser, importing only the named command's module (start-up stays fast)."""
    names = _selected(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="conformance",
        description="Operator coverage and CPU-parity conformance for PyTorch backends.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in names:
        modname = COMMANDS[name]
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name != modname:
                raise
            continue  # command not built yet
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from opdb.errors import InputError

    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"conformance {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"conformance {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
