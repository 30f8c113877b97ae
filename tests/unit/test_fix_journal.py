"""The node side of `fix`'s journal, on files under a private config root (never the host's /etc or /proc/sys):
the old values are on disk before anything changes, a confirmed fix stays, an unconfirmed one and an apply killed
half way are restored by the detached timer, and `--revert` picks the right journal or record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.errors import UsageError
from wirespeed.core.fabric.facts import to_jsonable
from wirespeed.core.fixplan import Operation
from wirespeed.core.records.fixrecord import AppliedChange, RevertRecord
from wirespeed.core.records.journal import Journal, JournalSummary, QueryReply
from wirespeed.engine import fixjournal
from wirespeed.engine.fix import NodeOutcome, _from_record, write_record

TCP = "/etc/sysctl.d/90-wirespeed.conf"
CX7 = "/etc/netplan/40-cx7.yaml"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WIRESPEED_CONFIG_ROOT", str(tmp_path))
    (tmp_path / "etc" / "netplan").mkdir(parents=True)
    (tmp_path / "etc" / "netplan" / "40-cx7.yaml").write_text("# the node's own\n")
    return tmp_path


def ops() -> list[Operation]:
    return [Operation("file", TCP, "net.ipv4.tcp_rmem = 1 2 3\n", "sysctl.tcp"), Operation("file", CX7, "new\n", "x")]


def until(what: Callable[[], bool], timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def state(token: str) -> str | None:
    journal = fixjournal.read(fixjournal.journal_path(token))
    return None if journal is None else journal.state


def read_json(path: Path) -> dict[str, Any] | None:
    """The journal as it is on disk."""
    journal = fixjournal.read(path)
    return None if journal is None else journal.to_json()


def original(root: Path) -> bool:
    return (
        not (root / "etc/sysctl.d/90-wirespeed.conf").exists()
        and (root / "etc/netplan/40-cx7.yaml").read_text() == "# the node's own\n"
    )


def test_a_confirmed_fix_stays_and_its_journal_says_so(root: Path) -> None:
    answer = fixjournal.apply_journaled("n1-a", ops(), 0.5).to_json()
    journal = read_json(Path(answer["journal"]))
    assert journal is not None and journal["state"] == "applied"
    assert {e["op"]["target"]: e["original"] for e in journal["entries"]} == {TCP: None, CX7: "# the node's own\n"}
    directory = root / "var/lib/wirespeed/fix-journal"
    assert directory.stat().st_mode & 0o777 == 0o700 and Path(answer["journal"]).stat().st_mode & 0o777 == 0o600
    fixjournal.confirm("n1-a")
    fixjournal.confirm("n1-a")  # a retried confirmation is fine
    until(lambda: not Path(f"/proc/{answer['timer']}").exists() or b"rollback-timer" not in _cmdline(answer["timer"]))
    assert state("n1-a") == "confirmed" and (root / "etc/netplan/40-cx7.yaml").read_text() == "new\n"
    assert fixjournal.query().to_json()["latest"]["token"] == "n1-a"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_an_unconfirmed_fix_is_restored_by_its_timer_and_a_late_confirm_is_refused(root: Path) -> None:
    fixjournal.apply_journaled("n1-b", ops(), 0.5)
    assert not original(root)
    until(lambda: state("n1-b") == "rolledback")
    assert original(root)
    with pytest.raises(fixjournal.TooLate):
        fixjournal.confirm("n1-b")
    assert fixjournal.query().to_json()["latest"] is None  # a rolled-back fix changed nothing: nothing to revert


def test_an_apply_killed_half_way_is_restored_at_once(root: Path) -> None:
    argv = [sys.executable, "-m", "wirespeed", "agent", "apply", "--token", "n1-c", "--rollback-after", "60"]
    argv += ["--pause-after", "1", "--ops", json.dumps([op.to_json() for op in ops()])]
    agent = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    try:
        until(lambda: (read_json(fixjournal.journal_path("n1-c")) or {}).get("paused") is True)
        assert (root / "etc/sysctl.d/90-wirespeed.conf").exists()  # half applied: the first file only
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()
    until(lambda: state("n1-c") == "rolledback")  # no waiting for the 60 s: no confirmation can come
    assert original(root)


def test_a_temporary_left_by_a_killed_write_goes_with_the_restore(root: Path) -> None:
    """An agent SIGKILLed between writing a file's temporary and renaming it leaves `.NAME.XXXXXXXX.tmp` in the
    node's /etc; the restore that follows takes it away with the file, so the node ends as it was."""
    netplan = root / "etc" / "netplan"
    stale = netplan / ".40-cx7.yaml.64bc3d15.tmp"
    fixjournal.apply_journaled("n1-t", ops(), 0.5)
    stale.write_text("half of a write\n")
    keep = netplan / ".40-cx7.yaml.not-ours.tmp"
    keep.write_text("someone else's\n")
    until(lambda: state("n1-t") == "rolledback")
    assert original(root) and not stale.exists() and keep.exists()
    sysctl_stale = root / "etc" / "sysctl.d" / ".90-wirespeed.conf.0123abcd.tmp"
    fixjournal.apply_journaled("n1-u", ops(), 0.5)
    sysctl_stale.write_text("x\n")
    until(lambda: state("n1-u") == "rolledback")
    assert not (root / "etc/sysctl.d/90-wirespeed.conf").exists() and not sysctl_stale.exists()


