"""The run records read back: every record round-trips through its JSON, wirespeed 0.1's files still read, a newer
schema is refused; a run directory with a corrupt file reads every other record and names that file in one line
(in `load_run` and in `runs`, `compare` and `report`, never a traceback); runs found by name, path, `latest` and
`baseline`; and how a run ended (killed, interrupted, failed) with the rungs it did not reach."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.errors import UsageError
from wirespeed.core.records.compare import compare_runs, regressions
from wirespeed.core.records.matrix import HalfFlow, MatrixCell, MatrixResult, Outlier, matrix_from_json
from wirespeed.core.records.options import BenchOptions, RunOptions
from wirespeed.core.records.results import (
    SCHEMA_VERSION,
    Ceiling,
    CollectiveSummary,
    Direction,
    Flow,
    FlowResult,
    Latency,
    RungResult,
    RungStatus,
    SizeFigures,
    WireFigures,
)
from wirespeed.core.records.run import NodeRef, RunRecord, RunStatus, headline
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.runs import baseline_name, list_runs, load_run, resolve_run, set_baseline

P0, P1 = "enp1s0f0np0", "enP2p1s0f0np0"


def flow(half: str, line: float | None = 200.0) -> Flow:
    return Flow(("s1", half), ("s2", half), "10.0.0.1", "10.0.0.2", line, 108.4, "port 0", 200.0)


def full_rung(name: str = "tcp-halves", forward: float = 95.0) -> RungResult:
    """Every part of a rung record filled in: both directions, the wire, a ceiling, a collective, latency, notes."""
    flows = (
        FlowResult(flow(P0), Direction.FORWARD, forward),
        FlowResult(flow(P1), Direction.FORWARD, forward - 1.5),
        FlowResult(flow(P0).reversed(), Direction.REVERSE, 90.25),
        FlowResult(flow(P1).reversed(), Direction.REVERSE, None, "s2 -> s1: iperf3: connection reset"),
    )
    wire = WireFigures(
        tx_gbps={("s1", P0): 96.5, ("s1", P1): 93.0},
        rx_gbps={("s2", P0): 96.25},
        busiest_core={"s1": (3, 99.5), "s2": (0, 41.0)},
        cpu_average={"s1": 12.5, "s2": 6.0},
        errors={("s2", P1): {"rx_crc_errors_phy": 12, "rx_symbol_errors_phy": 3}},
        source="netdev",
    )
    collective = CollectiveSummary(
        "all_reduce", 2, (SizeFigures(1 << 20, 5.5, 10.25, 190.5), SizeFigures(1 << 30, 11.0, 22.5, 97000.0)),
        17.75, "NET/IB", True, ("enp1s0f0np0",), ("rocep1s0f0:1/RoCE",), "text", 0, False, "2.27.3",
    )  # fmt: skip
    latency = (
        Latency(flow(P0), "perftest", 2, 1.66, 2.07, 5.36, 1.61, 5.36, 1.68, 1000),
        Latency(flow(P1), "sockperf", 64, 3.5, 7.25),
    )
    return RungResult(
        rung=name, status=RungStatus.FAILED, reason="s2 -> s1: iperf3: connection reset", fix="look at the cable",
        flows=flows, wire=wire, ceiling=Ceiling("cpu", ("s1 core 3 at 99%", "and more")), duration_s=10.25,
        collective=collective, latency=latency, notes=("NCCL_IB_HCA from the user", "a second note"),
    )  # fmt: skip


def full_matrix() -> MatrixResult:
    cells = (
        MatrixCell("s1", "s2", 1, 180.5, 216.8, {P0: 95.0, P1: 85.5}, 181.0, None),
        MatrixCell("s2", "s1", 1, None, 216.8, {P0: 95.0, P1: None}, None, "s2 -> s1: refused"),
    )
    outliers = (Outlier("half", "s1", f"{P1} sends", 85.5, 95.0, "s1 enP2p1s0f0np0 sends at 85.50 Gb/s"),)
    flows = (HalfFlow(("s1", P0), ("s2", P0), 95.0), HalfFlow(("s1", P1), ("s2", P1), 85.5))
    return MatrixResult(
        "tcp", RungStatus.FAILED, ("s1", "s2"), ((("s1", "s2"),),), cells, outliers, (12.5,), 5.0, True,
        "s2 -> s1: refused", "wirespeed fix", flows,
    )  # fmt: skip


def record(**changes: Any) -> RunRecord:
    fields: dict[str, Any] = {
        "wirespeed_version": "0.2.0", "command": ("bench", "ladder", "--seconds", "5"), "what": "ladder",
        "options": RunOptions(BenchOptions(seconds=5, bidir=True, env=(("NCCL_DEBUG", "INFO"),))), "cluster": "lab",
        "nodes": (NodeRef("s1", "10.0.0.1"), NodeRef("s2", "10.0.0.2")), "started_utc": "2026-11-01T00:00:00Z",
        "planned": ("tcp-single", "tcp-halves", "matrix-tcp"), "host": "controller", "pid": 4242,
    }  # fmt: skip
    return RunRecord(**{**fields, **changes})


def through_json(data: Any) -> Any:
    return json.loads(json.dumps(data, allow_nan=False))


# ------------------------------------------------------------------------------------------------ round trips


def test_a_rung_record_round_trips_with_every_field() -> None:
    made = full_rung()
    data = through_json(made.to_json())
    assert (data["kind"], data["schema_version"], data["duration_s"]) == ("rung", SCHEMA_VERSION, 10.25)
    assert data["flows"][0]["pcie_gbps"] == 108.4 and data["flows"][0]["cable"] == "port 0"
    assert data["flows"][0]["cable_rate_gbps"] == 200.0 and data["flows"][2]["direction"] == "reverse"
    read = RungResult.from_json(data, "tcp-halves.json")
    assert read == made
    assert read.flows[2].direction is Direction.REVERSE and read.status is RungStatus.FAILED


def test_derived_figures_are_both_directions_only_where_both_were_measured() -> None:
    both = RungResult("tcp-halves", RungStatus.RAN, flows=(
        FlowResult(flow(P0), Direction.FORWARD, 95.0), FlowResult(flow(P0).reversed(), Direction.REVERSE, 90.0),
    ))  # fmt: skip
    assert (both.forward_gbps, both.reverse_gbps, both.duplex_gbps) == (95.0, 90.0, 185.0)
    one = RungResult("tcp-single", RungStatus.RAN, flows=(FlowResult(flow(P0), Direction.FORWARD, 95.0),))
    assert (one.forward_gbps, one.reverse_gbps, one.duplex_gbps) == (95.0, None, None)  # never a doubled one-way
    assert one.to_json()["full_duplex_gbps"] is None
    lat = RungResult("rdma-lat", RungStatus.RAN, latency=full_rung().latency)
    assert lat.p50_us == pytest.approx((1.66 + 3.5) / 2) and lat.p99_us == 7.25


def test_a_matrix_and_a_run_record_round_trip() -> None:
    made = full_matrix()
    assert matrix_from_json(through_json(made.to_json()), "matrix-tcp.json") == made
    for run in (record(), record(status=RunStatus.INTERRUPTED, ended_utc="2026-11-01T00:03:00Z", reason="SIGTERM")):
        data = through_json(run.to_json())
        assert data["kind"] == "run" and data["schema_version"] == SCHEMA_VERSION
        assert RunRecord.from_json(data, "run.json") == run


# ------------------------------------------------------------------------------------------- wirespeed 0.1


def v1_flow(half: str, direction: str, gbps: float | None) -> dict[str, Any]:
    client, server = ("s1", "10.0.0.1"), ("s2", "10.0.0.2")
    if direction == "reverse":
        client, server = server, client
    return {
        "client": [client[0], half], "server": [server[0], half], "client_address": client[1],
        "server_address": server[1], "line_rate_gbps": 200.0, "direction": direction, "receiver_gbps": gbps,
        "error": None,
    }  # fmt: skip


# What wirespeed 0.1 wrote (`git show HEAD:src/wirespeed/core/ladder.py`, RungResult.to_json): no version, `seconds`,
# no pcie/cable fields in the flows, and a full duplex figure that was the forward one when only one direction ran.
V1_RUNG: dict[str, Any] = {
    "rung": "tcp-halves", "status": "ran", "reason": None, "fix": None, "seconds": 10.4,
    "forward_gbps": 180.0, "reverse_gbps": None, "full_duplex_gbps": 180.0,
    "flows": [v1_flow(P0, "forward", 95.0), v1_flow(P1, "forward", 85.0)],
    "wire": {"source": "phy", "tx_gbps": {f"s1:{P0}": 96.0}, "rx_gbps": {f"s2:{P0}": 95.5},
             "busiest_core": {"s1": {"core": 3, "busy_percent": 64.0}}, "cpu_average_percent": {"s1": 9.5},
             "errors": {}},
    "ceiling": {"name": "wire", "evidence": ["180.00 Gb/s of 200 Gb/s"]},
    "collective": None, "notes": [],
}  # fmt: skip
V1_NCCL: dict[str, Any] = {
    **V1_RUNG, "rung": "nccl-all_reduce", "flows": [], "forward_gbps": 160.0, "full_duplex_gbps": 320.0,
    "collective": {
        "collective": "all_reduce", "ranks": 2, "transport": "NET/IB", "gdr": True, "socket_interfaces": [],
        "ib_devices": ["rocep1s0f0:1/RoCE"], "figures_from": "json", "wrong_elements": 0, "complete": True,
        "nccl_version": "2.27.3", "avg_busbw_GBps": 12.0, "peak_busbw_GBps": 20.0, "peak_at_bytes": 1 << 30,
        "rows": [{"size_bytes": 1 << 20, "time_us": 100.0, "algbw_GBps": 5.0, "busbw_GBps": 10.0},
                 {"size_bytes": 1 << 30, "time_us": 9000.0, "algbw_GBps": 10.0, "busbw_GBps": 20.0}],
    },
}  # fmt: skip


def test_a_wirespeed_0_1_rung_reads_with_its_seconds_and_figures_from_its_flows() -> None:
    read = RungResult.from_json(through_json({**V1_RUNG, "forward_gbps": 1.0}), "tcp-halves.json")
    assert read.duration_s == 10.4 and read.status is RungStatus.RAN
    assert read.forward_gbps == 180.0  # from the flows, not the stale derived field
    assert read.reverse_gbps is None and read.duplex_gbps is None  # 0.1's full duplex was the forward figure
    assert read.flows[0].flow.pcie_gbps is None and read.flows[0].flow.cable == ""
    assert read.wire.busiest_core == {"s1": (3, 64.0)} and read.ceiling == Ceiling("wire", ("180.00 Gb/s of 200 Gb/s",))
    nccl = RungResult.from_json(through_json(V1_NCCL), "nccl-all_reduce.json")
    assert nccl.collective is not None and nccl.collective.nccl_version == "2.27.3"
    assert (nccl.forward_gbps, nccl.duplex_gbps) == (160.0, 320.0)  # busbw 20 GB/s x 8, each direction at once
    again = through_json(read.to_json())  # written again, it is a version 2 record
    assert (again["schema_version"], again["duration_s"], again["full_duplex_gbps"]) == (SCHEMA_VERSION, 10.4, None)
    assert "seconds" not in again and RungResult.from_json(again, "tcp-halves.json") == read


def test_a_wirespeed_0_1_run_directory_reads_without_run_json(tmp_path: Path) -> None:
    run = tmp_path / "20260101T000000Z"
    run.mkdir()
    (run / "discovery.json").write_text(json.dumps({"nodes": {"s1": {}, "s2": {}}}))
    (run / "tcp-halves.json").write_text(json.dumps(V1_RUNG))
    (run / "takeaway.json").write_text(json.dumps([{"rung": "tcp-halves", "result": "180.00 Gb/s"}]))
    found = load_run(run)
    assert found.problems == () and [r.rung for r in found.rungs] == ["tcp-halves"]
    assert found.record is None and found.status is RunStatus.UNKNOWN and found.nodes == ("s1", "s2")
    assert found.state().startswith("unknown")


@pytest.mark.parametrize(
    ("read", "data"),
    [
        (lambda d: RungResult.from_json(d, "tcp-halves.json"), full_rung().to_json()),
        (lambda d: matrix_from_json(d, "tcp-halves.json"), full_matrix().to_json()),
        (lambda d: RunRecord.from_json(d, "tcp-halves.json"), record().to_json()),
    ],
    ids=["rung", "matrix", "run"],
)
def test_a_newer_schema_is_refused_with_a_line_saying_to_upgrade(read: Callable[[Any], object], data: Any) -> None:
    with pytest.raises(ValueError, match="upgrade") as caught:
        read({**data, "schema_version": SCHEMA_VERSION + 1})
    said = str(caught.value)
    assert said.startswith("tcp-halves.json: schema version 3") and "\n" not in said


# --------------------------------------------------------------------------------------------- corrupt files


def ran(name: str, gbps: float) -> RungResult:
    return RungResult(name, RungStatus.RAN, flows=(FlowResult(flow(P0), Direction.FORWARD, gbps),),
                      ceiling=Ceiling("wire", ("x",)), duration_s=5.0)  # fmt: skip


def make_run(root: Path) -> RunDirectory:
    """A run as `bench` writes it: run.json first, two rungs and a matrix as they end, discovery, then the end."""
    run_dir = RunDirectory(root)
    run_dir.start(record(host=socket.gethostname(), pid=None))
    run_dir.write_json("discovery.json", {"nodes": {"s1": {}, "s2": {}}})
    run_dir.rung(ran("tcp-single", 40.0))
    run_dir.rung(ran("tcp-halves", 180.0))
    run_dir.matrix(full_matrix())
    run_dir.finish(RunStatus.COMPLETE)
    return run_dir


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:40])


def field_set(key: str, value: Any) -> Callable[[Path], None]:
    def corrupt(path: Path) -> None:
        path.write_text(json.dumps({**json.loads(path.read_text()), key: value}))

    return corrupt


def raw_nan(path: Path) -> None:
    text, n = re.subn(r'"receiver_gbps": [0-9.]+', '"receiver_gbps": NaN', path.read_text(), count=1)
    assert n == 1
    path.write_text(text)


def non_utf8(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:20] + b"\xff\xfe" + data[20:])


def fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def empty(path: Path) -> None:
    path.write_bytes(b"")


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "truncated": truncated,
    "status-great": field_set("status", "great"),
    "flows-3": field_set("flows", 3),
    "forward-fast": field_set("forward_gbps", "fast"),
    "nan": raw_nan,
    "non-utf8": non_utf8,
    "fifo": fifo,
    "empty": empty,
}
RECORD_FILES = ("run.json", "tcp-single.json", "tcp-halves.json", "matrix-tcp.json")
APPLIES = {  # which corruption makes sense in which file
    "flows-3": ("tcp-single.json", "tcp-halves.json", "matrix-tcp.json"),
    "forward-fast": ("tcp-single.json", "tcp-halves.json"),
    "nan": ("tcp-single.json", "tcp-halves.json", "matrix-tcp.json"),
}
CASES = [
    pytest.param(name, how, id=f"{name}-{how}")
    for how in CORRUPTIONS
    for name in APPLIES.get(how, RECORD_FILES)
]  # fmt: skip


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=160)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def one_line_naming(problems: tuple[str, ...], name: str) -> None:
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{name}: ") and "\n" not in problems[0] and "Traceback" not in problems[0]


@pytest.mark.parametrize(("name", "how"), CASES)
def test_a_corrupt_file_is_one_line_naming_it_and_every_other_record_still_reads(
    tmp_path: Path, name: str, how: str
) -> None:
    root = tmp_path / "runs"
    clean, broken = make_run(root), make_run(root)
    CORRUPTIONS[how](broken.path / name)

    found = load_run(broken.path)
    one_line_naming(found.problems, name)
    rungs = {"tcp-single", "tcp-halves"} - {name.removesuffix(".json")}
    assert {r.rung for r in found.rungs} == rungs
    assert [m.layer for m in found.matrices] == ([] if name == "matrix-tcp.json" else ["tcp"])
    assert (found.record is None) == (name == "run.json")
    assert found.nodes == ("s1", "s2")  # from the record, or from discovery.json when the record is not read

    # runs: exit 3, the file named once on stderr, the other run listed as it is
    code, out, err = cli("runs", "--runs", str(root), "--json")
    listed = {r["run"]: r for r in json.loads(out)}
    assert code == 3 and listed[clean.name]["problems"] == [] and len(listed[broken.name]["problems"]) == 1
    assert err.count(f"{broken.name}: {name}: ") == 1 and "Traceback" not in out + err
    code, out, err = cli("runs", "--runs", str(root))
    assert code == 3 and f"{broken.name}: {name}: " in err and "Traceback" not in out + err

    # compare: a rung or a matrix no longer read is no longer measured: worse (1); run.json's loss changes no figure;
    # a record read whole but holding NaN is damaged: named, never compared (3)
    code, out, err = cli("compare", clean.name, broken.name, "--runs", str(root))
    assert code == (3 if name == "run.json" or how == "nan" else 1), err
    assert f"{broken.name}: {name}: " in err and "Traceback" not in out + err
    code, out, err = cli("compare", clean.name, broken.name, "--runs", str(root), "--json")
    assert json.loads(out)["problems"] == {clean.name: [], broken.name: list(found.problems)}

    # report: still written, the file in its "Not read" section and on stderr
    code, out, err = cli("report", broken.name, "--format", "md", "-o", "-", "--runs", str(root))
    assert code == 3 and out.startswith(f"# wirespeed report: run {broken.name}") and "## Not read" in out
    assert f"- {found.problems[0]}" in out and f"{broken.name}: {name}: " in err and "Traceback" not in out + err
    for rung in rungs:
        assert f"### {rung}: ran" in out


def test_a_nan_figure_makes_the_rung_damaged_and_compare_never_compares_it(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    before, after = make_run(root), make_run(root)
    raw_nan(after.path / "tcp-halves.json")
    later = load_run(after.path)
    one_line_naming(later.problems, "tcp-halves.json")
    assert "receiver_gbps: nan is not a finite number: the record is damaged" in later.problems[0]
    assert [d.key for d in later.damaged] == ["tcp-halves"] and later.not_reached == ()
    changes = compare_runs(load_run(before.path), later)
    assert regressions(changes, 5.0) == []
    halves = [c for c in changes if c.subject == "tcp-halves"]
    assert [(c.measure, c.before, c.after, c.status_before, c.status_after) for c in halves] == [
        ("forward_gbps", None, None, "ran", "damaged")
    ]
    code, out, err = cli("compare", before.name, after.name, "--runs", str(root))
    assert code == 3 and f"not compared: tcp-halves in {after.name} is damaged" in err
    assert "tcp-halves.json" in err and "Traceback" not in out + err


def test_a_corrupt_discovery_or_import_is_named_by_the_report(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    run_dir = make_run(root)
    (run_dir.path / "discovery.json").write_text('{"nodes": ')
    (run_dir.path / "imported").mkdir()
    (run_dir.path / "imported" / "a3.json").write_text('{"no": "tool"}')
    code, out, err = cli("report", "latest", "--format", "md", "-o", "-", "--runs", str(root))
    assert code == 3 and out.startswith("# wirespeed report") and "Traceback" not in out + err
    assert "discovery.json: not valid JSON" in err and "imported/a3.json: not an import object" in err


# ------------------------------------------------------------------------------------------------------ names


def named_run(root: Path, name: str, gbps: float) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps(record(status=RunStatus.COMPLETE, planned=("tcp-halves",)).to_json()))
    (path / "tcp-halves.json").write_text(json.dumps(ran("tcp-halves", gbps).to_json()))
    return path


def test_a_run_by_name_path_latest_and_baseline(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    first, second = named_run(root, "20261101T000000Z", 180.0), named_run(root, "20261102T000000Z", 150.0)
    (root / "zz-not-a-run").mkdir()  # newest by name, but no run.json: not a run
    assert resolve_run(root, "20261101T000000Z") == first
    assert resolve_run(root, str(second)) == second
    assert resolve_run(root, "latest") == second
    with pytest.raises(UsageError, match="no baseline"):
        resolve_run(root, "baseline")
    set_baseline(root, first)
    assert baseline_name(root) == first.name and resolve_run(root, "baseline") == first
    with pytest.raises(UsageError) as caught:
        resolve_run(root, "20261103T000000Z")
    assert str(caught.value).startswith(f"20261103T000000Z: no such run in {root}") and caught.value.hint
    with pytest.raises(UsageError, match="not a run directory"):
        resolve_run(root, "zz-not-a-run")
    assert [r.name for r in list_runs(root)] == [first.name, second.name]

    code, out, err = cli("compare", first.name, second.name, "--runs", str(root), "--json")
    data = json.loads(out)
    assert code == 1 and (data["before"], data["after"]) == (first.name, second.name) and err == ""
    assert [(c["subject"], c["worse"]) for c in data["changes"]] == [("tcp-halves", True)]
    assert cli("compare", "baseline", "latest", "--runs", str(root), "--threshold", "20")[0] == 0
    code, _, err = cli("compare", first.name, "20261103T000000Z", "--runs", str(root))
    assert code == 2 and "20261103T000000Z: no such run in" in err and "hint:" in err and err.count("\n") == 1


# ------------------------------------------------------------------------------------------------- run status


def test_a_running_run_whose_process_is_gone_was_cut_short(tmp_path: Path) -> None:
    process = subprocess.Popen(["true"])  # a process certain to have ended
    process.wait()
    run_dir = RunDirectory(tmp_path)
    run_dir.start(record(host=socket.gethostname(), pid=process.pid))
    run_dir.rung(ran("tcp-single", 40.0))
    found = load_run(run_dir.path)
    assert found.status is RunStatus.RUNNING and found.process_gone
    assert found.state().startswith(f"cut short: its process ({socket.gethostname()} pid {process.pid}) ended")
    assert found.not_reached == ("tcp-halves", "matrix-tcp")
    elsewhere = RunDirectory(tmp_path)
    elsewhere.start(record(host="another-controller", pid=process.pid))  # not this host's to judge
    other = load_run(elsewhere.path)
    assert not other.process_gone and other.state() == f"running (another-controller pid {process.pid})"


@pytest.mark.parametrize(
    ("status", "reason", "state"),
    [
        (RunStatus.INTERRUPTED, "SIGTERM", "interrupted: SIGTERM"),
        (RunStatus.FAILED, "s1: ssh: connection refused", "failed: s1: ssh: connection refused"),
        (RunStatus.COMPLETE, None, "complete"),
    ],
)
def test_how_a_run_ended_and_what_it_did_not_reach(
    tmp_path: Path, status: RunStatus, reason: str | None, state: str
) -> None:
    run_dir = RunDirectory(tmp_path / "runs")
    run_dir.start(record(host=socket.gethostname(), pid=os.getpid()))
    run_dir.rung(ran("tcp-single", 40.0))
    run_dir.matrix(full_matrix())
    run_dir.finish(status, reason)
    found = load_run(run_dir.path)
    assert found.state() == state and not found.process_gone and found.problems == ()
    assert found.not_reached == ("tcp-halves",)  # planned, never written; the matrix was
    assert found.record is not None and found.record.ended_utc is not None
    code, out, err = cli("report", "latest", "--format", "md", "-o", "-", "--runs", str(tmp_path / "runs"))
    assert code == 0, err
    if status is RunStatus.COMPLETE:
        assert "This run is" not in out
    else:
        assert f"This run is {state}; not reached: tcp-halves." in out
    code, out, _ = cli("runs", "--runs", str(tmp_path / "runs"), "--json")
    [listed] = json.loads(out)
    assert (listed["status"], listed["state"]) == (status.value, state)


# ------------------------------------------------------- issue 35: figures no measurement can have, as damage


def set_figure(path: Path, pattern: str, value: str) -> None:
    text, n = re.subn(pattern, value, path.read_text(), count=1)
    assert n == 1, pattern
    path.write_text(text)


@pytest.mark.parametrize(
    ("pattern", "value", "said"),
    [
        (r'"receiver_gbps": [0-9.]+', '"receiver_gbps": 1e308', "receiver_gbps: 1e+308 is above 100000 Gb/s"),
        (r'"receiver_gbps": [0-9.]+', '"receiver_gbps": -1e308', "receiver_gbps: -1e+308 is negative: no rate is"),
        (r'"duration_s": [0-9.null]+', '"duration_s": -100', "duration_s: -100 is negative: no duration is"),
        (r'"receiver_gbps": [0-9.]+', '"receiver_gbps": Infinity', "receiver_gbps: inf is not a finite number"),
    ],
)
def test_an_impossible_figure_is_damage_every_view_names_and_none_prints(
    tmp_path: Path, pattern: str, value: str, said: str
) -> None:
    root = tmp_path / "runs"
    clean, broken = make_run(root), make_run(root)
    set_figure(broken.path / "tcp-single.json", pattern, value)
    found = load_run(broken.path)
    assert [d.key for d in found.damaged] == ["tcp-single"] and said in found.problems[0]
    assert found.problems[0].startswith("tcp-single.json: ") and found.problems[0].endswith("the record is damaged")
    assert "1 damaged" in headline(found)

    code, out, err = cli("runs", "--runs", str(root), "--json")
    listed = {r["run"]: r for r in json.loads(out)}
    assert code == 3 and listed[broken.name]["rungs"]["tcp-single"]["status"] == "damaged"
    for argv in (("runs",), ("report", broken.name, "--format", "md", "-o", "-"), ("compare", clean.name, broken.name)):
        code, out, err = cli(*argv, "--runs", str(root))
        assert code == 3 and said in err and "Traceback" not in out + err
        assert "0000000000" not in out + err  # never a 309-digit number
    code, out, err = cli("compare", clean.name, broken.name, "--runs", str(root))
    assert f"wirespeed: not compared: tcp-single in {broken.name} is damaged" in err.splitlines()
    assert "0 figure(s) worse" in err
    code, out, err = cli("compare", clean.name, broken.name, "--runs", str(root), "--json")
    rows = [c for c in json.loads(out)["changes"] if c["subject"] == "tcp-single"]
    assert rows and all(c["status_after"] == "damaged" and c["after"] is None and not c["worse"] for c in rows)


def test_a_damaged_matrix_is_named_and_none_of_its_cells_compared(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    clean, broken = make_run(root), make_run(root)
    set_figure(broken.path / "matrix-tcp.json", r'"tool_gbps": [0-9.]+', '"tool_gbps": -5')
    changes = compare_runs(load_run(clean.path), load_run(broken.path))
    cells = [c for c in changes if c.subject.startswith("matrix-tcp ")]
    assert cells and all(c.status_after == "damaged" and c.after is None for c in cells)
    assert regressions(changes, 5.0) == []
    code, _out, err = cli("compare", clean.name, broken.name, "--runs", str(root))
    assert code == 3 and f"wirespeed: not compared: matrix-tcp in {broken.name} is damaged" in err.splitlines()


def test_a_step_whose_duration_is_impossible_keeps_the_record_and_is_named() -> None:
    data = through_json(record(steps=()).to_json())
    data["steps"] = [{"name": "discover", "status": "done", "detail": "", "duration_s": -100},
                     {"name": "bench", "status": "done", "detail": "", "duration_s": 1e308}]  # fmt: skip
    read = RunRecord.from_json(data, "run.json")
    assert [(s.name, s.duration_s) for s in read.steps] == [("discover", None), ("bench", None)]
    assert read.damaged == (
        "run.json: steps[0]: duration_s: -100 is negative: no duration is: the record is damaged",
        "run.json: steps[1]: duration_s: 1e+308 is above 2.592e+06 s: no duration measured is: the record is damaged",
    )


def test_an_imported_figure_past_any_link_is_damaged_never_compared(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    clean, broken = make_run(root), make_run(root)
    for run_dir, bps in ((clean, 9.4e10), (broken, 1e308)):
        (run_dir.path / "imported").mkdir()
        (run_dir.path / "imported" / "a.json").write_text(json.dumps({"tool": "iperf3", "received_bps": bps}))
    changes = compare_runs(load_run(clean.path), load_run(broken.path))
    (row,) = [c for c in changes if c.subject == "imported a"]
    assert (row.before, row.after, row.status_after, row.percent) == (94.0, None, "damaged", None)
    assert regressions(changes, 5.0) == []
    code, out, err = cli("compare", clean.name, broken.name, "--runs", str(root))
    assert code == 3 and f"wirespeed: not compared: imported a in {broken.name} is damaged" in err.splitlines()
    assert "0000000000" not in out + err
