"""Every record a run keeps goes to JSON and comes back equal, and every file of a run directory reads typed through
the one loader (engine/runs.py): checks, the fix's plan and outcome, the revert record, setup, discovery, rungs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wirespeed.core.checks.model import ChecksRecord
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fixplan import Operation
from wirespeed.core.records.fixrecord import AppliedChange, FixRecord, NodeFixResult, RevertRecord
from wirespeed.core.records.options import BenchOptions, RunOptions
from wirespeed.core.records.results import Ceiling, RungResult, RungStatus
from wirespeed.core.records.run import NodeRef, RunRecord, RunStatus, Step, StepStatus
from wirespeed.core.toolchain import NodePlan, NodeSetup, SetupRecord, SetupStep
from wirespeed.engine.checks import run_checks, select
from wirespeed.engine.discover import discover_snapshots
from wirespeed.engine.report import load_report
from wirespeed.engine.runs import read_record, record_files

SNAPSHOTS = Path(__file__).parents[1] / "fixtures" / "snapshots"
FOUND = discover_snapshots([SNAPSHOTS / "spark-gid-ipv6"])
MTU = Operation("mtu", "enp1s0f0np0", "9000", "mtu.host", network=True)
SYSCTL = Operation("sysctl", "net.ipv4.tcp_rmem", "4096 131072 134217728", "sysctl.tcp")


def through_json(value: dict[str, object]) -> object:
    """What a file holds after the record was written and read back: JSON's types, not Python's."""
    return json.loads(json.dumps(value))


def checks() -> ChecksRecord:
    """The checks of a real snapshot pair: every check's evidence and fixes, as they come."""
    return run_checks(FOUND, select([], [])).record(active=False)


def fix() -> FixRecord:
    applied = (
        AppliedChange(MTU, "1500", ok=True),
        AppliedChange(SYSCTL, None, ok=False, error="read-only file system"),
    )
    return FixRecord(
        {"spark-1": (MTU, SYSCTL), "spark-2": (MTU,)},
        {"spark-1": ("the MTU change is applied with a rollback timer",)},
        {
            "spark-1": NodeFixResult("spark-1", applied, confirmed=True, journal="spark-1-20261126T1700-ab"),
            "spark-2": NodeFixResult("spark-2", (), error="spark-2: ssh: timed out", rolled_back=True, why="lost"),
        },
    )


def revert() -> RevertRecord:
    earlier = RevertRecord({"spark-2": (AppliedChange(SYSCTL, "4096 131072 6291456", ok=True),)}, {"spark-2": "t0"})
    return RevertRecord({"spark-1": (AppliedChange(MTU, "1500", ok=True),)}, {"spark-1": "t1"}, "unconfirmed",
                        "2026-11-26T17:00:00Z", earlier)  # fmt: skip


def setup() -> SetupRecord:
    step = SetupStep("nccl-tests", "build nccl-tests v2.17.6 for sm_121", release="v2.17.6", arch="121", key="k")
    return SetupRecord(
        {"spark-1": NodePlan("spark-1", (step,), ("OpenMPI 4.1.6",), (), "k")},
        {"spark-2": "spark-2: ssh: timed out"},
        applied=True,
        nodes={"spark-1": NodeSetup(("built nccl-tests",), None)},
        failed=("spark-2: not read",),
        smoke="smoke run: all_reduce_perf, 2 ranks",
    )


@pytest.mark.parametrize(
    ("build", "read"),
    [
        (checks, ChecksRecord.from_json),
        (fix, FixRecord.from_json),
        (revert, RevertRecord.from_json),
        (setup, SetupRecord.from_json),
    ],
    ids=["checks", "fix", "revert", "setup"],
)
def test_each_record_round_trips_through_json(build, read) -> None:  # type: ignore[no-untyped-def]
    record = build()
    again = read(through_json(record.to_json()), "record.json")
    assert again == record
    assert again.to_json() == record.to_json()


@pytest.mark.parametrize("snapshot", sorted(p.name for p in SNAPSHOTS.iterdir() if p.is_dir()))
def test_the_checks_of_every_snapshot_round_trip_with_their_evidence_and_fixes(snapshot: str) -> None:
    record = run_checks(discover_snapshots([SNAPSHOTS / snapshot]), select([], [])).record(active=True)
    assert any(r.evidence for r in record.results) and any(r.fixes for r in record.results)
    assert record.counts()["fail"] >= 1
    assert ChecksRecord.from_json(through_json(record.to_json()), "checks.json") == record


