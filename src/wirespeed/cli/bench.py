"""`wirespeed bench`: the bandwidth ladder, and `bench matrix` over every pair of nodes. Thin: the options checked,
the engine run, and the run's own records rendered (what is printed is what the run directory holds)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

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
from wirespeed.core.records.matrix import MatrixCell
from wirespeed.core.records.results import RungStatus
from wirespeed.core.records.run import Run, RunStatus, takeaway
from wirespeed.engine import rungs
from wirespeed.ui import render

if TYPE_CHECKING:
    from wirespeed.cli.screen import LiveScreen, PlainLines
    from wirespeed.engine.live import LiveBoard

MATRIX = "matrix"


def bench_flags(func: Any) -> Any:
    """The options every rung shares, for `bench` and `commission` alike."""
    for option in reversed(_FLAGS):
        func = option(func)
    return func


_FLAGS = (
    click.option("--seconds", type=Count(2, 3600), default=5, show_default=True,
                 help="Seconds each measurement runs (TCP, RDMA, each half of tcp-lat, each matrix round)."),
    click.option("--streams", type=Count(2, 128), default=16, show_default=True,
                 help="Streams of tcp-multi."),
    click.option("--bidir", is_flag=True, help="Both directions at once (iperf3 --bidir, perftest -b): full duplex."),
    click.option("--interval", type=Seconds(10, low=0.1), default=0.5, show_default=True,
                 help="Seconds between counter samples at the wire, for every rung."),
    click.option("--collectives", default="sendrecv,all_gather,all_reduce", show_default=True,
                 help="nccl-tests collectives of the nccl rung, comma-separated."),
    click.option("--min-size", default="1M", show_default=True, help="Smallest NCCL message (nccl-tests -b)."),
    click.option("--max-size", default="1G", show_default=True,
                 help="Largest NCCL message (-e); capped by free memory."),
    click.option("--iters", type=Count(1, 10000), default=20, show_default=True, help="nccl-tests -n."),
    click.option("--env", "env", multiple=True, metavar="NAME[=VALUE]",
                 help="An environment variable for every rank (mpirun -x); wins over what wirespeed derives. "
                 "Repeatable."),
    click.option("--nccl-timeout", type=Count(10, 86400), default=900, show_default=True, help="Seconds."),
)  # fmt: skip

_wait_options = (
    click.option("--wait", "wait_lock", is_flag=True,
                 help="When another bench or commission holds the cluster, queue behind it instead of refusing."),
    click.option("--wait-limit", "wait_limit_s", type=Seconds(86400), default=3600.0, show_default=True,
                 help="Seconds --wait queues at most; then it refuses as without --wait (exit 3)."),
)  # fmt: skip


def wait_option(func: Any) -> Any:
    """--wait and --wait-limit: queue behind another measurement, for a bounded time."""
    for option in reversed(_wait_options):
        func = option(func)
    return func


live_options = (
    click.option("--no-live", "no_live", is_flag=True,
                 help="Plain progress lines instead of the live view (a pipe or a log gets them anyway)."),
    click.option("--halves", is_flag=True, help="Show every half under its cable in the live view (key h)."),
)  # fmt: skip


def live_flags(func: Any) -> Any:
    """--no-live and --halves: how the live view shows a run."""
    for option in reversed(live_options):
        func = option(func)
    return func


@contextlib.contextmanager
def live_view(out: Output, board: LiveBoard, live: bool) -> Iterator[LiveScreen | PlainLines]:
    """The board shown while the block runs: the full screen on a terminal when `live`, else plain lines. What was
    said while the screen was up is printed after it, in order, however the block ends."""
    from wirespeed.cli.screen import LiveScreen, show

    display = show(out.console, board, out.message, live)
    try:
        with display:
            yield display
    finally:
        if isinstance(display, LiveScreen):
            for line in display.said:
                out.message(line)


def shared_options(
    seconds: int, interval: float, streams: int, bidir: bool, collectives: str, min_size: str, max_size: str,
    iters: int, env: tuple[str, ...], nccl_timeout: int,
) -> rungs.BenchOptions:  # fmt: skip
    """The shared options of every rung, each one checked with a one-line error and an example."""
    from wirespeed.core.fabric.units import parse_size_bytes

    chosen = [c.strip() for c in collectives.split(",") if c.strip()]
    if not chosen or any(not re.fullmatch(r"[a-z_]+", c) for c in chosen):
        raise UsageError(f"--collectives {collectives!r}: not collective names", hint="e.g. sendrecv,all_reduce")
    low, high = parse_size_bytes(min_size), parse_size_bytes(max_size)
    if low > high:
        raise UsageError(f"--min-size {min_size} is above --max-size {max_size}",
                         hint="e.g. --min-size 1M --max-size 1G")  # fmt: skip
    env_pairs = parse_env(env)
    return rungs.BenchOptions(
        seconds=seconds, interval_s=interval, bidir=bidir, streams=streams, env=tuple(env_pairs),
        collectives=tuple(chosen), min_bytes=low, max_bytes=high, iterations=iters, nccl_timeout_s=float(nccl_timeout),
    )  # fmt: skip


def parse_env(env: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """`--env NAME=VALUE` (or NAME: the launcher's value) for every rank, each checked with a one-line error."""
    pairs: list[tuple[str, str | None]] = []
    for item in env:
        name, sep, value = item.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UsageError(f"--env {item!r}: not NAME=VALUE or NAME", hint="e.g. --env NCCL_IB_DISABLE=1")
        pairs.append((name, value if sep else None))
    return pairs


def exit_status(run: Run) -> ExitStatus:
    """130 when interrupted; 1 when a rung or a matrix cell failed or the matrix flagged a cell or a half; 3 when
    nothing was measured (every rung skipped); else 0."""
    if run.status is RunStatus.INTERRUPTED:
        return ExitStatus.INTERRUPTED
    statuses = [r.status for r in run.rungs] + [m.status for m in run.matrices]
    flagged = any(o.kind in ("cell", "half") for m in run.matrices for o in m.outliers)
    if RungStatus.FAILED in statuses or flagged or run.status is RunStatus.FAILED or run.problems:
        return ExitStatus.FINDING
    if not statuses or all(s is RungStatus.SKIPPED for s in statuses):
        return ExitStatus.NOT_MEASURED
    return ExitStatus.OK


def _show(out: Output, run: Run, path: Path) -> None:
    from wirespeed.ui.matrix import matrix_view

    if run.rungs:
        terminal = out.console.is_terminal  # piped: every note whole, interface lists unfolded
        out.console.print(render.takeaway_table(takeaway(run.rungs), fold=terminal), soft_wrap=not terminal)
    for r in run.rungs:
        for line in r.ceiling.evidence[1:] if r.ceiling else ():
            out.message(f"  {r.rung}: {line}")
    for matrix in run.matrices:
        out.console.print(matrix_view(matrix))
    for problem in run.problems:
        out.message(f"wirespeed: {path.name}: {problem}")
    if run.status is RunStatus.INTERRUPTED:
        missing = f"; not reached: {', '.join(run.not_reached)}" if run.not_reached else ""
        out.message(f"wirespeed: {run.state()}{missing}; what was measured is in {path}")
    else:
        out.message(f"wirespeed: results in {path}")


@click.command("bench")
@cluster_options
@click.argument("what", type=click.Choice([*rungs.names(), MATRIX]), default="ladder")
@click.option("--layer", "layers", type=click.Choice(["tcp", "rdma"]), multiple=True,
              help="bench matrix: measure this layer only (repeatable; default: tcp and rdma).")  # fmt: skip
@bench_flags
@live_flags
@wait_option
@runs_option
@click.option("--textfile", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Also write each rung's figures and ceiling (and each `bench matrix` cell) to "
              "DIR/wirespeed_bench.prom (the node exporter's textfile format), replacing the last "
              "bench's.")  # fmt: skip
@json_option
@pass_ctx
def bench_cmd(
    ctx: Ctx,
    /,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    what: str,
    layers: tuple[str, ...],
    runs_dir: Path,
    json_mode: bool,
    no_live: bool,
    halves: bool,
    wait_lock: bool,
    wait_limit_s: float,
    textfile: Path | None,
    **flags: Any,
) -> ExitStatus:
    """Climb the bandwidth ladder: TCP (one stream, many streams, every half at once, latency per half), RDMA, and
    NCCL through nccl-tests and mpirun, each measured at the wire while it runs, with the ceiling it hit and the
    evidence. Results go to RUNS/<timestamp>/ as they come; a rung that cannot run says why and how to fix it.

    `bench matrix` measures every pair of nodes instead: round-robin rounds of disjoint pairs at once (N-1 rounds
    for N nodes), both directions at once on every half, TCP and (where present) RDMA; outliers are flagged.

    One measurement per cluster: a bench takes every node's lock first, and refuses (exit 3) with the holder's
    name while another bench or commission runs there (--wait queues behind it).

    Exit status: 0 measured; 1 a rung failed or the matrix flagged a cell or a half; 3 nothing could be measured
    (every rung skipped, or the cluster busy); 130 interrupted (what was measured is kept, and the run says so).

    On a terminal the run is shown live: per node and cable TX and RX at the wire against the line rate, NOW and
    PEAK, CPU, with the rung running and the seconds left above it (q or Ctrl-C stops, h shows the halves).
    Otherwise, or with --no-live: one plain line per sample interval."""
    from wirespeed.engine.benchlock import cluster_lock

    out = ctx.output(json_mode)
    options = shared_options(**flags)
    if layers and what != MATRIX:
        raise UsageError("--layer is for `bench matrix`", hint="e.g. wirespeed bench matrix --layer tcp")
    if layers:
        options = replace(options, matrix_layers=tuple(dict.fromkeys(layers)))
    remote = resolve_remote(out, cluster_file, hosts, user)
    said = lambda text: out.message(f"wirespeed: {text}")  # noqa: E731
    with remote.owned(), cluster_lock(remote, f"bench {what}", wait=wait_lock, say=said, wait_s=wait_limit_s):
        return _bench(ctx, out, remote, what, options, runs_dir, json_mode, no_live, halves, textfile)


def write_bench_textfile(out: Output, run: Run, directory: Path) -> None:
    """The run's rungs and matrix cells as DIR/wirespeed_bench.prom: a cron bench plots beside `watch --serve`'s
    metrics."""
    import time

    from wirespeed.adapters.prometheus import BENCH_TEXTFILE_NAME, write_families
    from wirespeed.core.metrics import bench_families

    families = bench_families(run.rungs, run=run.name, nodes=run.nodes, finished_s=time.time(), matrices=run.matrices)
    path = write_families(directory, BENCH_TEXTFILE_NAME, families)
    out.message(f"wirespeed: Prometheus textfile {path}")


def _bench(
    ctx: Ctx, out: Output, remote: Any, what: str, options: rungs.BenchOptions, runs_dir: Path, json_mode: bool,
    no_live: bool, halves: bool, textfile: Path | None = None,
) -> ExitStatus:  # fmt: skip
    """The bench itself, with every node's lock held."""
    from wirespeed.adapters.signals import signals_interrupt
    from wirespeed.engine import bench, discover
    from wirespeed.engine.live import LiveBoard
    from wirespeed.engine.runs import load_run

    found = discover.discover_live(remote, probe=what != "nccl")
    for reason in found.errors.values():
        out.message(f"wirespeed: {reason}")
    run_dir = bench.start(remote, found, what, options, runs_dir, ctx.argv)
    out.message(f"wirespeed: run {run_dir.name} in {run_dir.path}")

    board = LiveBoard(f"bench {what}", options.interval_s, steps=bench.planned(what, options))
    board.show_halves(halves)
    with signals_interrupt(), live_view(out, board, live=not (no_live or json_mode)) as display:

        def said(text: str) -> None:
            display.say(f"wirespeed: {text}")

        def on_round(layer: str, number: int, total: int, cells: list[MatrixCell]) -> None:
            shown = ", ".join((f"{c.source}->{c.target} {c.tool_gbps:.2f}" if c.tool_gbps is not None
                               else f"{c.source}->{c.target} failed") + (f" ({c.route})" if c.relays else "")
                              for c in cells)  # fmt: skip
            said(f"matrix {layer} round {number}/{total}: {shown}")

        bench.bench(remote, found, what, options, run_dir, say=said, on_round=on_round, board=board)
    run = load_run(run_dir.path)  # what is shown is what the run directory holds
    if textfile is not None:
        write_bench_textfile(out, run, textfile)
    if json_mode:
        out.data({"run": str(run_dir.path), **run.to_json()})
    else:
        _show(out, run, run_dir.path)
    return exit_status(run)
