"""`wirespeed commission`: the whole job as one run. Discover the nodes (the agent shipped where missing), find up
front which rungs can run where, check every known pitfall, measure before, fix what can be fixed (asked first),
check again, measure after, and write the report: one run directory whose `run.json` holds every step as it ends,
with the rungs measured before the fixes in `before/` and after them in `after/`.

It stops, with what to do by hand, where going on would measure nothing true: a node that cannot be read, no ssh
between the nodes (`ssh.mesh`), no rung that can run. Everything else the checks find is either fixed or shown
beside the figures it explains.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path

from wirespeed import __version__
from wirespeed.core.checks.model import CheckInput, CheckRun, CheckStatus
from wirespeed.core.cluster.become import HOW
from wirespeed.core.errors import WirespeedError
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import NEEDS_ROOT
from wirespeed.core.fixplan import Operation, plan_nodes
from wirespeed.core.records.fixrecord import FixRecord
from wirespeed.core.records.options import BenchOptions, RunOptions
from wirespeed.core.records.results import NotRunnable, RungStatus
from wirespeed.core.records.run import NodeRef, RunRecord, RunStatus, Step, StepStatus
from wirespeed.engine import checks as checking
from wirespeed.engine import fix as fixing
from wirespeed.engine import rungs
from wirespeed.engine import setup as setting_up
from wirespeed.engine.bench import climb, defaults_from_checks
from wirespeed.engine.discover import discover_live
from wirespeed.engine.live import LiveBoard
from wirespeed.engine.progress import still, ticking
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory, ending, utc_now
from wirespeed.engine.rungs.base import PlannedRung, Rung, RungContext, preflight

STOP_CHECKS = ("ssh.mesh",)  # no fix mends these, and no figure is true without them
PHASES = ("before", "after")


@dataclass
class CommissionOptions:
    bench: BenchOptions = field(default_factory=BenchOptions)
    what: str = "ladder"  # the rungs: `ladder`, a layer, or one rung (`--rungs`)
    fix: bool = True  # --no-fix: measure once, change nothing
    rollback_s: float = 20.0


@dataclass
class Commission:
    """What the command shows at the end; the run directory holds the same."""

    run_dir: RunDirectory
    status: RunStatus = RunStatus.RUNNING
    reason: str | None = None
    stopped: list[str] = field(default_factory=list)  # what to do by hand, one line each
    fixed: bool = False
    fix_failed: bool = False
    steps: _Steps | None = None  # the last step (the report) is the command's to write


class Stop(Exception):
    """A step found what makes the rest meaningless: the run ends `failed` with this reason and these lines."""

    def __init__(self, reason: str, todo: Sequence[str] = (), detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.todo = list(todo)
        self.detail = detail  # the stopped step's own line, where it says less than the reason


Confirm = Callable[[dict[str, list[Operation]], dict[str, list[str]]], bool]
ConfirmSetup = Callable[[int], bool]  # whether to apply setup's plan of this many steps
# The live view of one bench phase: given its title and its rungs, a context giving the board the rungs report to
# and what to say while it is shown (the display lives in the CLI; the engine only opens and closes it).
LivePhase = Callable[[str, Sequence[str]], AbstractContextManager[tuple[LiveBoard | None, Callable[[str], None]]]]


def start(remote: Remote, options: CommissionOptions, root: Path, command: Sequence[str]) -> RunDirectory:
    try:
        run_dir = RunDirectory(root)
    except OSError as exc:
        raise WirespeedError(f"{root}: cannot write the run directory: {exc.strerror or exc}",
                             hint="--runs DIR somewhere writable") from None  # fmt: skip
    chosen = [r.name for r in rungs.select(options.what, options.bench.collectives)]
    planned = [f"before/{name}" for name in chosen] + ([f"after/{name}" for name in chosen] if options.fix else [])
    run_dir.start(
        RunRecord(
            wirespeed_version=__version__, command=tuple(command), what="commission",
            options=RunOptions(options.bench, options.what, options.fix),
            cluster=remote.cluster.name, nodes=tuple(NodeRef(n.name, n.host) for n in remote.cluster.nodes),
            started_utc=utc_now(), planned=tuple(planned), host=socket.gethostname(), pid=os.getpid(),
            phases=PHASES if options.fix else PHASES[:1],
        )
    )  # fmt: skip
    return run_dir


def _total() -> int:
    """The steps a commission takes: its own, then the report."""
    return len(COMMISSION_STEPS) + 1


class _Steps:
    """Numbers the steps as they start (`[3/7] checks`), times them, and records each in the run as it ends."""

    def __init__(self, run_dir: RunDirectory, say: Callable[[str], None]) -> None:
        self.run_dir, self.say, self.number = run_dir, say, 0
        self.open: tuple[str, float] | None = None  # the step begun and not yet ended

    def begin(self, name: str, doing: str) -> float:
        self.number += 1
        started = time.monotonic()
        self.open = (name, started)  # before it is said: a signal that follows the line finds the step open
        if doing:
            self.say(f"[{self.number}/{_total()}] {name}: {doing}")
        return started

    def end(self, name: str, started: float, status: StepStatus, detail: str) -> None:
        self.open = None
        self.run_dir.step(Step(name, status, detail, time.monotonic() - started))
        self.say(f"[{self.number}/{_total()}] {name}: {status.value}{': ' + detail if detail else ''}")

    def cut(self, exc: BaseException, detail: str = "") -> None:
        """The step that was running when `exc` ended the run joins the record as cut: interrupted by a signal,
        or failed with the error's first line."""
        if self.open is None:
            return
        name, started = self.open
        if isinstance(exc, KeyboardInterrupt):
            status, why = StepStatus.INTERRUPTED, getattr(exc, "reason", None) or "interrupted (Ctrl-C)"
        elif isinstance(exc, Stop):
            status, why = StepStatus.STOPPED, exc.reason
        else:
            status, why = StepStatus.FAILED, (str(exc).splitlines() or [type(exc).__name__])[0]
        self.end(name, started, status, f"{why}; {detail}" if detail else why)


