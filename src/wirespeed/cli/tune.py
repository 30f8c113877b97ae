"""`wirespeed tune nccl`: search the NCCL settings for the transport in use, within a time budget, and say how sure
the answer is. Thin: options checked, the engine's search run, its record shown."""

from __future__ import annotations

import re
from pathlib import Path

import click

from wirespeed.cli.bench import live_flags, live_view, wait_option
from wirespeed.cli.common import (
    Count,
    Ctx,
    Seconds,
    cluster_options,
    json_option,
    pass_ctx,
    resolve_remote,
    runs_option,
)
from wirespeed.cli.output import Output
from wirespeed.core.errors import ExitStatus, UsageError
from wirespeed.core.records.results import NotRunnable

MAX_BUDGET_S = 7 * 86400  # a week: a search meant to run longer is a campaign, not a command


def parse_budget(text: str) -> float:
    """`10m`, `90s`, `1h`, `600` (seconds) -> seconds, above zero and at most a week."""
    match = re.fullmatch(r"\s*(\d{1,12}(?:\.\d{1,12})?)\s*([smh]?)\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise UsageError(f"--budget {text[:40]!r}: not a duration", hint="e.g. --budget 10m, 90s or 1h")
    seconds = float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]
    if seconds > MAX_BUDGET_S:
        raise UsageError(f"--budget {text[:40]!r}: more than a week ({MAX_BUDGET_S} s)", hint="e.g. --budget 1h")
    return seconds


@click.group("tune")
def tune_group() -> None:
    """Search settings that decide how fast a layer runs, measured on the cluster."""


@tune_group.command("nccl")
@cluster_options
@click.option("--collective", default="sendrecv", show_default=True, help="nccl-tests collective to tune.")
@click.option("--size", default="1G", show_default=True, help="Message size (capped by free memory).")
@click.option("--budget", default="10m", show_default=True, help="Time for the search (s, m or h).")
@click.option("--repeats", type=Count(2, 20), default=3, show_default=True,
              help="Runs of each finalist (the defaults get at least 5).")  # fmt: skip
@click.option("--iters", type=Count(1, 10000), default=10, show_default=True, help="nccl-tests -n per run.")
@click.option("--interval", type=Seconds(10, low=0.1), default=0.5, show_default=True,
              help="Seconds between counter samples during the confirming rung.")  # fmt: skip
@click.option("--env", "env", multiple=True, metavar="NAME[=VALUE]",
              help="An environment variable for every run, defaults included. Repeatable.")  # fmt: skip
