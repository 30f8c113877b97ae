"""Comparing two runs: per rung and per message size, what got worse by more than the threshold; and the
`runs`, `baseline set` and `compare` commands on run directories as `wirespeed bench` writes them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.records.compare import compare_runs, regressions
from wirespeed.core.records.options import RunOptions
from wirespeed.core.records.results import (
    Ceiling,
    CollectiveSummary,
    Direction,
    Flow,
    FlowResult,
    RungResult,
    RungStatus,
    SizeFigures,
)
from wirespeed.core.records.run import NodeRef, Run, RunRecord, RunStatus


def rung(
    name: str, forward: float | None, status: RungStatus = RungStatus.RAN, busbw: dict[int, float] | None = None
) -> RungResult:
    """A rung record: one forward flow carrying `forward` Gb/s (none when it failed), or a collective's busbw rows."""
    flow = Flow(("s1", "enp1s0f1np1"), ("s2", "enp1s0f1np1"), "10.0.0.1", "10.0.0.2", 200.0)
    flows = () if busbw is not None else (FlowResult(flow, Direction.FORWARD, forward),)
    collective = None
    if busbw is not None:
        rows = tuple(SizeFigures(size, busbw_GBps / 2, busbw_GBps, 10.0) for size, busbw_GBps in busbw.items())
        collective = CollectiveSummary("all_reduce", 2, rows, None, "NET/IB", True)
    ceiling = Ceiling("wire", ("x",)) if status is RungStatus.RAN else None
    reason = None if status is RungStatus.RAN else "it broke"
    return RungResult(name, status, reason, flows=flows, ceiling=ceiling, collective=collective)


def run_of(*rungs: RungResult) -> Run:
    return Run("r", None, rungs)


def test_a_drop_past_the_threshold_is_worse_and_a_small_one_is_not() -> None:
    before = run_of(rung("tcp-halves", 100.0), rung("tcp-single", 50.0))
    after = run_of(rung("tcp-halves", 80.0), rung("tcp-single", 48.0))
    changes = compare_runs(before, after)
    by_rung = {c.subject: c for c in changes}
    assert by_rung["tcp-halves"].percent == pytest.approx(-20.0)
    assert by_rung["tcp-single"].percent == pytest.approx(-4.0)
    assert [c.subject for c in regressions(changes, 5.0)] == ["tcp-halves"]
    assert regressions(changes, 25.0) == []


def test_per_message_size_busbw_and_a_rung_that_stopped_running() -> None:
    before = run_of(rung("nccl-all_reduce", 160.0, busbw={1 << 20: 5.0, 1 << 30: 20.0}), rung("rdma-bw", 190.0))
    after = run_of(rung("nccl-all_reduce", 160.0, busbw={1 << 20: 2.0, 1 << 30: 20.0}),
                   rung("rdma-bw", None, status=RungStatus.FAILED))  # fmt: skip
    assert before.rungs[0].forward_gbps == after.rungs[0].forward_gbps == 160.0  # busbw 20 GB/s x 8
    worse = regressions(compare_runs(before, after), 5.0)
    assert {(c.subject, c.measure) for c in worse} == {
        ("nccl-all_reduce", "busbw_GBps @ 1048576 B"),
        ("rdma-bw", "forward_gbps"),
    }


def write_run(root: Path, name: str, rungs: list[RungResult]) -> Path:
    """A run directory as `bench` leaves it: run.json (ended complete), discovery.json and a record per rung."""
    run = root / name
    run.mkdir(parents=True)
    record = RunRecord(
        wirespeed_version="0.2.0", command=("bench", "tcp"), what="tcp", options=RunOptions(), cluster="test",
        nodes=(NodeRef("s1", "10.0.0.1"), NodeRef("s2", "10.0.0.2")), started_utc="2026-11-01T00:00:00Z",
        status=RunStatus.COMPLETE, ended_utc="2026-11-01T00:01:00Z", planned=tuple(r.rung for r in rungs),
    )  # fmt: skip
    (run / "run.json").write_text(json.dumps(record.to_json()))
    (run / "discovery.json").write_text(json.dumps({"nodes": {"s1": {}, "s2": {}}}))
    for r in rungs:
        (run / f"{r.rung}.json").write_text(json.dumps(r.to_json()))
    return run


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def test_runs_baseline_and_compare_commands(tmp_path: Path) -> None:
    write_run(tmp_path, "20261101T000000Z", [rung("tcp-halves", 3.97)])
    write_run(tmp_path, "20261102T000000Z", [rung("tcp-halves", 3.10)])
    code, out, _ = cli("runs", "--runs", str(tmp_path), "--json")
    listed = json.loads(out)
    assert code == 0 and [r["run"] for r in listed] == ["20261101T000000Z", "20261102T000000Z"]
    assert listed[0]["nodes"] == ["s1", "s2"] and listed[0]["rungs"]["tcp-halves"]["forward_gbps"] == 3.97
    assert listed[0]["rungs"]["tcp-halves"] == {
        "status": "ran", "forward_gbps": 3.97, "p50_us": None, "p99_us": None, "ceiling": "wire"
    }  # fmt: skip
    assert listed[0]["status"] == "complete" and listed[0]["problems"] == [] and listed[0]["baseline"] is False
    assert cli("baseline", "set", "20261101T000000Z", "--runs", str(tmp_path))[0] == 0
    code, out, _ = cli("compare", str(tmp_path / "20261102T000000Z"), "--runs", str(tmp_path), "--json")
    data = json.loads(out)
    assert code == 1 and data["changes"][0]["worse"] is True
    assert data["changes"][0]["subject"] == "tcp-halves" and data["changes"][0]["higher_is_better"] is True
    assert data["changes"][0]["change_percent"] == pytest.approx(100 * (3.10 - 3.97) / 3.97)
    code, _, _ = cli("compare", str(tmp_path / "20261101T000000Z"), str(tmp_path / "20261102T000000Z"),
                     "--threshold", "30", "--runs", str(tmp_path))  # fmt: skip
    assert code == 0
    code, out, _ = cli("runs", "--runs", str(tmp_path))
    assert "(baseline)" in out and "3.97 Gb/s per direction on tcp-halves, the TCP layer, ceiling: wire" in out


def test_compare_errors_are_one_line(tmp_path: Path) -> None:
    code, _, err = cli("compare", str(tmp_path / "nope"), "--runs", str(tmp_path))
    assert code == 2 and "no baseline" in err and "Traceback" not in err
    write_run(tmp_path, "a", [rung("tcp-single", 1.0)])
    code, _, err = cli("compare", str(tmp_path / "a"), str(tmp_path / "missing"), "--runs", str(tmp_path))
    assert code == 2 and f"missing: no such run in {tmp_path}" in err and err.count("\n") == 1
    (tmp_path / "a" / "tcp-single.json").write_text("{cut")
    code, _, err = cli("compare", str(tmp_path / "a"), str(tmp_path / "a"), "--runs", str(tmp_path))
    assert code == 3 and "tcp-single.json: not valid JSON" in err and "Traceback" not in err
