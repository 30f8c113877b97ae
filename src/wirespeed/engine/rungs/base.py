"""The rung contract (flent's one runner per tool, one module per rung kind): a rung plans from discovery, runs its
tool on the nodes while the wire is recorded, and diagnoses its ceiling; `run_rung` does the rest the same way for
every rung: the tools checked on the planned nodes before anything starts, the wire recorder, the timing, a failed
flow made a failed rung, an interrupted rung written with what it measured, and the record written to the run.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from wirespeed.core.fabric.board import step_figure
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.meter import layout_from_facts
from wirespeed.core.outcome import one_line
from wirespeed.core.records.options import BenchOptions
from wirespeed.core.records.results import (
    Ceiling,
    CollectiveSummary,
    FlowResult,
    Latency,
    NotRunnable,
    RungResult,
    RungStatus,
)
from wirespeed.engine.live import LiveBoard
from wirespeed.engine.progress import ticking
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.wire import WireRecorder


@dataclass
class RungContext:
    """Everything a rung may use, the same for every rung of a run."""

    remote: Remote
    discovery: Discovery
    options: BenchOptions
    run_dir: RunDirectory
    defaults: tuple[str, ...] = ()  # the checks' evidence of settings left at their defaults (MTU, TCP buffers)
    tick: Callable[[str], None] | None = None  # hears, every 2 s while a rung runs, what it is doing
    board: LiveBoard | None = None  # the live view: hears which rung runs and every interval at the wire
    earlier: tuple[RungResult, ...] = ()  # the rungs of this climb that ended before this one (the NCCL rung's RDMA)


@dataclass
class Measured:
    """What a rung has measured so far. A rung adds to it as results come in (from its clients' threads too), so
    that a rung cut short is written with everything that had finished."""

    flows: list[FlowResult] = field(default_factory=list)
    latency: list[Latency] = field(default_factory=list)
    collective: CollectiveSummary | None = None
    notes: list[str] = field(default_factory=list)
    failure: str | None = None  # the rung did not finish cleanly: one line


class Planned(Protocol):
    """A rung's plan: at least the nodes whose wire is recorded while it runs."""

    @property
    def nodes(self) -> Sequence[str]: ...


class Tool(Protocol):
    """What a rung needs to know of a tool module (`wirespeed.core.tools.*`) before it starts."""

    NAME: str
    INSTALL_HINT: str


class Rung(ABC):
    name: str
    layer: str  # "tcp", "rdma" or "nccl": what `bench tcp` and its kin select
    tools: tuple[Tool, ...] = ()  # checked on every planned node first: a missing one skips the rung with its fix
    settle_s: float = 1.0  # the first seconds of each node's samples, left out of the wire figures (start-up)

    @abstractmethod
    def plan(self, ctx: RungContext) -> Planned | NotRunnable:
        """What to run where, or exactly why the rung cannot run here and what would fix it."""

    @abstractmethod
    def run(self, ctx: RungContext, plan: Any, measured: Measured) -> None:
        """Run the tool on the nodes, adding results to `measured` as they come."""

    def expected_s(self, ctx: RungContext, plan: Any) -> float | None:
        """How long the rung should take, for the live view's "seconds left"; None where it cannot be known."""
        return None

    def diagnose(self, ctx: RungContext, plan: Any, result: RungResult) -> Ceiling | None:
        """The ceiling this rung hit, from its figures and the wire's; None where a rung has no ceiling."""
        return None


def missing_tool(ctx: RungContext, rung: Rung, nodes: Sequence[str]) -> NotRunnable | None:
    for node in nodes:
        facts = ctx.discovery.facts.get(node)
        for tool in rung.tools:
            found = next((t for t in facts.tools if t.name == tool.NAME), None) if facts else None
            if found is None or not isinstance(found.version, str):
                why = getattr(found.version, "reason", "not found") if found is not None else "not looked for"
                return NotRunnable(f"{node}: {tool.NAME} not found ({why})", tool.INSTALL_HINT)
    return None


@dataclass(frozen=True)
class PlannedRung:
    """A rung and the plan preflight made for it: the rung runs that plan, so it is made once."""

    rung: Rung
    plan: Planned

    @property
    def name(self) -> str:
        return self.rung.name


def plan_rung(rung: Rung, ctx: RungContext) -> Planned | NotRunnable:
    """The rung's plan, or why it cannot run: its own reasons first, then a tool missing on a planned node."""
    plan = rung.plan(ctx)
    if not isinstance(plan, NotRunnable):
        plan = missing_tool(ctx, rung, plan.nodes) or plan
    return plan


def preflight(ctx: RungContext, chosen: Sequence[Rung]) -> tuple[list[PlannedRung], list[tuple[str, NotRunnable]]]:
    """Every selected rung planned and its tools looked for on its nodes, before anything is measured: the ones
    that can run, with their plans, and why each other one cannot (with its fix)."""
    runnable: list[PlannedRung] = []
    skipped: list[tuple[str, NotRunnable]] = []
    for rung in chosen:
        plan = plan_rung(rung, ctx)
        if isinstance(plan, NotRunnable):
            skipped.append((rung.name, plan))
        else:
            runnable.append(PlannedRung(rung, plan))
    return runnable, skipped


def run_rung(rung: Rung, ctx: RungContext, plan: Planned | NotRunnable | None = None) -> RungResult:
    """Run the plan (preflight's; made here when none is given) while the wire is recorded, judge, and write the
    record, however the rung ends. A signal (KeyboardInterrupt) writes the rung as interrupted with what it
    measured, then goes on up."""
    if plan is None:
        plan = plan_rung(rung, ctx)
    if isinstance(plan, NotRunnable):
        return write_rung(ctx, RungResult(rung.name, RungStatus.SKIPPED, plan.reason, plan.fix))
    layouts = [layout_from_facts(ctx.discovery.facts[n]) for n in plan.nodes]
    measured = Measured()
    started = time.monotonic()
    samples = ctx.run_dir.open_text(f"{rung.name}.samples.jsonl")
    board = ctx.board
    if board is not None:
        board.start(rung.name, rung.expected_s(ctx, plan))
    with (
        WireRecorder(ctx.remote, layouts, ctx.options.interval_s, samples, board.view if board else None) as recorder,
        ticking(None if board else ctx.tick, lambda elapsed: _progress(rung.name, elapsed, recorder, measured)),
    ):
        try:
            rung.run(ctx, plan, measured)
        except KeyboardInterrupt as exc:
            cut = _assemble(rung, measured, recorder, started, since=0.0)  # cut short: every sample counts
            why = getattr(exc, "reason", None) or "interrupted (Ctrl-C)"
            write_rung(ctx, replace(cut, status=RungStatus.INTERRUPTED, reason=why))
            raise
    result = _assemble(rung, measured, recorder, started, since=rung.settle_s)
    if result.status is RungStatus.RAN:
        result = replace(result, ceiling=rung.diagnose(ctx, plan, result))
    return write_rung(ctx, result)


def write_rung(ctx: RungContext, result: RungResult) -> RungResult:
    """The rung's record written, and the live view told how it ended."""
    written = ctx.run_dir.rung(result)
    if ctx.board is not None:
        figure = step_figure(written.forward_gbps, written.p50_us, written.ceiling.name if written.ceiling else None)
        ctx.board.end(written.rung, written.status.value, figure)
    return written


def _progress(name: str, elapsed: float, recorder: WireRecorder, measured: Measured) -> str:
    """`tcp-halves: 4 s, at the wire now 3.96 Gb/s TX (2 of 4 flows done)`: the latest interval of every node."""
    latest = {view.node: view for view in list(recorder.views)[-4 * max(1, len(recorder.meter.layouts)) :]}
    tx = sum(c.tx_gbps or 0.0 for view in latest.values() for c in view.cables)
    done = f", {len(measured.flows)} flow(s) done" if measured.flows else ""
    return f"{name}: {elapsed:.0f} s, at the wire now {tx:.2f} Gb/s TX (all nodes){done}"


def _assemble(rung: Rung, measured: Measured, recorder: WireRecorder, started: float, since: float) -> RungResult:
    """The record of what was measured; a failed flow (or the rung's own failure) fails the rung, and what
    finished stays in it."""
    flows = tuple(measured.flows)
    failed = [f.error or f"{f.flow.label()}: no result" for f in flows if f.tool_gbps is None]
    reason = measured.failure or (one_line(failed) if failed else None)
    if reason is None and not flows and measured.collective is None and not measured.latency:
        reason = "no figure measured"
    return RungResult(
        rung=rung.name,
        status=RungStatus.FAILED if reason else RungStatus.RAN,
        reason=reason,
        flows=flows,
        wire=recorder.figures(since=since),
        duration_s=time.monotonic() - started,
        collective=measured.collective,
        latency=tuple(measured.latency),
        notes=tuple(measured.notes),
    )
