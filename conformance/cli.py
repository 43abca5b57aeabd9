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
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conformance",
        description="Operator coverage and CPU-parity conformance for PyTorch backends.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, modname in COMMANDS.items():
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

    parser = build_parser()
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
