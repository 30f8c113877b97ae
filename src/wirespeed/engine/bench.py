"""`wirespeed bench`: one run, one record. The run directory and `run.json` come first (status `running`), then
each rung (or each matrix layer) in turn, its record written the moment it is known; `run.json` ends `complete`,
`interrupted` (a signal: what was measured is kept) or `failed` (the one-line reason), and every process started on
a node is stopped on the way out, however the run ends.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from wirespeed import __version__
from wirespeed.core.checks.model import CheckRun, CheckStatus
from wirespeed.core.errors import WirespeedError
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.records.matrix import MatrixCell, MatrixResult
from wirespeed.core.records.options import BenchOptions, RunOptions
from wirespeed.core.records.results import NotRunnable, RungResult, RungStatus
from wirespeed.core.records.run import NodeRef, RunRecord, RunStatus
from wirespeed.engine import rungs
from wirespeed.engine.live import LiveBoard
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory, ending, utc_now
from wirespeed.engine.rungs.base import PlannedRung, RungContext, preflight, run_rung, write_rung

MATRIX = "matrix"
DEFAULTS_CHECKS = ("mtu.host", "sysctl.tcp")


@dataclass
class BenchRun:
    """What a bench run left, for the command to show: the same records its run directory holds."""

    run_dir: RunDirectory
    results: list[RungResult] = field(default_factory=list)
    matrices: list[MatrixResult] = field(default_factory=list)
    status: RunStatus = RunStatus.RUNNING
    reason: str | None = None


def defaults_from_checks(run: CheckRun) -> tuple[str, ...]:
    """What the checks say is still at its default (MTU 1500, small TCP buffers): the `defaults` ceiling's evidence."""
    return tuple(
        f"{r.id}: {r.summary}"
        for r in run.results
        if r.id in DEFAULTS_CHECKS and r.status in (CheckStatus.FAIL, CheckStatus.WARN)
    )


def defaults_evidence(discovery: Discovery) -> tuple[str, ...]:
    from wirespeed.engine.checks import run_checks

    return defaults_from_checks(run_checks(discovery, list(DEFAULTS_CHECKS)))


def planned(what: str, options: BenchOptions) -> list[str]:
    """The names of what `bench WHAT` will measure, in order: the run's record keeps them, so a run that was cut
    short says what it did not reach."""
    if what == MATRIX:
        return [f"matrix-{layer}" for layer in options.matrix_layers]
    return [r.name for r in rungs.select(what, options.collectives)]


def start(
    remote: Remote, discovery: Discovery, what: str, options: BenchOptions, root: Path, command: Sequence[str]
) -> RunDirectory:
    """The run directory with its record (`running`), the discovery and the checks as the run found the cluster."""
    try:
        run_dir = RunDirectory(root)
    except OSError as exc:
        raise WirespeedError(f"{root}: cannot write the run directory: {exc.strerror or exc}",
                             hint="--runs DIR somewhere writable") from None  # fmt: skip
    run_dir.write_json("discovery.json", discovery.to_json())
    # The checks as this discovery saw them (passive: the active ones ping and ssh, `wirespeed check` runs those),
    # so the run's report shows what the cluster looked like when it was measured.
    from wirespeed.engine.checks import run_checks, select

    run_dir.write_json("checks.json", run_checks(discovery, select([], [])).record(active=False).to_json())
    run_dir.start(
        RunRecord(
            wirespeed_version=__version__,
            command=tuple(command),
            what=what,
            options=RunOptions(options),
            cluster=remote.cluster.name,
            nodes=tuple(NodeRef(n.name, n.host) for n in remote.cluster.nodes),
            started_utc=utc_now(),
            planned=tuple(planned(what, options)),
            host=socket.gethostname(),
            pid=os.getpid(),
        )
    )
    return run_dir


def bench(
    remote: Remote,
    discovery: Discovery,
    what: str,
    options: BenchOptions,
    run_dir: RunDirectory,
    *,
    say: Callable[[str], None] = lambda _: None,
    on_round: Callable[[str, int, int, list[MatrixCell]], None] | None = None,
    board: LiveBoard | None = None,
) -> BenchRun:
    """Climb the rungs of `what` (or the matrix layers) and end the run's record. A signal ends it `interrupted`
    and returns what was measured; any other error ends it `failed` and goes on up."""
    done = BenchRun(run_dir)
    with remote.owned(), ending(run_dir) as end:
        if what == MATRIX:
            from wirespeed.engine.matrix import run_matrix

            for layer in options.matrix_layers:
                say(f"matrix {layer} ...")

                def heard(number: int, total: int, cells: list[MatrixCell], layer: str = layer) -> None:
                    if on_round is not None:
                        on_round(layer, number, total, cells)

                done.matrices.append(run_matrix(remote, discovery, layer, replace(options, bidir=True), run_dir,
                                                on_round=heard, board=board))  # fmt: skip
        else:
            chosen = rungs.select(what, options.collectives)
            needs_defaults = any(r.layer in ("tcp", "rdma") for r in chosen)
            ctx = RungContext(remote, discovery, options, run_dir,
                              defaults_evidence(discovery) if needs_defaults else (), tick=say,
                              board=board)  # fmt: skip
            runnable, skipped = preflight(ctx, chosen)
            for name, why in skipped:
                say(f"{name} will not run: {why.reason} (fix: {why.fix})")
            done.results = climb(ctx, runnable, skipped, say)
    done.status, done.reason = end.status, end.reason
    return done


def climb(
    ctx: RungContext,
    runnable: Sequence[PlannedRung],
    skipped: Sequence[tuple[str, NotRunnable]],
    say: Callable[[str], None],
    indent: str = "",
) -> list[RungResult]:
    """The rungs preflight left: the skipped written first with their reason and fix (nothing ran for them), then
    each runnable one in turn, each written the moment it ends, each seeing the results before it (the NCCL rung
    holds its busbw against the RDMA rung's). A rung that did not run is said in one line."""
    results = [write_rung(ctx, RungResult(name, RungStatus.SKIPPED, why.reason, why.fix)) for name, why in skipped]
    for index, planned in enumerate(runnable, start=1):
        if ctx.board is None:  # the live view says which rung runs
            say(f"{indent}{planned.name} ({index} of {len(runnable)}) ...")
        result = run_rung(planned.rung, replace(ctx, earlier=tuple(results)), planned.plan)
        results.append(result)
        if result.status is not RungStatus.RAN:
            fix = f" (fix: {result.fix})" if result.fix else ""
            say(f"{indent}{result.rung} {result.status.value}: {result.reason}{fix}")
    return results
