"""`wirespeed setup`: the ladder's tools on every node, built for its GPU. Probe every node, plan what each lacks
(`core/toolchain.py`), and, once asked, apply the plans on all nodes at once: packages as root (through --become),
sources fetched on the node or sent from the controller (`--from DIR`), NCCL and nccl-tests built as the user, each
result verified there; then one small all_reduce across the nodes, as the NCCL rung would run it.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from wirespeed.core import toolchain as tc
from wirespeed.core.cluster.become import HOW
from wirespeed.core.cluster.inventory import Node
from wirespeed.core.errors import WirespeedError
from wirespeed.core.nccl import NcclOptions, mpirun_argv, plan_nccl, read_run
from wirespeed.core.records.results import NotRunnable
from wirespeed.engine.progress import ticking
from wirespeed.engine.remote import Remote, ensure_agents

SOURCES = {"nccl": "nccl", "nccl-tests": "nccl-tests"}  # build step -> the project whose tarball it needs
BUILD_TIMEOUT_S = 3 * 3600.0


@dataclass
class SetupPlan:
    haves: dict[str, tc.NodeToolchain]
    plans: dict[str, tc.NodePlan]
    errors: dict[str, str] = field(default_factory=dict)  # node -> why it could not be read

    @property
    def steps(self) -> int:
        return sum(len(p.steps) for p in self.plans.values())


@dataclass
class NodeOutcome:
    node: str
    done: list[str] = field(default_factory=list)  # one line per step that worked
    failed: str | None = None  # one line: node, step, why, the kept log


def _agent(remote: Remote, node: Node, *args: str) -> list[str]:
    return [*remote.agent_argv(node), "agent", "toolchain", *args]


def probe(remote: Remote, options: tc.SetupOptions, say: Callable[[str], None]) -> SetupPlan:
    """Every node's toolchain read at once, and the plan for the rungs asked for."""
    import json

    ensure_agents(remote, say)
    count = len(remote.cluster.nodes)
    with ticking(say, lambda s: f"... still reading what {count} node(s) have for the ladder ({s:.0f} s)"):
        results = remote.run_all(lambda node: _agent(remote, node, "probe"), timeout_s=120)
    haves: dict[str, tc.NodeToolchain] = {}
    errors: dict[str, str] = {}
    for result in results:
        if not result.ok:
            errors[result.node] = result.message + (f" (hint: {result.hint})" if result.hint else "")
            continue
        try:
            haves[result.node] = tc.NodeToolchain.from_json(result.node, json.loads(result.stdout))
        except ValueError as exc:
            errors[result.node] = str(exc) if str(exc).startswith(result.node) else f"{result.node}: {exc}"
    return SetupPlan(haves, tc.plan_cluster(haves, options), errors)


def plan_lines(plan: SetupPlan) -> list[str]:
    """The plan as a person reads it: per node, what is there, what will be done, what cannot be."""
    lines: list[str] = []
    for node, why in sorted(plan.errors.items()):
        lines.append(f"{node}: not read: {why}")
    for node, node_plan in plan.plans.items():
        if not node_plan.steps and not node_plan.blockers:
            lines.append(f"{node}: nothing to do: everything the ladder needs is in place")
            continue
        lines.append(f"{node}:")
        lines += [f"    have: {line}" for line in node_plan.present]
        lines += [f"    {'as root: ' if s.privileged else ''}{s.what}" for s in node_plan.steps]
        lines += [f"    cannot: {line.removeprefix(node + ': ')}" for line in node_plan.blockers]
    return lines


def needs_root(remote: Remote, plan: SetupPlan, uids: Mapping[str, int]) -> list[str]:
    """Nodes whose plan installs packages while wirespeed logs in there as a user and has no --become."""
    if remote.become is not None:
        return []
    return [
        f"{node}: installing packages needs root there ({HOW})"
        for node, p in plan.plans.items()
        if any(s.privileged for s in p.steps) and uids.get(node, 0) != 0
    ]


class _Board:
    """What each node is doing now, said every two seconds in one line."""

    def __init__(self, nodes: list[str]) -> None:
        self.lock = threading.Lock()
        self.state = dict.fromkeys(nodes, "waiting")
        self.started = time.monotonic()

    def set(self, node: str, text: str) -> None:
        with self.lock:
            self.state[node] = text

    def line(self, elapsed: float) -> str:
        with self.lock:
            shown = "; ".join(f"{node}: {text}" for node, text in self.state.items())
        return f"... setup ({elapsed:.0f} s): {shown}"


def apply(
    remote: Remote, plan: SetupPlan, say: Callable[[str], None], from_dir: Path | None = None
) -> list[NodeOutcome]:
    """Every node's steps in order, all nodes at once; a node stops at its first failed step, the others go on."""
    nodes = [remote.cluster.node(name) for name, p in plan.plans.items() if p.steps]
    if not nodes:
        return []
    board = _Board([n.name for n in nodes])
    with ticking(say, board.line), ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        return list(pool.map(lambda node: _apply_node(remote, node, plan.plans[node.name], board, from_dir), nodes))


