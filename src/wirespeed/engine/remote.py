"""Run commands on many nodes at once; each node's outcome stands alone.

A failure on one node (unreachable, wrong user, timeout, missing command) becomes that node's
`CommandResult` with a one-line message; the other nodes carry on.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from wirespeed import __version__
from wirespeed.adapters.agentzip import agent_content, build_agent
from wirespeed.adapters.process import heartbeat, kill_group, run_process, spawn, watchdog_argv
from wirespeed.adapters.ssh import Transport, default_control_dir, transport_for
from wirespeed.core.agentship import (
    AgentInfo,
    AgentSource,
    ProbeReply,
    format_version,
    no_python_failure,
    parse_probe,
    probe_argv,
    ship_argv,
    shipped_line,
    version_line,
)
from wirespeed.core.become import Become, refusal, system_agent_argv
from wirespeed.core.errors import WirespeedError
from wirespeed.core.inventory import DEFAULT_AGENT, Cluster, Node
from wirespeed.core.outcome import CommandResult, Status, classify

TransportFactory = Callable[[Node], Transport]
# Exit statuses of a command we stopped ourselves (SIGTERM/SIGKILL, seen directly or through a shell).
STOPPED_CODES = frozenset({-15, -9, 143, 137})


@dataclass
class RemoteProcess:
    """A long-running command on a node, owned by this controller.

    Its remote side is wrapped by a watchdog that kills it when our end of its stdin closes, so closing the
    pipe (or this controller dying) stops it; `stop()` also kills the local ssh process group.
    """

    node: Node
    argv: tuple[str, ...]
    popen: subprocess.Popen[str]
    via_ssh: bool
    destination: str
    via_srun: bool = False
    _stderr_lines: list[str] = field(default_factory=list)

    def lines(self) -> Iterator[str]:
        """Lines of stdout as they come, until the process ends."""
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            yield line.rstrip("\n")

    def running(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace_s: float = 5.0) -> CommandResult:
        """Close stdin (the remote watchdog stops the command), wait, then kill what is left locally."""
        if self.popen.stdin is not None and self.popen.stdin.closed:
            self.popen.stdin = None  # already closed by the caller (several stopped at once): nothing to flush
        try:
            # communicate() closes stdin first: that EOF is what stops the watched command.
            stdout, stderr = self.popen.communicate(timeout=grace_s)
        except subprocess.TimeoutExpired:
            # SIGTERM reaches the watchdog, whose trap escalates to SIGKILL within about a second.
            kill_group(self.popen, grace_s=3.0)
            stdout, stderr = self.popen.communicate()
        if self.popen.returncode in STOPPED_CODES:
            return CommandResult(
                self.node.name,
                self.argv,
                Status.OK,
                self.popen.returncode,
                stdout or "",
                stderr or "",
                0.0,
                f"{self.node.name}: stopped",
            )
        return classify(
            node=self.node.name,
            argv=self.argv,
            returncode=self.popen.returncode,
            stdout=stdout or "",
            stderr=stderr or "",
            duration_s=0.0,
            timed_out=False,
            timeout_s=None,
            via_ssh=self.via_ssh,
            destination=self.destination,
            via_srun=self.via_srun,
        )


class Remote:
    """The execution layer for one cluster."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        transport_factory: TransportFactory | None = None,
        control_dir: Path | None = None,
        max_parallel: int = 32,
        say: Callable[[str], None] | None = None,
        become: Become | None = None,
    ) -> None:
        self.cluster = cluster
        self.become = become  # how the steps that need root run there; None: as the user who logs in
        self.say = say  # where one-line notes about the nodes go (an agent shipped); stderr when None
        cm_dir = control_dir if control_dir is not None else default_control_dir()
        self._transport_factory: TransportFactory = transport_factory or (
            lambda node: transport_for(node, cluster.ssh_config, cm_dir)
        )
        self.max_parallel = max_parallel
        self._lock = threading.Lock()
        self._started: list[RemoteProcess] = []
        # What each node runs as its agent, once `ensure_agents` has asked (by node name).
        self.agents: dict[str, AgentInfo] = {}
        self.agents_lock = threading.Lock()

    def transport(self, node: Node) -> Transport:
        return self._transport_factory(node)

    def agent_argv(self, node: Node) -> list[str]:
        """How to start wirespeed on `node`: its configured agent; locally, this very interpreter; elsewhere the
        zipapp `ensure_agents` put in the node's ~/.cache/wirespeed, run by the python3 it found there (settled on
        first use when no discovery did it before: `fix --revert` reaches nodes without discovering)."""
        if not ships_agent(node):
            return fixed_agent_argv(node)
        if node.name not in self.agents:
            ensure_agents(self)
        info = self.agents.get(node.name)
        usable = info is not None and info.source in (AgentSource.SHIPPED, AgentSource.PRESENT)
        return list(info.argv) if info is not None and usable else list(node.agent)

    def run(
        self,
        node: Node,
        argv: Sequence[str],
        *,
        timeout_s: float | None = 60.0,
        input_text: str | None = None,
        privileged: bool = False,
    ) -> CommandResult:
        """Run argv on one node and classify the outcome; `privileged` steps go through sudo with --become."""
        wrapped = privileged and self.become is not None
        if wrapped:
            assert self.become is not None
            if self.become.system_agent is not None:  # init's drop-in allows the root-owned copy, by real paths
                python = os.path.realpath(argv[0]) if node.is_local else argv[0]
                argv = system_agent_argv(list(argv), self.become.system_agent, python)
            argv, input_text = self.become.wrap(list(argv), input_text)
        transport = self.transport(node)
        # Over ssh or srun the command is watched: if we give up (timeout, Ctrl-C), the closed stdin stops it there.
        watched = (transport.via_ssh or transport.via_srun) and input_text is None
        local_argv = transport.wrap(node, watchdog_argv(argv) if watched else argv)
        outcome = run_process(local_argv, timeout_s=timeout_s, input_text=input_text, hold_stdin=watched)
        result = classify(
            node=node.name,
            argv=tuple(argv),
            returncode=outcome.returncode,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            duration_s=outcome.duration_s,
            timed_out=outcome.timed_out,
            timeout_s=timeout_s,
            via_ssh=transport.via_ssh,
            destination=transport.destination(node),
            spawn_failed=outcome.spawn_error,
            via_srun=transport.via_srun,
        )
        refused = refusal(result.stderr) if wrapped and not result.ok else None
        if refused is not None:
            result = replace(result, message=f"{node.name}: {refused[0]}", hint=refused[1])
        return result

    def run_all(
        self,
        argv: Sequence[str] | Callable[[Node], Sequence[str]],
        *,
        nodes: Sequence[Node] | None = None,
        timeout_s: float | None = 60.0,
        privileged: bool = False,
    ) -> list[CommandResult]:
        """Run on every node concurrently; results come back in the cluster's node order."""
        targets = list(nodes if nodes is not None else self.cluster.nodes)
        if not targets:
            return []

        def one(node: Node) -> CommandResult:
            node_argv = argv(node) if callable(argv) else argv
            return self.run(node, node_argv, timeout_s=timeout_s, privileged=privileged)

        with ThreadPoolExecutor(max_workers=min(self.max_parallel, len(targets))) as pool:
            return list(pool.map(one, targets))

    def start(self, node: Node, argv: Sequence[str]) -> RemoteProcess:
        """Start a long-running command that dies with this controller (see `RemoteProcess`)."""
        transport = self.transport(node)
        popen = spawn(transport.wrap(node, watchdog_argv(argv)))
        if popen.stdin is not None:
            heartbeat.add(popen.stdin)  # dropped once stop() closes it
        process = RemoteProcess(
            node, tuple(argv), popen, transport.via_ssh, transport.destination(node), transport.via_srun
        )
        with self._lock:
            self._started.append(process)
        return process

    def stop_all(self, grace_s: float = 5.0) -> list[CommandResult]:
        """Stop every process this layer started that is still owned; safe to call more than once."""
        with self._lock:
            processes, self._started = self._started, []
        return [process.stop(grace_s) for process in processes]

    @contextmanager
    def owned(self) -> Iterator[Remote]:
        """`with remote.owned():` guarantees that started processes are stopped on the way out."""
        try:
            yield self
        finally:
            self.stop_all()