def test_an_orphaned_journal_is_restored_by_the_next_query(root: Path) -> None:
    answer = fixjournal.apply_journaled("n1-d", ops(), 30).to_json()
    os.kill(answer["timer"], signal.SIGKILL)  # as a reboot would
    until(lambda: b"rollback-timer" not in _cmdline(answer["timer"]))
    assert fixjournal.query().to_json()["states"] == {"n1-d": "rolledback"} and original(root)


def test_a_journal_left_by_a_dead_timer_is_reported_pending_without_restoring_it(root: Path) -> None:
    answer = fixjournal.apply_journaled("n1-p", ops(), 30).to_json()
    [waiting] = [to_jsonable(p) for p in fixjournal.pending()]
    assert waiting["token"] == "n1-p" and waiting["state"] == "applied" and waiting["timer_alive"] is True
    assert waiting["overdue_s"] is not None and waiting["overdue_s"] < 0  # its deadline is still ahead
    os.kill(answer["timer"], signal.SIGKILL)
    until(lambda: b"rollback-timer" not in _cmdline(answer["timer"]))
    [left] = [to_jsonable(p) for p in fixjournal.pending()]
    assert left["timer_alive"] is False and not original(root)  # named, and nothing restored by reading it
    fixjournal.query()
    assert fixjournal.pending() == [] and original(root)


