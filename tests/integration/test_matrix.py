"""`wirespeed bench matrix` on an emulated switch cluster of six nodes: 15 pairs in 5 rounds, its wall time near five
rounds of one test (measured beside it), a half degraded on one node flagged by node and interface, RDMA skipped
with the reason, and the heatmap in the report. On four nodes: two matrix runs, the second with one half at
300 Mbit/s, listed by `runs` with their headlines and compared by the names `runs` prints."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.ladder import flows_between
from wirespeed.engine.discover import discover_live
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.rungs.tcp import measure_flows
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
    single = measure_flows(six, RunDirectory(tmp_path / "one"), flows, seconds=SECONDS, bidir=True, folder="x")
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


def test_two_matrix_runs_listed_and_compared_by_name_naming_the_degraded_half(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    slow = ("wm4-2", "enP2p1s0f1np1")

    def matrix(remote: Remote) -> int:
        env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
        argv = ["bench", "matrix", "--cluster", remote.cluster.source, "--seconds", str(SECONDS), "--runs", str(runs)]
        return main(argv, env)

    with running_testbed("wm4-", nodes=4, topology="switch") as (_, remote):
        assert matrix(remote) == 0
        build.fault("wm4-", slow[0], slow[1], build.Fault(rate_bps=300_000_000))
        try:
            assert matrix(remote) == 1  # the degraded half is an outlier
        finally:
            build.revert("wm4-", slow[0], slow[1])

    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    assert main(["runs", "--runs", str(runs), "--json"], env) == 0
    listed = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    names = [r["run"] for r in listed]
    assert len(names) == 2 and all(r["status"] == "complete" for r in listed), listed
    assert all("matrix-tcp: median pair" in r["headline"] for r in listed), listed
    assert "no outlier" in listed[0]["headline"] and "outlier(s)" in listed[1]["headline"]
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    assert main(["runs", "--runs", str(runs)], env) == 0
    table = env.stdout.getvalue()  # type: ignore[attr-defined]
    assert all(name in table for name in names) and "matrix-tcp" in table

    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    code = main(["compare", *names, "--runs", str(runs), "--threshold", "20"], env)
    said = env.stderr.getvalue()  # type: ignore[attr-defined]
    assert code == 1, said
    assert f"matrix-tcp {slow[0]} {slow[1]} sends" in said, said  # the half, by node and interface
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    assert main(["compare", names[0], names[0], "--runs", str(runs)], env) == 0  # the same run: nothing worse

    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    assert main(["report", "latest", "--runs", str(runs), "--format", "md", "-o", "-"], env) == 0
    page = env.stdout.getvalue()  # type: ignore[attr-defined]
    assert "## All pairs" in page and "TCP all pairs" in page and f"{slow[0]} {slow[1]} sends" in page
