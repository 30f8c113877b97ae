"""SIGTERM and SIGHUP handled as Ctrl-C is: a run stopped by a service manager, `kill` or a closed terminal ends
the same way as one stopped by hand (its processes stopped on every node, its record saying `interrupted` and by
which signal) instead of vanishing mid-write."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from wirespeed.core.errors import Interrupted

HANDLED = (signal.SIGTERM, signal.SIGHUP)


def _raise(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(f"stopped by {signal.Signals(signum).name}")


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Interrupted` in the main thread; the old handlers come back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise) for sig in HANDLED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
