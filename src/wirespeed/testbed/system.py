"""The testbed's only door to the system: iproute2, tc, sysctl, nsenter/unshare and /proc, as argv lists."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wirespeed.adapters.process import run_process
from wirespeed.core.errors import NotRootError, TestbedError

REQUIRED_TOOLS = ("ip", "tc", "sysctl", "nsenter", "unshare", "mount", "umount", "ssh", "ssh-keygen", "ethtool")
SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/bin/sshd")


def require_root() -> None:
    if os.geteuid() != 0:
        raise NotRootError(
            "the testbed needs root (network namespaces, veth, tc and sshd)",
            hint="run it with sudo or as root",
        )


def require_tools() -> str:
    """Check the programs the testbed uses; returns the path of sshd."""
    missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    sshd = next((path for path in SSHD_CANDIDATES if Path(path).exists()), None) or shutil.which("sshd")
    if sshd is None:
        missing.append("sshd")
    if missing:
        raise TestbedError(
            f"missing program(s) for the testbed: {', '.join(missing)}",
            hint="run `make install` (Debian packages iproute2, openssh-server, openssh-client, util-linux)",
        )
    assert sshd is not None
    return sshd


def run(argv: Sequence[str], what: str, *, check: bool = True, timeout_s: float = 30.0) -> str:
    """Run one system command; on failure raise a one-line `TestbedError` saying what was being done."""
    outcome = run_process(argv, timeout_s=timeout_s)
    if check and (outcome.spawn_error or outcome.timed_out or outcome.returncode != 0):
        detail = outcome.spawn_error or ("timed out" if outcome.timed_out else outcome.stderr.strip().splitlines())
        if isinstance(detail, list):
            detail = detail[-1] if detail else f"exit status {outcome.returncode}"
        raise TestbedError(f"{what}: {detail}", hint="`wirespeed testbed down` removes a half-built testbed")
    return outcome.stdout


def netns_list() -> list[str]:
    out = run(["ip", "-j", "netns", "list"], "listing network namespaces", check=False).strip()
    if not out:
        return []
    try:
        return [entry["name"] for entry in json.loads(out)]
    except (ValueError, KeyError, TypeError):
        return [line.split()[0] for line in out.splitlines() if line.strip()]


def netns_pids(netns: str) -> list[int]:
    out = run(["ip", "netns", "pids", netns], f"listing processes in {netns}", check=False)
    return [int(pid) for pid in out.split() if pid.isdigit()]


def link_exists(name: str, netns: str | None = None) -> bool:
    argv = ["ip", *(["-n", netns] if netns else []), "link", "show", "dev", name]
    return run_process(argv, timeout_s=10).returncode == 0


def ip_json(netns: str, *args: str) -> list[dict[str, Any]]:
    out = run(["ip", "-n", netns, "-j", *args], f"reading {' '.join(args)} in {netns}", check=False).strip()
    try:
        data = json.loads(out) if out else []
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def tc_json(netns: str, dev: str) -> list[dict[str, Any]]:
    out = run(["tc", "-n", netns, "-j", "qdisc", "show", "dev", dev], f"reading qdisc of {dev}", check=False)
    try:
        data = json.loads(out) if out.strip() else []
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def host_routes_v4() -> list[ipaddress.IPv4Network]:
    out = run(["ip", "-4", "-j", "route", "show", "table", "all"], "reading routes", check=False)
    try:
        routes = json.loads(out) if out.strip() else []
    except ValueError:
        return []
    networks: list[ipaddress.IPv4Network] = []
    for route in routes:
        dst = route.get("dst", "")
        if dst and dst != "default":
            try:
                networks.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
            except ValueError:
                continue
    return networks


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_pids(pids: Sequence[int], grace_s: float = 3.0) -> list[int]:
    """SIGTERM, wait up to `grace_s`, SIGKILL the rest; returns the pids that were signalled."""
    own = {os.getpid(), os.getppid()}
    targets = [pid for pid in pids if pid not in own and pid_alive(pid)]
    for pid in targets:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(pid_alive(pid) for pid in targets):
        time.sleep(0.05)
    for pid in targets:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return targets


def pids_mentioning(text: str) -> list[int]:
    """Processes whose command line contains `text` (ssh control masters started with a testbed's config)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def is_mounted(path: Path) -> bool:
    target = str(path)
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return False
    return any(line.split()[4] == target for line in mountinfo.splitlines() if len(line.split()) > 4)
