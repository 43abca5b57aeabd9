"""The one error type that the CLI turns into a one-line message and exit status 2."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input: a file, a line in it, or an option.

    ``str(err)`` is the one line the CLI prints, e.g.
    ``native_functions.yaml:120: unknown key 'dispach' in entry 'add.Tensor'``.
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = f"{self.file}:{self.line}: " if self.line is not None else f"{self.file}: "
        return f"{where}{self.message}"
