"""The node's fix journal and the agent's answers as records: each reads back equal from its own JSON, a journal
written before the records (format 1, as a dict) reads and writes back byte for byte, the JSON the agent prints
keeps its keys and their order, and an answer that is not the record it should be is one line naming the node and
the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.cluster.inventory import Cluster, Node
from wirespeed.core.errors import WirespeedError
from wirespeed.core.fabric.facts import PendingFix, to_jsonable
from wirespeed.core.fixplan import Operation
from wirespeed.core.outcome import CommandResult, Status
from wirespeed.core.records.fixrecord import AppliedChange, undo_changes
from wirespeed.core.records.journal import (
    ApplyReply,
    Journal,
    JournalEntry,
    JournalSummary,
    QueryReply,
)
from wirespeed.core.records.typed import read_dataclass
from wirespeed.engine import fix as fixing
from wirespeed.engine import fixjournal

SYSCTL = Operation("sysctl", "net.ipv4.tcp_rmem", "4096 131072 134217728", "sysctl.tcp")
CX7 = Operation("file", "/etc/netplan/40-cx7.yaml", "new\n", "addr.subnets", network=True)
TCP = Operation("file", "/etc/sysctl.d/90-wirespeed.conf", "net.ipv4.tcp_rmem = 1 2 3\n", "sysctl.tcp")
ENTRIES = [
    JournalEntry(SYSCTL, "4096 131072 6291456", observed=True, ok=True),
    JournalEntry(CX7, "# the node's own\n", observed=True, ok=False, error="Read-only file system"),
    JournalEntry(TCP, None, observed=True, ok=True),
    JournalEntry(Operation("mtu", "enp9s0", "9000", "mtu.host", True), error="No such file or directory"),
]
JOURNAL = Journal(
    "spark-1-20261126T101500-0a1b2c3d",
    "fix",
    "rolledback",
    None,
    seq=7,
    created=1795700100.123456,
    created_utc="2026-11-26T10:15:00Z",
    rollback_after=20.0,
    deadline=1795700120.5,
    timer_pid=4242,
    done=4,
    entries=list(ENTRIES),
    history=[("applying", "2026-11-26T10:15:00Z"), ("applied", "2026-11-26T10:15:01Z")],
    restore_errors=["/etc/netplan/40-cx7.yaml: Read-only file system"],
)


def old_journal(**extra: Any) -> dict[str, Any]:
    """A journal exactly as `fixjournal` wrote it before the records: its dict, keys in the order it built them
    (the keys a later step added come last, in the order they were added)."""
    entry = {"op": SYSCTL.to_json(), "original": "4096 131072 6291456", "observed": True, "ok": True, "error": None}
    failed = {"op": CX7.to_json(), "original": None, "observed": False, "ok": False, "error": "Permission denied"}
    journal: dict[str, Any] = {
        "format": 1,
        "token": "spark-2-20261126T101500-99aa88bb",
        "kind": "revert",
        "reverts": "spark-2-20261125T090000-11223344",
        "seq": 3,
        "created": 1795700100.8642626,
        "created_utc": "2026-11-26T10:15:00Z",
        "rollback_after": 5,  # a whole number stays one
        "deadline": 1795700105.9129188,
        "timer_pid": 8221,
        "done": 2,
        "entries": [entry, failed],
        "state": "applied",
        "history": [["applying", "2026-11-26T10:15:00Z"], ["applied", "2026-11-26T10:15:01Z"]],
    }
    journal.update(extra)
    return journal


def test_each_journal_record_reads_back_equal() -> None:
    for entry in ENTRIES:
        assert JournalEntry.from_json(entry.to_json(), "e") == entry
    assert Journal.from_json(JOURNAL.to_json(), "j") == JOURNAL
    legacy = Journal("old", seq=None, created=1.5, history=[("applying", "x")])  # from before the sequence numbers
    assert "seq" not in legacy.to_json() and Journal.from_json(legacy.to_json(), "j") == legacy
    summary = JOURNAL.summary()
    assert JournalSummary.from_json(summary.to_json(), "s") == summary
    assert summary.applied == tuple(e.change() for e in ENTRIES[:3])  # the observed entries only
    reply = ApplyReply(tuple(e.change() for e in ENTRIES), 4242, "/var/lib/wirespeed/fix-journal/t.json", "t")
    assert ApplyReply.from_json(reply.to_json(), "a") == reply
    assert ApplyReply.from_json(ApplyReply(()).to_json(), "a") == ApplyReply(())
    query = QueryReply("/var/lib/wirespeed/fix-journal", {"a": "confirmed", "b": "applied"}, summary, ("b",))
    assert QueryReply.from_json(query.to_json(), "q") == query
    assert QueryReply.from_json(QueryReply("/d").to_json(), "q") == QueryReply("/d")
    for pending in (PendingFix("t", "fix", "applied", "2026-11-26T10:15:00Z", True, -12.5),
                    PendingFix("u", "revert", "applying", "", False, None)):  # fmt: skip
        assert read_dataclass(PendingFix, to_jsonable(pending), "p") == pending


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"paused": True},
        {"state": "rolledback", "restore_errors": ["/etc/netplan/40-cx7.yaml: Read-only file system"]},
        {"state": "reverted", "reverted_by": "spark-2-20261127T000000-deadbeef"},
    ],
)
def test_a_journal_written_before_the_records_reads_and_writes_back_byte_for_byte(
    tmp_path: Path, extra: dict[str, Any]
) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps(old_journal(**extra), indent=1) + "\n")  # as fixjournal.write wrote it
    journal = fixjournal.read(old)
    assert journal is not None and journal.token == "spark-2-20261126T101500-99aa88bb"
    again = tmp_path / "again.json"
    fixjournal.write(again, journal)
    assert again.read_bytes() == old.read_bytes()


def test_a_journal_from_before_the_sequence_numbers_still_reads_and_writes_back(tmp_path: Path) -> None:
    data = old_journal()
    del data["seq"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data, indent=1) + "\n")
    journal = fixjournal.read(old)
    assert journal is not None and journal.order == (0, 1795700100.8642626)
    fixjournal.write(tmp_path / "again.json", journal)
    assert (tmp_path / "again.json").read_bytes() == old.read_bytes()


def test_what_is_not_a_journal_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    for text in ("{", "[]", json.dumps({**old_journal(), "format": 2}), json.dumps({**old_journal(), "state": 3})):
        path.write_text(text)
        assert fixjournal.read(path) is None


def test_the_agent_prints_the_keys_it_always_printed_in_their_order() -> None:
    assert list(JOURNAL.summary().to_json()) == [
        "token", "kind", "state", "reverts", "created_utc", "history", "restore_errors", "applied"
    ]  # fmt: skip
    assert list(ApplyReply(()).to_json()) == ["applied", "timer", "journal", "token"]
    assert list(QueryReply("/d").to_json()) == ["dir", "states", "latest", "pending"]
    assert list(to_jsonable(PendingFix("t", "fix", "applied", "", True, None))) == [
        "token", "kind", "state", "created_utc", "timer_alive", "overdue_s"
    ]  # fmt: skip
    assert list(ENTRIES[0].change().to_json()) == ["op", "original", "ok", "error"]


def test_a_change_is_undone_from_what_it_replaced_last_first() -> None:
    changes = [e.change() for e in ENTRIES[:3]]
    assert undo_changes(changes) == [
        Operation("unlink", TCP.target, "", "revert"),
        Operation("file", CX7.target, "# the node's own\n", "revert"),
        Operation("sysctl", SYSCTL.target, "4096 131072 6291456", "revert"),
    ]
    assert fixjournal.restore_ops(JOURNAL) == undo_changes(changes)  # the timer restores the same, failed ones too


class FakeRemote:
    """One node whose agent answers `stdout` to every command."""

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout
        self.cluster = Cluster(name="c", nodes=(Node("s1", "10.0.0.1"),), source="test")

    def agent_argv(self, node: Node) -> list[str]:
        return ["wirespeed"]

    def run(self, node: Node, argv: list[str], **_: object) -> CommandResult:
        return CommandResult(node.name, tuple(argv), Status.OK, 0, self.stdout, "", 0.0, f"{node.name}: ok")


BAD_APPLY = {"applied": [{**ENTRIES[0].change().to_json(), "ok": "yes"}], "timer": 1, "journal": "j", "token": "t"}


def test_an_apply_answer_of_the_wrong_shape_is_one_line_naming_the_node_and_the_field() -> None:
    remote = FakeRemote(json.dumps(BAD_APPLY))
    outcome = fixing._apply_on(remote, "s1", [SYSCTL], 5.0, "fix", None)  # type: ignore[arg-type]
    assert outcome.error == "s1: agent apply: applied[0]: ok: expected true or false, found text 'yes'"
    assert outcome.token is not None and outcome.token.startswith("s1-")  # asked to undo what it may have done
    good = FakeRemote(json.dumps({**BAD_APPLY, "applied": [ENTRIES[0].change().to_json()]}))
    done = fixing._apply_on(good, "s1", [SYSCTL], 5.0, "fix", None)  # type: ignore[arg-type]
    assert done.error is None and done.token == "t" and done.applied == [ENTRIES[0].change()]
    junk = fixing._apply_on(FakeRemote("not json"), "s1", [SYSCTL], 5.0, "fix", None)  # type: ignore[arg-type]
    assert junk.error == "s1: the agent did not answer in JSON"


def test_a_journal_answer_of_the_wrong_shape_is_one_line_naming_the_node_and_the_field(tmp_path: Path) -> None:
    latest = {**JOURNAL.summary().to_json(), "applied": [{"op": SYSCTL.to_json(), "original": 3, "ok": True}]}
    remote = FakeRemote(json.dumps({"dir": "/d", "states": {}, "latest": latest, "pending": []}))
    with pytest.raises(WirespeedError) as raised:
        fixing.plan_revert(remote, tmp_path / "none.json", lambda line: None)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "s1: unreadable fix journal: agent fix-journal: latest: applied[0]: original: expected text, found the number 3"
    )
    said: list[str] = []
    with pytest.raises(WirespeedError, match="no fix to revert"):
        fixing.plan_revert(FakeRemote("junk"), tmp_path / "none.json", said.append)  # type: ignore[arg-type]
    assert said == ["s1: its fix journal could not be read: s1: the agent did not answer in JSON"]
    assert fixing._ask(remote, remote.cluster.nodes[0], QueryReply.from_json, "fix-journal") is None  # type: ignore[arg-type]


def test_an_applied_change_is_the_journal_entry_the_controller_sees() -> None:
    entry = ENTRIES[1]
    assert entry.change() == AppliedChange(CX7, "# the node's own\n", False, "Read-only file system")
    assert AppliedChange.from_json(entry.change().to_json()) == entry.change()