# ------------------------------------------------------------------------------------------------------ agents


def ships_agent(node: Node) -> bool:
    """Whether the controller ships its own agent to `node`: a remote node with no agent = [...] of its own."""
    return node.agent == DEFAULT_AGENT and not node.is_local


def fixed_agent_argv(node: Node) -> list[str]:
    """The agent of a node wirespeed ships nothing to: this interpreter on the local node, else its agent = [...]."""
    return [sys.executable, "-m", "wirespeed"] if node.agent == DEFAULT_AGENT else list(node.agent)


def _stderr_line(text: str) -> None:
    print(f"wirespeed: {text}", file=sys.stderr, flush=True)


def _fixed_agent(node: Node) -> AgentInfo:
    source = AgentSource.LOCAL if node.is_local and node.agent == DEFAULT_AGENT else AgentSource.CONFIGURED
    return AgentInfo(node.name, source, tuple(fixed_agent_argv(node)))


def _failed(node: Node, result: CommandResult, what: str) -> AgentInfo:
    reached = result.status not in (Status.UNREACHABLE, Status.AUTH_FAILED, Status.HOST_KEY)
    if not reached:
        return AgentInfo(
            node.name, AgentSource.FAILED, node.agent, message=result.message, hint=result.hint, reached=False
        )
    return AgentInfo(
        node.name,
        AgentSource.FAILED,
        node.agent,
        message=f"{node.name}: {what}: {result.message.partition(': ')[2]}",
        hint=result.hint or f"set agent = [...] for {node.name} in the cluster file to run a wirespeed installed there",
    )


