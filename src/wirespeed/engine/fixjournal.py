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
from typing import Any

from wirespeed.adapters import files
from wirespeed.adapters.configroot import system_path
from wirespeed.adapters.process import detach
from wirespeed.core.errors import UsageError, WirespeedError
from wirespeed.core.fixplan import Operation, operation_from_json, undo_of
from wirespeed.engine import apply

JOURNAL_DIR = "/var/lib/wirespeed/fix-journal"
FORMAT = 1
APPLYING, APPLIED, CONFIRMED = "applying", "applied", "confirmed"
ROLLINGBACK, ROLLEDBACK, REVERTED = "rollingback", "rolledback", "reverted"
UNRESOLVED = (APPLYING, APPLIED, ROLLINGBACK)
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


def write(path: Path, data: dict[str, Any]) -> None:
    """Atomically and durably: a temporary file, fsynced, renamed over the journal, the directory fsynced."""
    try:  # a new temporary (O_EXCL|O_NOFOLLOW), fsynced, renamed over the journal: never through a planted link
        files.write_atomic(path, json.dumps(data, indent=1) + "\n", chmod=0o600)
    except files.Unwritable as exc:  # before any change: nothing is applied; after: the timer restores from the last
        raise WirespeedError(f"the fix journal: {exc.message}") from None


def read(path: Path) -> dict[str, Any] | None:
    """The journal, or None when there is none (or it is not one: a journal is never half written)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _set_state(path: Path, journal: dict[str, Any], state: str) -> None:
    journal["state"] = state
    journal.setdefault("history", []).append([state, _utc()])
    write(path, journal)


def restore_ops(journal: dict[str, Any]) -> list[Operation]:
    """What puts back every value and file the journal saw before its changes, last change first. Every observed
    entry counts, applied or not: an apply that died (or failed) half way may have changed it."""
    return [
        undo_of(entry["op"], entry["original"])
        for entry in reversed(journal.get("entries", []))
        if entry.get("observed") and entry["original"] != entry["op"]["value"]
    ]


def _restore(path: Path, journal: dict[str, Any]) -> None:
    """Under the lock: mark, restore, mark. Restoring twice is harmless (each value is set to the old one)."""
    _set_state(path, journal, ROLLINGBACK)
    done = apply.apply_all(restore_ops(journal))
    journal["restore_errors"] = [f"{e['op']['target']}: {e['error']}" for e in done if not e["ok"]]
    _set_state(path, journal, ROLLEDBACK)


def _timer_alive(journal: dict[str, Any]) -> bool:
    pid = journal.get("timer_pid")
    if not isinstance(pid, int):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"rollback-timer" in cmdline and str(journal.get("token", "")).encode() in cmdline


def _order(journal: dict[str, Any]) -> tuple[int, float]:
    """Journals in the order they were made: by the sequence number each got under the lock (a stepped wall clock
    cannot reorder them); journals from before the numbers came first, by their wall-clock time."""
    seq = journal.get("seq")
    created = journal.get("created")
    return (seq if isinstance(seq, int) else 0, float(created) if isinstance(created, int | float) else 0.0)


def _journals(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every journal here, oldest first."""
    found = [(p, read(p)) for p in directory.glob("*.json")]
    return sorted(((p, j) for p, j in found if j is not None), key=lambda pj: (*_order(pj[1]), pj[0].name))


def pending() -> list[dict[str, Any]]:
    """The journals not resolved yet, read without the lock and without restoring anything (what `discover`
    reports and `check` names): each with whether its timer still runs and how far past its deadline it is."""
    directory = journal_dir(create=False)
    if not directory.is_dir():
        return []
    found = []
    for _, journal in _journals(directory):
        if journal.get("state") not in UNRESOLVED:
            continue
        deadline = journal.get("deadline")
        found.append({
            "token": str(journal.get("token", "")), "kind": str(journal.get("kind", "")),
            "state": str(journal["state"]), "created_utc": str(journal.get("created_utc") or ""),
            "timer_alive": _timer_alive(journal),
            "overdue_s": round(time.time() - deadline, 1) if isinstance(deadline, int | float) else None,
        })  # fmt: skip
    return found