def test_a_record_of_the_wrong_shape_is_one_line_naming_the_file_and_field() -> None:
    data = through_json(fix().to_json())
    assert isinstance(data, dict)
    data["nodes"]["spark-1"]["applied"][0]["ok"] = "yes"
    with pytest.raises(ValueError, match=r"fix.json: nodes: spark-1: applied\[0\]: ok: expected true or false"):
        FixRecord.from_json(data, "fix.json")
    with pytest.raises(ValueError, match=r"checks.json: results\[0\]: status: 'maybe' is not one of pass"):
        ChecksRecord.from_json({"results": [{"id": "a", "title": "t", "status": "maybe", "summary": ""}]},
                               "checks.json")  # fmt: skip
    with pytest.raises(ValueError, match="newer than this wirespeed reads"):
        ChecksRecord.from_json({"schema_version": 99, "results": []}, "checks.json")


def test_unversioned_files_still_read() -> None:
    """checks.json and fix.json as commission wrote them before they carried a schema version and a kind."""
    old_checks = {"results": [{"id": "mtu.host", "title": "t", "status": "fail", "summary": "MTU 1500",
                               "evidence": [{"node": "n1", "subject": "enp1s0f0np0", "what": "mtu", "value": 1500}],
                               "fixes": []}],
                  "counts": {"pass": 0, "warn": 0, "fail": 1, "skip": 0}, "errors": [], "exit_status": 1}  # fmt: skip
    read = ChecksRecord.from_json(old_checks, "checks.json")
    assert read.active is None and read.results[0].evidence[0].value == 1500
    old_fix = {"plan": {"n1": [MTU.to_json()]}, "notes": {}, "nodes": {"n1": {
        "applied": [{"op": MTU.to_json(), "original": "1500", "ok": True, "error": None}], "error": None,
        "confirmed": True, "rolled_back": False, "journal": "t"}}}  # fmt: skip
    assert FixRecord.from_json(old_fix, "fix.json").nodes["n1"].changed()[0].original == "1500"


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_every_file_of_a_commission_run_reads_typed(tmp_path: Path) -> None:
    """A run directory laid out as `commission` leaves it: each file comes back as its record, none as a dict, and
    the report holds the same records typed."""
    run = tmp_path / "20261126T170000Z"
    steps = tuple(Step(name, StepStatus.DONE, "", 1.0) for name in ("discover", "checks", "fix"))
    record = RunRecord("0.2.0", ("commission",), "commission", RunOptions(BenchOptions(seconds=2)), "c",
                       (NodeRef("spark-1", "h"),), "2026-11-26T17:00:00Z", RunStatus.COMPLETE, "2026-11-26T17:05:00Z",
                       phases=("before", "after"),
                       planned=("before/tcp-single", "after/tcp-single"), steps=steps)  # fmt: skip
    write(run / "run.json", record.to_json())
    write(run / "discovery.json", FOUND.to_json())
    write(run / "after" / "discovery.json", FOUND.to_json())
    write(run / "setup.json", setup().to_json())
    write(run / "before" / "checks.json", checks().to_json())
    write(run / "after" / "checks.json", checks().to_json())
    write(run / "fix.json", fix().to_json())
    write(run / "fix-record.json", revert().to_json())
    for phase in ("before", "after"):
        rung = RungResult("tcp-single", RungStatus.RAN, ceiling=Ceiling("cpu", ("one core at 99%",)), phase=phase)
        write(run / phase / "tcp-single.json", rung.to_json())
    write(run / "before" / "tcp-single" / "iperf3.json", {"start": {}, "end": {}})  # a tool's raw output
    files = record_files(run)
    assert [str(p.relative_to(run)) for p in files] == [
        "after/checks.json", "after/discovery.json", "after/tcp-single.json", "before/checks.json",
        "before/tcp-single.json", "discovery.json", "fix-record.json", "fix.json", "run.json", "setup.json",
    ]  # fmt: skip
    kinds = {str(p.relative_to(run)): type(read_record(run, p)) for p in files}
    assert kinds["fix.json"] is FixRecord and kinds["fix-record.json"] is RevertRecord
    assert kinds["setup.json"] is SetupRecord and kinds["run.json"] is RunRecord
    assert kinds["discovery.json"] is Discovery and kinds["before/checks.json"] is ChecksRecord
    assert kinds["after/tcp-single.json"] is RungResult
    report = load_report(run)
    assert report.problems == ()
    assert report.fix == fix() and report.checks == checks() and report.checks_after == checks()


def test_a_file_that_is_not_its_record_is_named_in_the_report_and_the_rest_still_reads(tmp_path: Path) -> None:
    run = tmp_path / "20261126T170000Z"
    record = RunRecord("0.2.0", ("commission",), "commission", RunOptions(), "c", (NodeRef("spark-1", "h"),),
                       "2026-11-26T17:00:00Z", RunStatus.COMPLETE, phases=("before", "after"))  # fmt: skip
    write(run / "run.json", record.to_json())
    write(run / "before" / "checks.json", checks().to_json())
    write(run / "fix.json", {"plan": {"spark-1": [{"kind": "format-disk", "target": "/", "value": ""}]}})
    report = load_report(run)
    assert report.fix is None and report.checks == checks()
    [problem] = report.problems
    assert problem.startswith("fix.json") and "unknown operation kind 'format-disk'" in problem