@dataclass(frozen=True)
class _Shipment:
    """The agent to copy: its name, size, and its bytes as base64 text for stdin."""

    name: str
    size_bytes: int
    payload: str


def _ship(
    remote: Remote, node: Node, reply: ProbeReply, python: tuple[str, tuple[int, ...]], sent: _Shipment
) -> AgentInfo:
    """Copy the zipapp to the node (base64 on stdin), checked there before it takes its name."""
    started = time.monotonic()
    result = remote.run(node, ship_argv(sent.name, python[0], __version__), timeout_s=300.0, input_text=sent.payload)
    if not result.ok:
        return _failed(node, result, f"could not copy wirespeed's agent to {reply.path}")
    return AgentInfo(
        node.name,
        AgentSource.SHIPPED,
        (python[0], reply.path),
        file=reply.path,
        python=format_version(python[1]),
        size_bytes=sent.size_bytes,
        seconds=time.monotonic() - started,
    )


def ensure_agents(
    remote: Remote,
    say: Callable[[str], None] | None = None,
    *,
    say_failures: bool = True,
    timeout_s: float = 30.0,
) -> dict[str, AgentInfo]:
    """Make sure every node can run this controller's wirespeed, once per Remote; returns each node's agent.

    Nodes with an agent = [...] of their own keep it, and the local node this interpreter. For every other node
    one round trip finds whether `~/.cache/wirespeed/agent-<version>-<hash>.pyz` is there and which python3 runs
    it; where it is missing, it is built here (once, into the cache) and copied there, all nodes at once. Says one
    line per node it was copied to, and (with `say_failures`) one per node that cannot run it and was reached:
    an unreachable node is left to the command that follows, which says why in its own words.
    """
    with remote.agents_lock:  # one at a time: agent_argv may call this from several threads at once
        tell = say or remote.say or _stderr_line
        return _ensure_agents(remote, tell, say_failures, timeout_s)