def _discover(remote: Remote, say: Callable[[str], None]) -> Discovery:
    count = len(remote.cluster.nodes)
    with ticking(say, still(f"reading {count} node(s) and probing the cabling")):
        found = discover_live(remote, probe=True)
    if found.errors:
        raise Stop(f"{len(found.errors)} node(s) could not be read", list(found.errors.values()))
    return found


def _checks(remote: Remote, found: Discovery, say: Callable[[str], None]) -> CheckRun:
    ids = checking.select([], [])
    with ticking(say, still("checking: MTU pings across every link, ssh between every pair, error counters")):
        active = checking.measure_active(remote, found, ids)
        run = checking.run_checks(found, ids, active, nccl_env=remote.cluster.nccl_env)
    for r in run.results:  # a check that could not read what it needs without root is named, never a quiet skip
        if NEEDS_ROOT in r.summary:
            say(f"    {r.id}: {r.summary}")
    return run


def _counts(run: CheckRun) -> str:
    counts = {status: sum(r.status is status for r in run.results) for status in CheckStatus}
    return ", ".join(f"{n} {status.value}" for status, n in counts.items() if n)


def _measure(
    ctx: RungContext,
    runnable: Sequence[PlannedRung],
    skipped: Sequence[tuple[str, NotRunnable]],
    say: Callable[[str], None],
    live: LivePhase,
    title: str,
) -> str:
    """The rungs preflight left, in turn, shown live: how many of them ran, in words for the step's line."""
    names = [name for name, _ in skipped] + [r.name for r in runnable]
    with live(title, names) as (board, shown):
        results = climb(replace(ctx, board=board), runnable, skipped, shown if board else say, indent="    ")
    return f"{sum(r.status is RungStatus.RAN for r in results)} of {len(results)} rung(s) ran"


@contextlib.contextmanager
def no_live_view(title: str, names: Sequence[str]) -> Iterator[tuple[LiveBoard | None, Callable[[str], None]]]:
    """No live view: the rungs say what they do through the run's own `say` (every two seconds)."""
    yield None, lambda _: None


