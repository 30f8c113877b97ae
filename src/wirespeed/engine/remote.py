"""Run commands on many nodes at once; each node's outcome stands alone.

A failure on one node (unreachable, wrong user, timeout, missing command) becomes that node's
`CommandResult` with a one-line message; the other nodes carry on.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from wirespeed import __version__
from wirespeed.adapters.agentzip import agent_content, build_agent
from wirespeed.adapters.process import (
    DEFAULT_BUDGET,
    Budget,
    Flood,
    MiB,
    as_text,
    heartbeat,
    kill_group,
    run_process,
    spawn,
    watchdog_argv,
)
from wirespeed.adapters.ssh import Transport, default_control_dir, transport_for
from wirespeed.core.cluster.agentship import (
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
from wirespeed.core.cluster.become import Become, refusal, system_agent_argv
from wirespeed.core.cluster.inventory import DEFAULT_AGENT, Cluster, Node
from wirespeed.core.errors import WirespeedError
from wirespeed.core.outcome import CommandResult, Status, classify

TransportFactory = Callable[[Node], Transport]
# Exit statuses of a command we stopped ourselves (SIGTERM/SIGKILL, seen directly or through a shell).
STOPPED_CODES = frozenset({-15, -9, 143, 137})
# A long-running command's stdout is read as it comes and not kept (a sampler writes for hours): no budget for the
# whole of it, only for each line; its stderr is kept, within a budget.
STREAM_BUDGET = Budget(stdout_bytes=None, stderr_bytes=16 * MiB, line_bytes=4 * MiB)
READ_SIZE = 1 << 16


def flood_hint(node: str, subject: str) -> str:
    """What to do about a command that wrote past its budget on `node`."""
    if subject == "the agent":
        return f"check what agent = [...] of {node} in the cluster file runs: it must be wirespeed"
    return f"run it on {node} by hand to see what it writes"


@dataclass
class RemoteProcess:
    """A long-running command on a node, owned by this controller.

    Its remote side is wrapped by a watchdog that kills it when our end of its stdin closes, so closing the
    pipe (or this controller dying) stops it; `stop()` also kills the local ssh process group. Its stderr is read
    all along by a thread of its own, so that it can never fill and stall the command; stdout is read by `lines()`,
    `batches()` or `next_line()`, or at `stop()`. Both within `budget`: past it the command is stopped, and `flood`
    says which stream and what it passed.
    """

    node: Node
    argv: tuple[str, ...]
    popen: subprocess.Popen[str]
    via_ssh: bool
    destination: str
    via_srun: bool = False
    budget: Budget = STREAM_BUDGET
    what: str = ""  # who runs there, as a sentence's subject: "the agent", or the program's name
    flood: Flood | None = None
    _stderr: bytearray = field(default_factory=bytearray)
    _stderr_thread: threading.Thread | None = None
    _queued: deque[str] = field(default_factory=deque)  # complete lines read, not yet taken
    _pending: bytes = b""  # the start of a line not yet ended
    _stdout_bytes: int = 0
    _ended: bool = False  # stdout reached its end (or was given up on)
    _reading: bool = False  # a consumer iterates its lines: stop() leaves stdout to it
    _given_up: bool = False  # stopped by `give_up`: what it writes after is not read
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def subject(self) -> str:
        return self.what or (os.path.basename(self.argv[0]) if self.argv else "the command")

    def drain_stderr(self) -> None:
        """Read stderr on a thread of its own until it ends, keeping it within the budget."""
        stream = getattr(self.popen, "stderr", None)
        if stream is None:
            return
        self._stderr_thread = threading.Thread(target=self._read_stderr, args=(stream.fileno(),), daemon=True,
                                               name=f"wirespeed-stderr-{self.node.name}")  # fmt: skip
        self._stderr_thread.start()

    def _read_stderr(self, fd: int) -> None:
        limit = self.budget.stderr_bytes
        while True:
            try:
                chunk = os.read(fd, READ_SIZE)
            except OSError:
                return
            if not chunk:
                return
            if limit is not None and len(self._stderr) + len(chunk) > limit:
                self._stderr += chunk[: limit - len(self._stderr)]
                self.give_up(Flood("stderr", limit))
                return
            self._stderr += chunk

    def give_up(self, flood: Flood | None = None) -> None:
        """Stop the command now, on both sides: our end of its stdin closes (the watchdog there stops what runs), and
        the local process group is killed. `flood` says why, when it wrote past its budget."""
        with self._lock:
            if flood is not None and self.flood is None:
                self.flood = flood
            self._given_up = True
        self._close_stdin()
        if isinstance(self.popen, subprocess.Popen):
            # At once: waiting for ssh to end by itself would wait on the stream nobody reads any more (the
            # connection master holds it until the session's end). Killing the ssh client ends the session there,
            # and the node's watchdog stops what ran.
            kill_group(self.popen, grace_s=2.0)

    def _close_stdin(self) -> None:
        stdin = getattr(self.popen, "stdin", None)
        if stdin is not None:
            heartbeat.remove(stdin)
            with contextlib.suppress(OSError, ValueError):
                stdin.close()

    def _stdout_fd(self) -> int:
        stdout = getattr(self.popen, "stdout", None)
        try:
            return stdout.fileno() if stdout is not None else -1
        except (OSError, ValueError, AttributeError):
            return -1

    def _more(self, deadline: float | None, size: int) -> bool:
        """One read of stdout into the queue of lines; False once it has ended (or passed its budget: then the
        command is stopped). TimeoutError when nothing came before `deadline` (monotonic seconds)."""
        if self._ended:
            return False
        fd = self._stdout_fd()
        if fd < 0:
            self._ended = True
            return False
        while (
            deadline is not None
            and not select.select([fd], [], [], min(0.25, max(0.0, deadline - time.monotonic())))[0]
        ):
            if self._given_up:  # stopped meanwhile (its stderr flooded): its end, whatever stdout still holds
                self._ended = True
                return False
            if time.monotonic() >= deadline:
                raise TimeoutError
        try:
            chunk = os.read(fd, size)
        except OSError:
            chunk = b""
        if not chunk:
            self._ended = True
            rest, self._pending = self._pending, b""
            if rest.strip():
                self._queued.append(rest.decode("utf-8", "replace"))
                return True
            return False
        self._stdout_bytes += len(chunk)
        limit = self.budget.stdout_bytes
        if limit is not None and self._stdout_bytes > limit:
            self._ended = True
            self.give_up(Flood("stdout", limit))
            return False
        *complete, self._pending = (self._pending + chunk).split(b"\n")
        longest = self.budget.line_bytes
        if len(self._pending) > longest or any(len(line) > longest for line in complete):
            self._ended = True
            self._pending = b""
            self.give_up(Flood("stdout", longest, line=True))
            return False
        self._queued.extend(line.decode("utf-8", "replace").removesuffix("\r") for line in complete)
        return True

    def batches(self, size: int = READ_SIZE) -> Iterator[list[str]]:
        """The lines of stdout that are not empty, as many as have come at each read, until it ends: one system call
        per batch rather than per line."""
        self._reading = True
        while self._queued or self._more(None, size):
            batch = [line for line in self._queued if line]
            self._queued.clear()
            if batch:
                yield batch

    def lines(self) -> Iterator[str]:
        """Lines of stdout as they come, until the process ends (or passes its budget)."""
        self._reading = True
        while self._queued or self._more(None, READ_SIZE):
            while self._queued:
                yield self._queued.popleft()

    def next_line(self, timeout_s: float) -> str | None:
        """The next line of stdout; None at its end; TimeoutError when none came within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not self._queued:
            if not self._more(deadline, 4096):
                return None
        return self._queued.popleft()

    def running(self) -> bool:
        return self.popen.poll() is None

    def _rest(self, deadline: float) -> str:
        """What is left of stdout (when nobody read its lines), read until it ends, the deadline, or the budget."""
        lines = list(self._queued)
        self._queued.clear()
        budget = self.budget.stdout_bytes or DEFAULT_BUDGET.stdout_bytes
        with contextlib.suppress(TimeoutError):
            while time.monotonic() < deadline and self._more(deadline, READ_SIZE):
                lines += self._queued
                self._queued.clear()
                if budget is not None and self._stdout_bytes > budget:
                    break
        text = "".join(line + "\n" for line in lines)
        return text + (self._pending.decode("utf-8", "replace") if self._pending else "")

    def stop(self, grace_s: float = 5.0) -> CommandResult:
        """Close stdin (the remote watchdog stops the command), wait, then kill what is left locally."""
        self._close_stdin()  # that EOF is what stops the watched command
        deadline = time.monotonic() + grace_s
        stdout = "" if self._reading or self._given_up else self._rest(deadline)
        try:
            self.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            # SIGTERM reaches the watchdog, whose trap escalates to SIGKILL within about a second.
            kill_group(self.popen, grace_s=3.0)
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout=5.0)
        stderr = as_text(bytes(self._stderr))
        if not self._reading or self._ended:
            for stream in (self.popen.stdout, self.popen.stderr):
                if stream is not None and (self._stderr_thread is None or not self._stderr_thread.is_alive()):
                    with contextlib.suppress(OSError):
                        stream.close()
        if self.flood is not None:
            return CommandResult(
                self.node.name,
                self.argv,
                Status.FAILED,
                self.popen.returncode,
                stdout,
                stderr,
                0.0,
                f"{self.node.name}: {self.subject()} {self.flood.describe()}; stopped",
                flood_hint(self.node.name, self.subject()),
            )
        if self.popen.returncode in STOPPED_CODES:
            return CommandResult(
                self.node.name,
                self.argv,
                Status.OK,
                self.popen.returncode,
                stdout,
                stderr,
                0.0,
                f"{self.node.name}: stopped",
            )
        return classify(
            node=self.node.name,
            argv=self.argv,
            returncode=self.popen.returncode,
            stdout=stdout,
            stderr=stderr,
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

    def subject(self, node: Node, argv: Sequence[str]) -> str:
        """Who runs `argv` on `node`, as a sentence's subject: "the agent" for wirespeed there, else the program."""
        info = self.agents.get(node.name)
        for agent in (tuple(node.agent), tuple(fixed_agent_argv(node)), tuple(info.argv) if info else ()):
            if agent and tuple(argv[: len(agent)]) == agent:
                return "the agent"
        return os.path.basename(argv[0]) if argv else "the command"

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
        budget: Budget = DEFAULT_BUDGET,
    ) -> CommandResult:
        """Run argv on one node and classify the outcome; `privileged` steps go through sudo with --become. Its
        output is read within `budget`: past it, or past `timeout_s`, it is stopped there and here."""
        subject = self.subject(node, argv)
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
        outcome = run_process(local_argv, timeout_s=timeout_s, input_text=input_text, hold_stdin=watched, budget=budget)
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
            flood=f"{subject} {outcome.flood.describe()}" if outcome.flood is not None else None,
            flood_hint=flood_hint(node.name, subject),
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
        budget: Budget = DEFAULT_BUDGET,
    ) -> list[CommandResult]:
        """Run on every node concurrently; results come back in the cluster's node order."""
        targets = list(nodes if nodes is not None else self.cluster.nodes)
        if not targets:
            return []

        def one(node: Node) -> CommandResult:
            node_argv = argv(node) if callable(argv) else argv
            return self.run(node, node_argv, timeout_s=timeout_s, privileged=privileged, budget=budget)

        with ThreadPoolExecutor(max_workers=min(self.max_parallel, len(targets))) as pool:
            return list(pool.map(one, targets))

    def start(self, node: Node, argv: Sequence[str], *, budget: Budget = STREAM_BUDGET) -> RemoteProcess:
        """Start a long-running command that dies with this controller (see `RemoteProcess`); its output is read
        within `budget`."""
        transport = self.transport(node)
        popen = spawn(transport.wrap(node, watchdog_argv(argv)))
        if popen.stdin is not None:
            heartbeat.add(popen.stdin)  # dropped once stop() closes it
        process = RemoteProcess(
            node, tuple(argv), popen, transport.via_ssh, transport.destination(node), transport.via_srun,
            budget=budget, what=self.subject(node, argv),
        )  # fmt: skip
        process.drain_stderr()
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
