"""The node's fix journal and the agent's answers about it, as records: the journal on disk (`Journal`, one
`JournalEntry` per operation), and what `agent apply`, `agent rollback`, `agent fix-journal` and `agent facts`
print for the controller (`ApplyReply`, `JournalSummary`, `QueryReply`, `PendingJournal`). Pure.

The node writes them with `to_json()` and the controller (`engine/fix.py`) reads them with `from_json()`, so a
renamed field is a type error here, and an answer that is not what it should be is one line naming the node and the
field. The JSON is the one the node has always written: a journal of format 1 written before these records reads
and writes back byte for byte (`tests/unit/test_fix_journal.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.fixplan import Operation
from wirespeed.core.records.decode import Fields, number
from wirespeed.core.records.fixrecord import AppliedChange, operation

FORMAT = 1  # the journal's own format (named apart from the package's version and the run records' schema)
APPLYING, APPLIED, CONFIRMED = "applying", "applied", "confirmed"
ROLLINGBACK, ROLLEDBACK, REVERTED = "rollingback", "rolledback", "reverted"
UNRESOLVED = (APPLYING, APPLIED, ROLLINGBACK)


def _real(f: Fields, key: str) -> float:
    """A finite number, kept as written (a whole number stays one: the journal writes back byte for byte)."""
    value = f.raw(key)
    number(value, f"{f.where}: {key}")
    return value  # type: ignore[no-any-return]


def _opt_real(f: Fields, key: str) -> float | None:
    return None if f.raw(key) is None else _real(f, key)


def _history(f: Fields) -> list[tuple[str, str]]:
    """The states a journal went through, each with its UTC time: `[["applying", "2026-...Z"], ...]`."""
    raw = f.raw("history")
    if raw is not None and not isinstance(raw, list):
        raise ValueError(f"{f.where}: history: expected a list")
    found = []
    for index, item in enumerate(raw or []):
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(part, str) for part in item)):
            raise ValueError(f"{f.where}: history[{index}]: expected [state, time]")
        found.append((item[0], item[1]))
    return found


def _states(f: Fields, key: str) -> dict[str, str]:
    raw = f.obj(key)
    return {token: raw.text(token) for token in raw.data}


def _changes(f: Fields, key: str) -> tuple[AppliedChange, ...]:
    return tuple(AppliedChange.from_json(e.data, e.where) for e in f.objects(key))


@dataclass(frozen=True)
class JournalEntry:
    """One operation of a journal: the value or file it replaces (observed before anything changed; None: a file
    that was not there), whether that could be read, whether the change took, and why not."""

    op: Operation
    original: str | None = None
    observed: bool = False
    ok: bool = False
    error: str | None = None

    @property
    def replaces(self) -> bool:
        """It was read, and holds something other than the operation's value: applying it changes the node (an
        apply that died or failed half way may have changed it, applied or not)."""
        return self.observed and self.original != self.op.value

    def change(self) -> AppliedChange:
        """The entry as the controller sees it (`agent apply`'s answer, a journal's summary)."""
        return AppliedChange(self.op, self.original, self.ok, self.error)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op.to_json(),
            "original": self.original,
            "observed": self.observed,
            "ok": self.ok,
            "error": self.error,
        }

    @staticmethod
    def from_json(data: Any, where: str) -> JournalEntry:
        f = Fields(data, where)
        return JournalEntry(
            operation(f, "op"),
            f.opt_text("original"),
            f.flag("observed", False),
            f.flag("ok", False),
            f.opt_text("error"),
        )


@dataclass
class Journal:
    """One fix's journal on a node (`/var/lib/wirespeed/fix-journal/<token>.json`, format 1).

    Mutable on purpose: the journal is one file rewritten in place, under the node's lock, at every step of its life
    (observed, timer started, each operation done, each state), and each step is one method or field set followed
    by `engine/fixjournal.write`; a frozen record replaced at every step would only add copies of the entries. The
    states change through `mark`, which also keeps their history. The entries themselves are frozen: an entry that
    took is replaced (`settle`), never edited.

    Journals from before the sequence numbers have no `seq` (None, and not written back)."""

    token: str
    kind: str = "fix"
    state: str = APPLYING
    reverts: str | None = None
    seq: int | None = None
    created: float = 0.0
    created_utc: str | None = ""
    rollback_after: float = 0.0
    deadline: float | None = None
    timer_pid: int | None = None
    done: int = 0
    entries: list[JournalEntry] = field(default_factory=list)
    history: list[tuple[str, str]] = field(default_factory=list)
    paused: bool = False  # tests only: `agent apply --pause-after` stopped here (written only when set)
    restore_errors: list[str] | None = None  # what a restore could not put back (written once one ran)
    reverted_by: str | None = None  # the revert whose confirmation undid this fix

    @property
    def unresolved(self) -> bool:
        return self.state in UNRESOLVED

    @property
    def order(self) -> tuple[int, float]:
        """Journals in the order they were made: by the sequence number each got under the lock (a stepped wall
        clock cannot reorder them); journals from before the numbers came first, by their wall-clock time."""
        return (self.seq or 0, float(self.created))

    def mark(self, state: str, at: str) -> None:
        """The journal is in `state` from `at` (UTC) on."""
        self.state = state
        self.history.append((state, at))

    def settle(self, index: int, error: str | None) -> None:
        """Entry `index` was applied: it took (no error) or failed with `error`."""
        entry = self.entries[index]
        self.entries[index] = JournalEntry(entry.op, entry.original, entry.observed, error is None, error)

    def changes(self) -> list[JournalEntry]:
        """The entries whose operation changes the node (what the timer restores)."""
        return [e for e in self.entries if e.replaces]

    def summary(self) -> JournalSummary:
        return JournalSummary(
            self.token,
            self.kind,
            self.state,
            self.reverts,
            self.created_utc,
            tuple(self.history),
            tuple(self.restore_errors or ()),
            tuple(e.change() for e in self.entries if e.observed),
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format": FORMAT, "token": self.token, "kind": self.kind, "reverts": self.reverts}
        if self.seq is not None:
            data["seq"] = self.seq
        data.update(
            {
                "created": self.created,
                "created_utc": self.created_utc,
                "rollback_after": self.rollback_after,
                "deadline": self.deadline,
                "timer_pid": self.timer_pid,
                "done": self.done,
                "entries": [e.to_json() for e in self.entries],
                "state": self.state,
                "history": [[state, at] for state, at in self.history],
            }
        )
        if self.paused:
            data["paused"] = True
        if self.restore_errors is not None:
            data["restore_errors"] = list(self.restore_errors)
        if self.reverted_by is not None:
            data["reverted_by"] = self.reverted_by
        return data

    @staticmethod
    def from_json(data: Any, where: str) -> Journal:
        f = Fields(data, where)
        if f.raw("format") != FORMAT:
            raise ValueError(f"{where}: format: expected {FORMAT}, found {f.raw('format')!r}")
        errors = f.raw("restore_errors")
        return Journal(
            token=f.text("token"),
            kind=f.text("kind"),
            state=f.text("state"),
            reverts=f.opt_text("reverts"),
            seq=f.opt_whole("seq"),
            created=_real(f, "created") if "created" in f else 0.0,
            created_utc=f.opt_text("created_utc"),
            rollback_after=_real(f, "rollback_after") if "rollback_after" in f else 0.0,
            deadline=_opt_real(f, "deadline"),
            timer_pid=f.opt_whole("timer_pid"),
            done=f.whole("done") if "done" in f else 0,
            entries=[JournalEntry.from_json(e.data, e.where) for e in f.objects("entries")],
            history=_history(f),
            paused=f.flag("paused", False),
            restore_errors=None if errors is None else list(f.texts("restore_errors")),
            reverted_by=f.opt_text("reverted_by"),
        )


@dataclass(frozen=True)
class JournalSummary:
    """What the controller needs of a journal (`agent rollback`'s answer, and the latest fix in `agent
    fix-journal`'s): who, when, in which state, and each observed entry as `agent apply` gave it."""

    token: str
    kind: str
    state: str
    reverts: str | None = None
    created_utc: str | None = None
    history: tuple[tuple[str, str], ...] = ()
    restore_errors: tuple[str, ...] = ()
    applied: tuple[AppliedChange, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "kind": self.kind,
            "state": self.state,
            "reverts": self.reverts,
            "created_utc": self.created_utc,
            "history": [[state, at] for state, at in self.history],
            "restore_errors": list(self.restore_errors),
            "applied": [c.to_json() for c in self.applied],
        }

    @staticmethod
    def from_json(data: Any, where: str) -> JournalSummary:
        f = Fields(data, where)
        return JournalSummary(
            f.text("token"),
            f.text("kind"),
            f.text("state"),
            f.opt_text("reverts"),
            f.opt_text("created_utc"),
            tuple(_history(f)),
            f.texts("restore_errors"),
            _changes(f, "applied"),
        )


@dataclass(frozen=True)
class ApplyReply:
    """`agent apply`'s answer: each operation as it went (observed or not), the rollback timer's pid, and the
    journal and its token (all None when nothing was to change: no journal, no timer)."""

    applied: tuple[AppliedChange, ...]
    timer: int | None = None
    journal: str | None = None
    token: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": [c.to_json() for c in self.applied],
            "timer": self.timer,
            "journal": self.journal,
            "token": self.token,
        }

    @staticmethod
    def from_json(data: Any, where: str) -> ApplyReply:
        f = Fields(data, where)
        if f.raw("applied") is None:
            raise ValueError(f"{where}: applied: expected a list, found nothing")
        return ApplyReply(_changes(f, "applied"), f.opt_whole("timer"), f.opt_text("journal"), f.opt_text("token"))


@dataclass(frozen=True)
class QueryReply:
    """`agent fix-journal`'s answer: where the journals are, the state of each by token (oldest first), the latest
    fix `fix --revert` would undo there (None: none), and the tokens still waiting for their timer."""

    dir: str
    states: dict[str, str] = field(default_factory=dict)
    latest: JournalSummary | None = None
    pending: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "dir": self.dir,
            "states": dict(self.states),
            "latest": None if self.latest is None else self.latest.to_json(),
            "pending": list(self.pending),
        }

    @staticmethod
    def from_json(data: Any, where: str) -> QueryReply:
        f = Fields(data, where)
        latest = f.raw("latest")
        return QueryReply(
            f.text("dir"),
            _states(f, "states") if f.raw("states") is not None else {},
            None if latest is None else JournalSummary.from_json(latest, f"{where}: latest"),
            f.texts("pending"),
        )
