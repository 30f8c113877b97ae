"""The node side of `fix`'s safety net: a journal per fix, written before anything changes, and a detached timer
that restores from it unless the controller confirms in time (as `netplan try` does, with a record that outlives
the controller: a controller killed at any moment leaves each node either confirmed or restored).

Where: `/var/lib/wirespeed/fix-journal/<token>.json` on the node (under `$WIRESPEED_CONFIG_ROOT` on an emulated
node, as its /etc is), the directory root's only (0700) and each journal 0600 (netplan files may hold secrets);
every write goes to a temporary file, is fsynced, renamed over the journal, and the directory fsynced.

States, in the order they can come:

    applying -> applied -> confirmed [-> reverted, once a confirmed revert names it]
        |          |
        +----------+-> rollingback -> rolledback

`applying`: the old values and files are in the journal and the timer runs; the changes are being made.
`applied`: every change is made; the timer restores at `deadline` unless `agent confirm` comes first.
`rollingback`/`rolledback`: the timer (or `agent rollback`, or whoever finds the journal orphaned) restores.

One lock (an flock on `.lock` in the directory) orders apply, the timer, confirm, rollback and queries: apply
holds it while it changes things, so the timer and confirm only ever see a journal whose apply finished or died;
an `applying` journal seen under the lock is one whose apply died (its controller was killed, say), and is restored
at once. A journal left unresolved by a timer that died (a reboot) is restored by the next `agent apply`,
`agent fix-journal` or `agent rollback` on that node.

The journal, its entries and what the agent answers about them are records (`core/records/journal.py`): `Journal`
on disk (format 1), and `ApplyReply`, `JournalSummary` and `QueryReply`, which the agent prints with `to_json()`
and the controller (`engine/fix.py`) reads with `from_json()`. A journal not resolved yet is the node's facts'
`PendingFix`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from wirespeed.adapters import files
from wirespeed.adapters.configroot import system_path
from wirespeed.adapters.process import detach
from wirespeed.core.errors import UsageError, WirespeedError
from wirespeed.core.fabric.facts import PendingFix
from wirespeed.core.fixplan import Operation
from wirespeed.core.records.fixrecord import undo_changes
from wirespeed.core.records.journal import (
    APPLIED,
    APPLYING,
    CONFIRMED,
    FORMAT,
    REVERTED,
    ROLLEDBACK,
    ROLLINGBACK,
    ApplyReply,
    Journal,
    JournalEntry,
    JournalSummary,
    QueryReply,
)
from wirespeed.engine import apply

JOURNAL_DIR = "/var/lib/wirespeed/fix-journal"
KINDS = ("fix", "revert")
KEEP = 20  # resolved journals kept per node (the newest); older ones are removed
SETTLE_GRACE_S = 10.0  # how long past its deadline a query waits for a live timer to decide
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class TooLate(WirespeedError):
    """The timer ran out (or the apply died) before the confirmation came: the old values are back."""


def check_token(token: str) -> str:
    if not _TOKEN.fullmatch(token) or ".." in token:
        raise UsageError(f"--token {token!r}: not a fix token", hint="letters, digits, '.', '_' and '-' only")
    return token


def journal_dir(create: bool = True) -> Path:
    """This node's journal directory, made root-only on first use."""
    path = system_path(JOURNAL_DIR)
    if create:
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.chmod(0o700)
        except OSError as exc:
            raise WirespeedError(
                f"cannot keep a fix journal in {path}: {exc.strerror or exc}", hint="fix needs root on the node"
            ) from None
    return path