def commission(
    remote: Remote,
    options: CommissionOptions,
    run_dir: RunDirectory,
    *,
    say: Callable[[str], None],
    confirm: Confirm,
    confirm_setup: ConfirmSetup = lambda _: False,
    live: LivePhase = no_live_view,
) -> Commission:
    """Every step in turn, each recorded as it ends; a signal ends the run `interrupted`, a `Stop` ends it `failed`
    with what to do by hand, and whatever else goes wrong ends it `failed` and goes on up."""
    steps = _Steps(run_dir, say)
    done = Commission(run_dir, steps=steps)
    state = _State(remote, options, run_dir, steps, done, say, confirm, confirm_setup, live)
    with remote.owned(), ending(run_dir) as end:
        try:
            for step in COMMISSION_STEPS:
                _take(step, state)
        except Stop as stop:
            steps.cut(stop)
            end.status, end.reason, done.stopped = RunStatus.FAILED, f"stopped: {stop.reason}", stop.todo
        except BaseException as exc:
            steps.cut(exc)
            raise
    done.status, done.reason = end.status, end.reason
    return done


@dataclass
class _State:
    """What the steps hand on to each other: the run's means (the nodes, the options, the run directory, how to
    ask and say) and what each step found (the discovery, the rungs that can run, the checks)."""

    remote: Remote
    options: CommissionOptions
    run_dir: RunDirectory
    steps: _Steps
    done: Commission
    say: Callable[[str], None]
    confirm: Confirm
    confirm_setup: ConfirmSetup
    live: LivePhase
    found: Discovery | None = None
    ctx: RungContext | None = None
    chosen: list[Rung] = field(default_factory=list)
    runnable: list[PlannedRung] = field(default_factory=list)
    skipped: list[tuple[str, NotRunnable]] = field(default_factory=list)
    checks: CheckRun | None = None
    changed: bool = False  # the fix changed the nodes: the steps after it run


Outcome = tuple[StepStatus, str]  # how a step ended, and its one line


@dataclass(frozen=True)
class CommissionStep:
    """One step of the commission: its name in the record, what it says as it starts, and what it does. A step
    with `after_fix` runs only when the fix changed the nodes (else it is recorded skipped: nothing changed)."""

    name: str
    doing: Callable[[_State], str]
    run: Callable[[_State], Outcome]
    after_fix: bool = False


def _take(step: CommissionStep, state: _State) -> None:
    """One step, recorded as it ends; a `Stop` records it stopped (with the step's own line where it has one)."""
    if step.after_fix and not state.changed:
        started = state.steps.begin(step.name, "")
        state.steps.end(step.name, started, StepStatus.SKIPPED, "nothing was changed")
        return
    started = state.steps.begin(step.name, step.doing(state))
    try:
        status, detail = step.run(state)
    except Stop as stop:
        state.steps.end(step.name, started, StepStatus.STOPPED, stop.detail or stop.reason)
        raise
    state.steps.end(step.name, started, status, detail)


def _discover_step(state: _State) -> Outcome:
    state.found = found = _discover(state.remote, state.say)
    state.run_dir.write_json("discovery.json", found.to_json())
    return StepStatus.DONE, f"{len(found.facts)} node(s), {len(found.cabling.links)} link(s)"


def _preflight_step(state: _State) -> Outcome:
    """Which rungs can run, and setup's offer of what is missing (applied with the fix's consent)."""
    remote, options, say, found = state.remote, state.options, state.say, state.found
    assert found is not None
    state.chosen = rungs.select(options.what, options.bench.collectives)
    state.ctx = RungContext(remote, found, options.bench, state.run_dir.phase_dir("before"), tick=say)
    _preflight(state)
    offered = setting_up.offer(remote, options.what, say)
    set_up = ""
    if offered is not None and offered.steps and options.fix:
        outcome = setting_up.run(remote, offered, say, confirm=state.confirm_setup, smoke_env=None)
        state.run_dir.write_json("setup.json", outcome.record(offered).to_json())
        set_up = f"; setup: {offered.steps} step(s) {'applied' if outcome.applied else 'not applied'}"
        set_up += f", {len(outcome.failed)} failed" if outcome.failed else ""
        if outcome.applied:  # the tools changed: read the nodes again, and what can run now
            state.found = _discover(remote, say)
            state.run_dir.write_json("discovery.json", state.found.to_json())
            state.ctx = replace(state.ctx, discovery=state.found)
            _preflight(state)
    if not state.runnable:
        raise Stop("no rung can run here", [f"{name}: {why.reason} (fix: {why.fix})" for name, why in state.skipped],
                   detail="no rung can run here" + set_up)  # fmt: skip
    names = ", ".join(r.name for r in state.runnable)
    return StepStatus.DONE, f"{len(state.runnable)} of {len(state.chosen)} rung(s) will run: {names}{set_up}"


