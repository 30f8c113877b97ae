"""The NCCL rung between nodes, the path a real cluster takes: two emulated nodes on the GPU machine, one rank each on
its one GPU (each node its own host name, so NCCL takes them for two hosts), `wirespeed init` then `wirespeed bench
nccl` typed on node 1, mpirun there starting the other rank over the nodes' own ssh, NCCL's socket transport on
the four shaped halves. Then broken on purpose: one half left out of NCCL_SOCKET_IFNAME, and the management
interface put in it. Runs on the GPU machine after scripts/device/prepare (docs/device.md); skipped elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .helpers import processes_in, running_testbed

if TYPE_CHECKING:
    from wirespeed.testbed.state import TestbedState

pytestmark = [pytest.mark.root, pytest.mark.gpu_nodes]
PREFIX = "wgn-"
HALF_RATE_BPS = 2 * 10**9  # 4 halves: 8 Gb/s per direction per node, below what NCCL's socket threads move here
HALVES = ("enP2p1s0f0np0", "enP2p1s0f1np1", "enp1s0f0np0", "enp1s0f1np1")
MANAGEMENT = "enP7s7"  # the testbed's management interface, as on a Spark
NVLS_OFF = ("--env", "NCCL_NVLS_ENABLE=0")  # ranks started over ssh get no environment of this machine's


def shell(state: TestbedState, node: str, *argv: str) -> subprocess.CompletedProcess[str]:
    from wirespeed.testbed.login import shell_argv

    return subprocess.run(shell_argv(state, node, list(argv), tty=False), capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def bed() -> Iterator[TestbedState]:
    with running_testbed(PREFIX, nodes=2, topology="direct", cables=2, half_rate_bps=HALF_RATE_BPS) as (state, _):
        done = shell(state, f"{PREFIX}1", "wirespeed", "init", "--yes")
        assert done.returncode == 0, done.stdout + done.stderr
        yield state


def bench_on_node1(state: TestbedState, runs: Path, *argv: str) -> tuple[dict[str, Any], str]:
    """`wirespeed bench nccl ... --json` typed on node 1; its JSON and its progress lines (stderr)."""
    done = shell(state, f"{PREFIX}1", "wirespeed", "bench", "nccl", "--json", "--no-live", "--runs", str(runs),
                 *NVLS_OFF, *argv)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout), done.stderr


def nothing_left(state: TestbedState) -> list[str]:
    return [line for node in state.plan.nodes for line in processes_in(node.name, r"_perf|mpirun|orted|agent sample")]


def test_busbw_per_direction_is_what_each_node_sent_at_the_wire(bed: TestbedState, tmp_path: Path) -> None:
    data, progress = bench_on_node1(
        bed, tmp_path, "--collectives", "sendrecv,all_reduce", "--min-size", "256M", "--max-size", "256M"
    )
    run = Path(data["run"])
    for rung in data["rungs"]:
        name, collective, wire = rung["rung"], rung["collective"], rung["wire"]
        assert rung["status"] == "ran", rung
        assert collective["transport"] == "NET/Socket" and collective["ranks"] == 2
        assert sorted(collective["socket_interfaces"]) == sorted(HALVES)
        assert rung["ceiling"]["name"] == "fallback"
        evidence = rung["ceiling"]["evidence"]
        assert "no RDMA device on the linked halves: the socket transport was the only one left" in evidence
        per_direction = rung["forward_gbps"]
        assert per_direction == pytest.approx(collective["peak_busbw_GBps"] * 8)
        assert per_direction >= 0.85 * 4 * HALF_RATE_BPS / 1e9, f"{name}: the wire should be the limit"
        for node in (f"{PREFIX}1", f"{PREFIX}2"):
            sent = wire["steady_tx_gbps"][node]
            assert sent == pytest.approx(per_direction, rel=0.05), f"{name} {node}: wire {sent} vs {per_direction}"
            assert any(line.startswith(f"{node} sent {sent:.2f} Gb/s at the wire") for line in evidence)
            for half in HALVES:  # NCCL spread its channels over every half, both ways
                assert wire["tx_gbps"][f"{node}:{half}"] > 0.1 * per_direction / 4
                assert wire["rx_gbps"][f"{node}:{half}"] > 0.1 * per_direction / 4
        assert f"{name} " in progress and "full-duplex" in progress  # the plain live lines named the rung
        out = (run / name / "nccl-tests.out").read_text()
        assert f"{PREFIX}1" in out and f"{PREFIX}2" in out  # one rank on each node, by its own host name
        assert "Duplicate GPU" not in out
        assert (run / name / "hostfile").read_text().count("slots=1") == 2
    report = [sys.executable, "-m", "wirespeed", "report", str(run)]
    page = subprocess.run(report, capture_output=True, text=True, check=False)
    assert page.returncode == 0, page.stderr
    html = (run / "report.html").read_text()
    assert "NCCL bus bandwidth against message size" in html
    assert nothing_left(bed) == []


def test_a_half_left_out_of_nccl_socket_ifname_is_named_idle(bed: TestbedState, tmp_path: Path) -> None:
    three = [h for h in HALVES if h != "enP2p1s0f1np1"]
    data, _ = bench_on_node1(bed, tmp_path, "--collectives", "sendrecv", "--min-size", "64M", "--max-size", "64M",
                             "--env", "NCCL_SOCKET_IFNAME==" + ",".join(three))  # fmt: skip
    rung = data["rungs"][0]
    assert rung["status"] == "ran" and rung["ceiling"]["name"] == "fallback"
    assert sorted(rung["collective"]["socket_interfaces"]) == sorted(three)
    idle = [line for line in rung["ceiling"]["evidence"] if "sat idle" in line]
    assert [line.split()[:2] for line in idle] == [[f"{PREFIX}1", "enP2p1s0f1np1"], [f"{PREFIX}2", "enP2p1s0f1np1"]]
    assert all("it is not among NCCL's socket interfaces" in line for line in idle)
    assert nothing_left(bed) == []


def test_the_management_interface_in_nccl_socket_ifname_is_named_off_fabric(bed: TestbedState, tmp_path: Path) -> None:
    data, _ = bench_on_node1(bed, tmp_path, "--collectives", "sendrecv", "--min-size", "64M", "--max-size", "64M",
                             "--env", f"NCCL_SOCKET_IFNAME=={MANAGEMENT}")  # fmt: skip
    rung = data["rungs"][0]
    assert rung["status"] == "ran" and rung["ceiling"]["name"] == "fallback"
    assert rung["collective"]["socket_interfaces"] == [MANAGEMENT]
    evidence = rung["ceiling"]["evidence"]
    assert any(line.startswith(f"{MANAGEMENT} is not a fabric interface") for line in evidence)
    assert any(line.startswith("the fabric halves carried no traffic while NCCL ran") for line in evidence)
    assert nothing_left(bed) == []


def test_tune_nccl_keeps_to_its_budget_and_says_how_sure_it_is(bed: TestbedState, tmp_path: Path) -> None:
    """On shaped halves the wire is the ceiling: whatever it finds, it must say it within its budget, with the
    defaults' spread, and leave the nodes as they were."""
    done = shell(bed, f"{PREFIX}1", "wirespeed", "tune", "nccl", "--json", "--no-live", "--runs", str(tmp_path),
                 "--size", "64M", "--budget", "60s", *NVLS_OFF)  # fmt: skip
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["finished"] is True and data["transport"] == "NET/Socket"
    stages = [t["stage"] for t in data["trials"]]
    assert stages[:6] == ["warm-up", *["defaults"] * 5]
    # no run started that the budget could not hold: the runs' own durations, not this machine's clock
    assert sum(t["seconds"] for t in data["trials"]) <= 60 + max(t["seconds"] for t in data["trials"])
    assert done.stderr.count("tune: run ") == 2 * len(data["trials"])  # each run said before and after
    answer = data["answer"]
    assert "the defaults' spread" in answer
    assert (done.returncode == 0) == bool(data["best"]) == (not answer.startswith("no setting beat"))
    confirmed = data["confirmed"]
    assert confirmed["rung"] == "nccl-sendrecv" and confirmed["status"] == "ran"
    assert confirmed["ceiling"]["name"] == "fallback"
    run = Path(data["run"])
    assert (run / "tune-nccl.json").exists() and (run / "tune-nccl" / "001.out").exists()
    report = subprocess.run([sys.executable, "-m", "wirespeed", "report", str(run)], capture_output=True, text=True,
                            check=False)  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "NCCL settings searched" in (run / "report.html").read_text()
    assert nothing_left(bed) == []
