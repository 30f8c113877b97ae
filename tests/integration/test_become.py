"""A Spark owner is not root: on the emulated cluster the nodes log in as an ordinary user with sudo, root may not
log in, and wirespeed runs the steps that need root (the cabling probe, the kernel log, the firewall, fix) through
sudo only with --become. With password sudo the password is typed once into a real terminal (tmux) and never shows
in any process's arguments or any file; without --become every privileged step is named with its remedy and
nothing changes; with NOPASSWD sudo, --become asks for nothing."""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from wirespeed.testbed.login import shell_argv

from .helpers import running_testbed

if TYPE_CHECKING:
    from wirespeed.engine.remote import Remote
    from wirespeed.testbed.state import TestbedState

pytestmark = pytest.mark.root
NEEDS = shutil.which("tmux") is not None and shutil.which("sudo") is not None


def shell(state: TestbedState, node: str, *argv: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(shell_argv(state, node, list(argv), tty=False), capture_output=True, text=True,
                          timeout=timeout_s, check=False)  # fmt: skip


def config_root(state: TestbedState, node: str) -> dict[str, str]:
    """The node's /etc as fix changes it (the testbed gives each node a config root of its own), by file hash."""
    root = state.directory / "nodes" / node / "root"
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}  # fmt: skip


@pytest.fixture(scope="module")
def password_bed() -> Iterator[tuple[TestbedState, Remote]]:
    with running_testbed("wbe-", nodes=2, topology="direct", cables=2, user="spark", sudo="password") as bed:
        state, _ = bed
        done = shell(state, "wbe-1", "wirespeed", "init", "--yes")
        assert done.returncode == 0, done.stdout + done.stderr
        yield bed


@pytest.mark.skipif(not NEEDS, reason="needs tmux and sudo (apt install tmux sudo)")
def test_without_become_every_privileged_step_is_named_and_nothing_changes(
    password_bed: tuple[TestbedState, Remote],
) -> None:
    state, _ = password_bed
    before = {node: config_root(state, node) for node in ("wbe-1", "wbe-2")}
    done = shell(state, "wbe-1", "wirespeed", "commission", "--yes", "--seconds", "2", "--rungs", "tcp-single")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "the cabling probe needs root on wbe-1, wbe-2 (--become" in said
    assert "firewall: firewall not read: needs root (--become)" in said or "power.slot" in said
    assert "wbe-1: fix needs root there (--become" in said and "wbe-2: fix needs root there" in said
    assert "fix: failed: nothing applied" in said and "Traceback" not in said
    assert {node: config_root(state, node) for node in ("wbe-1", "wbe-2")} == before  # nothing changed


@pytest.mark.skipif(not NEEDS, reason="needs tmux and sudo (apt install tmux sudo)")
def test_the_password_typed_once_into_a_terminal_and_never_seen_again(
    password_bed: tuple[TestbedState, Remote], tmp_path: Path
) -> None:
    state, _ = password_bed
    password = (state.directory / "user-password").read_text().strip()
    session = f"wbe-{time.monotonic_ns()}"
    inner = shell_argv(state, "wbe-1", ["wirespeed", "commission", "--yes", "--become", "--ask-become-pass",
                                        "--seconds", "2", "--rungs", "tcp"], tty=True)  # fmt: skip
    script = tmp_path / "run.sh"
    script.write_text(f"{shlex.join(inner)}\necho EXIT=$?\nsleep 600\n")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "50", "sh", str(script)],
                   check=True)  # fmt: skip
    seen_in_ps: list[str] = []
    try:
        pane = wait_for(session, "sudo password on the nodes of", 120)
        assert password not in pane
        subprocess.run(["tmux", "send-keys", "-t", session, password, "Enter"], check=True)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
            seen_in_ps += [line for line in ps.splitlines() if password in line and "tmux send-keys" not in line]
            pane = capture(session)
            if "EXIT=" in pane:
                break
            time.sleep(0.5)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    assert seen_in_ps == []
    assert "EXIT=0" in pane, pane[-3000:]
    assert "[5/8] fix: done" in pane and "[1/8] discover: done" in pane
    assert "needs root" not in pane  # the probe, the kernel log and the fixes ran as root
    written = [state.directory / "nodes" / node for node in ("wbe-1", "wbe-2")]  # homes, config roots, logs
    leaks = [p for base in written for p in base.rglob("*")
             if p.is_file() and not p.is_symlink() and password.encode() in p.read_bytes()]  # fmt: skip
    assert leaks == []