def _preflight(state: _State) -> None:
    assert state.ctx is not None
    runnable, skipped = preflight(state.ctx, state.chosen)
    state.runnable, state.skipped = list(runnable), list(skipped)
    for name, why in state.skipped:
        state.say(f"    {name} will not run: {why.reason} (fix: {why.fix})")


def _checks_step(state: _State) -> Outcome:
    assert state.found is not None
    state.checks = checks = _checks(state.remote, state.found, state.say)
    state.run_dir.write_json("before/checks.json", checks.record(active=True).to_json())
    stops = [r for r in checks.results if r.id in STOP_CHECKS and r.status is CheckStatus.FAIL]
    if stops:
        todo = [f"{r.id}: {r.summary}" for r in stops]
        todo += [f"  {f.node}: {f.description}" for r in stops for f in r.fixes]
        if any(r.id == "ssh.mesh" for r in stops):
            todo.append("`wirespeed init` on one node sets up ssh between all of them (it asks first)")
        raise Stop(f"{', '.join(r.id for r in stops)} fails: no fix mends it, and nothing can be measured without it",
                   todo, detail="; ".join(f"{r.id} fails" for r in stops))  # fmt: skip
    return StepStatus.DONE, _counts(checks)


def _bench_before_step(state: _State) -> Outcome:
    assert state.ctx is not None and state.checks is not None
    state.ctx.defaults = defaults_from_checks(state.checks)
    return StepStatus.DONE, _measure(state.ctx, state.runnable, state.skipped, state.say, state.live, "bench before")


def _fix_step(state: _State) -> Outcome:
    """The checks' findings as changes per node, asked first, applied with the rollback timer; fix.json and the
    revert record are on disk before any node is confirmed."""
    found, checks, run_dir, say, done = state.found, state.checks, state.run_dir, state.say, state.done
    assert found is not None and checks is not None
    nodes = plan_nodes(CheckInput(found.facts, found.cabling), checks.results)
    plan = {node: p.operations for node, p in nodes.items() if p.operations}
    notes = {node: p.notes for node, p in nodes.items() if p.notes}
    if not state.options.fix:
        return StepStatus.SKIPPED, "--no-fix: measured as the cluster is, nothing changed"
    if not plan:
        return StepStatus.SKIPPED, "nothing to change: the checks found nothing fix can mend"
    unprivileged = tuple(n for n, f in found.facts.items() if f.privileged is False)
    refused = fixing.needs_root(plan, unprivileged)
    if refused:
        for line in refused:
            say(f"    {line}")
        done.fix_failed = True
        return StepStatus.FAILED, f"nothing applied: {len(refused)} node(s) need root ({HOW})"
    if not state.confirm(plan, notes):
        return StepStatus.SKIPPED, "not applied (answered no): nothing changed"
    record = run_dir.path / "fix-record.json"
    _write_fix(run_dir, plan, notes, [])  # the plan is kept before any node changes
    applied: list[fixing.NodeOutcome] = []

    def before_confirming(outcomes: list[fixing.NodeOutcome]) -> None:
        """Every node applied: what each replaced is on disk (fsynced) before any node is confirmed."""
        applied[:] = outcomes
        fixing.write_record(record, outcomes, confirmed=False)
        _write_fix(run_dir, plan, notes, outcomes)

    try:
        with ticking(say, still("applying the changes, then confirming every node still answers")):
            outcomes = fixing.apply_plan(state.remote, plan, rollback_s=state.options.rollback_s,
                                         on_applied=before_confirming)  # fmt: skip
    except BaseException as exc:  # the confirmations under way have ended: keep what the nodes were left with
        if applied:
            fixing.write_record(record, applied, confirmed=any(o.confirmed for o in applied))
            _write_fix(run_dir, plan, notes, applied)
        kept = sum(1 for o in applied if o.confirmed)
        state.steps.cut(exc, f"{kept} node(s) confirmed their changes before it ended; fix-record.json has them")
        raise
    fixing.write_record(record, outcomes)
    _write_fix(run_dir, plan, notes, outcomes)
    failures = [line for o in outcomes for line in o.failures()]
    for line in failures:
        say(f"    {line}")
    changed = sum(len(ops) for ops in plan.values())
    done.fixed, done.fix_failed = True, bool(failures)
    state.changed = True
    undo = f"`wirespeed fix --revert --record {record}` undoes them"
    detail = f"{changed} change(s) on {len(plan)} node(s), {len(failures)} failed; {undo}"
    return (StepStatus.FAILED if failures else StepStatus.DONE), detail


