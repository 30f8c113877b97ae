"""fix.pending: a fix left unconfirmed on a node.

`fix` journals every change on the node and a detached timer restores it unless the controller confirms in time
(engine/fixjournal.py). A timer that died (a reboot, a kill) leaves the change in place for good, and nothing
else would say so: the node runs with values no record calls confirmed. A journal still inside its deadline
with its timer alive is a fix being applied right now (another controller, or one that just died).
"""

from __future__ import annotations

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import PendingFix, Unknown

ID = "fix.pending"
LATE_S = 10.0  # a live timer this far past its deadline is not going to act


def _left(journal: PendingFix) -> bool:
    """Left in place: no timer will restore it."""
    late = journal.overdue_s is not None and journal.overdue_s > LATE_S
    return not journal.timer_alive or late


def _what(journal: PendingFix) -> str:
    since = f"{journal.kind} {journal.state} since {journal.created_utc}"
    if not journal.timer_alive:
        return f"{since}, its rollback timer gone: the changes stay"
    if journal.overdue_s is not None and journal.overdue_s > LATE_S:
        return f"{since}, {journal.overdue_s:.0f} s past its deadline"
    ahead = f", restores in {-journal.overdue_s:.0f} s unless confirmed" if journal.overdue_s is not None else ""
    return since + ahead


@check(ID, "no fix is left unconfirmed on a node")
def fix_pending(data: CheckInput) -> CheckResult:
    unread = [node for node, f in sorted(data.facts.items()) if isinstance(f.pending_fixes, Unknown)]
    found = [
        (node, journal)
        for node, f in sorted(data.facts.items())
        if not isinstance(f.pending_fixes, Unknown)
        for journal in f.pending_fixes
    ]
    note = f"; not read on {joined(unread)}" if unread else ""
    if not found:
        if len(unread) == len(data.facts):
            reasons = {str(f.pending_fixes) for f in data.facts.values()}
            return skip(ID, f"fix journals not read on {joined(unread)}: {'; '.join(sorted(reasons))}")
        return result(ID, CheckStatus.PASS, f"no fix waits for its confirmation{note}")
    evidence = [Evidence(node, j.token, _what(j), j.state) for node, j in found]
    left = sorted({node for node, j in found if _left(j)})
    fixes = [
        Fix(
            node,
            "a fix's changes are in place with no confirmation and no timer to restore them: on the node, the agent "
            "puts the journalled old values back (every journal no live timer watches), then check again",
            ("sudo wirespeed agent fix-journal   # on the node: restores every orphaned journal",),
        )
        for node in left
    ]
    if left:
        summary = f"an unconfirmed fix left in place on {joined(left)}{note}"
        return result(ID, CheckStatus.FAIL, summary, evidence, fixes)
    waiting = sorted({node for node, _ in found})
    busy = "a fix is being applied now: let it end (confirmed, or restored by its timer)"
    wait = [Fix(node, busy) for node in waiting]
    summary = f"a fix waits for its confirmation on {joined(waiting)}{note}"
    return result(ID, CheckStatus.WARN, summary, evidence, wait)
