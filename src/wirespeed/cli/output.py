"""Where output goes: data on stdout (JSON with --json), messages on stderr, one line each."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import IO, Any

from rich.console import Console


@dataclass
class Environment:
    """Everything the CLI touches of its process, so tests can run it in-process (httpie's idea)."""

    stdout: IO[str] = field(default_factory=lambda: sys.stdout)
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    width: int | None = None

    def _width(self) -> int | None:
        # Rich assumes 80 columns when not on a terminal; tables of interface names need more.
        if self.width is not None:
            return self.width
        return None if self.stdout.isatty() else 132

    # Text printed is shown as it is: host names, interface names, file contents and tool outputs are the user's,
    # and Rich would turn `--hosts a:b:c` into an emoji (`:b:`) and `[red]` into a colour. Styles come from Text
    # objects and styles, never from markup in a string (a view that wants markup says so with Text.from_markup).
    def console(self) -> Console:
        return Console(
            file=self.stdout, width=self._width(), highlight=False, soft_wrap=False, markup=False, emoji=False
        )

    def err_console(self) -> Console:
        return Console(file=self.stderr, width=self.width, highlight=False, soft_wrap=True, markup=False, emoji=False)


class Output:
    """One command's output channel, in JSON or human mode."""

    def __init__(self, env: Environment, json_mode: bool) -> None:
        self.env = env
        self.json_mode = json_mode
        self.console = env.console()
        self._err = env.err_console()

    def message(self, text: str) -> None:
        """Progress and notes: always stderr, so --json stdout stays machine-readable."""
        self._err.print(text, markup=False)

    def warn(self, text: str) -> None:
        self._err.print(f"wirespeed: warning: {text}", markup=False)

    def data(self, obj: Any) -> None:
        self.env.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
        self.env.stdout.flush()
