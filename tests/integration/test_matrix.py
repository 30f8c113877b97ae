"""`wirespeed bench matrix` on an emulated switch cluster of six nodes: 15 pairs in 5 rounds, its wall time near five
rounds of one test (measured beside it), a half degraded on one node flagged by node and interface, RDMA skipped
with the reason, and the heatmap in the report."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.app import main
from wirespeed.cli.output import Environment
from wirespeed.core.ladder import flows_between
from wirespeed.engine.bench import BenchOptions, RunDirectory, run_iperf_flows
from wirespeed.engine.discover import discover_live
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build

from .helpers import running_testbed

pytestmark = pytest.mark.root
PREFIX = "wmx-"
SECONDS = 3
SLOW = ("wmx-3", "enP2p1s0f1np1")


@pytest.fixture(scope="module")
def six() -> Iterator[Remote]:
    with running_testbed(PREFIX, nodes=6, topology="switch", half_rate_bps=300_000_000) as (_, remote):
        yield remote


def test_matrix_six_nodes_fifteen_pairs_in_five_rounds_flags_a_degraded_half(six: Remote, tmp_path: Path) -> None:
    found = discover_live(six)
    one_started = time.monotonic()  # one test alone: the first pair, every half, both directions
    flows = flows_between(found.facts, found.cabling, "wmx-1", "wmx-2")
    single = run_iperf_flows(six, flows, BenchOptions(seconds=SECONDS, bidir=True), RunDirectory(tmp_path / "one"), "x")
    one_test_s = time.monotonic() - one_started
    assert all(r.tool_gbps for r in single)

    build.fault(PREFIX, SLOW[0], SLOW[1], build.Fault(rate_bps=60_000_000))
    try:
        env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
        code = main(
            ["bench", "matrix", "--cluster", six.cluster.source, "--seconds", str(SECONDS), "--runs",
             str(tmp_path / "runs"), "--json"], env,
        )  # fmt: skip
    finally:
        build.revert(PREFIX, SLOW[0], SLOW[1])
    data = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    tcp, rdma = data["matrices"]
    assert code == 1  # an outlier was flagged
    assert (tcp["pairs"], len(tcp["rounds"]), tcp["status"]) == (15, 5, "ran")
    assert len(tcp["cells"]) == 30 and all(c["tool_gbps"] for c in tcp["cells"])
    for pairs in tcp["rounds"]:  # disjoint pairs at once
        busy = [n for p in pairs for n in p]
        assert len(busy) == len(set(busy)) == 6
    wall = tcp["wall_seconds"]
    assert wall < 5 * one_test_s * 1.5, (wall, one_test_s)  # close to five rounds of one test, not fifteen tests
    halves = [(o["node"], o["subject"]) for o in tcp["outliers"] if o["kind"] == "half"]
    assert (SLOW[0], f"{SLOW[1]} sends") in halves
    assert all(node == SLOW[0] for node, _ in halves), halves  # only the degraded node's half
    slow_cells = {(o["node"], o["subject"]) for o in tcp["outliers"] if o["kind"] == "cell"}
    assert slow_cells and all(node == SLOW[0] for node, _ in slow_cells)
    # at the wire: the degraded half's TX shows the shaping in every cell it sends in
    for cell in tcp["cells"]:
        if cell["source"] == SLOW[0]:
            assert cell["halves"][SLOW[1]] < 0.1
    assert rdma["status"] == "skipped" and "RDMA" in rdma["reason"]

    run = Path(data["run"])
    assert (run / "matrix-tcp.json").exists() and (run / "matrix-tcp.samples.jsonl").stat().st_size > 0
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    assert main(["report", str(run), "-o", str(tmp_path / "r.html")], env) == 0
    page = (tmp_path / "r.html").read_text()
    assert 'id="matrix"' in page and "TCP all pairs: 15 pairs in 5 rounds" in page and "a degraded half" in page