def _recover(directory: Path) -> None:
    """Under the lock: restore every unresolved journal that no live timer watches (its timer died, or its apply
    died before the timer could be recorded), and prune the oldest resolved ones."""
    journals = _journals(directory)
    for path, journal in journals:
        if journal["state"] in UNRESOLVED and not _timer_alive(journal):
            _restore(path, journal)
    resolved = [p for p, j in journals if j["state"] not in UNRESOLVED]
    for path in resolved[: max(0, len(resolved) - KEEP)]:
        path.unlink(missing_ok=True)


def _pause_for_test(path: Path, journal: dict[str, Any]) -> None:
    """`agent apply --pause-after N` (tests only): say so in the journal and wait to be killed, the lock held."""
    journal["paused"] = True
    write(path, journal)
    while True:
        time.sleep(3600)


def start_timer(token: str) -> int:
    """A detached process (its own session, no pipes to us) that restores unless confirmed in time."""
    return detach([sys.executable, "-m", "wirespeed", "agent", "rollback-timer", "--token", token])


def apply_journaled(
    token: str,
    ops: list[Operation],
    rollback_after: float,
    *,
    kind: str = "fix",
    reverts: str | None = None,
    pause_after: int | None = None,
) -> dict[str, Any]:
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
        entries: list[dict[str, Any]] = []
        for op in ops:
            entry: dict[str, Any] = {
                "op": op.to_json(),
                "original": None,
                "observed": False,
                "ok": False,
                "error": None,
            }
            try:
                entry["original"] = apply.observe(op)
                entry["observed"] = True
            except (OSError, ValueError) as exc:
                entry["error"] = getattr(exc, "strerror", None) or str(exc)
            entries.append(entry)
        changes = [e for e in entries if e["observed"] and e["original"] != e["op"]["value"]]
        journal: dict[str, Any] = {
            "format": FORMAT,
            "token": token,
            "kind": kind,
            "reverts": reverts,
            "seq": max((_order(j)[0] for _, j in _journals(directory)), default=0) + 1,
            "created": time.time(),
            "created_utc": _utc(),
            "rollback_after": rollback_after,
            "deadline": None,
            "timer_pid": None,
            "done": 0,
            "entries": entries,
            "state": APPLYING,
            "history": [[APPLYING, _utc()]],
        }
        if changes:
            write(path, journal)  # the old values are safe on disk before anything changes
            journal["timer_pid"] = start_timer(token)
            write(path, journal)
        for index, entry in enumerate(entries):
            if entry["observed"]:
                op = operation_from_json(entry["op"])
                try:
                    if entry["original"] != op.value:
                        apply.apply_one(op)
                    entry["ok"] = True
                except (OSError, ValueError) as exc:
                    entry["error"] = getattr(exc, "strerror", None) or str(exc)
            journal["done"] = index + 1
            if changes:
                write(path, journal)
                if pause_after is not None and index + 1 >= pause_after:
                    _pause_for_test(path, journal)
        if changes:
            journal["deadline"] = time.time() + rollback_after
            _set_state(path, journal, APPLIED)
    return {
        "applied": [{k: e[k] for k in ("op", "original", "ok", "error")} for e in entries],
        "timer": journal["timer_pid"],
        "journal": str(path) if changes else None,
        "token": token if changes else None,
    }


def run_timer(token: str) -> bool:
    """The detached timer: wait for the apply to end (its lock), then for the confirmation until the deadline;
    restore unless confirmed. Returns True when it restored."""
    directory = journal_dir(create=False)
    path = journal_path(token, directory)
    deadline: float | None = None
    while True:
        with locked(directory):
            journal = read(path)
            if journal is None or journal["state"] not in UNRESOLVED:
                return False
            if journal["state"] in (APPLYING, ROLLINGBACK):  # its apply died half way, or a restore did
                _restore(path, journal)
                return True
            if deadline is None:  # on this clock: the wall clock may be stepped while we wait
                deadline = time.monotonic() + max(0.0, float(journal["deadline"]) - time.time())
            if time.monotonic() >= deadline:
                _restore(path, journal)
                return True
        time.sleep(0.1)


