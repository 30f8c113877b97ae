"""The live board shared by the threads of a run: the wire recorder adds node views, the rung runner says which
step runs, and a display (full screen or plain lines) draws `frame()` whenever `changed()` says so."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from wirespeed.core.fabric.board import Board, Frame
from wirespeed.core.fabric.meter import NodeView


class LiveBoard:
    """A `Board` behind a lock, with a version that grows on every change (a display waits on it)."""

    def __init__(self, title: str, interval_s: float, nodes: Sequence[str] = (), steps: Sequence[str] = ()) -> None:
        self._board = Board(title, interval_s, nodes, steps)
        self._changed = threading.Condition()
        self.version = 0

    @property
    def interval_s(self) -> float:
        return self._board.interval_s

    def _bump(self) -> None:
        self.version += 1
        self._changed.notify_all()

    def view(self, view: NodeView) -> None:
        with self._changed:
            self._board.add(view)
            self._bump()

    def start(self, name: str, expected_s: float | None = None) -> None:
        with self._changed:
            self._board.start(name, time.monotonic(), expected_s)
            self._bump()

    def end(self, name: str, state: str, figure: str | None = None) -> None:
        with self._changed:
            self._board.end(name, state, figure)
            self._bump()

    def detail(self, text: str | None) -> None:
        with self._changed:
            self._board.detail = text
            self._bump()

    def say(self, text: str) -> None:
        with self._changed:
            self._board.say(text)
            self._bump()

    def tail(self, lines: Sequence[str]) -> None:
        with self._changed:
            if tuple(lines) != self._board.tail:
                self._board.tail = tuple(lines)
                self._bump()

    def toggle_halves(self) -> None:
        with self._changed:
            self._board.show_halves = not self._board.show_halves
            self._bump()

    def show_halves(self, shown: bool) -> None:
        with self._changed:
            self._board.show_halves = shown
            self._bump()

    def frame(self) -> Frame:
        with self._changed:
            return self._board.frame(time.monotonic())

    def changed(self, since: int, timeout_s: float) -> int:
        """Wait until the version is past `since` (or `timeout_s`); returns the version now."""
        with self._changed:
            self._changed.wait_for(lambda: self.version != since, timeout=timeout_s)
            return self.version