def journal_path(token: str, directory: Path | None = None) -> Path:
    return (directory or journal_dir(create=False)) / f"{check_token(token)}.json"


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """The node's fix lock (the kernel drops it when its holder dies, however it dies)."""
    try:
        fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise WirespeedError(
            f"{directory}: cannot use the fix journal: {exc.strerror or exc}", hint="fix needs root on the node"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write(path: Path, journal: Journal) -> None:
    """Atomically and durably: a temporary file, fsynced, renamed over the journal, the directory fsynced."""
    try:  # a new temporary (O_EXCL|O_NOFOLLOW), fsynced, renamed over the journal: never through a planted link
        files.write_atomic(path, json.dumps(journal.to_json(), indent=1) + "\n", chmod=0o600)
    except files.Unwritable as exc:  # before any change: nothing is applied; after: the timer restores from the last
        raise WirespeedError(f"the fix journal: {exc.message}") from None


def read(path: Path) -> Journal | None:
    """The journal, or None when there is none (or it is not one: a journal is never half written)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    try:
        return Journal.from_json(data, str(path))
    except ValueError:
        return None


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _why(exc: OSError | ValueError) -> str:
    return getattr(exc, "strerror", None) or str(exc)


def _set_state(path: Path, journal: Journal, state: str) -> None:
    journal.mark(state, _utc())
    write(path, journal)


def restore_ops(journal: Journal) -> list[Operation]:
    """What puts back every value and file the journal saw before its changes, last change first. Every observed
    entry counts, applied or not: an apply that died (or failed) half way may have changed it."""
    return undo_changes([entry.change() for entry in journal.changes()])


def _restore(path: Path, journal: Journal) -> None:
    """Under the lock: mark, restore, mark. Restoring twice is harmless (each value is set to the old one)."""
    _set_state(path, journal, ROLLINGBACK)
    done = apply.apply_all(restore_ops(journal))
    journal.restore_errors = [f"{c.op.target}: {c.error}" for c in done if not c.ok]
    _set_state(path, journal, ROLLEDBACK)


def _timer_alive(journal: Journal) -> bool:
    pid = journal.timer_pid
    if pid is None:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"rollback-timer" in cmdline and journal.token.encode() in cmdline


def _journals(directory: Path) -> list[tuple[Path, Journal]]:
    """Every journal here, oldest first (`Journal.order`)."""
    found = [(p, read(p)) for p in directory.glob("*.json")]
    return sorted(((p, j) for p, j in found if j is not None), key=lambda pj: (*pj[1].order, pj[0].name))


def pending() -> list[PendingFix]:
    """The journals not resolved yet, read without the lock and without restoring anything (what `discover`
    reports and `check` names): each with whether its timer still runs and how far past its deadline it is."""
    directory = journal_dir(create=False)
    if not directory.is_dir():
        return []
    return [
        PendingFix(
            journal.token,
            journal.kind,
            journal.state,
            journal.created_utc or "",
            _timer_alive(journal),
            None if journal.deadline is None else round(time.time() - journal.deadline, 1),
        )
        for _, journal in _journals(directory)
        if journal.unresolved
    ]


def _recover(directory: Path) -> None:
    """Under the lock: restore every unresolved journal that no live timer watches (its timer died, or its apply
    died before the timer could be recorded), and prune the oldest resolved ones."""
    journals = _journals(directory)
    for path, journal in journals:
        if journal.unresolved and not _timer_alive(journal):
            _restore(path, journal)
    resolved = [p for p, j in journals if not j.unresolved]
    for path in resolved[: max(0, len(resolved) - KEEP)]:
        path.unlink(missing_ok=True)


def _pause_for_test(path: Path, journal: Journal) -> None:
    """`agent apply --pause-after N` (tests only): say so in the journal and wait to be killed, the lock held."""
    journal.paused = True
    write(path, journal)
    while True:
        time.sleep(3600)


def start_timer(token: str) -> int:
    """A detached process (its own session, no pipes to us) that restores unless confirmed in time."""
    return detach([sys.executable, "-m", "wirespeed", "agent", "rollback-timer", "--token", token])


def _observed(op: Operation) -> JournalEntry:
    """The entry of an operation before anything changes: the old value, or why it could not be read."""
    try:
        return JournalEntry(op, apply.observe(op), observed=True)
    except (OSError, ValueError) as exc:
        return JournalEntry(op, error=_why(exc))


def apply_journaled(
    token: str,
    ops: list[Operation],
    rollback_after: float,
    *,
    kind: str = "fix",
    reverts: str | None = None,
    pause_after: int | None = None,
) -> ApplyReply:
    """Observe every old value, journal them (durably), start the timer, then change things; the timer restores
    from the journal unless `confirm` comes within `rollback_after` seconds of the last change. Nothing to change:
    no journal and no timer."""
    if not rollback_after > 0:
        raise UsageError(f"--rollback-after {rollback_after:g}: must be above 0", hint="for example 20")
    if kind not in KINDS:
        raise UsageError(f"--kind {kind!r}: one of {', '.join(KINDS)}")
    if reverts is not None:
        check_token(reverts)
    directory = journal_dir()
    path = journal_path(token, directory)
    with locked(directory):
        _recover(directory)
        if path.exists():
            raise UsageError(f"{path}: this fix token was used before", hint="every `agent apply` needs a new one")
        entries = [_observed(op) for op in ops]
        journal = Journal(
            token,
            kind,
            APPLYING,
            reverts,
            seq=max((j.order[0] for _, j in _journals(directory)), default=0) + 1,
            created=time.time(),
            created_utc=_utc(),
            rollback_after=rollback_after,
            entries=entries,
            history=[(APPLYING, _utc())],
        )
        changes = bool(journal.changes())
        if changes:
            write(path, journal)  # the old values are safe on disk before anything changes
            journal.timer_pid = start_timer(token)
            write(path, journal)
        for index, entry in enumerate(entries):
            if entry.observed:
                try:
                    if entry.replaces:
                        apply.apply_one(entry.op)
                    journal.settle(index, None)
                except (OSError, ValueError) as exc:
                    journal.settle(index, _why(exc))
            journal.done = index + 1
            if changes:
                write(path, journal)
                if pause_after is not None and index + 1 >= pause_after:
                    _pause_for_test(path, journal)
        if changes:
            journal.deadline = time.time() + rollback_after
            _set_state(path, journal, APPLIED)
    return ApplyReply(
        tuple(e.change() for e in journal.entries),
        journal.timer_pid,
        str(path) if changes else None,
        token if changes else None,
    )


def run_timer(token: str) -> bool:
    """The detached timer: wait for the apply to end (its lock), then for the confirmation until the deadline;
    restore unless confirmed. Returns True when it restored."""
    directory = journal_dir(create=False)
    path = journal_path(token, directory)
    deadline: float | None = None
    while True:
        with locked(directory):
            journal = read(path)
            if journal is None or not journal.unresolved:
                return False
            if journal.state in (APPLYING, ROLLINGBACK):  # its apply died half way, or a restore did
                _restore(path, journal)
                return True
            if deadline is None:  # on this clock: the wall clock may be stepped while we wait
                deadline = time.monotonic() + max(0.0, float(journal.deadline or 0.0) - time.time())
            if time.monotonic() >= deadline:
                _restore(path, journal)
                return True
        time.sleep(0.1)


@contextlib.contextmanager
def _held(token: str) -> Iterator[tuple[Path, Path, Journal]]:
    """The journal of `token` (its directory, its path, its content), read under the node's lock, which the block
    keeps; one line when there is no such journal."""
    directory = journal_dir(create=False)
    path = journal_path(token, directory)
    if not directory.is_dir():
        raise WirespeedError(f"{path}: no such fix journal")
    with locked(directory):
        journal = read(path)
        if journal is None:
            raise WirespeedError(f"{path}: no such fix journal")
        yield directory, path, journal


def confirm(token: str) -> JournalSummary:
    """The controller still reaches this node: keep the changes (and mark the journal a revert undid)."""
    with _held(token) as (directory, path, journal):
        state = journal.state
        if state in (ROLLINGBACK, ROLLEDBACK) or (state == APPLYING and not _timer_alive(journal)):
            if state != ROLLEDBACK:
                _restore(path, journal)
            raise TooLate("too late: the rollback timer already restored the previous values")
        if state == APPLYING:
            raise TooLate("too late: the apply did not finish; the rollback timer restores the previous values")
        if state == APPLIED:
            _set_state(path, journal, CONFIRMED)
            undone = journal.reverts
            if journal.kind == "revert" and undone:
                old_path = journal_path(undone, directory)
                old = read(old_path)
                if old is not None and old.state == CONFIRMED:
                    old.reverted_by = token
                    _set_state(old_path, old, REVERTED)
        return journal.summary()


def rollback(token: str) -> JournalSummary:
    """Restore now (the controller gives up: another node failed); a confirmed journal is left alone."""
    with _held(token) as (_, path, journal):
        if journal.state in (CONFIRMED, REVERTED):
            raise WirespeedError(f"{path}: already confirmed: `wirespeed fix --revert` undoes it")
        if journal.unresolved:
            _restore(path, journal)
        return journal.summary()


def latest_effective(journals: list[Journal]) -> Journal | None:
    """The fix `--revert` would undo here: the newest journal that changed anything (rolled-back ones did not),
    if it is a confirmed fix; None when it was itself a revert, or was reverted."""
    for journal in reversed(journals):
        if journal.state == ROLLEDBACK:
            continue
        if journal.kind == "fix" and journal.state == CONFIRMED:
            return journal
        if journal.unresolved:  # a timer still deciding (past the query's patience): not yet known
            continue
        return None
    return None


def query(settle: bool = False) -> QueryReply:
    """This node's journals as the controller needs them: the state of each, and the latest fix that `--revert`
    would undo. Journals no timer watches any more are restored first; with `settle`, it also waits (bounded) for
    every live timer to decide."""
    directory = journal_dir(create=False)
    if not directory.is_dir():
        return QueryReply(str(directory))
    limit: float | None = None
    while True:
        with locked(directory):
            _recover(directory)
            journals = _journals(directory)
            waiting = [j for _, j in journals if j.unresolved]
            if not settle or not waiting:
                break
            if limit is None:
                left = max(float(j.deadline or time.time()) - time.time() for j in waiting)
                limit = time.monotonic() + min(max(left, 0.0) + SETTLE_GRACE_S, 600.0)
        if time.monotonic() > limit:
            break
        time.sleep(0.2)
    latest = latest_effective([j for _, j in journals])
    return QueryReply(
        str(directory),
        {j.token: j.state for _, j in journals},
        None if latest is None else latest.summary(),
        tuple(j.token for _, j in journals if j.unresolved),
    )