def _apply_node(remote: Remote, node: Node, plan: tc.NodePlan, board: _Board, from_dir: Path | None) -> NodeOutcome:
    outcome = NodeOutcome(node.name)
    sent: set[str] = set()
    for step in plan.steps:
        board.set(node.name, step.kind)
        if step.kind == "packages":
            result = remote.run(node, _agent(remote, node, "packages", *step.packages), timeout_s=3600,
                                privileged=True)  # fmt: skip
            if not result.ok:
                last = (result.stdout.strip().splitlines() or [result.message])[-1]
                outcome.failed = f"{node.name}: packages: {result.message}: {last}"
                break
            outcome.done.append(f"installed {' '.join(step.packages)}")
            continue
        project = SOURCES.get(step.kind)
        if project and from_dir is not None and project not in sent:
            why = _send_source(remote, node, from_dir, project, step.release)
            if why is not None:
                outcome.failed = f"{node.name}: {step.kind}: {why}"
                break
            sent.add(project)
        done, why = _build(remote, node, step, board)
        if why is not None:
            outcome.failed = f"{node.name}: {step.kind}: {why}"
            break
        outcome.done.append(done)
    board.set(node.name, "failed" if outcome.failed else "done")
    return outcome


def _send_source(remote: Remote, node: Node, from_dir: Path, project: str, release: str) -> str | None:
    name = f"{project}-{release}.tar.gz"
    path = from_dir / name
    try:
        payload = base64.b64encode(path.read_bytes()).decode("ascii")
    except OSError as exc:
        return f"{path}: {exc.strerror or exc} (--from DIR holds {name}, as GitHub names the tag's archive)"
    result = remote.run(node, _agent(remote, node, "receive", "--name", name), input_text=payload, timeout_s=600)
    return None if result.ok else f"sending {name}: {result.message}"


