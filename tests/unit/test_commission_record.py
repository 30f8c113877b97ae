"""A `commission` run as records: its steps and phases round-trip through run.json, its rungs are read from
`before/` and `after/`, and every view pairs them: the before/after table, the headline, compare's subjects and
the report, with rungs skipped in both phases folded into one line per reason."""

from __future__ import annotations

import io
import json
from pathlib import Path

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.records.compare import compare_runs
from wirespeed.core.records.decode import Fields
from wirespeed.core.records.options import RunOptions
from wirespeed.core.records.results import Ceiling, Direction, Flow, FlowResult, RungResult, RungStatus, WireFigures
from wirespeed.core.records.run import NodeRef, RunRecord, RunStatus, Step, StepStatus, headline, phase_rows
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.runs import load_run
from wirespeed.ui import takeaway

FLOW = Flow(("n1", "h0"), ("n2", "h0"), "198.19.0.1", "198.19.0.2", 1.0)


def rung(name: str, gbps: float | None, ceiling: str = "wire") -> RungResult:
    if gbps is None:
        return RungResult(name, RungStatus.SKIPPED, "no RDMA devices on the nodes", "install mlx5_ib")
    wire = WireFigures(peak_tx_gbps={"n1": gbps}, peak_rx_gbps={"n1": 0.1}, peak_duplex_gbps={"n1": gbps + 0.1})
    return RungResult(name, RungStatus.RAN, flows=(FlowResult(FLOW, Direction.FORWARD, gbps),), wire=wire,
                      ceiling=Ceiling(ceiling, (f"{gbps} Gb/s",)), duration_s=3.0)  # fmt: skip


def commissioned(root: Path, before: float, after: float) -> Path:
    run_dir = RunDirectory(root)
    planned = ("before/tcp-single", "before/rdma-bw", "after/tcp-single", "after/rdma-bw")
    run_dir.start(RunRecord("0.1.0", ("commission", "--yes"), "commission", RunOptions(), "lab", (NodeRef("n1", "a"),),
                            "2026-11-24T00:00:00Z", planned=planned, phases=("before", "after")))  # fmt: skip
    run_dir.step(Step("discover", StepStatus.DONE, "1 node(s)", 4.2))
    for phase, gbps, ceiling in (("before", before, "cpu"), ("after", after, "wire")):
        folder = run_dir.phase_dir(phase)
        folder.rung(rung("tcp-single", gbps, ceiling))
        folder.rung(rung("rdma-bw", None))
    run_dir.step(Step("fix", StepStatus.DONE, "2 change(s)", 0.8))
    run_dir.finish(RunStatus.COMPLETE)
    return run_dir.path


def test_steps_and_phases_round_trip_through_run_json() -> None:
    record = RunRecord("0.1.0", ("commission",), "commission", RunOptions(fix=True), "lab", (NodeRef("n1", "a"),),
                       "2026-11-24T00:00:00Z", phases=("before", "after"),
                       steps=(Step("checks", StepStatus.STOPPED, "ssh.mesh fails", 4.5),))  # fmt: skip
    assert RunRecord.from_json(json.loads(json.dumps(record.to_json())), "run.json") == record
    assert Step.from_json(Fields({"name": "fix", "status": "skipped"}, "x")) == Step("fix", StepStatus.SKIPPED)


def test_a_commissioned_run_pairs_each_rung_before_and_after(tmp_path: Path) -> None:
    path = commissioned(tmp_path, before=0.6, after=0.99)
    run = load_run(path)
    assert run.problems == () and run.not_reached == () and run.finished
    assert [r.key for r in run.rungs] == ["before/tcp-single", "before/rdma-bw", "after/tcp-single", "after/rdma-bw"]
    assert [s.name for s in run.record.steps] == ["discover", "fix"]  # type: ignore[union-attr]
    [single, rdma] = phase_rows(run)
    assert single.rung == "tcp-single" and single.before and single.after
    assert single.before.forward_gbps == 0.6 and single.after.forward_gbps == 0.99
    assert round(single.change_percent or 0) == 65
    assert single.after.peak_tx_gbps == 0.99 and single.after.peak_duplex_gbps == 0.99 + 0.1
    cells = dict(zip(takeaway.PHASE_COLUMNS, takeaway.phase_cells(single), strict=True))
    assert cells["before"] == "0.60 Gb/s" and cells["after"] == "0.99 Gb/s" and cells["change"] == "+65%"
    assert cells["ceiling"] == "cpu -> wire" and cells[takeaway.PEAK] == "0.99 / 1.09 Gb/s"
    measured, skipped = takeaway.measured_and_skipped([single, rdma])
    assert measured == [single]
    assert skipped == ["not measured here: rdma-bw: no RDMA devices on the nodes"]
    assert headline(run).startswith("highest: 0.99 Gb/s per direction on tcp-single (after), the TCP layer, "
                                    "ceiling: wire (before the fixes: 0.60); the fixes moved tcp-single "
                                    "0.60 -> 0.99 Gb/s (+65%, cpu -> wire)")  # fmt: skip


def test_compare_and_report_tell_the_phases_apart(tmp_path: Path) -> None:
    first = load_run(commissioned(tmp_path / "a", before=0.6, after=0.99))
    second = load_run(commissioned(tmp_path / "b", before=0.6, after=0.5))
    worse = [c for c in compare_runs(first, second) if c.worse(5.0)]
    assert [(c.subject, c.measure) for c in worse] == [("tcp-single (after)", "forward_gbps")]

    path = next((tmp_path / "a").iterdir())
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    assert main(["report", str(path), "--format", "md", "-o", "-"], env) == 0
    page = env.stdout.getvalue()  # type: ignore[attr-defined]
    assert "| rung | before | after | change |" in page and "| tcp-single | 0.60 Gb/s | 0.99 Gb/s | +65% |" in page
    assert "- not measured here: rdma-bw: no RDMA devices on the nodes" in page
    assert "## Steps" in page and "| discover | done | 4.2 s | 1 node(s) |" in page
    assert "### tcp-single (before): ran" in page and "### tcp-single (after): ran" in page
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    assert main(["report", str(path), "--format", "json", "-o", "-"], env) == 0
    data = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    assert data["before_after"][0]["rung"] == "tcp-single" and [s["name"] for s in data["steps"]] == ["discover", "fix"]
