"""NCCL with one rank per node across a four-node switchless ring on the GPU machine (one GPU, four emulated
nodes, each its own host name): `wirespeed init` reaches the far node through the management network, `wirespeed
fix` routes every fabric subnet through the ring, and `wirespeed bench nccl` runs all_reduce and all_gather with
the ranks in cable order and NCCL's Ring algorithm, so that every step of NCCL's ring is one cable. Each node then
sends at the wire what busbw says, all of it on the cable to the next node: the busiest cable carries busbw.
Skipped where no GPU is (docs/device.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .helpers import processes_in, running_testbed

if TYPE_CHECKING:
    from wirespeed.testbed.state import TestbedState

pytestmark = [pytest.mark.root, pytest.mark.gpu_nodes]
PREFIX = "wnr-"
COUNT = 4
NODES = [f"{PREFIX}{i}" for i in range(1, COUNT + 1)]
HALF_RATE_BPS = 2 * 10**9  # a cable's two halves: 4 Gb/s per direction, below what NCCL's sockets move here
PORTS = (("enp1s0f0np0", "enP2p1s0f0np0"), ("enp1s0f1np1", "enP2p1s0f1np1"))  # port 0, port 1: two halves each


def shell(state: TestbedState, node: str, *argv: str) -> subprocess.CompletedProcess[str]:
    from wirespeed.testbed.login import shell_argv

    return subprocess.run(shell_argv(state, node, list(argv), tty=False), capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip


def busiest_cable(tx_gbps: dict[str, float]) -> tuple[str, float]:
    """The port (both halves) that sent the most, per direction: one direction of one cable."""
    sent = {f"{n} port {p}": sum(tx_gbps.get(f"{n}:{h}", 0.0) for h in PORTS[p]) for n in NODES for p in (0, 1)}
    port = max(sent, key=lambda k: sent[k])
    return port, sent[port]


def test_all_reduce_and_all_gather_across_a_four_node_ring(tmp_path: Path) -> None:
    with running_testbed(PREFIX, nodes=COUNT, topology="ring", half_rate_bps=HALF_RATE_BPS) as (state, _):
        peers = ",".join(n.mgmt_address.split("/")[0] for n in state.plan.nodes[1:])
        done = shell(state, NODES[0], "wirespeed", "init", "--yes", "--no-check", "--peers", peers)
        assert done.returncode == 0, done.stdout + done.stderr
        done = shell(state, NODES[0], "wirespeed", "fix", "--yes")
        assert done.returncode == 0, done.stdout + done.stderr
        done = shell(state, NODES[0], "wirespeed", "check", "--only", "ring.routes,ring.forward,ssh.mesh", "--json")
        results = {r["id"]: r for r in json.loads(done.stdout)["results"]}
        assert all(r["status"] == "pass" for r in results.values()), results
        done = shell(state, NODES[0], "wirespeed", "bench", "nccl", "--json", "--no-live", "--runs", str(tmp_path),
                     "--env", "NCCL_NVLS_ENABLE=0", "--collectives", "all_reduce,all_gather",
                     "--min-size", "256M", "--max-size", "256M")  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        data = json.loads(done.stdout)
        figures = {}
        for rung in data["rungs"]:
            assert rung["status"] == "ran", rung
            collective, wire = rung["collective"], rung["wire"]
            assert collective["ranks"] == COUNT and collective["transport"] == "NET/Socket"
            run = Path(data["run"]) / rung["rung"]
            hosts = [line.split()[0] for line in (run / "hostfile").read_text().splitlines() if line[:1].isdigit()]
            assert [h.rsplit(".", 1)[1] for h in hosts] == ["1", "2", "3", "4"], hosts  # cable order, node by node
            assert "NCCL_ALGO=Ring" in (run / "command.txt").read_text()
            out = (run / "nccl-tests.out").read_text()
            assert all(n in out for n in NODES) and "Duplicate GPU" not in out
            per_direction = rung["forward_gbps"]
            for node in NODES:  # each node sends what busbw says, all of it on the cable to the next node
                sent = wire["steady_tx_gbps"][node]
                ahead = sum(wire["tx_gbps"][f"{node}:{h}"] for h in PORTS[0])
                behind = sum(wire["tx_gbps"][f"{node}:{h}"] for h in PORTS[1])
                assert sent == pytest.approx(per_direction, rel=0.05), (rung["rung"], node, sent, per_direction)
                assert behind < 0.05 * ahead, (rung["rung"], node, ahead, behind)
            cable, carried = busiest_cable(wire["tx_gbps"])
            figures[rung["rung"]] = (per_direction, cable, carried, {n: wire["steady_tx_gbps"][n] for n in NODES})
        print("ring figures (busbw per direction Gb/s, busiest cable, its mean Gb/s, steady TX per node):", figures)
        left = [line for n in NODES for line in processes_in(n, r"_perf|mpirun|orted|agent sample")]
        assert left == []
