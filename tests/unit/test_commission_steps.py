"""Commission's steps as the record keeps them when a step is cut: by a signal (interrupted), by an error (failed),
by a stop (stopped); and the report step, whose failure leaves the run saying the report was not written."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from wirespeed.core.errors import Interrupted, WirespeedError
from wirespeed.core.records.options import RunOptions
from wirespeed.core.records.run import NodeRef, RunRecord, RunStatus, StepStatus
from wirespeed.engine.commission import Commission, Stop, _Steps, write_report
from wirespeed.engine.rundir import RunDirectory


def started(root: Path) -> tuple[RunDirectory, _Steps, list[str]]:
    run_dir = RunDirectory(root)
    run_dir.start(RunRecord("0.1.0", ("commission",), "commission", RunOptions(), "lab", (NodeRef("n1", "a"),),
                            "2026-11-26T00:00:00Z"))  # fmt: skip
    said: list[str] = []
    return run_dir, _Steps(run_dir, said.append), said


def recorded(run_dir: RunDirectory) -> tuple[str, list[tuple[str, str, str]]]:
    data = json.loads((run_dir.path / "run.json").read_text())
    return data["status"], [(s["name"], s["status"], s.get("detail", "")) for s in data["steps"]]


@pytest.mark.parametrize(
    ("exc", "status", "detail"),
    [
        (KeyboardInterrupt(), "interrupted", "interrupted (Ctrl-C)"),
        (Interrupted("stopped by SIGTERM"), "interrupted", "stopped by SIGTERM"),
        (Stop("2 node(s) could not be read"), "stopped", "2 node(s) could not be read"),
        (OSError(errno.ENOSPC, "No space left on device"), "failed", "[Errno 28] No space left on device"),
    ],
)
def test_the_step_a_run_ends_in_is_recorded_as_cut(
    tmp_path: Path, exc: BaseException, status: str, detail: str
) -> None:
    run_dir, steps, said = started(tmp_path)
    begun = steps.begin("discover", "reading")
    steps.end("discover", begun, StepStatus.DONE, "2 node(s)")
    steps.begin("fix", "applying")
    steps.cut(exc, "1 node(s) confirmed")
    steps.cut(exc)  # nothing open any more: nothing recorded twice
    _, kept = recorded(run_dir)
    assert kept == [("discover", "done", "2 node(s)"), ("fix", status, f"{detail}; 1 node(s) confirmed")]
    assert said[-1] == f"[2/8] fix: {status}: {detail}; 1 node(s) confirmed"


def test_a_report_written_is_the_last_step(tmp_path: Path) -> None:
    run_dir, steps, _ = started(tmp_path)
    run_dir.finish(RunStatus.COMPLETE)
    target = write_report(Commission(run_dir, steps=steps), lambda path: f"<html>{path.name}</html>")
    assert target.read_text() == f"<html>{run_dir.path.name}</html>"
    assert recorded(run_dir) == ("complete", [("report", "done", str(target))])


def test_a_report_cut_by_a_signal_leaves_the_run_interrupted(tmp_path: Path) -> None:
    run_dir, steps, _ = started(tmp_path)
    run_dir.finish(RunStatus.COMPLETE)

    def render(_: Path) -> str:
        raise Interrupted("stopped by SIGTERM")

    with pytest.raises(Interrupted):
        write_report(Commission(run_dir, steps=steps), render)
    status, kept = recorded(run_dir)
    assert status == "interrupted"
    assert kept == [("report", "interrupted", "stopped by SIGTERM; report.html not written")]
    assert not (run_dir.path / "report.html").exists()
    reason = json.loads((run_dir.path / "run.json").read_text())["reason"]
    assert reason == "stopped by SIGTERM in the report step: report.html not written"


def test_a_report_that_cannot_be_written_fails_the_run_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, steps, _ = started(tmp_path)
    run_dir.finish(RunStatus.COMPLETE)

    def full(name: str, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_dir, "write_text", full)
    with pytest.raises(WirespeedError) as raised:
        write_report(Commission(run_dir, steps=steps), lambda _: "<html/>")
    assert "\n" not in raised.value.message and "No space left on device" in raised.value.message
    status, kept = recorded(run_dir)
    assert status == "failed" and kept[-1][:2] == ("report", "failed")


def test_a_step_added_to_the_list_is_numbered_run_and_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commission is its list of steps: one added there (here, in place of the eight) runs in turn, is said as
    [n/total] and recorded; an `after_fix` step is recorded skipped when nothing changed; a Stop ends the run
    `failed` with the stopping step's own line."""
    import contextlib

    from wirespeed.engine import commission as engine

    ran: list[str] = []

    def step(name: str, after_fix: bool = False, stop: bool = False) -> engine.CommissionStep:
        def run(state: object) -> tuple[StepStatus, str]:
            ran.append(name)
            if stop:
                raise Stop("the long reason", ["do this by hand"], detail="short")
            return StepStatus.DONE, f"{name} done"

        return engine.CommissionStep(name, lambda s: f"doing {name}", run, after_fix=after_fix)

    class Remote:
        owned = staticmethod(contextlib.nullcontext)

    monkeypatch.setattr(engine, "COMMISSION_STEPS", (step("a"), step("b", after_fix=True), step("c", stop=True)))
    run_dir, _, _ = started(tmp_path)
    said: list[str] = []
    done = engine.commission(Remote(), engine.CommissionOptions(), run_dir, say=said.append,  # type: ignore[arg-type]
                             confirm=lambda plan, notes: False)  # fmt: skip
    assert ran == ["a", "c"]
    status, kept = recorded(run_dir)
    assert kept == [("a", "done", "a done"), ("b", "skipped", "nothing was changed"), ("c", "stopped", "short")]
    assert status == "failed" and done.stopped == ["do this by hand"] and done.reason == "stopped: the long reason"
    assert said[:2] == ["[1/4] a: doing a", "[1/4] a: done: a done"]
