"""Taking every node's bench lock before measuring (see `wirespeed.core.benchlock`): in name order, one node at
a time, so that two controllers that both `--wait` queue rather than each holding half the cluster. The locks
live exactly as long as the block: stopping the agents (or this controller dying) releases them."""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from wirespeed.core.benchlock import BUSY, LOCKED, WAITING, Holder, read_answer
from wirespeed.core.errors import ExitStatus, WirespeedError
from wirespeed.engine.remote import Remote, RemoteProcess
from wirespeed.engine.rundir import utc_now


class ClusterBusy(WirespeedError):
    """Another measurement holds a node's lock: nothing was measured (exit 3)."""

    exit_status = ExitStatus.NOT_MEASURED


def me(what: str) -> Holder:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return Holder(what, user, socket.gethostname(), os.getpid(), utc_now())


@contextmanager
def cluster_lock(remote: Remote, what: str, *, wait: bool, say: Callable[[str], None]) -> Iterator[None]:
    """Every node's lock held within the block, or ClusterBusy naming the node and the holder in the way."""
    holder = me(what)
    held: list[RemoteProcess] = []
    try:
        for node in sorted(remote.cluster.nodes, key=lambda n: n.name):
            argv = [*remote.agent_argv(node), "agent", "lock", "--holder", _json(holder), *(["--wait"] if wait else [])]
            process = remote.start(node, argv)
            held.append(process)
            lines = process.lines()
            state, other = _next(node.name, lines, process)
            if state == WAITING:
                who = other.describe() if other else "another measurement"
                say(f"{node.name}: waiting for {who} to end (--wait)")
                state, other = _next(node.name, lines, process)
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


def _next(node: str, lines: Iterator[str], process: RemoteProcess) -> tuple[str, Holder | None]:
    line = next(lines, None)
    if line is None:
        result = process.stop(grace_s=2.0)
        raise WirespeedError(f"{node}: cannot take the bench lock: {result.message}",
                             hint="`wirespeed agent check` says whether the node runs this wirespeed")  # fmt: skip
    try:
        return read_answer(line)
    except ValueError as exc:
        raise WirespeedError(f"{node}: cannot take the bench lock: {exc}") from None