@click.option(
    "--save",
    is_flag=True,
    help="Write the winning settings into the cluster file's [nccl.env] (bench nccl then uses them).",
)
@live_flags
@wait_option
@runs_option
@json_option
@pass_ctx
def tune_nccl_cmd(
    ctx: Ctx, /, cluster_file: Path | None, hosts: str | None, user: str | None, collective: str, size: str,
    budget: str, repeats: int, iters: int, interval: float, env: tuple[str, ...], save: bool, no_live: bool,
    halves: bool, wait_lock: bool, wait_limit_s: float, runs_dir: Path, json_mode: bool,
) -> ExitStatus:  # fmt: skip
    """Find the NCCL settings that fill the wire. Runs nccl-tests at one message size: a warm-up, the defaults
    several times (their spread is the noise), then the settings that matter for the transport NCCL used (sockets:
    threads x sockets per thread, channels; InfiniBand/RoCE: QPs per connection, channels per peer, merged NICs),
    only those the NCCL version reads, coarse first, then more runs of the best. A setting wins only when its median
    busbw beats the defaults' by more than the defaults' own spread. The winner (or the defaults) then runs once
    more as the NCCL rung, with the wire sampled. Nothing on the nodes is changed.

    Exit status: 0 a setting won; 1 none beat the defaults beyond noise; 3 nothing could be measured; 130
    interrupted (what was measured is kept)."""
    from wirespeed.adapters.signals import signals_interrupt
    from wirespeed.cli.bench import shared_options
    from wirespeed.core.fabric.units import parse_size_bytes
    from wirespeed.core.records.tune import cluster_toml_lines, export_lines, label
    from wirespeed.engine import bench, discover
    from wirespeed.engine import tune as engine
    from wirespeed.engine.benchlock import cluster_lock
    from wirespeed.engine.live import LiveBoard
    from wirespeed.engine.rundir import ending

    out = ctx.output(json_mode)
    if not re.fullmatch(r"[a-z_]+", collective):
        raise UsageError(f"--collective {collective!r}: not a collective name", hint="e.g. sendrecv or all_reduce")
    # the bench options the run's record keeps (and their checks: sizes, --env), for the one collective at one size
    base = shared_options(seconds=5, interval=interval, streams=2, bidir=False, collectives=collective, min_size=size,
                          max_size=size, iters=iters, env=env, nccl_timeout=900)  # fmt: skip
    options = engine.TuneOptions(collective, parse_size_bytes(size), parse_budget(budget), repeats,
                                 max(5, repeats), iters, env=base.env)  # fmt: skip
    remote = resolve_remote(out, cluster_file, hosts, user)

    def said(text: str) -> None:
        out.message(f"wirespeed: {text}")

    with remote.owned(), cluster_lock(remote, "tune nccl", wait=wait_lock, say=said, wait_s=wait_limit_s):
        found = discover.discover_live(remote, probe=False)
        for reason in found.errors.values():
            said(reason)
        nccl = engine.plan(remote, found, options)
        if isinstance(nccl, NotRunnable):
            said(f"cannot tune: {nccl.reason} (fix: {nccl.fix})")
            return ExitStatus.NOT_MEASURED
        run_dir = bench.start(remote, found, "nccl", base, runs_dir, ctx.argv)
        said(f"run {run_dir.name} in {run_dir.path}: tuning {collective} at {size} for at most {budget}")
        board = LiveBoard("tune nccl", interval, steps=[f"nccl-{collective}"])
        board.show_halves(halves)
        result = None
        with signals_interrupt(), ending(run_dir) as end:
            search = engine.Search(remote, nccl, options, run_dir, said)
            try:
                result = search.run()
            finally:
                if result is None:
                    search.finish("interrupted: the runs so far are kept", cut=True)
            what = label(result.best) if result.best else "the defaults (nothing beat them beyond noise)"
            said(f"tune: {len(result.trials)} runs in {sum(t.seconds for t in result.trials):.0f} s; "
                 f"the NCCL rung with {what} ...")  # fmt: skip
            with live_view(out, board, live=not (no_live or json_mode)):
                confirmed = engine.confirm(remote, found, result, options, run_dir, interval, board)
        if result is None or end.status.value != "complete":
            said(f"{end.status.value}: what was measured is in {run_dir.path}")
            return ExitStatus.INTERRUPTED
    check = engine.judge_best(result, confirmed)
    if json_mode:
        out.data({"run": str(run_dir.path), **result.to_json(), "confirmed": confirmed.to_json(), "check": check})
    else:
        out.console.print(result.answer(), markup=False, highlight=False)
        for line in result.left_out:
            out.message(f"  not tried: {line}")
        if result.best:
            out.console.print("\n".join(["", *export_lines(result.best), "", "# or in the cluster file:",
                                         *cluster_toml_lines(result.best)]), markup=False, highlight=False)  # fmt: skip
        if check:
            out.message(f"wirespeed: {check}")
        if confirmed.ceiling is not None:
            evidence = "; ".join(confirmed.ceiling.evidence[:3])
            out.message(f"wirespeed: at the wire with {'these' if result.best else 'the default'} settings: "
                        f"{confirmed.forward_gbps or 0:.2f} Gb/s per direction, ceiling {confirmed.ceiling.name}: "
                        f"{evidence}")  # fmt: skip
        out.message(f"wirespeed: results in {run_dir.path} (`wirespeed report` shows every candidate)")
    if save and result.best:
        _save(out, remote.cluster.source, result.best)
    return ExitStatus.OK if result.best else ExitStatus.FINDING


def _save(out: Output, source: str, best: tuple[tuple[str, str], ...]) -> None:
    """The winner into the cluster file's [nccl.env]; the rest of the file, comments included, as it was."""
    from wirespeed.core.cluster.inventory import with_nccl_env

    path = Path(source)
    if not path.is_file():
        out.message(f"wirespeed: no cluster file to save into ({source}): use the export lines above")
        return
    from wirespeed.adapters import files

    files.write_atomic(path, with_nccl_env(path.read_text(), best, source))  # renamed into place, never through a link
    out.message(f"wirespeed: wrote [nccl.env] {' '.join(f'{k}={v}' for k, v in best)} into {path}")
