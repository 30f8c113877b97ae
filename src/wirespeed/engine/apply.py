"""The node side of `wirespeed fix`: observe, apply, and undo operations; a detached timer rolls network
changes back by itself unless the controller confirms it can still reach the node (as `netplan try` does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from wirespeed.adapters.process import run_process
from wirespeed.core.fixplan import Operation


def confirm_path(token: str, state: str = "confirmed") -> Path:
    safe = "".join(c for c in token if c.isalnum() or c in "-_")
    return Path(tempfile.gettempdir()) / f"wirespeed-fix-{safe}.{state}"


def _sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def observe(op: Operation) -> str:
    """The current value the operation would replace."""
    if op.kind == "sysctl":
        return " ".join(_sysctl_path(op.target).read_text().split())
    if op.kind == "mtu":
        return Path(f"/sys/class/net/{op.target}/mtu").read_text().strip()
    flags = int(Path(f"/sys/class/net/{op.target}/flags").read_text().strip(), 16)
    return "up" if flags & 1 else "down"


def apply_one(op: Operation) -> None:
    if op.kind == "sysctl":
        _sysctl_path(op.target).write_text(op.value.replace(" ", "\t") + "\n")
        return
    argv = ["ip", "link", "set", "dev", op.target, *(["mtu", op.value] if op.kind == "mtu" else [op.value])]
    outcome = run_process(argv, timeout_s=20)
    if outcome.returncode != 0:
        raise OSError(outcome.stderr.strip() or f"{' '.join(argv)} failed")


def apply_all(ops: list[Operation]) -> list[dict[str, Any]]:
    """Apply in order; each entry says what was there before, so the controller can record the undo."""
    done: list[dict[str, Any]] = []
    for op in ops:
        entry: dict[str, Any] = {"op": op.to_json(), "original": None, "ok": False, "error": None}
        try:
            entry["original"] = observe(op)
            if entry["original"] != op.value:
                apply_one(op)
            entry["ok"] = True
        except OSError as exc:
            entry["error"] = exc.strerror or str(exc)
        done.append(entry)
    return done


def undo_ops(done: list[dict[str, Any]]) -> list[Operation]:
    """The operations that restore what `apply_all` replaced, in reverse order."""
    restore: list[Operation] = []
    for entry in reversed(done):
        if entry["ok"] and entry["original"] is not None and entry["original"] != entry["op"]["value"]:
            op = entry["op"]
            restore.append(Operation(op["kind"], op["target"], entry["original"], "revert", op.get("network", False)))
    return restore


def start_rollback_timer(token: str, after_s: float, restore: list[Operation]) -> int:
    """A detached process (its own session, no pipes to us) that restores unless confirmed in time."""
    confirm_path(token).unlink(missing_ok=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wirespeed",
            "agent",
            "rollback-timer",
            "--token",
            token,
            "--after",
            str(after_s),
            "--restore",
            json.dumps([op.to_json() for op in restore]),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return proc.pid


def rollback_timer(token: str, after_s: float, restore: list[Operation]) -> bool:
    """Wait; restore unless the confirmation appeared. Returns True when it restored."""
    marker = confirm_path(token)
    deadline = time.monotonic() + after_s
    while time.monotonic() < deadline:
        if marker.exists():
            marker.unlink(missing_ok=True)
            return False
        time.sleep(0.1)
    confirm_path(token, "rolledback").write_text(f"{os.getpid()}\n")
    apply_all(restore)
    return True


class TooLate(Exception):
    """The timer ran out before the confirmation came: the old values are back."""


def confirm(token: str) -> None:
    late = confirm_path(token, "rolledback")
    if late.exists():
        late.unlink(missing_ok=True)
        raise TooLate(token)
    confirm_path(token).write_text(f"{os.getpid()}\n")
