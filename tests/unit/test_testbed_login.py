"""`testbed shell`'s ssh line and the files each emulated node's home starts with (no system access but sh)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from wirespeed import __version__
from wirespeed.testbed.login import LAUNCHER, NODE_PROFILE, furnish_home, launcher_script, remote_command, shell_argv
from wirespeed.testbed.plan import Topology, make_plan
from wirespeed.testbed.state import TestbedState as BedState


def bed(testbed_dir: Path) -> BedState:
    plan = make_plan(prefix="wnl-", nodes=2, topology=Topology.DIRECT, cables=1, half_rate_bps=10**9, mtu=9000)
    return BedState(plan=plan, phase="up")


def test_the_command_reaches_the_login_shell_argument_for_argument() -> None:
    """What ssh hands the node's shell: each argument arrives as given, nothing expanded twice."""
    argv = ["printf", "%s|", "a b", "$HOME", "'q'", "*"]
    done = subprocess.run(
        ["sh", "-c", remote_command(argv)], env={"SHELL": "/bin/sh", "HOME": "/nonexistent"}, capture_output=True
    )
    assert done.stdout.decode() == "a b|$HOME|'q'|*|"
    builtin = subprocess.run(["sh", "-c", remote_command(["command", "-v", "sh"])], capture_output=True)
    assert builtin.returncode == 0 and builtin.stdout.strip()  # shell builtins work too


def test_shell_argv_goes_through_the_testbeds_ssh_config_with_its_key(testbed_dir: Path) -> None:
    state = bed(testbed_dir)
    argv = shell_argv(state, "wnl-1", ["wirespeed", "--version"], tty=False)
    assert argv[0] == "ssh-agent" and str(state.directory / "keys" / "id_ed25519") in argv
    ssh = argv[argv.index("ssh") :]
    assert ssh[:3] == ["ssh", "-F", str(state.ssh_config)] and "-oForwardAgent=yes" in ssh
    assert "-t" not in ssh and ssh[ssh.index("--") + 1] == "wnl-1"
    assert ssh[-1] == remote_command(["wirespeed", "--version"])
    terminal = shell_argv(state, "wnl-2", [], tty=True)
    assert "-t" in terminal and terminal[-1] == "wnl-2"  # no command: the node's login shell


def test_node_1_gets_wirespeed_as_pipx_would_and_every_node_a_login_profile(tmp_path: Path) -> None:
    first, other = tmp_path / "n1", tmp_path / "n2"
    furnish_home(first, first=True)
    furnish_home(other, first=False)
    assert (first / ".profile").read_text() == (other / ".profile").read_text() == NODE_PROFILE
    assert 'PATH="$HOME/.local/bin:$PATH"' in NODE_PROFILE
    assert not (other / LAUNCHER).exists()
    launcher = first / LAUNCHER
    assert launcher.stat().st_mode & 0o111
    done = subprocess.run([str(launcher), "--version"], capture_output=True, text=True)
    assert done.stdout == f"wirespeed {__version__}\n"
    profile = subprocess.run(
        ["sh", "-c", '. "$HOME/.profile"; echo "$PATH"'],
        env={"HOME": str(first), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert profile.stdout.startswith(f"{first}/.local/bin:")


def test_the_launcher_names_this_interpreter() -> None:
    assert launcher_script("/opt/py env/bin/python").endswith("exec '/opt/py env/bin/python' -m wirespeed \"$@\"\n")
