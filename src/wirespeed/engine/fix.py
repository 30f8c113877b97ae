"""`wirespeed fix`: plan per node, apply only with --yes, record the original values, revert exactly.

Every change goes out with a safety net (`netplan try`, with a record that outlives this controller): each node's
agent journals the old values and files on the node (`fixjournal`) before it changes anything, and a detached timer
there restores them unless this controller confirms in time. The controller confirms only once every node has
applied and answers over a new connection (no ssh connection sharing: the node still takes new ones after the
change); if any node failed or does not answer, it confirms none and tells the others to restore now. So a
controller killed at any moment leaves each node either confirmed or restored. The controller's record
(`--record`) is written before confirming and again after; `fix --revert` reads it and, for the nodes it does not
cover (no record, or a partial one), the nodes' own journals. docs/fix-journal.md has the whole protocol.

Tests only: WIRESPEED_TEST_FIX_PAUSE=POINT makes this controller stop (print `wirespeed: test pause at POINT` on
stderr and wait to be killed) at `before-apply`, `before-confirm` (every node applied), `confirm:NODE` (before
NODE's confirmation; the other nodes' go on), `after-confirm`; `apply:NODE:N` makes NODE's agent stop after its
Nth operation, its journal saying `"paused": true`. Never set it outside a test.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from wirespeed.adapters import files
from wirespeed.adapters.ssh import SshTransport, Transport
from wirespeed.core.checks.model import CheckInput
from wirespeed.core.cluster.become import HOW
from wirespeed.core.cluster.inventory import Node
from wirespeed.core.errors import WirespeedError
from wirespeed.core.fabric.facts import NodeFacts
from wirespeed.core.fixplan import FixPlan, Operation, plan_nodes
from wirespeed.core.records.fixrecord import AppliedChange, NodeFixResult, RevertRecord, undo_changes
from wirespeed.core.records.journal import (
    APPLIED,
    CONFIRMED,
    REVERTED,
    ROLLEDBACK,
    ApplyReply,
    JournalSummary,
    QueryReply,
)
from wirespeed.engine import checks as checking
from wirespeed.engine import discover, init
from wirespeed.engine.remote import Remote
from wirespeed.engine.runs import load_revert_record


def default_record() -> Path:
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "wirespeed" / "last-fix.json"


def plan_fix(remote: Remote, say: Callable[[str], None]) -> FixPlan:
    """Discover (with the link probe: the address plan needs the cabling), check, and plan per node.

    `say` hears, once each, every node that could not be read and every check that could not run: the plan is
    only as whole as what was read, and the person deciding on --yes needs to know that."""
    found = discover.discover_live(remote, probe=True)
    for reason in found.errors.values():
        say(reason)
    run = checking.run_checks(found, checking.select([], []))
    for error in run.errors:
        if not error.startswith(tuple(found.errors.values())):
            say(error)
    nodes = plan_nodes(CheckInput(found.facts, found.cabling), run.results)
    return FixPlan(
        operations={node: p.operations for node, p in nodes.items() if p.operations},
        current={node: facts.config_files for node, facts in found.facts.items()},
        notes={node: p.notes for node, p in nodes.items() if p.notes},
        unprivileged=tuple(sorted(n for n, f in found.facts.items() if f.privileged is False)),
        unread=tuple(sorted(found.errors)),
    )


def pin_new_addresses(remote: Remote, plan: Mapping[str, Sequence[Operation]], say: Callable[[str], None]) -> None:
    """After a fix that readdressed halves: the nodes read again and `pin_addresses`."""
    if any(op.kind == "addr" for ops in plan.values() for op in ops):
        pin_addresses(remote, discover.discover_live(remote, probe=False).facts, say)


def pin_addresses(remote: Remote, facts: Mapping[str, NodeFacts], say: Callable[[str], None]) -> None:
    """The nodes' fabric addresses as they are now, pinned in init's ssh mesh, so that ssh (and mpirun through it)
    reaches the ones a fix gave (`init.pin_fabric_addresses`). A failure is said, not raised: the fix stands."""
    try:
        pinned = init.pin_fabric_addresses(remote, facts)
    except WirespeedError as exc:
        say(f"ssh mesh: the new fabric addresses are not pinned: {exc}")
        return
    if pinned:
        say(f"ssh mesh: the new fabric addresses pinned on {', '.join(pinned)} (same host keys)")


def needs_root(plan: dict[str, list[Operation]], unprivileged: Sequence[str]) -> list[str]:
    """One line per node the plan changes whose agent is not root (no --become): nothing may be applied then, or
    some changes would go through and others not."""
    return [f"{node}: fix needs root there ({HOW})" for node in sorted(plan) if node in unprivileged]


PAUSE_ENV = "WIRESPEED_TEST_FIX_PAUSE"
Say = Callable[[str], None]


def _pause(point: str) -> None:
    """Tests only (see the module's docstring): stop here until killed."""
    if os.environ.get(PAUSE_ENV) == point:
        sys.stderr.write(f"wirespeed: test pause at {point}\n")
        sys.stderr.flush()
        threading.Event().wait()


def _node_pause(node: str) -> list[str]:
    value = os.environ.get(PAUSE_ENV, "")
    prefix = f"apply:{node}:"
    count = value[len(prefix) :] if value.startswith(prefix) else ""
    return ["--pause-after", count] if count.isdigit() else []


def new_token(node: str) -> str:
    """A fresh name for one node's journal of one fix."""
    safe = "".join(c for c in node if c.isalnum() or c in "._-").lstrip("._-")[:48] or "node"
    return f"{safe}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(4)}"


@dataclass
class NodeOutcome:
    """One node's part of a fix while it is under way; `record()` is what is kept of it."""

    node: str
    applied: list[AppliedChange] = field(default_factory=list)
    error: str | None = None
    confirmed: bool | None = None  # None: nothing changed there, nothing to confirm
    rolled_back: bool = False
    token: str | None = None  # the node's journal of this fix (None: it changed nothing)
    why: str = ""  # why it rolled back, in a person's words

    @property
    def pending(self) -> bool:
        return self.token is not None and self.error is None

    def record(self) -> NodeFixResult:
        return NodeFixResult(self.node, tuple(self.applied), self.error, self.confirmed, self.rolled_back,
                             self.token, self.why)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The node's part of fix.json and of `fix --json`: what it applied, its error, and how it ended."""
        return self.record().to_json()

    def changed(self) -> list[AppliedChange]:
        """The changes that applied and replaced something (what a revert restores)."""
        return self.record().changed()

    def failures(self) -> list[str]:
        return self.record().failures()


Reply = TypeVar("Reply", QueryReply, JournalSummary)


class BadReply(WirespeedError):
    """An agent's answer about the fix journal that is JSON but not the record it should be: one line naming the node
    and the field."""

    def __init__(self, node: str, detail: str) -> None:
        super().__init__(f"{node}: {detail}")
        self.node, self.detail = node, detail


def _agent(
    remote: Remote, node: Node, read: Callable[[Any, str], Reply], *args: str, timeout_s: float = 20.0
) -> tuple[Reply | None, str]:
    """One agent command about the fix journal, privileged: its answer read by `read` (a reply's `from_json`), or
    None and its one-line failure. An answer that is JSON but not that reply raises `BadReply`."""
    result = remote.run(node, [*remote.agent_argv(node), "agent", *args], timeout_s=timeout_s, privileged=True)
    if not result.ok:
        return None, result.message
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return None, f"{node.name}: the agent did not answer in JSON"
    try:
        return read(data, f"agent {args[0]}"), ""
    except ValueError as exc:
        raise BadReply(node.name, str(exc)) from None


def _ask(
    remote: Remote, node: Node, read: Callable[[Any, str], Reply], *args: str, timeout_s: float = 20.0
) -> Reply | None:
    """`_agent`'s answer where any failure (the node, the answer) only means that there is none."""
    try:
        return _agent(remote, node, read, *args, timeout_s=timeout_s)[0]
    except BadReply:
        return None


def _apply_on(
    remote: Remote, node_name: str, ops: list[Operation], rollback_s: float, kind: str, reverts: str | None
) -> NodeOutcome:
    node = remote.cluster.node(node_name)
    token = new_token(node_name)
    argv = [*remote.agent_argv(node), "agent", "apply", "--token", token, "--rollback-after", str(rollback_s)]
    argv += ["--kind", kind, *(["--reverts", reverts] if reverts else []), *_node_pause(node_name)]
    argv += ["--ops", json.dumps([op.to_json() for op in ops])]
    result = remote.run(node, argv, timeout_s=60 + rollback_s, privileged=True)
    outcome = NodeOutcome(node_name)
    if not result.ok:
        outcome.error = result.message
        outcome.token = token  # it may have journalled (and changed) something before it failed: ask it to undo
        return outcome
    try:
        data = json.loads(result.stdout)
    except ValueError:
        outcome.error = f"{node_name}: the agent did not answer in JSON"
        outcome.token = token
        return outcome
    try:
        reply = ApplyReply.from_json(data, f"{node_name}: agent apply")
    except ValueError as exc:  # one line naming the node and the field
        outcome.error = str(exc)
        outcome.token = token
        return outcome
    outcome.applied, outcome.token = list(reply.applied), reply.token
    return outcome


def _await(remote: Remote, outcome: NodeOutcome, rollback_s: float) -> None:
    """Until the node's journal says how it ended (its timer decides): confirmed, or restored."""
    node = remote.cluster.node(outcome.node)
    deadline = time.monotonic() + rollback_s + 15.0
    while time.monotonic() < deadline:
        data = _ask(remote, node, QueryReply.from_json, "fix-journal", timeout_s=10)
        state = None if data is None or outcome.token is None else data.states.get(outcome.token)
        if state == CONFIRMED:
            outcome.confirmed, outcome.rolled_back = True, False
            return
        if state == ROLLEDBACK or (data is not None and state is None):  # gone: never journalled, nothing changed
            break
        time.sleep(0.3 if data is not None else 1.0)
    outcome.confirmed, outcome.rolled_back = False, True  # the node restores itself when its timer runs out


def fresh_connections(remote: Remote) -> Remote:
    """The same nodes, agents and sudo, but every ssh command over a connection of its own (no sharing of the one
    already open): a node that answers there still takes new connections after the change."""

    def transport(node: Node) -> Transport:
        used = remote.transport(node)
        return dataclasses.replace(used, control_dir=None) if isinstance(used, SshTransport) else used

    fresh = Remote(remote.cluster, transport_factory=transport, say=remote.say, become=remote.become)
    fresh.agents = remote.agents
    return fresh


def _confirm(remote: Remote, outcome: NodeOutcome, rollback_s: float, say: Say) -> None:
    assert outcome.token is not None
    _pause(f"confirm:{outcome.node}")
    node = remote.cluster.node(outcome.node)
    answer = fresh_connections(remote).run(
        node, [*remote.agent_argv(node), "agent", "confirm", "--token", outcome.token], timeout_s=20, privileged=True
    )
    if answer.ok:
        outcome.confirmed = True
        say(f"{outcome.node}: confirmed: its changes stay")
        return
    outcome.why = "not reachable after the change: it restored the old values itself"
    if "too late" in answer.stderr:
        outcome.confirmed, outcome.rolled_back = False, True
    else:
        _await(remote, outcome, rollback_s)


def _abort(remote: Remote, outcome: NodeOutcome, rollback_s: float, why: str) -> None:
    """Restore now: the fix is not confirmed anywhere. A node whose apply failed may have journalled (and changed)
    part of it: it is told too, and its error stays what it reports."""
    assert outcome.token is not None
    node = remote.cluster.node(outcome.node)
    data = _ask(remote, node, JournalSummary.from_json, "rollback", "--token", outcome.token)
    if outcome.error:
        return
    outcome.why = why
    if data is not None and data.state == ROLLEDBACK:
        outcome.confirmed, outcome.rolled_back = False, True
    else:
        _await(remote, outcome, rollback_s)


def apply_plan(
    remote: Remote,
    plan: dict[str, list[Operation]],
    *,
    rollback_s: float = 20.0,
    confirm: bool = True,
    kind: str = "fix",
    reverts: dict[str, str] | None = None,
    say: Say | None = None,
    on_applied: Callable[[list[NodeOutcome]], None] | None = None,
) -> list[NodeOutcome]:
    """Apply each node's operations at once on all nodes, each under its journal and rollback timer; confirm every
    node once all have applied and answer over a new connection (`on_applied` hears them first: the record is
    written before any confirmation), or none when one failed. `confirm=False` exists to test the safety net."""
    if not plan:
        return []
    said: Say = say or (lambda _: None)
    reverts = reverts or {}
    _pause("before-apply")
    with ThreadPoolExecutor(max_workers=min(16, len(plan))) as pool:
        futures = [
            pool.submit(_apply_on, remote, node, ops, rollback_s, kind, reverts.get(node)) for node, ops in plan.items()
        ]
        outcomes = [f.result() for f in futures]
    for outcome in outcomes:
        changed = len(outcome.changed())
        if outcome.error is None:
            held = f", held by its rollback timer ({rollback_s:g} s)" if outcome.pending else ""
            said(f"{outcome.node}: applied {changed} change(s){held}")
    pending = [o for o in outcomes if o.token is not None]
    failed = [o.node for o in outcomes if o.error]
    if on_applied is not None:
        try:
            on_applied(outcomes)
        except BaseException:
            _abort_all(remote, pending, rollback_s, "not confirmed: the record could not be written")
            raise
    if not pending:
        return outcomes
    if not failed and confirm:
        _pause("before-confirm")
        failed = _lost(remote, pending)
        if failed:
            said(f"{', '.join(failed)} did not answer over a new connection after the change")
    if failed:
        why = f"not confirmed: {', '.join(failed)} failed, so no node keeps this fix; it restored the old values"
        said(f"confirming no node: {', '.join(failed)} failed; the others restore their old values now")
        _abort_all(remote, pending, rollback_s, why)
        for outcome in pending:
            if outcome.node in failed and not outcome.error:
                outcome.why = "not reachable after the change: it restored the old values itself"
    else:
        with ThreadPoolExecutor(max_workers=min(16, len(pending))) as pool:
            if confirm:
                list(pool.map(lambda o: _confirm(remote, o, rollback_s, said), pending))
            else:
                list(pool.map(lambda o: _await(remote, o, rollback_s), pending))
    for outcome in pending:
        if outcome.rolled_back and not outcome.why:
            outcome.why = "not confirmed: it restored the old values itself"
    _pause("after-confirm")
    return outcomes


def _lost(remote: Remote, pending: list[NodeOutcome]) -> list[str]:
    """The nodes that, over a new connection, do not answer (or whose journal is no longer waiting to be
    confirmed: its timer already restored)."""
    fresh = fresh_connections(remote)

    def answers(outcome: NodeOutcome) -> bool:
        data = _ask(fresh, fresh.cluster.node(outcome.node), QueryReply.from_json, "fix-journal", timeout_s=20)
        return data is not None and outcome.token is not None and data.states.get(outcome.token) == APPLIED

    with ThreadPoolExecutor(max_workers=min(16, len(pending))) as pool:
        return [o.node for o, ok in zip(pending, pool.map(answers, pending), strict=True) if not ok]


def _abort_all(remote: Remote, pending: list[NodeOutcome], rollback_s: float, why: str) -> None:
    if pending:
        with ThreadPoolExecutor(max_workers=min(16, len(pending))) as pool:
            list(pool.map(lambda o: _abort(remote, o, rollback_s, why), pending))


def write_record(path: Path, outcomes: list[NodeOutcome], *, confirmed: bool = True) -> None:
    """What was replaced, per node, so that `fix --revert` restores it exactly, with each node's journal (written
    once every node applied, before confirming, and again after). A fix that replaced nothing (a second run:
    nothing to change) leaves the earlier record as it is, so that `--revert` still undoes the fix that did change
    something; the earlier record is also kept inside the new one (one deep), for the nodes where the new fix did
    not stay."""
    nodes = {o.node: tuple(o.changed()) for o in outcomes if not o.rolled_back and not o.error}
    journals = {o.node: o.token for o in outcomes if o.token}
    try:
        earlier = load_revert_record(path) if path.exists() else None
    except WirespeedError:
        earlier = None  # not a record (any more): replaced, as before journals
    if not any(nodes.values()):
        if earlier is not None and earlier.state == "unconfirmed" and confirmed:
            # nothing of this fix stayed: the one before it is the last again
            _save(path, earlier.previous)
        if path.exists():
            return
    if earlier is not None and earlier.state == "unconfirmed":
        earlier = earlier.previous  # the same fix, written before confirming
    record = RevertRecord(
        nodes,
        journals,
        "done" if confirmed else "unconfirmed",
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        None if earlier is None else dataclasses.replace(earlier, previous=None),
    )
    _save(path, record)


def _save(path: Path, record: RevertRecord | None) -> None:
    if record is None:
        path.unlink(missing_ok=True)
        return
    # Written new beside it, fsynced and renamed over it: a link planted at the record (or at a temporary's name)
    # is never written through, and a full disk is one line saying the earlier record is kept.
    files.write_atomic(files.ensure_dir(path.parent) / path.name, json.dumps(record.to_json(), indent=2) + "\n")


def _from_record(
    record: RevertRecord | None, where: str, node: str, states: dict[str, str]
) -> tuple[list[Operation], str, str | None] | str | None:
    """A node's undo as the record (or the record it kept from before) gives it: (ops, source, its journal); a
    string when the record covers the node but there is nothing to undo; None when the record does not cover it."""
    if record is None:
        return None
    if node not in record.nodes and node not in record.journals:
        return None
    token = record.journals.get(node)
    state = states.get(token) if token else None
    if token and (state == ROLLEDBACK or node not in record.nodes):
        earlier = _from_record(record.previous, where, node, states)
        if earlier is not None:
            return earlier
        return "its last fix was rolled back" if state == ROLLEDBACK else "its last fix did not stay there"
    if state == REVERTED:
        return "its last fix was reverted already"
    ops = undo_changes(record.nodes.get(node, ()))
    return (ops, f"the record {where}", token) if ops else "its last fix changed nothing"


def _query(remote: Remote, node: Node) -> tuple[QueryReply | None, str]:
    """`agent fix-journal --settle` on the node; an answer that is not one is one line naming the node and the field."""
    try:
        return _agent(remote, node, QueryReply.from_json, "fix-journal", "--settle", timeout_s=700)
    except BadReply as exc:
        raise WirespeedError(f"{exc.node}: unreadable fix journal: {exc.detail}") from None


def plan_revert(remote: Remote, record_path: Path, say: Say) -> FixPlan:
    """Undo per node: from the controller's record where it covers the node (unless the node's journal says that
    fix was rolled back or reverted); a node the record does not cover was not changed by that fix and stays as
    it is (an earlier fix on it too); with no record, from each node's own latest confirmed journal. Every node is
    asked, after its pending rollback timers decided; a node that cannot be asked is said, and the record used."""
    record = load_revert_record(record_path) if record_path.exists() else None
    where = str(record_path)
    nodes = list(remote.cluster.nodes)
    for name in record.nodes if record is not None else ():
        remote.cluster.node(name)  # a record of another cluster: one line naming the node
    with ThreadPoolExecutor(max_workers=min(16, len(nodes)) or 1) as pool:
        answers = list(pool.map(lambda n: _query(remote, n), nodes))
    made = FixPlan({})
    for node, (data, failure) in zip(nodes, answers, strict=True):
        if data is None:
            say(f"{node.name}: its fix journal could not be read: {failure}")
        states = {} if data is None else data.states
        found = _from_record(record, where, node.name, states)
        if isinstance(found, tuple):
            made.operations[node.name], made.sources[node.name], token = found
            if token and states.get(token) == CONFIRMED:
                made.reverts[node.name] = token
            continue
        latest = None if data is None else data.latest
        if found is None and latest and record is None:  # no record: each node's own last fix
            ops = undo_changes(latest.applied)  # what its latest confirmed journal observed replacing
            if ops:
                made.operations[node.name] = ops
                made.sources[node.name] = f"its journal {latest.token} (fix of {latest.created_utc})"
                made.reverts[node.name] = latest.token
                continue
        if found is None and record is not None:  # the last fix did not change it: an earlier one stays
            found = f"the fix {where} records did not change it"
        if isinstance(found, str):
            made.notes[node.name] = [f"nothing to revert: {found}"]
    if not made.operations and record is None:
        raise WirespeedError(
            f"{record_path}: no fix to revert",
            hint="no record there, and no node keeps a journal of a confirmed fix (`wirespeed fix --yes` writes both)",
        )
    return made
