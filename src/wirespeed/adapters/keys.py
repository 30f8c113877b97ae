"""Single key presses from the terminal, without Enter and without echo (`q` to leave the live view, `h` for the
halves). The terminal's settings are restored however the reader ends; Ctrl-C still raises SIGINT."""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def key_presses(on_key: Callable[[str], None]) -> Iterator[bool]:
    """Within the block, `on_key(character)` from a thread for every key pressed; yields False (and reads nothing)
    when stdin is not a terminal."""
    try:
        fd = sys.stdin.fileno()
        interactive = os.isatty(fd)
    except (OSError, ValueError):
        interactive = False
    if not interactive:
        yield False
        return
    import termios
    import tty

    try:
        saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)
    except termios.error:
        yield False
        return
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    continue
                data = os.read(fd, 32)
            except (OSError, ValueError):
                return
            if not data:
                return
            for char in data.decode("utf-8", "ignore"):
                with contextlib.suppress(Exception):  # a key handler must never take the reader down
                    on_key(char)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        yield True
    finally:
        done.set()
        thread.join(timeout=1.0)
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
