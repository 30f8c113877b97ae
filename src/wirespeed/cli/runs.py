"""What `bench` left behind: `runs`, `compare`, `baseline set` and `report`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from wirespeed.cli.common import CONTEXT, Ctx, Percent, json_option, pass_ctx, runs_option
from wirespeed.cli.output import Output
from wirespeed.core.errors import ExitStatus, UsageError, WirespeedError
from wirespeed.core.records.run import Run


def _problems(out: Output, run: Run) -> None:
    for problem in run.problems:
        out.message(f"wirespeed: {run.name}: {problem}")


@click.command("runs")
@runs_option
@json_option
@pass_ctx
def runs_cmd(ctx: Ctx, runs_dir: Path, json_mode: bool) -> ExitStatus:
    """The runs `wirespeed bench` left, oldest first: name, how it ended, nodes, and its headline. Any name shown
    here works where a command takes a run (so do a path, `latest` and `baseline`). Exit status 3 when a file of a
    run could not be read (each is named, one line)."""
    from rich.table import Table

    from wirespeed.core.records.run import headline
    from wirespeed.engine.runs import baseline_name, list_runs

    out = ctx.output(json_mode)
    found = list_runs(runs_dir)
    base = baseline_name(runs_dir)
    if json_mode:
        out.data([
            {"run": run.name, "baseline": run.name == base, "status": run.status.value, "state": run.state(),
             "nodes": list(run.nodes), "headline": headline(run), "rungs": run.summary(),
             "problems": list(run.problems)}
            for run in found
        ])  # fmt: skip
    elif not found:
        out.message(f"wirespeed: no runs in {runs_dir} (wirespeed bench writes them)")
    else:
        table = Table("run", "ended", "nodes", "headline")
        for run in found:
            mark = " (baseline)" if run.name == base else ""
            table.add_row(run.name + mark, run.state(), ", ".join(run.nodes), headline(run))
        out.console.print(table)
    for run in found:
        _problems(out, run)
    return ExitStatus.NOT_MEASURED if any(run.problems for run in found) else ExitStatus.OK


@click.group("baseline", context_settings=CONTEXT)
def baseline_group() -> None:
    """The run `compare` measures against by default."""


@baseline_group.command("set")
@click.argument("run")
@runs_option
@pass_ctx
def baseline_set(ctx: Ctx, run: str, runs_dir: Path) -> None:
    """Mark RUN (a name `wirespeed runs` prints, a path, or `latest`) as the baseline."""
    from wirespeed.engine.runs import resolve_run, set_baseline

    chosen = resolve_run(runs_dir, run)
    marker = set_baseline(runs_dir, chosen)
    ctx.output(False).message(f"wirespeed: baseline is {chosen.name} ({marker})")


@click.command("compare")
@click.argument("runs", nargs=-1)
@click.option("--threshold", type=Percent(), default=5.0, show_default=True,
              help="Percent a figure may get worse before it counts (lower bandwidth, higher latency).")  # fmt: skip
@runs_option
@json_option
@pass_ctx
def compare_cmd(ctx: Ctx, runs: tuple[str, ...], threshold: float, runs_dir: Path, json_mode: bool) -> ExitStatus:
    """What changed between two runs (RUN_A RUN_B, or the baseline and RUN_B; each a name `wirespeed runs` prints, a
    path, `latest` or `baseline`): per rung, per NCCL message size, per matrix cell and per matrix half. Exit
    status 1 when a figure got worse by more than the threshold or something measured before no longer is; 3 when
    a file of either run could not be read (named, one line each), or a record it would compare is damaged (a figure
    no measurement can have: NaN, infinite, negative, absurdly large): that rung is named and never compared."""
    from rich.table import Table

    from wirespeed.core.records.compare import DAMAGED, compare_runs, regressions
    from wirespeed.core.records.spread import NOISE
    from wirespeed.engine.runs import BASELINE_NAME, load_run, resolve_run

    if len(runs) not in (1, 2):
        raise UsageError("compare takes RUN_A RUN_B, or RUN_B alone to compare with the baseline",
                         hint="wirespeed runs lists them")  # fmt: skip
    out = ctx.output(json_mode)
    names = (BASELINE_NAME, runs[0]) if len(runs) == 1 else runs
    before, after = (load_run(resolve_run(runs_dir, name)) for name in names)
    changes = compare_runs(before, after)
    worse = regressions(changes, threshold)
    if json_mode:
        out.data({
            "before": before.name, "after": after.name, "threshold_percent": threshold,
            "changes": [c.to_json(worse=c in worse) for c in changes],
            "problems": {before.name: list(before.problems), after.name: list(after.problems)},
            "damaged": {before.name: [d.key for d in before.damaged], after.name: [d.key for d in after.damaged]},
        })  # fmt: skip
    else:
        table = Table("what", "measure", before.name, after.name, "change", title=f"worse: > {threshold:g}%")
        for c in changes:
            shown = "-" if c.percent is None else f"{c.percent:+.1f}%"
            shown = f"{shown} ({NOISE})" if c.within_noise else shown
            if c.status_before != c.status_after:
                shown += f" ({c.status_before} -> {c.status_after})"
            style = "red" if c in worse else None
            table.add_row(c.subject, c.measure, "-" if c.before is None else f"{c.before:.3f}",
                          "-" if c.after is None else f"{c.after:.3f}", shown, style=style)  # fmt: skip
        out.console.print(table)
        for c in worse:
            out.message(f"wirespeed: worse: {c.subject} {c.measure}: {_figure(c.before)} -> {_figure(c.after)}")
        out.message(f"wirespeed: {len(worse)} figure(s) worse by more than {threshold:g}%")
    for run in (before, after):
        _problems(out, run)
    damaged: list[str] = []  # one line per record (or imported figure) of either run that holds a damaged figure
    for c in changes:
        for run, status in ((before, c.status_before), (after, c.status_after)):
            label = next((d.label for d in run.damaged if d.covers(c.subject)), c.subject)
            line = f"wirespeed: not compared: {label} in {run.name} is damaged"
            if status == DAMAGED and line not in damaged:
                damaged.append(line)
    for line in damaged:
        out.message(line)
    if worse:
        return ExitStatus.FINDING
    return ExitStatus.NOT_MEASURED if before.problems or after.problems or damaged else ExitStatus.OK


def _figure(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.3f}"


@click.command("report")
@click.argument("run", default="latest")
@click.option("--format", "fmt", type=click.Choice(["html", "md", "json"]), default="html", show_default=True)
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), default=None,
              help="File to write ('-': stdout). Default: RUN/report.html, or stdout for md and json.")  # fmt: skip
@runs_option
@pass_ctx
def report_cmd(ctx: Ctx, run: str, fmt: str, output: Path | None, runs_dir: Path) -> ExitStatus:
    """The report of one run (a name `wirespeed runs` prints, a path, `latest` (the default) or `baseline`): the
    takeaway first, every rung with its ceiling and evidence, plots of the wire and the CPUs over time, NCCL busbw
    against message size, each half's bandwidth, the matrices, the checks, discovery and cabling, the environment.
    HTML is one self-contained file. Exit status 3 when a file of the run could not be read (the report names it)."""
    from wirespeed.engine.report import load_report
    from wirespeed.engine.runs import resolve_run
    from wirespeed.ui import report as view

    out = ctx.output(False)
    path = resolve_run(runs_dir, run)
    report = load_report(path)
    if fmt == "json":
        text = json.dumps(report.to_json(), indent=2) + "\n"
    else:
        text = view.html(report) if fmt == "html" else view.markdown(report)
    target = output if output is not None else (path / "report.html" if fmt == "html" else Path("-"))
    if str(target) == "-":
        out.env.stdout.write(text)
        out.env.stdout.flush()
    else:
        from wirespeed.adapters import files

        try:
            files.write_atomic(target, text)  # a new file renamed into place: never through a planted link
        except files.Unwritable as exc:
            raise WirespeedError(exc.message, hint="-o FILE somewhere writable") from None
        out.message(f"wirespeed: report of {path.name} in {target}")
    for problem in report.problems:
        out.message(f"wirespeed: {path.name}: {problem}")
    return ExitStatus.NOT_MEASURED if report.problems else ExitStatus.OK