def test_journals_are_ordered_by_their_sequence_not_the_wall_clock(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = fixjournal.apply_journaled("n1-s1", ops(), 5).to_json()
    fixjournal.confirm("n1-s1")
    real = time.time
    monkeypatch.setattr(fixjournal.time, "time", lambda: real() - 3600)  # the node's clock stepped back an hour
    undo = [Operation("unlink", TCP, "", "revert"), Operation("file", CX7, "# the node's own\n", "revert")]
    fixjournal.apply_journaled("n1-s2", undo, 5, kind="revert", reverts="n1-s1")
    fixjournal.confirm("n1-s2")
    monkeypatch.setattr(fixjournal.time, "time", real)
    again = fixjournal.apply_journaled("n1-s3", ops(), 5).to_json()
    fixjournal.confirm("n1-s3")
    journals = [(p, j.to_json()) for p, j in fixjournal._journals(root / "var/lib/wirespeed/fix-journal")]
    assert [j["token"] for _, j in journals] == ["n1-s1", "n1-s2", "n1-s3"]
    assert [j["seq"] for _, j in journals] == [1, 2, 3]
    assert fixjournal.query().to_json()["latest"]["token"] == "n1-s3"  # the live confirmed fix, clocks aside
    assert first["token"] and again["token"]


def test_nothing_to_change_writes_no_journal(root: Path) -> None:
    answer = fixjournal.apply_journaled("n1-e", [Operation("file", CX7, "# the node's own\n", "x")], 0.5).to_json()
    assert answer["token"] is None and answer["timer"] is None and fixjournal.query().to_json()["states"] == {}


def test_a_confirmed_revert_marks_the_fix_it_undid(root: Path) -> None:
    fix = fixjournal.apply_journaled("n1-f", ops(), 5).to_json()
    fixjournal.confirm("n1-f")
    undo = [Operation("unlink", TCP, "", "revert"), Operation("file", CX7, "# the node's own\n", "revert")]
    fixjournal.apply_journaled("n1-g", undo, 5, kind="revert", reverts="n1-f")
    fixjournal.confirm("n1-g")
    assert original(root) and fixjournal.query().to_json()["states"] == {"n1-f": "reverted", "n1-g": "confirmed"}
    assert fixjournal.query().to_json()["latest"] is None  # the last thing done there was a revert
    assert fix["applied"][0]["original"] is None


@pytest.mark.parametrize("token", ["../etc/passwd", "-x", "a b", "", "a" * 200, "a\n"])
def test_bad_tokens_are_refused_in_one_line(token: str) -> None:
    with pytest.raises(UsageError, match="not a fix token"):
        fixjournal.check_token(token)


def journal(token: str, kind: str, state: str) -> Journal:
    return Journal(token, kind, state)


def test_the_latest_effective_journal_skips_rolled_back_ones() -> None:
    confirmed = journal("a", "fix", "confirmed")
    assert fixjournal.latest_effective([confirmed, journal("b", "fix", "rolledback")]) == confirmed
    assert fixjournal.latest_effective([confirmed, journal("b", "revert", "confirmed")]) is None
    assert fixjournal.latest_effective([journal("a", "fix", "reverted")]) is None
    assert fixjournal.latest_effective([]) is None


OP = {"kind": "sysctl", "target": "net.ipv4.tcp_rmem", "value": "4096 131072 134217728", "reason": "sysctl.tcp"}
ENTRY = {"op": OP, "original": "4096 131072 6291456", "ok": True, "error": None}
CHANGE = AppliedChange.from_json(ENTRY)  # ENTRY as the controller holds it once the agent answered


def test_a_record_written_before_confirming_keeps_the_one_before(tmp_path: Path) -> None:
    record = tmp_path / "fix.json"
    write_record(record, [NodeOutcome("s1", applied=[CHANGE], token="s1-old")])
    first = json.loads(record.read_text())
    applied = [NodeOutcome("s1", applied=[CHANGE], token="s1-new"), NodeOutcome("s2", applied=[CHANGE], token="s2-new")]
    write_record(record, applied, confirmed=False)
    pending = json.loads(record.read_text())
    assert pending["state"] == "unconfirmed" and pending["previous"]["journals"] == {"s1": "s1-old"}
    # s1's new fix was rolled back (controller killed): --revert undoes the old one there, s2's new one
    states = {"s1-old": "confirmed", "s1-new": "rolledback", "s2-new": "confirmed"}
    typed = RevertRecord.from_json(pending, "R")
    s1 = _from_record(typed, "R", "s1", states)
    assert isinstance(s1, tuple) and s1[2] == "s1-old" and s1[0][0].value == "4096 131072 6291456"
    s2 = _from_record(typed, "R", "s2", states)
    assert isinstance(s2, tuple) and s2[2] == "s2-new"
    assert _from_record(typed, "R", "s3", states) is None  # not covered: that fix left it as it was
    # nothing of the new fix stayed: the earlier record is the record again
    for outcome in applied:
        outcome.rolled_back = True
    write_record(record, applied)
    assert json.loads(record.read_text()) == first


def test_a_reverted_or_rolled_back_fix_in_the_record_is_not_undone_again(tmp_path: Path) -> None:
    record = RevertRecord.from_json({"nodes": {"s1": [ENTRY]}, "journals": {"s1": "s1-a", "s2": "s2-a"}}, "R")
    assert _from_record(record, "R", "s1", {"s1-a": "reverted"}) == "its last fix was reverted already"
    assert "rolled back" in str(_from_record(record, "R", "s2", {"s2-a": "rolledback"}))
    old = _from_record(
        RevertRecord.from_json({"nodes": {"s1": [ENTRY]}}, "R"), "R", "s1", {}
    )  # a record from before journals
    assert isinstance(old, tuple) and old[2] is None


def test_revert_with_a_record_leaves_the_nodes_it_does_not_cover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first fix on s1 and s2, a second on s1 only: --revert with the second's record undoes s1's second fix and
    leaves s2 with its first (its own journal's latest), where before it undid that too."""
    from wirespeed.core.cluster.inventory import Cluster, Node
    from wirespeed.engine import fix as fixing

    record = tmp_path / "fix.json"
    write_record(record, [NodeOutcome("s1", applied=[CHANGE], token="s1-b")])
    latest = {
        n: JournalSummary(f"{n}-a", "fix", "confirmed", created_utc="earlier", applied=(CHANGE,)) for n in ("s1", "s2")
    }
    states = {"s1-a": "confirmed", "s1-b": "confirmed", "s2-a": "confirmed"}
    answers = {n: (QueryReply("/var/lib/wirespeed/fix-journal", states, latest[n]), "") for n in ("s1", "s2")}
    monkeypatch.setattr(fixing, "_agent", lambda remote, node, *args, **kw: answers[node.name])

    class Remote:
        cluster = Cluster(name="c", nodes=(Node("s1", "10.0.0.1"), Node("s2", "10.0.0.2")), source="test")

    made = fixing.plan_revert(Remote(), record, lambda line: None)  # type: ignore[arg-type]
    assert list(made.operations) == ["s1"] and made.reverts == {"s1": "s1-b"}
    assert made.notes["s2"] == [f"nothing to revert: the fix {record} records did not change it"]
    without = fixing.plan_revert(Remote(), tmp_path / "none.json", lambda line: None)  # type: ignore[arg-type]
    assert sorted(without.operations) == ["s1", "s2"] and without.reverts == {"s1": "s1-a", "s2": "s2-a"}


def test_a_node_outcome_says_what_changed_and_each_failure_once() -> None:
    failed = {"op": {**OP, "target": "net.ipv4.tcp_wmem"}, "original": None, "ok": False, "error": "read-only"}
    same = {"op": OP, "original": OP["value"], "ok": True, "error": None}
    applied = [AppliedChange.from_json(e) for e in (ENTRY, failed, same)]
    outcome = NodeOutcome("s1", applied=applied, rolled_back=True, why="")
    assert outcome.changed() == [CHANGE]  # an entry that replaced its own value changed nothing
    assert outcome.failures() == [
        "s1: net.ipv4.tcp_wmem: read-only",
        "s1: not reachable after the change: it restored the old values",
    ]
    assert NodeOutcome("s2", error="s2: the agent did not answer").failures() == ["s2: the agent did not answer"]
