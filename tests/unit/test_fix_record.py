"""The record `fix --revert` reads: a fix that replaced nothing keeps the record of the one that did."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wirespeed.core.fixplan import Operation, undo_of
from wirespeed.core.records.fixrecord import AppliedChange, RevertRecord
from wirespeed.engine.fix import NodeOutcome, write_record

TUNED = "4096 131072 134217728"
OP = {"kind": "sysctl", "target": "net.ipv4.tcp_rmem", "value": TUNED, "reason": "sysctl.tcp"}
APPLIED: dict[str, Any] = {"op": OP, "ok": True, "original": "4096 131072 6291456"}


def revert_plan(path: Path) -> dict[str, list[Operation]]:
    """The record's undo per node, as `fix --revert` reads it (without asking the nodes)."""
    record = RevertRecord.from_json(json.loads(path.read_text()), str(path))
    return {
        node: [undo_of(c.op.to_json(), c.original) for c in reversed(changes)]
        for node, changes in record.nodes.items()
        if changes
    }


def test_a_second_fix_that_changed_nothing_keeps_the_first_record(tmp_path: Path) -> None:
    record = tmp_path / "state" / "last-fix.json"
    write_record(record, [NodeOutcome("s1", applied=[AppliedChange.from_json(APPLIED)])])
    first = record.read_text()
    write_record(record, [])  # `fix --yes` again: nothing to change
    write_record(record, [NodeOutcome("s1", applied=[AppliedChange.from_json({**APPLIED, "original": TUNED})])])
    assert record.read_text() == first
    [undo] = revert_plan(record)["s1"]
    assert (undo.target, undo.value) == ("net.ipv4.tcp_rmem", "4096 131072 6291456")


def test_nothing_replaced_still_writes_a_first_record(tmp_path: Path) -> None:
    record = tmp_path / "last-fix.json"
    write_record(record, [])
    assert json.loads(record.read_text())["nodes"] == {}
