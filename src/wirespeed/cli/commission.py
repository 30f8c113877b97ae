"""`wirespeed commission`: the whole job in one command, from the cluster named to its report. Thin: the options
checked, the engine's steps run with their progress said as they go, the fixes asked for, and the run's own
records rendered (before and after, side by side) with the report's path last."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from wirespeed.cli.bench import bench_flags, live_flags, live_view, shared_options, wait_option
from wirespeed.cli.common import (
    Ctx,
    Seconds,
    cluster_options,
    json_option,
    pass_ctx,
    resolve_remote,
    runs_option,
)
from wirespeed.cli.output import Output
from wirespeed.core.errors import ExitStatus
from wirespeed.core.fixplan import Operation
from wirespeed.core.records.report import RunReport
from wirespeed.core.records.results import RungStatus
from wirespeed.core.records.run import Run, RunStatus, phase_rows, takeaway
from wirespeed.engine import rungs
from wirespeed.engine.commission import Confirm
from wirespeed.ui import render


def exit_status(run: Run, fix_failed: bool) -> ExitStatus:
    """130 interrupted; 1 stopped, a rung failed or a fix failed; 3 nothing measured; else 0."""
    if run.status is RunStatus.INTERRUPTED:
        return ExitStatus.INTERRUPTED
    if run.status is RunStatus.FAILED or fix_failed or any(r.status is RungStatus.FAILED for r in run.rungs):
        return ExitStatus.FINDING
    if not any(r.status is RungStatus.RAN for r in run.rungs):
        return ExitStatus.NOT_MEASURED
    return ExitStatus.OK


def _ask(out: Output, yes: bool) -> Confirm:
    """Whether to apply the fixes: --yes says so; a terminal is asked, with the plan shown; otherwise no."""
    from wirespeed.core.fixplan import FixPlan
    from wirespeed.ui.fix import fix_plan_view

    def confirm(plan: dict[str, list[Operation]], notes: dict[str, list[str]]) -> bool:
        out.console.print(fix_plan_view(FixPlan(plan, notes=notes)))
        if yes:
            return True
        if not sys.stdin.isatty():
            out.message("wirespeed: not applied: no terminal to ask (run again with --yes to apply, --no-fix to skip)")
            return False
        return click.confirm("Apply these changes (each network change rolls back unless the node still answers)?")

    return confirm


def _ask_setup(yes: bool) -> Callable[[int], bool]:
    """Whether to apply setup's plan (shown just before): --yes says so; a terminal is asked; otherwise no (and
    setup says how to apply it)."""

    def confirm(steps: int) -> bool:
        return yes or (sys.stdin.isatty() and click.confirm(f"Install and build these {steps} step(s) now?"))

    return confirm


def _write_junit(path: Path, run: Run, report: RunReport) -> None:
    """The checks as the run left the cluster (after the fixes, where they ran) and the last phase's rungs."""
    from wirespeed.adapters import files
    from wirespeed.core.junit import commission_junit

    last = "after" if run.in_phase("after") else None
    rungs = [r for r in run.rungs if last is None or r.phase == last]
    reason = run.record.reason if run.record is not None else None
    files.write_atomic(path, commission_junit(report.checks_after or report.checks, rungs, run.status.value, reason))


@click.command("commission")
@cluster_options
@click.option("--yes", is_flag=True, help="Apply setup's plan (missing tools) and the fixes without asking.")
@click.option("--no-fix", is_flag=True, help="Measure the cluster as it is; change nothing, install nothing.")
@click.option("--rungs", "what", type=click.Choice(rungs.names()), default="ladder", show_default=True,
              help="Which rungs to climb: the whole ladder, a layer, or one rung.")  # fmt: skip
@bench_flags
@live_flags
@wait_option
@click.option("--rollback-after", type=Seconds(3600, low=1), default=20.0, show_default=True,
              help="Seconds a node waits for confirmation before undoing a network change by itself.")  # fmt: skip
@runs_option
@click.option("--junit", type=click.Path(path_type=Path), default=None,
              help="Also write JUnit XML for CI: a test case per check (as the run left it) and per rung.")  # fmt: skip
