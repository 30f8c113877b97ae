"""One measurement per cluster at a time: who holds a node's bench lock, and what the node's agent answers when
asked for it. Pure; the lock itself (a `flock` held by `wirespeed agent lock` for as long as the controller that
asked lives) is in the adapters, the asking in the engine.

Two benches on one cluster both measure wrong (each gets part of every link and each blames its CPU), so `bench`,
`bench matrix` and `commission` take every node's lock first, and a second one refuses with the holder's name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

LOCKED, BUSY, WAITING = "locked", "busy", "waiting"


@dataclass(frozen=True)
class Holder:
    """Who holds (or asks for) the lock: the command, the user and host it runs as, its pid, since when (UTC)."""

    what: str
    user: str
    host: str
    pid: int
    since_utc: str

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "user": self.user, "host": self.host, "pid": self.pid, "since_utc": self.since_utc}

    @staticmethod
    def from_json(data: Any) -> Holder | None:
        """The holder a lock file or an agent's line names; None for anything else (an empty or foreign file)."""
        if not isinstance(data, dict):
            return None
        text = {k: data.get(k) for k in ("what", "user", "host", "since_utc")}
        pid = data.get("pid")
        if not all(isinstance(v, str) for v in text.values()) or not isinstance(pid, int) or isinstance(pid, bool):
            return None
        return Holder(str(text["what"]), str(text["user"]), str(text["host"]), pid, str(text["since_utc"]))

    def describe(self) -> str:
        """`bench ladder by alice@spark-1 (pid 4242) since 2026-11-24T03:12:01Z`."""
        return f"{self.what} by {self.user}@{self.host} (pid {self.pid}) since {self.since_utc}"


def answer(state: str, holder: Holder | None) -> str:
    """The agent's one line: the state (locked, busy, waiting) and the holder it names (for busy and waiting: the
    one in the way, when the lock file says who)."""
    return json.dumps({"state": state, "holder": holder.to_json() if holder else None}, separators=(",", ":"))


def read_answer(line: str) -> tuple[str, Holder | None]:
    """An agent's line back; raises ValueError on anything else."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        raise ValueError(f"not a lock answer: {line[:80]!r}") from None
    state = data.get("state") if isinstance(data, dict) else None
    if state not in (LOCKED, BUSY, WAITING):
        raise ValueError(f"not a lock answer: {line[:80]!r}")
    return state, Holder.from_json(data.get("holder"))
