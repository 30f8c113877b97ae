"""`wirespeed bench` TCP rungs on the emulated cluster (2 cables, halves shaped at 1 Gb/s): results on disk,
ceilings named from what the wire and the CPUs did, nothing left running."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.app import main
from wirespeed.cli.output import Environment
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build

from .helpers import running_testbed

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def bed() -> Iterator[Remote]:
    with running_testbed("wbn-", nodes=2, topology="direct", cables=2, half_rate_bps=10**9) as (_, remote):
        yield remote


def bench(remote: Remote, runs: Path, *argv: str) -> tuple[int, dict[str, object]]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=160)
    code = main(["bench", "--cluster", remote.cluster.source, "--json", "--runs", str(runs), *argv], env)
    return code, json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]


def iperf3_left() -> list[str]:
    found = subprocess.run(["pgrep", "-af", "iperf3|agent sample"], capture_output=True, text=True, check=False)
    return [line for line in found.stdout.splitlines() if "pgrep" not in line]


def test_tcp_halves_reach_the_wire_and_one_half_is_half_port(bed: Remote, tmp_path: Path) -> None:
    code, data = bench(bed, tmp_path, "tcp", "--seconds", "4")
    assert code == 0, data
    rungs = {r["rung"]: r for r in data["rungs"]}  # type: ignore[attr-defined]
    halves = rungs["tcp-halves"]
    assert len(halves["flows"]) == 4
    assert halves["forward_gbps"] >= 0.95 * 4.0, halves
    assert halves["ceiling"]["name"] == "wire"
    assert rungs["tcp-single"]["ceiling"]["name"] in ("half-port", "single-flow")
    run = Path(str(data["run"]))
    for name in ("tcp-single.json", "tcp-halves.json", "takeaway.json", "discovery.json", "tcp-halves.samples.jsonl"):
        assert (run / name).exists(), name
    assert len(list((run / "tcp-halves").glob("iperf3-*.json"))) == 4
    assert iperf3_left() == []


def test_a_degraded_half_is_named(bed: Remote, tmp_path: Path) -> None:
    build.fault("wbn-", "wbn-1", "enP2p1s0f1np1", build.Fault(rate_bps=200_000_000))
    try:
        code, data = bench(bed, tmp_path, "tcp-halves", "--seconds", "4")
        assert code == 0, data
    finally:
        build.revert("wbn-", "wbn-1", "enP2p1s0f1np1")
    [rung] = data["rungs"]  # type: ignore[misc]
    assert rung["ceiling"]["name"] == "degraded", rung
    assert "wbn-1 enP2p1s0f1np1" in rung["ceiling"]["evidence"][0]
