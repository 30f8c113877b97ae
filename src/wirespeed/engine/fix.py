"""`wirespeed fix`: plan per node, apply only with --yes, record the original values, revert exactly.

Network changes go out with a safety net: the node's agent starts a detached timer that restores the old values
unless this controller, over a new ssh connection, confirms within the time that the node is still reachable.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirespeed.core.become import HOW
from wirespeed.core.checks.model import CheckInput
from wirespeed.core.errors import WirespeedError
from wirespeed.core.fixplan import Operation, operation_from_json, plan_nodes, undo_of
from wirespeed.engine import checks as checking
from wirespeed.engine import discover
from wirespeed.engine.remote import Remote


def default_record() -> Path:
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "wirespeed" / "last-fix.json"


@dataclass
class FixPlan:
    """What `fix` would change per node, the files each node has now (to diff against), and what it leaves out."""

    operations: dict[str, list[Operation]]
    current: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    unprivileged: tuple[str, ...] = ()  # nodes whose agent did not run as root (no --become)


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
    )


def needs_root(plan: dict[str, list[Operation]], unprivileged: Sequence[str]) -> list[str]:
    """One line per node the plan changes whose agent is not root (no --become): nothing may be applied then, or
    some changes would go through and others not."""
    return [f"{node}: fix needs root there ({HOW})" for node in sorted(plan) if node in unprivileged]


@dataclass
class NodeOutcome:
    node: str
    applied: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    confirmed: bool | None = None  # None: no network change needed confirming
    rolled_back: bool = False


def _apply_on(remote: Remote, node_name: str, ops: list[Operation], rollback_s: float, confirm: bool) -> NodeOutcome:
    node = remote.cluster.node(node_name)
    token = f"{node_name}-{secrets.token_hex(6)}"
    argv = [
        *remote.agent_argv(node),
        "agent",
        "apply",
        "--token",
        token,
        "--rollback-after",
        str(rollback_s),
        "--ops",
        json.dumps([op.to_json() for op in ops]),
    ]
    result = remote.run(node, argv, timeout_s=60, privileged=True)
    outcome = NodeOutcome(node_name)
    if not result.ok:
        outcome.error = result.message
        return outcome
    try:
        data = json.loads(result.stdout)
    except ValueError:
        outcome.error = f"{node_name}: the agent did not answer in JSON"
        return outcome
    outcome.applied = data["applied"]
    if not data.get("timer"):
        return outcome
    answer = (
        remote.run(
            node, [*remote.agent_argv(node), "agent", "confirm", "--token", token], timeout_s=20, privileged=True
        )
        if confirm
        else None
    )
    outcome.confirmed = bool(answer and answer.ok)
    if not outcome.confirmed:
        outcome.rolled_back = True  # the node restores itself when its timer runs out (or already did)
        if answer is None or "too late" not in answer.stderr:
            time.sleep(rollback_s + 1.0)
    return outcome


def apply_plan(
    remote: Remote, plan: dict[str, list[Operation]], *, rollback_s: float = 20.0, confirm: bool = True
) -> list[NodeOutcome]:
    """Apply each node's operations at once on all nodes; `confirm=False` exists to test the safety net."""
    if not plan:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(plan))) as pool:
        futures = [pool.submit(_apply_on, remote, node, ops, rollback_s, confirm) for node, ops in plan.items()]
        return [f.result() for f in futures]


def write_record(path: Path, outcomes: list[NodeOutcome]) -> None:
    """What was replaced, per node, so that `fix --revert` restores it exactly (written as soon as known). A fix
    that replaced nothing (a second run: nothing to change) leaves the earlier record as it is, so that
    `--revert` still undoes the fix that did change something."""
    nodes = {
        o.node: [e for e in o.applied if e["ok"] and e["original"] != e["op"]["value"]]
        for o in outcomes
        if not o.rolled_back
    }
    if not any(nodes.values()) and path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "nodes": nodes}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def revert_plan(path: Path) -> dict[str, list[Operation]]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise WirespeedError(f"{path}: no fix to revert", hint="`wirespeed fix --yes` writes it") from None
    except (OSError, ValueError) as exc:
        raise WirespeedError(f"{path}: unreadable fix record: {exc}") from None
    plan: dict[str, list[Operation]] = {}
    for node, entries in data.get("nodes", {}).items():
        try:
            ops = [undo_of(operation_from_json(e["op"]).to_json(), e["original"]) for e in reversed(entries)]
        except (KeyError, TypeError, ValueError) as exc:
            raise WirespeedError(f"{path}: unreadable fix record for {node}: {exc}") from None
        if ops:
            plan[node] = ops
    return plan
