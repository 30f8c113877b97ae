"""The node side of the bench lock: an exclusive `flock` on one file per node, held by `wirespeed agent lock` for as
long as the controller that asked keeps the agent running (closing its stdin, or the execution layer's watchdog,
ends it; a killed controller's ssh dies and the lock with it: the kernel releases a dead process's flock). The
file names the holder, so that a second bench can say who is in the way and since when."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import stat
import sys
import time
from pathlib import Path

from wirespeed.adapters.configroot import system_path
from wirespeed.core.cluster.benchlock import BUSY, LOCKED, WAITING, Holder, answer
from wirespeed.core.errors import ExitStatus

LOCK = "/run/lock/wirespeed-bench.lock"  # world-writable (1777) on Debian and Ubuntu; per node on emulated ones


def lock_path() -> Path:
    """The node's lock file: /run/lock (through the node's config root on an emulated node), else the user's cache
    where /run/lock cannot be written."""
    path = system_path(LOCK)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
    if os.access(path.parent, os.W_OK | os.X_OK):
        return path
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wirespeed"
    cache.mkdir(parents=True, exist_ok=True)
    return cache / "bench.lock"


def _holder_in(fd: int) -> Holder | None:
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
        return Holder.from_json(json.loads(text)) if text.strip() else None
    except (OSError, ValueError):
        return None


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class _Released(Exception):
    """The watchdog's TERM: the controller let go (or is gone)."""


def _released(*_: object) -> None:
    raise _Released


def _until_released() -> None:
    """Hold on until the controller lets go: its end of our stdin closes, or a signal (the watchdog's TERM)."""
    with contextlib.suppress(ValueError):  # not the main thread: TERM keeps its default (the kernel still unlocks)
        signal.signal(signal.SIGTERM, _released)
        signal.signal(signal.SIGHUP, _released)
    mode = os.fstat(0).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        return
    while True:  # stdin is /dev/null under the watchdog: its TERM ends us
        signal.pause()


POLL_S = 0.2  # how often a --wait tries the lock again


def _take(fd: int, wait_s: float) -> bool:
    """The lock within `wait_s` seconds (0: now or never); False when another still holds it by then."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))


def hold(holder: Holder, wait: bool, wait_s: float = 3600.0) -> int:
    """Take the lock (or say who has it: exit 4, ExitStatus.BUSY), name `holder` in the file, hold it until
    released (exit 0). With `wait`, queue behind the holder for at most `wait_s` seconds, then say busy."""
    path = lock_path()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o666)  # another user's bench must be able to ask for it too
    try:
        if not _take(fd, 0.0):
            if not wait:
                _say(answer(BUSY, _holder_in(fd)))
                return ExitStatus.BUSY
            _say(answer(WAITING, _holder_in(fd)))
            if not _take(fd, wait_s):
                _say(answer(BUSY, _holder_in(fd)))
                return ExitStatus.BUSY
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder.to_json()).encode(), 0)
        _say(answer(LOCKED, holder))
        try:
            _until_released()
        except _Released:
            pass
        finally:
            os.ftruncate(fd, 0)  # the file names a holder only while the lock is held
        return ExitStatus.OK
    finally:
        os.close(fd)  # and with it the flock
