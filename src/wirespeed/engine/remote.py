"""Run commands on many nodes at once; each node's outcome stands alone.

A failure on one node (unreachable, wrong user, timeout, missing command) becomes that node's
`CommandResult` with a one-line message; the other nodes carry on.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from wirespeed import __version__
from wirespeed.adapters.process import kill_group, run_process, spawn, watchdog_argv
from wirespeed.adapters.ssh import Transport, default_control_dir, transport_for
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
    ) -> None:
        self.cluster = cluster
        cm_dir = control_dir if control_dir is not None else default_control_dir()
        self._transport_factory: TransportFactory = transport_factory or (
            lambda node: transport_for(node, cluster.ssh_config, cm_dir)
        )
        self.max_parallel = max_parallel
        self._lock = threading.Lock()
        self._started: list[RemoteProcess] = []

    def transport(self, node: Node) -> Transport:
        return self._transport_factory(node)

    def run(
        self,
        node: Node,
        argv: Sequence[str],
        *,
        timeout_s: float | None = 60.0,
        input_text: str | None = None,
    ) -> CommandResult:
        """Run argv on one node and classify the outcome."""
        transport = self.transport(node)
        # Over ssh or srun the command is watched: if we give up (timeout, Ctrl-C), the closed stdin stops it there.
        watched = (transport.via_ssh or transport.via_srun) and input_text is None
        local_argv = transport.wrap(node, watchdog_argv(argv) if watched else argv)
        outcome = run_process(local_argv, timeout_s=timeout_s, input_text=input_text, hold_stdin=watched)
        return classify(
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

    def run_all(
        self,
        argv: Sequence[str] | Callable[[Node], Sequence[str]],
        *,
        nodes: Sequence[Node] | None = None,
        timeout_s: float | None = 60.0,
    ) -> list[CommandResult]:
        """Run on every node concurrently; results come back in the cluster's node order."""
        targets = list(nodes if nodes is not None else self.cluster.nodes)
        if not targets:
            return []

        def one(node: Node) -> CommandResult:
            node_argv = argv(node) if callable(argv) else argv
            return self.run(node, node_argv, timeout_s=timeout_s)

        with ThreadPoolExecutor(max_workers=min(self.max_parallel, len(targets))) as pool:
            return list(pool.map(one, targets))

    def start(self, node: Node, argv: Sequence[str]) -> RemoteProcess:
        """Start a long-running command that dies with this controller (see `RemoteProcess`)."""
        transport = self.transport(node)
        popen = spawn(transport.wrap(node, watchdog_argv(argv)))
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


def agent_argv(node: Node) -> list[str]:
    """How to start wirespeed on `node`: its configured agent; locally, this very interpreter."""
    if node.is_local and node.agent == DEFAULT_AGENT:
        return [sys.executable, "-m", "wirespeed"]
    return list(node.agent)


@dataclass(frozen=True)
class AgentCheck:
    """Whether wirespeed is installed on a node at this controller's version."""

    node: str
    ok: bool
    version: str | None
    message: str


_VERSION_RE = re.compile(r"wirespeed[, ]+(?:version\s+)?(\S+)")


def check_agents(remote: Remote, *, timeout_s: float = 30.0) -> list[AgentCheck]:
    """Ask each node's `wirespeed --version`; say how to install it where it is missing or different."""
    results = remote.run_all(lambda node: [*agent_argv(node), "--version"], timeout_s=timeout_s)
    checks: list[AgentCheck] = []
    for node, result in zip(remote.cluster.nodes, results, strict=True):
        install = f"install it there with `pip install wirespeed=={__version__}` or set agent = [...] for {node.name}"
        if result.status is Status.NOT_FOUND:
            checks.append(AgentCheck(node.name, False, None, f"{node.name}: wirespeed is not installed ({install})"))
            continue
        if not result.ok:
            checks.append(AgentCheck(node.name, False, None, result.message))
            continue
        match = _VERSION_RE.search(result.stdout)
        version = match.group(1) if match else None
        if version != __version__:
            checks.append(
                AgentCheck(
                    node.name,
                    False,
                    version,
                    f"{node.name}: wirespeed {version or 'of unknown version'} there, {__version__} here ({install})",
                )
            )
        else:
            checks.append(AgentCheck(node.name, True, version, f"{node.name}: wirespeed {version}"))
    return checks
