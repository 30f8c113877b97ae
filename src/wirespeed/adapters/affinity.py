"""Keeping wirespeed itself off the cores a measurement pins its tools to.

A TCP rung pins each iperf3 client to a core of its own (`-A`); where wirespeed runs on that node too (the
controller on the user's node: the samplers' readers, the live view), a thread of ours woken on one of those
cores takes time from the flow the rung measures. While the block runs, every thread of this process, and what
they start meanwhile (threads and children inherit the mask), runs on the other cores.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Iterator


def _threads() -> list[int]:
    try:
        return [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        return [0]  # the calling thread alone


@contextlib.contextmanager
def kept_off(cores: Collection[int]) -> Iterator[frozenset[int]]:
    """Run this process off `cores` while the block runs; yields the cores it runs on. Nothing changes (and all
    of them are yielded) where affinity cannot be set or where no core would be left."""
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):  # not Linux
        yield frozenset()
        return
    left = allowed - set(cores)
    if not cores or not left or left == allowed:
        yield frozenset(allowed)
        return
    before: dict[int, set[int]] = {}
    for tid in _threads():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            before[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, left & before[tid] or left)
    try:
        yield frozenset(left)
    finally:
        for tid in _threads():  # threads started in the block go back to what the process had
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, before.get(tid, allowed))