@pytest.mark.skipif(not NEEDS, reason="needs sudo (apt install sudo)")
def test_nopasswd_sudo_needs_no_prompt() -> None:
    with running_testbed("wbp-", nodes=2, topology="direct", cables=1, user="spark", sudo="nopasswd") as (state, _):
        assert shell(state, "wbp-1", "wirespeed", "init", "--yes").returncode == 0
        done = shell(state, "wbp-1", "wirespeed", "check", "--become", "--only", "power.slot,firewall,link.halves")
        said = done.stdout + done.stderr
        assert "needs root" not in said and "password" not in said, said
        assert "link.halves" in said and "Traceback" not in said


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session, "-S", "-3000"], capture_output=True, text=True,
                          check=False).stdout  # fmt: skip


def wait_for(session: str, text: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    pane = ""
    while time.monotonic() < deadline:
        pane = capture(session)
        if text in pane:
            return pane
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never came: {pane[-2000:]}")


def sudoers_dir(state: TestbedState, node: str) -> dict[str, bytes]:
    folder = state.directory / "nodes" / node / "etc" / "sudoers.d"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.skipif(not NEEDS, reason="needs tmux and sudo (apt install tmux sudo)")
def test_init_sudoers_then_no_become_needed_and_undo_removes_it_byte_for_byte(
    password_bed: tuple[TestbedState, Remote], tmp_path: Path
) -> None:
    state, _ = password_bed
    nodes = ("wbe-1", "wbe-2")
    before = {node: sudoers_dir(state, node) for node in nodes}
    password = (state.directory / "user-password").read_text().strip()
    session = f"wbs-{time.monotonic_ns()}"
    inner = shell_argv(state, "wbe-1", ["wirespeed", "init", "--yes", "--sudoers", "--ask-become-pass"], tty=True)
    script = tmp_path / "run.sh"
    script.write_text(f"{shlex.join(inner)}\necho EXIT=$?\nsleep 600\n")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "50", "sh", str(script)],
                   check=True)  # fmt: skip
    try:
        wait_for(session, "sudo password on the nodes of", 180)
        subprocess.run(["tmux", "send-keys", "-t", session, password, "Enter"], check=True)
        pane = wait_for(session, "EXIT=", 300)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    assert "EXIT=0" in pane, pane[-3000:]
    for node in nodes:
        added = {k: v for k, v in sudoers_dir(state, node).items() if k not in before[node]}
        assert list(added) == ["wirespeed-spark"], added
        assert b"NOPASSWD: /" in added["wirespeed-spark"] and b"/usr/local/lib/wirespeed/agent-*.pyz *" in added[
            "wirespeed-spark"]  # fmt: skip

    done = shell(state, "wbe-1", "wirespeed", "check", "--only", "power.slot,link.halves")  # no --become
    said = done.stdout + done.stderr
    assert "needs root" not in said and "cabling taken from the address plan" not in said, said
    assert "PASS" in said and "power.slot" in said

    undone = shell(state, "wbe-1", "wirespeed", "init", "--undo", "--yes")
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert {node: sudoers_dir(state, node) for node in nodes} == before  # byte for byte
    for node in nodes:
        assert not list((state.directory / "nodes" / node / "usr-local" / "upper").rglob("agent-*.pyz"))
