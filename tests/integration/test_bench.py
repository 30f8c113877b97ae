"""`wirespeed bench` TCP rungs on the emulated cluster (2 cables, halves shaped at 1 Gb/s): results on disk,
ceilings named from what the wire and the CPUs did, nothing left running."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build, system

from .helpers import processes_in, running_testbed

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
    """The tools and samplers still running on a node of this file's testbeds (another test's run elsewhere on the
    machine is not ours)."""
    ours = [ns for ns in system.netns_list() if ns.startswith(("wbn-", "wbc-", "wbk-"))]
    return [line for ns in ours for line in processes_in(ns, "iperf3|sockperf|agent sample")]


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
    for name in ("tcp-single.json", "tcp-halves.json", "run.json", "discovery.json", "tcp-halves.samples.jsonl"):
        assert (run / name).exists(), name
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "complete" and record["planned"][:3] == ["tcp-single", "tcp-multi", "tcp-halves"]
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


def test_bidir_counts_both_directions_and_reaches_the_wire_each_way(bed: Remote, tmp_path: Path) -> None:
    code, data = bench(bed, tmp_path, "tcp-halves", "--bidir", "--seconds", "4")
    assert code == 0, data
    [rung] = data["rungs"]  # type: ignore[misc]
    directions = [f["direction"] for f in rung["flows"]]
    assert directions.count("forward") == 4 and directions.count("reverse") == 4
    # 0.9: eight shaped flows at once on a two-core CI machine; a halved duplex figure would be near 0.5
    assert rung["forward_gbps"] >= 0.9 * 4.0 and rung["reverse_gbps"] >= 0.9 * 4.0, rung
    assert rung["full_duplex_gbps"] == rung["forward_gbps"] + rung["reverse_gbps"]
    # the wire saw both directions on each half, at the line rate
    rx = [v for k, v in rung["wire"]["rx_gbps"].items() if k.startswith("wbn-1:")]
    tx = [v for k, v in rung["wire"]["tx_gbps"].items() if k.startswith("wbn-1:")]
    # 0.6: averaged over the rung, start-up included, eight flows on two busy cores (0.78 seen); a direction not
    # counted would be near 0
    assert len(rx) == len(tx) == 4 and min(rx + tx) >= 0.6
    assert rung["ceiling"]["name"] == "wire"
    assert iperf3_left() == []


def test_halves_far_faster_than_the_cpu_are_cpu_bound(tmp_path: Path) -> None:
    with running_testbed("wbc-", nodes=2, topology="direct", cables=2, half_rate_bps=400 * 10**9) as (_, remote):
        code, data = bench(remote, tmp_path, "tcp-halves", "--seconds", "4")
    assert code == 0, data
    [rung] = data["rungs"]  # type: ignore[misc]
    line = sum(f["line_rate_gbps"] for f in rung["flows"])
    assert rung["forward_gbps"] < 0.5 * line, rung  # nowhere near 1.6 Tb/s
    assert rung["ceiling"]["name"] == "cpu", rung["ceiling"]
    assert max(c["busy_percent"] for c in rung["wire"]["busiest_core"].values()) >= 90
    assert iperf3_left() == []


def test_a_node_lost_mid_run_keeps_the_finished_rungs_and_leaves_nothing_running(tmp_path: Path) -> None:
    import threading
    import time

    from wirespeed.testbed import system

    with running_testbed("wbk-", nodes=2, topology="direct", cables=1, half_rate_bps=10**9) as (_, remote):
        outcome: dict[str, object] = {}

        def climb() -> None:
            outcome["code"], outcome["data"] = bench(remote, tmp_path, "tcp", "--seconds", "3")

        runner = threading.Thread(target=climb)
        runner.start()
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("*/tcp-single.json")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(tmp_path.glob("*/tcp-single.json")), "the first rung never finished"
        time.sleep(1.0)  # tcp-multi is under way
        sshd = [pid for pid in system.netns_pids("wbk-2") if Path(f"/proc/{pid}/comm").read_text().strip() == "sshd"]
        assert sshd
        system.kill_pids(sshd)  # the listener and every session: wbk-2 is gone for ssh
        runner.join(timeout=120)
        assert not runner.is_alive()
        assert iperf3_left() == []
        assert system.netns_pids("wbk-2") == [] or all(
            Path(f"/proc/{pid}/comm").read_text().strip() not in ("iperf3", "python3", "wirespeed")
            for pid in system.netns_pids("wbk-2")
        )
    data = outcome["data"]
    assert outcome["code"] == 1, data
    rungs = {r["rung"]: r for r in data["rungs"]}  # type: ignore[index]
    assert rungs["tcp-single"]["status"] == "ran" and rungs["tcp-single"]["forward_gbps"] > 0.5
    assert rungs["tcp-multi"]["status"] == "failed" and "wbk-2" in rungs["tcp-multi"]["reason"]
    assert rungs["tcp-halves"]["status"] in ("failed", "skipped") and "wbk-2" in rungs["tcp-halves"]["reason"]
    run = next(tmp_path.iterdir())
    assert json.loads((run / "tcp-single.json").read_text())["status"] == "ran"
    assert json.loads((run / "run.json").read_text())["status"] == "complete"  # every rung ended, two of them failed


def test_compare_flags_a_run_with_a_degraded_half(bed: Remote, tmp_path: Path) -> None:
    code, healthy = bench(bed, tmp_path, "tcp-halves", "--seconds", "3")
    assert code == 0, healthy
    build.fault("wbn-", "wbn-1", "enP2p1s0f1np1", build.Fault(rate_bps=200_000_000))
    try:
        bench(bed, tmp_path, "tcp-halves", "--seconds", "3")
    finally:
        build.revert("wbn-", "wbn-1", "enP2p1s0f1np1")
    first, second = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=160)
    code = main(["compare", str(first), str(second), "--runs", str(tmp_path), "--json"], env)
    data = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    assert code == 1, data
    [change] = [c for c in data["changes"] if c["measure"] == "forward_gbps"]
    assert change["worse"] and change["change_percent"] < -15, change  # 4 x 1 Gb/s -> 3 x 1 + 0.2


def _cut(remote: Remote, runs: Path, signum: int) -> tuple[int, Path]:
    """`wirespeed bench tcp` as its own process group, as a terminal starts it; the signal comes once tcp-multi
    has been sampled at the wire (its iperf3 flows are running), to the whole group as Ctrl-C sends it."""
    import os
    import signal
    import sys
    import time

    argv = [sys.executable, "-m", "wirespeed", "bench", "tcp", "--cluster", remote.cluster.source, "--seconds", "10",
            "--runs", str(runs)]  # fmt: skip
    process = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            samples = list(runs.glob("*/tcp-multi.samples.jsonl"))
            if samples and len(samples[0].read_text().splitlines()) >= 4:
                break
            time.sleep(0.2)
        assert process.poll() is None, process.communicate()
        os.killpg(process.pid, signum)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    [run] = list(runs.iterdir())
    return process.returncode, run


def _nothing_left() -> list[str]:
    import time

    deadline = time.monotonic() + 30  # the nodes' watchdogs stop what the closed sessions ran
    while iperf3_left() and time.monotonic() < deadline:
        time.sleep(0.2)
    return iperf3_left()


def test_ctrl_c_exits_130_and_the_run_says_interrupted_everywhere(bed: Remote, tmp_path: Path) -> None:
    import signal

    code, run = _cut(bed, tmp_path, signal.SIGINT)
    assert code == 130
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "interrupted" and "Ctrl-C" in record["reason"], record
    assert json.loads((run / "tcp-single.json").read_text())["status"] == "ran"
    cut = json.loads((run / "tcp-multi.json").read_text())
    assert cut["status"] == "interrupted" and cut["wire"]["tx_gbps"], cut  # what the wire carried until then
    assert not (run / "tcp-halves.json").exists()
    assert _nothing_left() == []

    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    assert main(["runs", "--runs", str(tmp_path), "--json"], env) == 0
    [listed] = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    assert listed["status"] == "interrupted" and "interrupted" in listed["headline"], listed
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    assert main(["report", run.name, "--runs", str(tmp_path), "--format", "md", "-o", "-"], env) == 0
    page = env.stdout.getvalue()  # type: ignore[attr-defined]
    assert "This run is interrupted" in page and "not reached: tcp-halves" in page
    assert "### tcp-multi: interrupted" in page


def test_sigterm_ends_the_run_interrupted_and_sigkill_reads_as_cut_short(bed: Remote, tmp_path: Path) -> None:
    import signal

    code, run = _cut(bed, tmp_path / "term", signal.SIGTERM)
    assert code == 130
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "interrupted" and "SIGTERM" in record["reason"], record
    assert _nothing_left() == []

    code, run = _cut(bed, tmp_path / "kill", signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert json.loads((run / "run.json").read_text())["status"] == "running"  # it had no chance to say more
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    assert main(["runs", "--runs", str(tmp_path / "kill"), "--json"], env) == 0
    [listed] = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    assert listed["state"].startswith("cut short"), listed
    assert _nothing_left() == []


def test_the_ladder_measures_tcp_latency_on_every_half_in_microseconds(bed: Remote, tmp_path: Path) -> None:
    from wirespeed.core.tools import sockperf

    code, data = bench(bed, tmp_path, "ladder", "--seconds", "2")
    assert code == 0, data
    rungs = {r["rung"]: r for r in data["rungs"]}  # type: ignore[attr-defined]
    assert list(rungs)[:5] == ["tcp-single", "tcp-multi", "tcp-halves", "tcp-lat", "rdma-bw"]
    assert rungs["rdma-lat"]["status"] == "skipped" and "RDMA" in rungs["rdma-lat"]["reason"]
    lat = rungs["tcp-lat"]
    assert lat["status"] == "ran" and lat["ceiling"] is None, lat
    halves = [(x["client"], x["server"]) for x in lat["latency"]]
    assert len(halves) == 4 and len(set(map(str, halves))) == 4  # every half, each its own
    for x in lat["latency"]:
        # one way, microseconds: veth in one kernel is a few to tens of us; above a second would be a unit slip
        assert 0 < x["min_us"] <= x["p50_us"] <= x["p99_us"] <= x["p999_us"] <= x["max_us"] < 1e6, x
        assert x["tool"] == "sockperf" and x["samples"] > 1000
    assert lat["p50_us"] > 0 and lat["p99_us"] >= lat["p50_us"]
    # the parser on the raw output this very run captured: the record holds exactly what sockperf printed
    run = Path(str(data["run"]))
    outputs = sorted((run / "tcp-lat").glob("sockperf-*.out"))
    assert len(outputs) == 8  # a client and a server per half
    client = lat["latency"][0]
    raw = (run / "tcp-lat" / f"sockperf-0-{client['client'][0]}-{client['client'][1]}.out").read_text()
    parsed = sockperf.parse(raw, message_bytes=client["message_bytes"])
    assert (parsed.p50_us, parsed.p99_us, parsed.p999_us, parsed.observations) == (
        client["p50_us"], client["p99_us"], client["p999_us"], client["samples"],
    )  # fmt: skip
    [row] = [r for r in data["takeaway"] if r["rung"] == "tcp-lat"]  # type: ignore[attr-defined]
    assert row["p50_us"] == lat["p50_us"] and row["p99_us"] == lat["p99_us"]
    assert iperf3_left() == []

    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    assert main(["report", run.name, "--runs", str(tmp_path), "--format", "md", "-o", "-"], env) == 0
    page = env.stdout.getvalue()  # type: ignore[attr-defined]
    assert "### tcp-lat: ran" in page and "| p50 (us) |" in page and "tcp-lat: p50" in page
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=250)
    assert main(["compare", run.name, run.name, "--runs", str(tmp_path), "--json"], env) == 0
    measures = {(c["subject"], c["measure"]) for c in json.loads(env.stdout.getvalue())["changes"]}  # type: ignore[attr-defined]
    assert {("tcp-lat", "p50_us"), ("tcp-lat", "p99_us")} <= measures
