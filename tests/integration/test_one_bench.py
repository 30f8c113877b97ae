"""One measurement per cluster, and someone else's traffic named: a second bench refuses while one runs (or queues
with --wait), and a bench that shares a half with a foreign iperf3 flow reports `contention`, not `cpu`."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.engine.remote import Remote

from .helpers import iperf3_gbps, processes_in, running_testbed

pytestmark = pytest.mark.root
PREFIX = "wob-"
FIRST_HALF = "enp1s0f1np1"  # the half tcp-single measures: the one cabled port's first half


@pytest.fixture(scope="module")
def bed() -> Iterator[Remote]:
    with running_testbed(PREFIX, nodes=2, topology="direct", cables=1, half_rate_bps=10**9) as (_, remote):
        yield remote


def bench(bed: Remote, runs: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "wirespeed", "bench", "tcp-single", "--cluster", bed.cluster.source,
            "--runs", str(runs), "--no-live", *extra]  # fmt: skip


def lock_file() -> Path:
    from wirespeed.testbed.state import testbed_dir

    return testbed_dir(PREFIX) / "nodes" / f"{PREFIX}1" / "root" / "run" / "lock" / "wirespeed-bench.lock"


def lock_held(bed: Remote) -> bool:
    """Whether node 1's lock is held: its file names a holder (written once the flock is taken) and a flock on it
    cannot be had (tried only once a holder is named, so that the test never takes it from a bench starting)."""
    try:
        if not lock_file().read_text().strip():
            return False
        fd = os.open(lock_file(), os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def wait_for(condition, timeout_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.1)


def test_a_second_bench_refuses_naming_the_holder_then_queues_with_wait(bed: Remote, tmp_path: Path) -> None:
    first = subprocess.Popen(bench(bed, tmp_path / "a", "--seconds", "6"), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_for(lambda: lock_held(bed) or first.poll() is not None)
        assert first.poll() is None, first.communicate()
        refused = subprocess.run(bench(bed, tmp_path / "b", "--seconds", "2"), capture_output=True, text=True,
                                 timeout=60, check=False)  # fmt: skip
        assert refused.returncode == 4, refused.stderr  # busy: its own exit status
        [line] = [x for x in refused.stderr.splitlines() if x.strip()]
        assert line.startswith(f"wirespeed: error: {PREFIX}1: busy: bench tcp-single by ")
        assert f"(pid {first.pid}) since 20" in line and "--wait" in line
        assert not (tmp_path / "b").exists()  # nothing was started: no run directory either
        queued = subprocess.run(bench(bed, tmp_path / "c", "--seconds", "2", "--wait"), capture_output=True,
                                text=True, timeout=120, check=False)  # fmt: skip
        assert first.wait(timeout=60) == 0
        assert queued.returncode == 0, queued.stderr
        assert f"{PREFIX}1: waiting for bench tcp-single by " in queued.stderr
        [run_a] = list((tmp_path / "a").iterdir())
        [run_c] = list((tmp_path / "c").iterdir())
        ended_a = json.loads((run_a / "run.json").read_text())["ended_utc"]
        started_c = json.loads((run_c / "run.json").read_text())["started_utc"]
        assert started_c >= ended_a  # it ran after the first, not beside it
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    wait_for(lambda: not lock_held(bed))  # released when each bench ended
    assert lock_file().read_text() == ""  # and the file no longer names a holder


def address(bed: Remote, node: str, iface: str) -> str:
    result = bed.run(bed.cluster.node(node), ["ip", "-j", "-4", "addr", "show", "dev", iface])
    return str(json.loads(result.stdout)[0]["addr_info"][0]["local"])


def test_a_foreign_flow_on_the_half_is_named_contention(bed: Remote, tmp_path: Path) -> None:
    target = address(bed, f"{PREFIX}2", FIRST_HALF)
    foreign: list[float] = []
    thread = threading.Thread(
        target=lambda: foreign.append(iperf3_gbps(bed, f"{PREFIX}1", f"{PREFIX}2", target, 5399, seconds=14))
    )
    thread.start()
    try:
        # The foreign flow is up before the bench starts (it lasts well past the bench's end).
        wait_for(lambda: bool(processes_in(f"{PREFIX}1", r"iperf3 -c .* -p 5399")) or not thread.is_alive())
        result = subprocess.run(bench(bed, tmp_path, "--seconds", "5", "--json"), capture_output=True, text=True,
                                timeout=120, check=False)  # fmt: skip
    finally:
        thread.join()
    assert result.returncode == 0, result.stderr
    [rung] = json.loads(result.stdout)["rungs"]
    ceiling = rung["ceiling"]
    assert ceiling["name"] == "contention", ceiling
    [evidence] = ceiling["evidence"]
    assert evidence.startswith(f"{PREFIX}1 {FIRST_HALF}: the test sent 0.") and "while the wire carried 0.9" in evidence
    assert foreign and foreign[0] < 0.9  # the foreign flow was slowed by the bench too: they shared the half
