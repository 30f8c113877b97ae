"""Never silent for more than two seconds: a step that may take longer says, every two seconds, what it is doing
and for how long it has been at it. The text comes from a function, so a rung can say what the wire carries now."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

EVERY_S = 2.0


@contextmanager
def ticking(
    say: Callable[[str], None] | None, what: Callable[[float], str], every_s: float = EVERY_S
) -> Iterator[None]:
    """Within the block, `say(what(elapsed_s))` every `every_s` seconds from a thread; nothing when `say` is None."""
    if say is None:
        yield
        return
    done = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        while not done.wait(every_s):
            try:
                say(what(time.monotonic() - started))
            except Exception:  # a progress line must never break the work it reports on
                return

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=1.0)


def still(text: str) -> Callable[[float], str]:
    """The plain form: `... still discovering (4 s)`."""
    return lambda elapsed: f"... still {text} ({elapsed:.0f} s)"
