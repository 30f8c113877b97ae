"""fix.pending (a fix left unconfirmed on a node) and clock.skew (a node's clock against the controller's)."""

from __future__ import annotations

from builders import assert_actionable, cluster, run, spark

from wirespeed.core.checks.model import ActiveResults, CheckResult, CheckStatus
from wirespeed.core.fabric.facts import PendingFix, Unknown


def journal(timer_alive: bool, overdue_s: float | None) -> PendingFix:
    return PendingFix("s2-0a1b", "fix", "applied", "2026-11-26T10:00:00Z", timer_alive, overdue_s)


def pending(*journals: PendingFix) -> CheckResult:
    outcome = run("fix.pending", cluster(spark("s1", 10, pending_fixes=()), spark("s2", 11, pending_fixes=journals)))
    assert_actionable(outcome)
    return outcome


def test_no_journal_passes_and_unread_nodes_are_named() -> None:
    assert pending().status is CheckStatus.PASS
    closed = Unknown("fix journals not read: needs root (--become)")
    outcome = run("fix.pending", cluster(spark("s1", 10, pending_fixes=closed), spark("s2", 11, pending_fixes=())))
    assert outcome.status is CheckStatus.PASS and "not read on s1" in outcome.summary
    outcome = run("fix.pending", cluster(spark("s1", 10, pending_fixes=closed), spark("s2", 11, pending_fixes=closed)))
    assert outcome.status is CheckStatus.SKIP and "needs root" in outcome.summary


def test_a_journal_whose_timer_died_fails_and_says_how_to_restore() -> None:
    outcome = pending(journal(timer_alive=False, overdue_s=-5.0))
    assert outcome.status is CheckStatus.FAIL
    assert "left in place on s2" in outcome.summary
    assert "timer gone" in outcome.evidence[0].what
    assert "agent fix-journal" in outcome.fixes[0].commands[0]
    late = pending(journal(timer_alive=True, overdue_s=120.0))
    assert late.status is CheckStatus.FAIL and "120 s past its deadline" in late.evidence[0].what


def test_a_fix_inside_its_deadline_is_a_warning() -> None:
    outcome = pending(journal(timer_alive=True, overdue_s=-12.0))
    assert outcome.status is CheckStatus.WARN
    assert "restores in 12 s" in outcome.evidence[0].what


def clocks(**readings: tuple[float, float] | str) -> CheckResult:
    data = cluster(spark("s1", 10), spark("s2", 11), active=ActiveResults(clocks=readings))
    outcome = run("clock.skew", data)
    assert_actionable(outcome)
    return outcome


def test_clocks_within_seconds_pass_and_an_hour_off_fails() -> None:
    assert clocks(s1=(0.02, 0.1), s2=(-0.4, 0.1)).status is CheckStatus.PASS
    outcome = clocks(s1=(0.0, 0.1), s2=(3600.2, 0.1))
    assert outcome.status is CheckStatus.FAIL and "s2 +3600 s" in outcome.summary
    assert "timedatectl set-ntp true" in outcome.fixes[0].commands[0]
    assert clocks(s1=(0.0, 0.1), s2=(-8.0, 0.1)).status is CheckStatus.WARN


def test_a_slow_round_trip_is_not_taken_for_skew() -> None:
    assert clocks(s1=(6.0, 3.0), s2=(0.0, 0.1)).status is CheckStatus.PASS


def test_unmeasured_or_unread_clocks_skip_with_the_reason() -> None:
    outcome = run("clock.skew", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.SKIP and "snapshot" in outcome.summary
    outcome = clocks(s1="ssh: connect to host s1: timed out", s2=(0.1, 0.1))
    assert outcome.status is CheckStatus.PASS and "not read on s1" in outcome.summary