@contextlib.contextmanager
def _held(token: str) -> Iterator[tuple[Path, Path, dict[str, Any]]]:
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


def confirm(token: str) -> dict[str, Any]:
    """The controller still reaches this node: keep the changes (and mark the journal a revert undid)."""
    with _held(token) as (directory, path, journal):
        state = journal["state"]
        if state in (ROLLINGBACK, ROLLEDBACK) or (state == APPLYING and not _timer_alive(journal)):
            if state != ROLLEDBACK:
                _restore(path, journal)
            raise TooLate("too late: the rollback timer already restored the previous values")
        if state == APPLYING:
            raise TooLate("too late: the apply did not finish; the rollback timer restores the previous values")
        if state == APPLIED:
            _set_state(path, journal, CONFIRMED)
            undone = journal.get("reverts")
            if journal["kind"] == "revert" and undone:
                old_path = journal_path(undone, directory)
                old = read(old_path)
                if old is not None and old["state"] == CONFIRMED:
                    old["reverted_by"] = token
                    _set_state(old_path, old, REVERTED)
        return summary(journal)


def rollback(token: str) -> dict[str, Any]:
    """Restore now (the controller gives up: another node failed); a confirmed journal is left alone."""
    with _held(token) as (_, path, journal):
        if journal["state"] in (CONFIRMED, REVERTED):
            raise WirespeedError(f"{path}: already confirmed: `wirespeed fix --revert` undoes it")
        if journal["state"] in UNRESOLVED:
            _restore(path, journal)
        return summary(journal)


def summary(journal: dict[str, Any]) -> dict[str, Any]:
    """What the controller needs of a journal: who, when, in which state, and each entry as `agent apply` gave it."""
    return {
        "token": journal["token"],
        "kind": journal["kind"],
        "state": journal["state"],
        "reverts": journal.get("reverts"),
        "created_utc": journal.get("created_utc"),
        "history": journal.get("history", []),
        "restore_errors": journal.get("restore_errors", []),
        "applied": [
            {k: e[k] for k in ("op", "original", "ok", "error")} for e in journal.get("entries", []) if e["observed"]
        ],
    }


def latest_effective(journals: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The fix `--revert` would undo here: the newest journal that changed anything (rolled-back ones did not),
    if it is a confirmed fix; None when it was itself a revert, or was reverted."""
    for journal in reversed(journals):
        if journal["state"] == ROLLEDBACK:
            continue
        if journal["kind"] == "fix" and journal["state"] == CONFIRMED:
            return dict(journal)
        if journal["state"] in UNRESOLVED:  # a timer still deciding (past the query's patience): not yet known
            continue
        return None
    return None


def query(settle: bool = False) -> dict[str, Any]:
    """This node's journals as the controller needs them: the state of each, and the latest fix that `--revert`
    would undo. Journals no timer watches any more are restored first; with `settle`, it also waits (bounded) for
    every live timer to decide."""
    directory = journal_dir(create=False)
    if not directory.is_dir():
        return {"dir": str(directory), "states": {}, "latest": None, "pending": []}
    limit: float | None = None
    while True:
        with locked(directory):
            _recover(directory)
            journals = _journals(directory)
            waiting = [j for _, j in journals if j["state"] in UNRESOLVED]
            if not settle or not waiting:
                break
            if limit is None:
                left = max(float(j.get("deadline") or time.time()) - time.time() for j in waiting)
                limit = time.monotonic() + min(max(left, 0.0) + SETTLE_GRACE_S, 600.0)
        if time.monotonic() > limit:
            break
        time.sleep(0.2)
    latest = latest_effective([j for _, j in journals])
    return {
        "dir": str(directory),
        "states": {j["token"]: j["state"] for _, j in journals},
        "latest": None if latest is None else summary(latest),
        "pending": [j["token"] for _, j in journals if j["state"] in UNRESOLVED],
    }
