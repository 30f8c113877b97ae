"""The two ways a live board is shown: the full screen (a terminal) and plain lines (a pipe, a log, `--no-live`).

Both draw from the same `Frame`; both are context managers with `say(text)` for what a run has to say while it
runs. The full screen redraws when the board changes or the terminal is resized (at most four times a second), `q`
leaves as Ctrl-C does, `h` folds or unfolds the halves, and on exit the last frame stays printed, followed by
what was said. Plain lines: one per interval (every two seconds at most apart), never an escape code.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import replace
from types import TracebackType

from rich.console import Console
from rich.live import Live

from wirespeed.engine.live import LiveBoard
from wirespeed.ui.dashboard import plain_line, render

REDRAW_S = 0.25  # the most often the screen is drawn
EVERY_S = 2.0  # plain lines: never further apart than this


class LiveScreen:
    """The full-screen view of `board` on `console` (a terminal)."""

    def __init__(self, console: Console, board: LiveBoard, hint: str = "q or Ctrl-C stops · h halves") -> None:
        self.console = console
        self.board = board
        self.hint = hint
        self.said: list[str] = []
        self._done = threading.Event()
        self._live: Live | None = None
        self._thread: threading.Thread | None = None
        self._keys: contextlib.ExitStack = contextlib.ExitStack()

    def say(self, text: str) -> None:
        self.said.append(text)
        self.board.say(text)

    def _key(self, char: str) -> None:
        if char in "qQ":
            _thread.interrupt_main(signal.SIGINT)  # the same way out as Ctrl-C: what was measured is kept
        elif char in "hH":
            self.board.toggle_halves()

    def _terminal_size(self) -> tuple[int, int]:
        """The terminal's size now. Asked of the terminal itself: COLUMNS and LINES in the environment (which Rich
        would believe) are a snapshot from when the shell started, wrong after a resize."""
        try:
            size = os.get_terminal_size(self.console.file.fileno())
            return size.columns, size.lines
        except (OSError, ValueError, AttributeError):
            return self.console.size.width, self.console.size.height

    def _draw(self) -> None:
        assert self._live is not None
        width, height = self.console.size
        self._live.update(render(self.board.frame(), width, height, self.hint), refresh=True)

    def _run(self) -> None:
        seen, size = -1, None
        while not self._done.is_set():
            version = self.board.changed(seen, timeout_s=REDRAW_S)
            now = self._terminal_size()
            if version != seen or now != size:
                if now != size:
                    self.console.size = now  # what Rich crops to, and the width the run's tables are printed at
                seen, size = version, now
                with contextlib.suppress(Exception):  # a drawing error must never stop the measurement
                    self._draw()
            self._done.wait(REDRAW_S)

    def __enter__(self) -> LiveScreen:
        from wirespeed.adapters.keys import key_presses

        self._live = Live(
            console=self.console, screen=True, auto_refresh=False, redirect_stdout=False, redirect_stderr=False
        )
        self._live.start()
        self._keys.enter_context(key_presses(self._key))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._keys.close()
        if self._live is not None:
            self._live.stop()
        width = self.console.size.width
        final = replace(self.board.frame(), messages=())  # what was said follows it, printed by the command
        self.console.print(render(final, width, 10_000))  # the final frame, on the normal screen


class PlainLines:
    """One plain line per interval of `board` through `write` while something runs or samples come in."""

    def __init__(self, board: LiveBoard, write: Callable[[str], None]) -> None:
        self.board = board
        self.write = write
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def say(self, text: str) -> None:
        self.write(text)

    def _run(self) -> None:
        every = min(self.board.interval_s, EVERY_S)
        last = 0
        while not self._done.wait(every):
            frame = self.board.frame()
            if frame.intervals == last and frame.running is None:
                continue  # nothing new and nothing running: a pipe is not a clock
            last = frame.intervals
            with contextlib.suppress(Exception):
                self.write(plain_line(frame))

    def __enter__(self) -> PlainLines:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=2.0)


def show(console: Console, board: LiveBoard, write: Callable[[str], None], live: bool) -> LiveScreen | PlainLines:
    """The full screen on a terminal when `live`, else plain lines through `write`."""
    return LiveScreen(console, board) if live and console.is_terminal else PlainLines(board, write)
