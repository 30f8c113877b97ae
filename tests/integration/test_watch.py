"""The counter sampler on the emulated cluster: `wirespeed watch` with iperf3 traffic (JSON figures, the dashboard in
tmux, nothing left running afterwards) and the nic.errors check measuring counters that grow."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.checks.model import CheckStatus
from wirespeed.engine import checks
from wirespeed.engine.discover import discover_live
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build

from .helpers import iperf3_gbps, running_testbed

pytestmark = pytest.mark.root
HALF, TWIN = "enp1s0f1np1", "enP2p1s0f1np1"


@pytest.fixture(scope="module")
def bed() -> Iterator[Remote]:
    with running_testbed("wwt-", nodes=2, topology="direct", half_rate_bps=10**9) as (_, remote):
        yield remote


def address(remote: Remote, node: str, iface: str) -> str:
    result = remote.run(remote.cluster.node(node), ["ip", "-j", "-4", "addr", "show", "dev", iface])
    return str(json.loads(result.stdout)[0]["addr_info"][0]["local"])


def traffic(remote: Remote, seconds: int, port: int) -> tuple[threading.Thread, list[float]]:
    """wwt-1 sends to wwt-2 over one half for `seconds`, in the background."""
    measured: list[float] = []
    target = address(remote, "wwt-2", HALF)
    thread = threading.Thread(
        target=lambda: measured.append(iperf3_gbps(remote, "wwt-1", "wwt-2", target, port, seconds=seconds))
    )
    thread.start()
    time.sleep(1.5)  # past iperf3's start
    return thread, measured


def samplers_running() -> list[str]:
    """This testbed's samplers still running (another testbed's are not ours to judge)."""
    result = subprocess.run(["pgrep", "-af", "agent sample"], capture_output=True, text=True, check=False)
    return [line for line in result.stdout.splitlines() if "pgrep" not in line and "--node wwt-" in line]


def test_watch_json_sees_the_shaped_half_at_its_rate(bed: Remote, tmp_path: Path) -> None:
    thread, measured = traffic(bed, 8, 5301)
    record = tmp_path / "samples.jsonl"
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=100)
    code = main(
        ["watch", "--cluster", bed.cluster.source, "--json", "--duration", "3", "--interval", "0.5",
         "--record", str(record)],
        env,
    )  # fmt: skip
    thread.join()
    assert code == 0, env.stderr.getvalue()  # type: ignore[attr-defined]
    data = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    sender = {c["label"]: c for c in data["nodes"]["wwt-1"]["cables"]}
    receiver = {c["label"]: c for c in data["nodes"]["wwt-2"]["cables"]}
    [label] = [k for k, c in sender.items() if HALF in c["halves"]]
    half = sender[label]["halves"][HALF]
    assert half["source"] == "netdev"  # veths have no PHY counters: said, not hidden
    assert 0.8 < half["tx_gbps"] < 1.05, half  # shaped at 1 Gb/s
    assert sender[label]["halves"][TWIN]["tx_gbps"] < 0.01  # the idle twin stays idle
    assert 0.8 < receiver[label]["halves"][HALF]["rx_gbps"] < 1.05
    assert 0.8 < sender[label]["peak"]["tx_gbps"] < 1.05
    assert any("RDMA traffic is not in them" in w for w in data["nodes"]["wwt-1"]["warnings"])
    assert measured and 0.8 < measured[0] < 1.05
    # Every sample the watch read is in the record, both nodes' (how many fit in 3 s depends on how fast the agents
    # start on a busy machine: 12 on an idle one, 8 with another test file running beside it).
    lines = record.read_text().splitlines()
    assert len(lines) == data["samples"] and {json.loads(line)["node"] for line in lines} == {"wwt-1", "wwt-2"}
    assert samplers_running() == []


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_dashboard_in_tmux_shows_cables_and_moves(bed: Remote) -> None:
    session = f"wirespeed-watch-{int(time.time())}"
    argv = [
        sys.executable,
        "-m",
        "wirespeed",
        "watch",
        "--cluster",
        bed.cluster.source,
        "--interval",
        "0.5",
        "--halves",
    ]
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "45", *argv], check=True)
    try:
        thread, _ = traffic(bed, 6, 5302)
        screens: list[str] = []
        deadline = time.monotonic() + 30
        while len(set(screens)) < 2 or "█" not in screens[-1]:  # until it has redrawn with traffic in a bar
            assert time.monotonic() < deadline, screens[-1:]
            shown = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=True
            ).stdout
            screens.append(shown)
            time.sleep(0.2)
        thread.join()
        screen = screens[-1]
        for text in ("wwt-1", "wwt-2", "port 1", "TX", "RX", "Gb/s", "NOW", "PEAK", HALF, TWIN, "CPU", "█"):
            assert text in screen, (text, screen)
        assert all(len(line) <= 80 for line in screen.splitlines())
        subprocess.run(["tmux", "send-keys", "-t", session, "C-c"], check=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and samplers_running():
            time.sleep(0.2)
        assert samplers_running() == []
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, check=False)


def test_check_sees_error_counters_grow_while_frames_are_dropped(bed: Remote) -> None:
    # The peer half at MTU 1500: every 8000-byte frame is dropped at the veth, counted as tx/rx_dropped.
    build.fault("wwt-", "wwt-2", HALF, build.Fault(mtu=1500))
    target = address(bed, "wwt-2", HALF)
    pinger = bed.start(bed.cluster.node("wwt-1"), ["ping", "-i", "0.05", "-s", "8000", "-M", "do", target])
    try:
        found = discover_live(bed, probe=False)
        outcome = checks.run_checks(found, ["nic.errors"], checks.measure_active(bed, found, ["nic.errors"]))
    finally:
        pinger.stop()
        build.revert("wwt-", "wwt-2", HALF)
    [errors] = outcome.results
    assert errors.status is CheckStatus.FAIL, errors
    seen = {(e.node, e.subject, e.what.split()[0]) for e in errors.evidence}
    assert ("wwt-1", HALF, "netdev:tx_dropped") in seen and ("wwt-2", HALF, "netdev:rx_dropped") in seen
    calm = checks.run_checks(found, ["nic.errors"], checks.measure_active(bed, found, ["nic.errors"]))
    assert calm.results[0].status is CheckStatus.PASS  # once the drops stop, nothing grows