def _ensure_agents(
    remote: Remote, tell: Callable[[str], None], say_failures: bool, timeout_s: float
) -> dict[str, AgentInfo]:
    todo = [node for node in remote.cluster.nodes if node.name not in remote.agents]
    infos: dict[str, AgentInfo] = {node.name: _fixed_agent(node) for node in todo if not ships_agent(node)}
    targets = [node for node in todo if ships_agent(node)]
    name = agent_content().name if targets else ""
    if targets:
        probes = remote.run_all(lambda _: probe_argv(name), nodes=targets, timeout_s=timeout_s)
        missing: list[tuple[Node, ProbeReply, tuple[str, tuple[int, ...]]]] = []
        for node, result in zip(targets, probes, strict=True):
            if not result.ok:
                infos[node.name] = _failed(node, result, "cannot look for wirespeed's agent")
                continue
            try:
                reply = parse_probe(result.stdout)
            except ValueError as exc:
                infos[node.name] = AgentInfo(node.name, AgentSource.FAILED, node.agent, message=f"{node.name}: {exc}")
                continue
            python = reply.python()
            if python is None:
                message, hint = no_python_failure(node.name, reply)
                infos[node.name] = AgentInfo(node.name, AgentSource.FAILED, node.agent, message=message, hint=hint)
            elif reply.present:
                infos[node.name] = AgentInfo(
                    node.name,
                    AgentSource.PRESENT,
                    (python[0], reply.path),
                    file=reply.path,
                    python=format_version(python[1]),
                )
            else:
                missing.append((node, reply, python))
        if missing:
            built = build_agent()
            try:
                sent = _Shipment(name, built.size_bytes, base64.b64encode(built.path.read_bytes()).decode("ascii"))
            except OSError as exc:
                raise WirespeedError(f"cannot read wirespeed's agent {built.path}: {exc.strerror or exc}") from None
            with ThreadPoolExecutor(max_workers=min(remote.max_parallel, len(missing))) as pool:
                shipped = list(pool.map(lambda item: _ship(remote, item[0], item[1], item[2], sent), missing))
            for info in shipped:
                infos[info.node] = info
    for node in todo:
        info = infos[node.name]
        if info.source is AgentSource.SHIPPED:
            tell(shipped_line(name, node.name, info.size_bytes or 0, info.seconds or 0.0))
        elif info.source is AgentSource.FAILED and info.reached and say_failures:
            tell(f"{info.message or node.name}" + (f" (hint: {info.hint})" if info.hint else ""))
    remote.agents.update(infos)
    return {node.name: remote.agents[node.name] for node in remote.cluster.nodes}


@dataclass(frozen=True)
class AgentCheck:
    """Whether a node runs wirespeed at this controller's version, and which agent it runs."""

    node: str
    ok: bool
    version: str | None
    message: str
    agent: str = AgentSource.CONFIGURED.value  # an AgentSource value
    file: str | None = None
    python: str | None = None


_VERSION_RE = re.compile(r"wirespeed[, ]+(?:version\s+)?(\S+)")


def check_agents(
    remote: Remote, *, timeout_s: float = 30.0, say: Callable[[str], None] | None = None
) -> list[AgentCheck]:
    """Settle each node's agent (shipping it where needed), then ask it `--version`: it must be this one."""
    infos = ensure_agents(remote, say, say_failures=False, timeout_s=timeout_s)
    runnable = [node for node in remote.cluster.nodes if infos[node.name].source is not AgentSource.FAILED]
    answers = remote.run_all(lambda node: [*remote.agent_argv(node), "--version"], nodes=runnable,
                             timeout_s=timeout_s)  # fmt: skip
    by_node = {result.node: result for result in answers}
    checks: list[AgentCheck] = []
    for node in remote.cluster.nodes:
        info = infos[node.name]
        checks.append(_agent_check(node, info, by_node.get(node.name)))
    return checks


def _agent_check(node: Node, info: AgentInfo, result: CommandResult | None) -> AgentCheck:
    def check(ok: bool, version: str | None, message: str) -> AgentCheck:
        return AgentCheck(node.name, ok, version, message, info.source.value, info.file, info.python)

    configured = info.source is AgentSource.CONFIGURED
    fix = (
        f"fix agent = [...] for {node.name} in the cluster file, or remove it so that wirespeed ships itself there"
        if configured
        else f"set agent = [...] for {node.name} in the cluster file"
    )
    if result is None:  # the agent could not be settled there
        message = info.message or f"{node.name}: no agent"
        return check(False, None, message + (f" (hint: {info.hint})" if info.hint else ""))
    if result.status is Status.NOT_FOUND and configured:
        return check(False, None, f"{node.name}: its agent {' '.join(info.argv)} is not there ({fix})")
    if not result.ok:
        shipped = info.source in (AgentSource.SHIPPED, AgentSource.PRESENT)
        hint = f"remove {info.file} on {node.name}: the next command ships it again" if shipped else result.hint
        return check(False, None, result.message + (f" (hint: {hint})" if hint else ""))
    match = _VERSION_RE.search(result.stdout)
    version = match.group(1) if match else None
    if version != __version__:
        return check(
            False,
            version,
            f"{node.name}: wirespeed {version or 'of unknown version'} there, {__version__} here "
            f"({'install ' + __version__ + ' where agent = [...] points, or ' if configured else ''}{fix})",
        )
    return check(True, version, f"{node.name}: {version_line(version)} ({info.describe()})")
