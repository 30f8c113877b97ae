"""Helpers for unit tests that start real local processes: see whether a pid lives, and never leave one behind."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (dead, not yet reaped by its parent) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def wait_gone(pid: int, timeout_s: float = 5.0) -> bool:
    """Poll until `pid` is gone; True if it went within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.02)
    return not pid_alive(pid)


@pytest.fixture
def kill_after() -> Iterator[Callable[[int], int]]:
    """Register pids this test started; any still alive at teardown are killed (by id) so none outlive the test."""
    pids: list[int] = []

    def register(pid: int) -> int:
        pids.append(pid)
        return pid

    yield register
    for pid in pids:
        if pid_alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def testbed_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty testbed directory, so nothing reads (or finds) a real testbed under /run."""
    path = tmp_path / "testbeds"
    path.mkdir()
    monkeypatch.setenv("WIRESPEED_TESTBED_DIR", str(path))
    return path


@pytest.fixture(name="wait_gone")
def wait_gone_fixture() -> Callable[..., bool]:
    """`wait_gone(pid, timeout_s=5.0)`: True once the process is gone (see `wait_gone`)."""
    return wait_gone


@pytest.fixture(name="pid_alive")
def pid_alive_fixture() -> Callable[[int], bool]:
    return pid_alive