def _checks_after_step(state: _State) -> Outcome:
    state.found = found = _discover(state.remote, state.say)
    state.run_dir.write_json("after/discovery.json", found.to_json())
    fixing.pin_addresses(state.remote, found.facts, lambda line: state.say(f"    {line}"))
    state.checks = after = _checks(state.remote, found, state.say)
    state.run_dir.write_json("after/checks.json", after.record(active=True).to_json())
    return StepStatus.DONE, _counts(after)


def _bench_after_step(state: _State) -> Outcome:
    assert state.ctx is not None and state.checks is not None and state.found is not None
    again = replace(state.ctx, discovery=state.found, run_dir=state.run_dir.phase_dir("after"),
                    defaults=defaults_from_checks(state.checks))  # fmt: skip
    return StepStatus.DONE, _measure(again, *preflight(again, state.chosen), state.say, state.live, "bench after")


# The commission, in order; the report (`write_report`) is the command's to write, last. A step is added here.
COMMISSION_STEPS = (
    CommissionStep("discover", lambda s: f"{len(s.remote.cluster.nodes)} node(s): facts, cabling probe",
                   _discover_step),
    CommissionStep("preflight", lambda s: "which rungs can run, and the tools each needs on every node",
                   _preflight_step),
    CommissionStep("checks", lambda s: "every known pitfall, with the active measurements", _checks_step),
    CommissionStep("bench before", lambda s: f"{len(s.runnable)} rung(s) as the cluster is now", _bench_before_step),
    CommissionStep("fix", lambda s: "what the checks found, planned per node", _fix_step),
    CommissionStep("checks after", lambda s: "discovery and the checks again, as the fixes left the cluster",
                   _checks_after_step, after_fix=True),
    CommissionStep("bench after", lambda s: "the same rungs again, on the cluster as the fixes left it",
                   _bench_after_step, after_fix=True),
)  # fmt: skip


REPORT = "report.html"


def write_report(done: Commission, render: Callable[[Path], str]) -> Path:
    """The last step: the report page, from the run as it was recorded. A report that was not written (a signal,
    a full disk) leaves the run `interrupted` or `failed` saying so, never `complete` without its report."""
    run_dir, steps = done.run_dir, done.steps or _Steps(done.run_dir, lambda _: None)
    started = steps.begin("report", "one page with every step and every rung")
    try:
        run_dir.write_text(REPORT, render(run_dir.path))
    except KeyboardInterrupt as exc:
        why = getattr(exc, "reason", None) or "interrupted (Ctrl-C)"
        steps.cut(exc, f"{REPORT} not written")
        run_dir.finish(RunStatus.INTERRUPTED, f"{why} in the report step: {REPORT} not written")
        raise
    except (OSError, WirespeedError) as exc:
        why = exc.message if isinstance(exc, WirespeedError) else (exc.strerror or str(exc))
        steps.cut(WirespeedError(f"{REPORT} not written: {why}"))
        run_dir.finish(RunStatus.FAILED, f"the report step failed: {REPORT} not written: {why}")
        raise WirespeedError(f"{run_dir.path / REPORT}: cannot write the report: {why}",
                             hint="what was measured is kept in the run directory; `wirespeed report RUN` "
                                  "writes the page again") from None  # fmt: skip
    target = run_dir.path / REPORT
    steps.end("report", started, StepStatus.DONE, str(target))
    return target


def _write_fix(
    run_dir: RunDirectory,
    plan: dict[str, list[Operation]],
    notes: dict[str, list[str]],
    outcomes: Sequence[fixing.NodeOutcome],
) -> None:
    record = FixRecord({node: tuple(ops) for node, ops in plan.items()}, {node: tuple(lines) for node, lines in
                       notes.items()}, {o.node: o.record() for o in outcomes})  # fmt: skip
    run_dir.write_json("fix.json", record.to_json())