def _build(remote: Remote, node: Node, step: tc.SetupStep, board: _Board) -> tuple[str, str | None]:
    """One build on the node, its progress lines read as they come; (what was done, why it failed or None)."""
    args = ["build", "--step", step.kind, "--key", step.key]
    if step.kind != "select":
        args += ["--release", step.release, "--arch", step.arch]
    if step.kind == "nccl-tests":
        args += ["--nccl-home", step.nccl_home, "--nccl-library", step.nccl_library, "--nccl-version",
                 step.nccl_version]  # fmt: skip
    process = remote.start(node, _agent(remote, node, *args))
    last = ""
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while True:
        try:  # a build that goes silent ends at the deadline too, not only one that keeps talking
            line = process.next_line(max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            process.stop()
            return "", f"no end after {BUILD_TIMEOUT_S:g} s (the last it said: {last or 'nothing'})"
        if line is None:
            break
        progress = tc.parse_progress(line)
        if progress is not None:
            name, count, what = progress
            board.set(node.name, f"{name} {count} file(s) compiled, {what}")
        elif line.strip():
            last = line.strip()
        if time.monotonic() > deadline:
            break
    result = process.stop()
    if last.startswith("done "):
        return last.removeprefix("done "), None
    if last.startswith("failed "):
        return "", last.removeprefix("failed ")
    return "", result.message if not result.ok else (last or "the build said nothing")


def smoke(remote: Remote, env: tuple[tuple[str, str | None], ...], say: Callable[[str], None]) -> str:
    """One small all_reduce across every node with the built nccl-tests, as the NCCL rung runs it: a line that
    says it completed, with its transport, or raises WirespeedError naming why not."""
    from wirespeed.engine.discover import discover_live
    from wirespeed.engine.rungs.nccl import _is_root

    with ticking(say, lambda s: f"... still discovering before the smoke run ({s:.0f} s)"):
        found = discover_live(remote, probe=False)
    options = NcclOptions(("all_reduce",), 1 << 10, 1 << 20, iterations=5, warmup=2,
                          env=(*remote.cluster.nccl_env, *env), timeout_s=300)  # fmt: skip
    plan = plan_nccl(found.facts, found.cabling, "all_reduce", options)
    if isinstance(plan, NotRunnable):
        raise WirespeedError(f"smoke run not possible: {plan.reason}", hint=plan.fix)
    launcher = remote.cluster.node(plan.launcher)
    argv = mpirun_argv(plan, options, None, as_root=_is_root(remote, launcher))
    with ticking(say, lambda s: f"... smoke run: all_reduce_perf, {plan.ranks} ranks, up to 1 MiB ({s:.0f} s)"):
        result = remote.run(launcher, argv, timeout_s=options.timeout_s)
    reading = read_run("all_reduce", result.stdout + "\n" + result.stderr, None)
    if reading.summary is None or not result.ok:
        raise WirespeedError(f"smoke run failed on {plan.launcher}: {reading.error or result.message}",
                             hint="run it by hand: " + " ".join(argv))  # fmt: skip
    summary = reading.summary
    wrong = f", {summary.wrong} wrong" if summary.wrong else ""
    return (f"smoke run: all_reduce_perf from {plan.binary}, {summary.ranks} ranks on {len(plan.nodes)} node(s), "
            f"{len(summary.rows)} sizes up to 1 MiB, transport {summary.transport or 'unknown'}{wrong}")  # fmt: skip


def layers(what: str) -> tuple[str, ...]:
    """What `bench WHAT` runs, as the toolchain's layers (tcp-lat needs sockperf, the other TCP rungs iperf3)."""
    from wirespeed.engine import rungs

    if what.startswith("nccl-"):  # one collective's rung: the same tools as every other
        return ("nccl",)
    chosen = rungs.select(what, ("all_reduce",))
    return tuple(dict.fromkeys("tcp-lat" if r.name == "tcp-lat" else r.layer for r in chosen))


@dataclass
class SetupOutcome:
    applied: bool = False
    outcomes: list[NodeOutcome] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # one line each: node, step, why
    smoke: str | None = None

    def record(self, plan: SetupPlan) -> tc.SetupRecord:
        """What is kept of the plan and of what came of it (setup.json)."""
        nodes = {o.node: tc.NodeSetup(tuple(o.done), o.failed) for o in self.outcomes}
        return tc.SetupRecord(dict(plan.plans), dict(plan.errors), self.applied, nodes, tuple(self.failed), self.smoke)


def run(
    remote: Remote,
    plan: SetupPlan,
    say: Callable[[str], None],
    *,
    confirm: Callable[[int], bool],
    from_dir: Path | None = None,
    smoke_env: tuple[tuple[str, str | None], ...] | None = (),
    show_only: bool = False,
) -> SetupOutcome:
    """Show only (`show_only`: no --yes and no terminal to ask on), or apply the plan once confirmed; then run
    the smoke all_reduce unless `smoke_env` is None or nothing was built. Unreadable nodes and blockers are failures,
    named (each build was verified on its node before its manifest was written)."""
    done = SetupOutcome()
    done.failed += [f"{node}: {why}" for node, why in sorted(plan.errors.items())]
    done.failed += [line for p in plan.plans.values() for line in p.blockers]
    if not plan.steps:
        say("setup: nothing to do: every node has what the ladder needs" if not done.failed else
            "setup: nothing setup can do; what is left is above")  # fmt: skip
        return done
    refused = needs_root(remote, plan, {node: have.uid for node, have in plan.haves.items()})
    if refused and not show_only:
        done.failed += refused
    for line in refused:
        say(line)
    if refused or show_only or not confirm(plan.steps):
        if show_only or not refused:
            say("nothing applied; run again with --yes to apply" + (f" and {HOW}" if refused else ""))
        return done
    started = time.monotonic()
    done.applied = True
    done.outcomes = apply(remote, plan, say, from_dir)
    for outcome in done.outcomes:
        for line in outcome.done:
            say(f"{outcome.node}: {line}")
        if outcome.failed:
            say(outcome.failed)
            done.failed.append(outcome.failed)
    say(f"setup: {plan.steps} step(s) on {len(done.outcomes)} node(s) in {time.monotonic() - started:.0f} s, "
        f"{len(done.failed)} failed")  # fmt: skip
    built = any(s.kind in ("nccl", "nccl-tests", "select") for p in plan.plans.values() for s in p.steps)
    if smoke_env is not None and built and not done.failed:
        try:
            done.smoke = smoke(remote, smoke_env, say)
            say(done.smoke)
        except WirespeedError as exc:
            done.failed.append(exc.message)
            say(exc.message + (f" (hint: {exc.hint})" if exc.hint else ""))
    return done


def offer(remote: Remote, what: str, say: Callable[[str], None]) -> SetupPlan | None:
    """Commission's preflight: what `setup` would do for these rungs, said in a line per node and step (one line
    when nothing is missing), with the command that does it. Returns the plan, None where it could not be read."""
    try:
        plan = probe(remote, tc.SetupOptions(layers=layers(what)), say)
    except WirespeedError as exc:  # the offer must never stop the run it serves
        say(f"    setup: not read: {exc.message}")
        return None
    blockers = [line for p in plan.plans.values() for line in p.blockers]
    if not plan.steps and not blockers and not plan.errors:
        say("    setup: nothing missing: every node has the tools these rungs need")
        return plan
    for line in plan_lines(plan):
        if not line.endswith("is in place"):
            say(f"    setup: {line}")
    if plan.steps:
        root = " --become" if any(s.privileged for p in plan.plans.values() for s in p.steps) else ""
        rungs = "" if what == "ladder" else f" {what}"
        say(f"    setup: `wirespeed setup{rungs} --yes{root}` does this ({plan.steps} step(s)); so does commission "
            "once asked (--yes)")  # fmt: skip
    return plan