@click.option("--textfile", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Also write every rung's figures and ceiling, before and after, to DIR/wirespeed_bench.prom (the "
                   "node exporter's textfile format).")  # fmt: skip
@json_option
@pass_ctx
def commission_cmd(
    ctx: Ctx,
    /,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    yes: bool,
    no_fix: bool,
    what: str,
    rollback_after: float,
    runs_dir: Path,
    junit: Path | None,
    textfile: Path | None,
    json_mode: bool,
    no_live: bool,
    halves: bool,
    wait_lock: bool,
    wait_limit_s: float,
    **flags: Any,
) -> ExitStatus:
    """Commission the cluster: discover every node (wirespeed shipped where missing), find which rungs can run,
    install what the rungs lack (`setup`'s plan, asked first, or --yes), check every known pitfall, measure, fix
    what can be fixed (asked first, or --yes), check again, measure again, and write one report with every rung
    before and after the fixes. It stops, saying what to do by hand, when a
    node cannot be read, ssh between the nodes fails, or no rung can run.

    Exit status: 0 commissioned; 1 stopped, or a rung or a fix failed; 3 nothing could be measured; 130 interrupted
    (what was measured is kept, and the run says so)."""
    from wirespeed.adapters.signals import signals_interrupt
    from wirespeed.engine import commission as engine
    from wirespeed.engine.benchlock import cluster_lock
    from wirespeed.engine.live import LiveBoard
    from wirespeed.engine.report import load_report
    from wirespeed.engine.runs import load_run
    from wirespeed.ui import report as view

    out = ctx.output(json_mode)
    options = engine.CommissionOptions(shared_options(**flags), what, not no_fix, rollback_after)
    remote = resolve_remote(out, cluster_file, hosts, user)

    def said(text: str) -> None:
        out.message(f"wirespeed: {text}")

    # one measurement at a time
    with remote.owned(), cluster_lock(remote, "commission", wait=wait_lock, say=said, wait_s=wait_limit_s):
        run_dir = engine.start(remote, options, runs_dir, ctx.argv)
        out.message(
            f"wirespeed: commissioning {remote.cluster.name} ({', '.join(remote.cluster.names)}): run {run_dir.name}"
        )

        @contextlib.contextmanager
        def live(title: str, names: Sequence[str]) -> Iterator[tuple[LiveBoard | None, Callable[[str], None]]]:
            """Each bench phase shown live, as `bench` shows it; what it said printed after the screen is gone."""
            board = LiveBoard(f"commission · {title}", options.bench.interval_s, steps=names)
            board.show_halves(halves)
            with live_view(out, board, live=not (no_live or json_mode)) as display:
                yield board, lambda text: display.say(f"wirespeed: {text}")

        with signals_interrupt():
            done = engine.commission(remote, options, run_dir, say=said, confirm=_ask(out, yes),
                                     confirm_setup=_ask_setup(yes), live=live)  # fmt: skip
    with signals_interrupt():
        target = engine.write_report(done, lambda path: view.html(load_report(path)))
    run = load_run(run_dir.path)
    if junit is not None:
        _write_junit(junit, run, load_report(run_dir.path))
    if textfile is not None:
        from wirespeed.cli.bench import write_bench_textfile

        write_bench_textfile(out, run, textfile)
    if json_mode:
        out.data({"run": str(run_dir.path), **run.to_json(), "stopped": done.stopped, "report": str(target)})
    else:
        for line in done.stopped:
            out.message(f"wirespeed: to do by hand: {line}")
        terminal = out.console.is_terminal  # piped: every note whole, interface lists unfolded
        if run.in_phase("after"):
            out.console.print(render.phase_table(phase_rows(run), fold=terminal), soft_wrap=not terminal)
        elif run.rungs:
            out.console.print(render.takeaway_table(takeaway(run.rungs), fold=terminal), soft_wrap=not terminal)
        out.message(f"wirespeed: {run.state()}; the report: {target}")
    return exit_status(run, done.fix_failed)
