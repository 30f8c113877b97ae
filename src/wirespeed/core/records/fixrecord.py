"""What a fix did, as records: each change a node's agent applied (`AppliedChange`), how each node ended
(`NodeFixResult`), and a commission's fix step as a whole (`FixRecord`, its fix.json). Pure.

These are read back by the report, by `fix --revert` and by tests; a renamed field is a type error here, not a
silently empty table in a view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.fixplan import Operation, operation_from_json, undo_of
from wirespeed.core.records.decode import Fields
from wirespeed.core.records.results import SCHEMA_VERSION, check_version


def operation(f: Fields, key: str) -> Operation:
    """The operation at `key`, checked as the agent checks one (`operation_from_json`)."""
    data = f.obj(key).data
    try:
        return operation_from_json(data)
    except KeyError as exc:
        raise ValueError(f"{f.where}: {key}: not an operation (no {exc})") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{f.where}: {key}: {exc}") from None


@dataclass(frozen=True)
class AppliedChange:
    """One operation as a node applied it: what it replaced (None: a file that was not there) and whether it took."""

    op: Operation
    original: str | None
    ok: bool
    error: str | None = None

    @property
    def changed(self) -> bool:
        """It took and replaced something other than its own value (what a revert restores)."""
        return self.ok and self.original != self.op.value

    def undo(self) -> Operation:
        """The operation that puts back what this change replaced."""
        return undo_of(self.op.to_json(), self.original)

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op.to_json(), "original": self.original, "ok": self.ok, "error": self.error}

    @staticmethod
    def from_json(data: Any, where: str = "applied") -> AppliedChange:
        f = Fields(data, where)
        return AppliedChange(operation(f, "op"), f.opt_text("original"), f.flag("ok"), f.opt_text("error"))


def undo_changes(changes: Sequence[AppliedChange]) -> list[Operation]:
    """The operations that put back what the changes replaced, last change first; a change that found its own value
    already there (it changed nothing) has none. `fix --revert` undoes a record's or a journal's changes with it,
    and the node's rollback timer its journal's."""
    return [c.undo() for c in reversed(changes) if c.original != c.op.value]


@dataclass(frozen=True)
class NodeFixResult:
    """How one node's part of a fix ended: what it applied, the error that stopped it, whether it confirmed, and
    why it rolled back."""

    node: str
    applied: tuple[AppliedChange, ...] = ()
    error: str | None = None
    confirmed: bool | None = None  # None: nothing changed there, nothing to confirm
    rolled_back: bool = False
    journal: str | None = None  # the node's journal of this fix (None: it changed nothing)
    why: str = ""  # why it rolled back, in a person's words

    def changed(self) -> list[AppliedChange]:
        return [c for c in self.applied if c.changed]

    def failures(self) -> list[str]:
        """One line per thing that went wrong on this node: the node's error, each operation that failed, and a
        rollback with its cause; each line names the node (the fix's messages, said once here)."""
        lines = [self.error] if self.error else []
        lines += [f"{self.node}: {c.op.target}: {c.error}" for c in self.applied if not c.ok]
        if self.rolled_back:
            lines.append(f"{self.node}: {self.why or 'not reachable after the change: it restored the old values'}")
        return lines

    def to_json(self) -> dict[str, Any]:
        """The node's part of fix.json and of `fix --json`."""
        return {"applied": [c.to_json() for c in self.applied], "error": self.error, "confirmed": self.confirmed,
                "rolled_back": self.rolled_back, "journal": self.journal, "why": self.why}  # fmt: skip

    @staticmethod
    def from_json(node: str, data: Any, where: str) -> NodeFixResult:
        f = Fields(data, where)
        applied = tuple(AppliedChange.from_json(e.data, e.where) for e in f.objects("applied"))
        return NodeFixResult(node, applied, f.opt_text("error"), f.opt_flag("confirmed"),
                             f.flag("rolled_back", False), f.opt_text("journal"), f.opt_text("why") or "")  # fmt: skip


@dataclass(frozen=True)
class FixRecord:
    """A commission's fix step (fix.json): the plan per node, the notes it came with, and how each node ended (no
    node yet: written before any node changed)."""

    plan: dict[str, tuple[Operation, ...]]
    notes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    nodes: dict[str, NodeFixResult] = field(default_factory=dict)

    def kinds(self) -> list[str]:
        """The kinds of operation planned, each once, in plan order."""
        return list(dict.fromkeys(op.kind for ops in self.plan.values() for op in ops))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "fix",
            "plan": {node: [op.to_json() for op in ops] for node, ops in self.plan.items()},
            "notes": {node: list(lines) for node, lines in self.notes.items()},
            "nodes": {node: result.to_json() for node, result in self.nodes.items()},
        }

    @staticmethod
    def from_json(data: Any, where: str) -> FixRecord:
        f = Fields(data, where)
        check_version(f)
        plan, notes = f.obj("plan") if "plan" in f else None, f.opt_obj("notes")
        ops = {
            node: tuple(operation(Fields({"op": op}, f"{where}: plan: {node}"), "op") for op in _list(raw, node))
            for node, raw in (plan.data.items() if plan is not None else ())
        }
        return FixRecord(
            ops,
            {node: notes.texts(node) for node in notes.data} if notes is not None else {},
            {node: NodeFixResult.from_json(node, raw, f"{where}: nodes: {node}")
             for node, raw in (f.obj("nodes").data.items() if f.raw("nodes") is not None else ())},
        )  # fmt: skip


def _list(value: Any, node: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"plan: {node}: expected a list of operations")
    return value


@dataclass(frozen=True)
class RevertRecord:
    """What `fix --revert` restores (the run's fix-record.json, and ~/.local/state/wirespeed/last-fix.json): per
    node, the changes that replaced something, and its journal of that fix. `unconfirmed` is written once every
    node applied, before any confirmed; the record before it is kept (one deep) for nodes where this one did not
    stay. Records from before journals have only `nodes`."""

    nodes: dict[str, tuple[AppliedChange, ...]]
    journals: dict[str, str] = field(default_factory=dict)
    state: str = "done"  # or "unconfirmed"
    written_at: str = ""
    previous: RevertRecord | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "written_at": self.written_at,
            "state": self.state,
            "nodes": {node: [c.to_json() for c in changes] for node, changes in self.nodes.items()},
            "journals": dict(self.journals),
            "previous": None if self.previous is None else self.previous.to_json(),
        }

    @staticmethod
    def from_json(data: Any, where: str) -> RevertRecord:
        f = Fields(data, where)
        nodes, journals = f.opt_obj("nodes"), f.opt_obj("journals")
        previous = f.raw("previous")
        return RevertRecord(
            {node: tuple(AppliedChange.from_json(e.data, e.where) for e in nodes.objects(node))
             for node in nodes.data} if nodes is not None else {},
            {node: journals.text(node) for node in journals.data if journals.raw(node) is not None}
            if journals is not None else {},
            f.opt_text("state") or "done",
            f.opt_text("written_at") or "",
            None if previous is None else RevertRecord.from_json(previous, f"{where}: previous"),
        )  # fmt: skip
