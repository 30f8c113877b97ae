"""Taking every node's bench lock before measuring (see `wirespeed.core.cluster.benchlock`): in name order, one node at
a time, so that two controllers that both `--wait` queue rather than each holding half the cluster. The locks
live exactly as long as the block: stopping the agents (or this controller dying) releases them."""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from wirespeed.adapters.process import Budget, MiB
from wirespeed.core.cluster.benchlock import BUSY, LOCKED, WAITING, Holder, read_answer
from wirespeed.core.errors import ExitStatus, WirespeedError
from wirespeed.engine.remote import Remote, RemoteProcess
from wirespeed.engine.rundir import utc_now

ANSWER_S = 30.0  # a node's agent that has not said locked, busy or waiting by then is not answering
WAIT_S = 3600.0  # how long --wait queues behind another measurement by default (--wait-limit)
MAX_WAIT_S = 86400.0
# The agent says one or two short lines, then nothing while it holds the lock.
ASK = "`wirespeed agent check` says whether the node runs this wirespeed"
LOCK_BUDGET = Budget(stdout_bytes=1 * MiB, stderr_bytes=4 * MiB, line_bytes=64 * 1024)


class ClusterBusy(WirespeedError):
    """Another measurement holds a node's lock: nothing was started (exit 4, its own: a script retries this one)."""

    exit_status = ExitStatus.BUSY


def me(what: str) -> Holder:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return Holder(what, user, socket.gethostname(), os.getpid(), utc_now())


@contextmanager
def cluster_lock(
    remote: Remote, what: str, *, wait: bool, say: Callable[[str], None], wait_s: float = WAIT_S
) -> Iterator[None]:
    """Every node's lock held within the block, or ClusterBusy naming the node and the holder in the way. Every
    wait has its end: an agent's answer ANSWER_S, a --wait `wait_s` (the agent gives up then, and says busy)."""
    holder = me(what)
    held: list[RemoteProcess] = []
    queue = ["--wait", "--wait-limit", f"{wait_s:g}"] if wait else []
    try:
        for node in sorted(remote.cluster.nodes, key=lambda n: n.name):
            argv = [*remote.agent_argv(node), "agent", "lock", "--holder", _json(holder), *queue]
            process = remote.start(node, argv, budget=LOCK_BUDGET)
            held.append(process)
            state, other = _next(node.name, process, ANSWER_S)
            if state == WAITING:
                who = other.describe() if other else "another measurement"
                say(f"{node.name}: waiting for {who} to end (--wait, at most {wait_s:g} s)")
                state, other = _next(node.name, process, wait_s + ANSWER_S)
                if state == BUSY:
                    who = other.describe() if other else "another measurement (it did not say who)"
                    raise ClusterBusy(f"{node.name}: still busy after {wait_s:g} s: {who}",
                                      hint="raise --wait-limit, or try again when it has ended")  # fmt: skip
            if state == BUSY:
                who = other.describe() if other else "another measurement (it did not say who)"
                raise ClusterBusy(f"{node.name}: busy: {who}", hint="wait for it to end, or --wait to queue behind it")
            if state != LOCKED:
                raise WirespeedError(f"{node.name}: cannot take the bench lock: {state}")
        yield
    finally:
        for process in held:
            process.stop(grace_s=2.0)


def _json(holder: Holder) -> str:
    return json.dumps(holder.to_json(), separators=(",", ":"))


def _next(node: str, process: RemoteProcess, timeout_s: float) -> tuple[str, Holder | None]:
    """The agent's next answer, within `timeout_s`."""
    try:
        line = process.next_line(timeout_s)
    except TimeoutError:
        process.stop(grace_s=2.0)
        raise WirespeedError(
            f"{node}: the agent did not answer about the bench lock within {timeout_s:g} s",
            hint=ASK,
        ) from None
    if line is None:
        result = process.stop(grace_s=2.0)
        raise WirespeedError(
            f"{node}: cannot take the bench lock: {result.message.partition(': ')[2]}", hint=result.hint or ASK
        )
    try:
        return read_answer(line)
    except ValueError as exc:
        process.give_up()  # it says something else than the lock's answers: nothing it says next counts
        raise WirespeedError(f"{node}: cannot take the bench lock: {exc}", hint=ASK) from None
