"""`kept_off`: this process's threads, and those started inside the block, run off the given cores, and get
their cores back afterwards."""

from __future__ import annotations

import os
import threading

import pytest

from wirespeed.adapters.affinity import kept_off

needs_two = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to keep one free"
)


@needs_two
def test_every_thread_runs_off_the_cores_and_gets_them_back() -> None:
    allowed = os.sched_getaffinity(0)
    core = min(allowed)
    ready, release = threading.Event(), threading.Event()
    seen: dict[str, set[int]] = {}

    def older() -> None:  # a thread that was there before the block (the live view's, the samplers' readers)
        ready.set()
        release.wait(10)
        seen["older"] = os.sched_getaffinity(0)

    thread = threading.Thread(target=older)
    thread.start()
    ready.wait(10)
    try:
        with kept_off({core}) as left:
            assert core not in left and left == allowed - {core}
            assert os.sched_getaffinity(0) == left
            started = threading.Thread(target=lambda: seen.__setitem__("started", os.sched_getaffinity(0)))
            started.start()
            started.join()
            release.set()
            thread.join()
    finally:
        release.set()
        thread.join()
    assert seen == {"older": allowed - {core}, "started": allowed - {core}}
    assert os.sched_getaffinity(0) == allowed


def test_nothing_changes_where_no_core_would_be_left() -> None:
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this platform")
    allowed = os.sched_getaffinity(0)
    with kept_off(allowed) as left:
        assert left == allowed and os.sched_getaffinity(0) == allowed
    with kept_off(()) as left:
        assert left == allowed
