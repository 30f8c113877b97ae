"""The node side of `wirespeed fix`: observe, apply, and undo operations. The journal that keeps the old values
and the timer that restores them unless the controller confirms are in `fixjournal`."""

from __future__ import annotations

import errno
import json
from pathlib import Path

from wirespeed.adapters import files
from wirespeed.adapters.configroot import system_path
from wirespeed.adapters.process import run_process
from wirespeed.core.fixplan import NETPLAN_DIR, Operation, check_route
from wirespeed.core.records.fixrecord import AppliedChange


def _sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def _ipv4(iface: str) -> list[str]:
    """The interface's IPv4 addresses as CIDRs, in the kernel's order."""
    outcome = _ip(["ip", "-j", "-4", "addr", "show", "dev", iface])
    data = json.loads(outcome or "[]")
    return [f"{a['local']}/{a['prefixlen']}" for link in data for a in link.get("addr_info", []) if "local" in a]


def _route(target: str) -> str:
    """The main table's route to exactly `target`, as a route operation holds it ("via GATEWAY dev IFACE", "dev
    IFACE" for a route on the link itself), or "" when there is none."""
    data = json.loads(_ip(["ip", "-j", "-4", "route", "show", "table", "main", "exact", target]) or "[]")
    for route in data:
        parts = [f"via {route['gateway']}"] if route.get("gateway") else []
        parts += [f"dev {route['dev']}"] if route.get("dev") else []
        return " ".join(parts)
    return ""


def _ip(argv: list[str]) -> str:
    outcome = run_process(argv, timeout_s=20)
    if outcome.returncode != 0:
        raise OSError(outcome.stderr.strip() or f"{' '.join(argv)} failed")
    return outcome.stdout


def observe(op: Operation) -> str | None:
    """The current value the operation would replace (None: a file that is not there)."""
    if op.kind == "sysctl":
        return " ".join(_sysctl_path(op.target).read_text().split())
    if op.kind == "mtu":
        return Path(f"/sys/class/net/{op.target}/mtu").read_text().strip()
    if op.kind == "addr":
        return " ".join(_ipv4(op.target))
    if op.kind == "route":
        return _route(op.target)
    if op.kind in ("file", "unlink"):
        try:
            return system_path(op.target).read_text()
        except FileNotFoundError:
            return None
    flags = int(Path(f"/sys/class/net/{op.target}/flags").read_text().strip(), 16)
    return "up" if flags & 1 else "down"


def _write_file(path: Path, content: str) -> None:
    """Atomically; netplan's files owner-only (netplan warns about files others can read), the others readable by
    everyone as /etc/sysctl.d's are (a user reading the node's settings must see them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:  # a new file renamed into place: never written through a link planted at the name
        files.write_atomic(path, content, chmod=0o600 if NETPLAN_DIR.rstrip("/") in str(path) else 0o644)
    except files.Unwritable as exc:
        raise OSError(errno.EIO, exc.message) from None  # the operation's error, as every other OSError of it
    _drop_stale_temporaries(path)


def _drop_stale_temporaries(path: Path) -> None:
    """An agent killed between writing its temporary and renaming it (the controller killed mid-apply) leaves
    `.NAME.XXXXXXXX.tmp` beside the file; the write that restores or replaces the file takes it away, so the
    node's /etc ends as it was. Unlinking removes a planted link itself, never what it points at."""
    for stale in files.temporaries_of(path):
        stale.unlink(missing_ok=True)


def apply_one(op: Operation) -> None:
    if op.kind == "sysctl":
        _sysctl_path(op.target).write_text(op.value.replace(" ", "\t") + "\n")
    elif op.kind == "file":
        _write_file(system_path(op.target), op.value)
    elif op.kind == "unlink":
        system_path(op.target).unlink(missing_ok=True)
        _drop_stale_temporaries(system_path(op.target))
    elif op.kind == "addr":
        wanted, current = op.value.split(), _ipv4(op.target)
        for cidr in (c for c in wanted if c not in current):
            _ip(["ip", "addr", "add", cidr, "dev", op.target])
        for cidr in (c for c in current if c not in wanted):
            _ip(["ip", "addr", "del", cidr, "dev", op.target])
    elif op.kind == "route":
        check_route(op.target, op.value)
        if op.value:
            _ip(["ip", "route", "replace", op.target, *op.value.split()])
        elif _route(op.target):
            _ip(["ip", "route", "del", op.target])
    else:
        _ip(["ip", "link", "set", "dev", op.target, *(["mtu", op.value] if op.kind == "mtu" else [op.value])])


def apply_all(ops: list[Operation]) -> list[AppliedChange]:
    """Apply in order; each change says what was there before (what restores it: `AppliedChange.undo`)."""
    done: list[AppliedChange] = []
    for op in ops:
        original: str | None = None
        try:
            original = observe(op)
            if original != op.value:
                apply_one(op)
        except (OSError, ValueError) as exc:
            done.append(AppliedChange(op, original, False, getattr(exc, "strerror", None) or str(exc)))
        else:
            done.append(AppliedChange(op, original, True))
    return done
