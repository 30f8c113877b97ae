"""A node that loses its management link in the middle of a bench: what it was running stops by itself (the
watchdog stops hearing the controller's heartbeat), long before sshd there would notice, and the bench says in one
line that the connection to that node was lost, not that a tool failed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.engine.remote import Remote

from .helpers import processes_in, running_testbed

pytestmark = pytest.mark.root
PREFIX = "wll-"
MGMT = "enP7s7"


@pytest.fixture(scope="module")
def bed() -> Iterator[Remote]:
    with running_testbed(PREFIX, nodes=2, topology="direct", cables=1, half_rate_bps=10**9) as (_, remote):
        yield remote


def test_a_lost_management_link_strands_nothing_and_reads_as_one_line(bed: Remote, tmp_path: Path) -> None:
    node2 = f"{PREFIX}2"
    argv = [sys.executable, "-m", "wirespeed", "bench", "tcp-single", "--cluster", bed.cluster.source, "--runs",
            str(tmp_path), "--seconds", "90", "--no-live", "--json"]  # fmt: skip
    bench = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (processes_in(node2, r"iperf3 -s") and processes_in(node2, r"agent sample")):
            assert bench.poll() is None and time.monotonic() < deadline, bench.communicate()
            time.sleep(0.2)
        subprocess.run(["ip", "-n", node2, "link", "set", MGMT, "down"], check=True)  # the cable pulled
        cut = time.monotonic()
        try:
            while processes_in(node2, r"iperf3|agent sample|wirespeed-watchdog"):
                assert time.monotonic() - cut < 60, processes_in(node2, r"iperf3|agent sample|wirespeed-watchdog")
                time.sleep(0.5)
            gone_after = time.monotonic() - cut
        finally:
            subprocess.run(["ip", "-n", node2, "link", "set", MGMT, "up"], check=True)
        assert gone_after < 30  # heartbeat silence (15 s) and its check (every 5 s): the 30 s
        out, err = bench.communicate(timeout=120)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    assert bench.returncode == 1, err
    [rung] = json.loads(out)["rungs"]
    assert rung["status"] == "failed"
    reason = rung["reason"]
    assert "\n" not in reason and len(reason) < 400, reason
    assert f"{node2}: lost the connection" in reason or f"{node2}: unreachable" in reason, reason
    assert "exited with status 255" not in reason
