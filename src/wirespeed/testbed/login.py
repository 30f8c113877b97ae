"""Logging in to an emulated node as its user would, and the user's side of each node's home.

`wirespeed testbed shell NODE [-- CMD ...]` goes through the node's own sshd with the testbed's `ssh_config`, so
the session is a real ssh login there: the node's home (its own overlay), its login shell, /etc/profile and
~/.profile, its PATH and the environment its sshd sets. A command runs inside that login shell (`$SHELL -l -c`),
as if typed at the node's prompt; its exit status is ssh's, which is the command's. The session is root's, or with
`testbed up --user NAME` that account's (testbed/account.py), whose home gets the same files.

The testbed's key goes along in an ssh agent of its own (`ssh -A`, as from a laptop), so that ssh from the node to
the others gets in as a user's would on a first contact (what `wirespeed init` needs); nothing is copied into the
node's ~/.ssh.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from wirespeed.testbed.state import TestbedState

# The node's ~/.profile: what Ubuntu's /etc/skel/.profile gives every user `adduser` makes (root's own, from
# base-files, does not add ~/.local/bin). It is what puts ~/.local/bin, where pipx installs commands, on the login
# PATH; Debian's /etc/skel/.profile says the same.
NODE_PROFILE = """\
# ~/.profile: executed by the command interpreter for login shells.
# (wirespeed testbed: Ubuntu's /etc/skel/.profile, as a user made by adduser has it)

# if running bash
if [ -n "$BASH_VERSION" ]; then
    # include .bashrc if it exists
    if [ -f "$HOME/.bashrc" ]; then
        . "$HOME/.bashrc"
    fi
fi

# set PATH so it includes user's private bin if it exists
if [ -d "$HOME/bin" ] ; then
    PATH="$HOME/bin:$PATH"
fi

# set PATH so it includes user's private bin if it exists
if [ -d "$HOME/.local/bin" ] ; then
    PATH="$HOME/.local/bin:$PATH"
fi
"""
LAUNCHER = ".local/bin/wirespeed"

# Runs `ssh` (the rest of its arguments) under `ssh-agent`, which holds the testbed's key for it; the agent is
# stopped when ssh ends, and ssh's status is the exit status.
_WITH_KEY = 'ssh-add -q "$1" 2>/dev/null; shift; "$@"; status=$?; ssh-agent -k >/dev/null 2>&1; exit "$status"'


def launcher_script(python: str | None = None) -> str:
    """`wirespeed` as pipx leaves it in ~/.local/bin: a command that starts wirespeed's own interpreter. The
    emulated nodes share this machine's files, so that interpreter is this controller's."""
    return (
        "#!/bin/sh\n"
        "# wirespeed, installed in this node's ~/.local/bin as pipx would (wirespeed testbed, node 1 only)\n"
        f'exec {shlex.quote(python or sys.executable)} -m wirespeed "$@"\n'
    )


def furnish_home(upper: Path, first: bool) -> None:
    """Write a node's own files into the upper layer of its home before its sshd mounts it: the login profile on
    every node; on the first node, also wirespeed, installed once as a user would (the others get none)."""
    upper.mkdir(parents=True, exist_ok=True)
    (upper / ".profile").write_text(NODE_PROFILE)
    if first:
        launcher = upper / LAUNCHER
        launcher.parent.mkdir(parents=True, exist_ok=True)
        launcher.write_text(launcher_script())
        launcher.chmod(0o755)


def remote_command(command: Sequence[str]) -> str:
    """What ssh asks the node's shell to run: COMMAND, each argument as given, in a login shell there (so with
    the login PATH), as if typed at its prompt (shell builtins such as `command -v` work too)."""
    return f'exec "${{SHELL:-/bin/sh}}" -l -c \'"$0" "$@"\' {shlex.join(command)}'


def shell_argv(state: TestbedState, node: str, command: Sequence[str], tty: bool) -> list[str]:
    """The local argv that logs in to `node` through its sshd: an interactive login shell without `command`,
    else `command` in a login shell. `-t` only when stdin is a terminal."""
    key = state.directory / "keys" / "id_ed25519"
    ssh = ["ssh", "-F", str(state.ssh_config), "-oForwardAgent=yes", "-oLogLevel=ERROR"]
    if tty:
        ssh.append("-t")
    ssh += ["--", node]
    if command:
        ssh.append(remote_command(command))
    return ["ssh-agent", "sh", "-c", _WITH_KEY, "sh", str(key), *ssh]
