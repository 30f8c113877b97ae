"""Privilege where it is needed, and only there (Ansible's `become`): the steps that need root on a node (the
cabling probe, the kernel log and the firewall, `fix`) run through sudo; everything else runs as the user who logs
in. Pure: how a command is wrapped, and what sudo's refusals mean in one line.

The password, when sudo wants one, is typed once on the controller's terminal and handed to `sudo -S` on each
node on its standard input, over the connection the command already uses: never in an argument list (which `ps`
shows), never in an environment, a log, a run record or a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HOW = "--become (sudo on the nodes), with --ask-become-pass where sudo asks for a password"


@dataclass(frozen=True)
class Become:
    password: str | None = field(default=None, repr=False)  # None: sudo without a prompt (`sudo -n`)
    system_agent: str | None = None  # `init --sudoers`: the root-owned agent (its file name) the drop-in allows

    def wrap(self, argv: list[str], input_text: str | None) -> tuple[list[str], str | None]:
        """The command through sudo, and what goes on its stdin: the password line first, when there is one."""
        if self.password is None:
            return ["sudo", "-n", "--", *argv], input_text
        return ["sudo", "-S", "-p", "", "--", *argv], self.password + "\n" + (input_text or "")


# What sudo says when it refuses (sudo 1.9, C locale), and the one line a person reads instead.
_REFUSALS = (
    ("a password is required", "sudo there asks for a password",
     "--ask-become-pass, or NOPASSWD sudo there, or `wirespeed init --sudoers`"),
    ("incorrect password", "sudo there refused the password", "--ask-become-pass again, with the right one"),
    ("no password was provided", "sudo there refused the password", "--ask-become-pass again, with the right one"),
    ("is not in the sudoers file", "the user may not use sudo there", "ask for sudo there, or log in as root"),
    ("may not run sudo", "the user may not use sudo there", "ask for sudo there, or log in as root"),
    ("not allowed to execute", "sudo there does not allow this command", "widen its sudoers rule, or a password"),
)  # fmt: skip


def refusal(stderr: str) -> tuple[str, str] | None:
    """sudo's refusal in a person's words and what to do, or None when sudo did not refuse."""
    text = stderr.lower()
    return next(((what, hint) for pattern, what, hint in _REFUSALS if pattern in text), None)


# ------------------------------------------------------------------------------------------ standing permission
# `wirespeed init --sudoers`: the user may run wirespeed's agent as root without a password, and nothing else.
# The agent run as root is a copy owned by root in a directory only root may write, run by the system's own
# python3 (its real path): a file the user could change (its cache, a venv's python symlink) never runs as root.
SYSTEM_AGENT_DIR = "/usr/local/lib/wirespeed"
SUDOERS_MARK = "# wirespeed init --sudoers"
_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_PATH = re.compile(r"/[A-Za-z0-9_./+-]+")


def sudoers_path(user: str) -> str:
    """The drop-in's path; sudo reads /etc/sudoers.d files whose names have no dot."""
    if not _NAME.fullmatch(user):
        raise ValueError(f"user {user!r}: not a name a sudoers drop-in can be written for")
    return f"/etc/sudoers.d/wirespeed-{user}"


def sudoers_text(user: str, python: str) -> str:
    """The drop-in: `user` may run `python` on the root-owned agents, with any arguments, as root only."""
    sudoers_path(user)
    if not _PATH.fullmatch(python) or ".." in python:
        raise ValueError(f"python {python!r}: not an absolute path a sudoers rule can name")
    return (
        f"{SUDOERS_MARK}: {user} may run wirespeed's agent as root without a password.\n"
        f"# `wirespeed init --undo` removes this file.\n"
        f"{user} ALL=(root) NOPASSWD: {python} {SYSTEM_AGENT_DIR}/agent-*.pyz *\n"
    )


# Fixed scripts; paths and names reach them as positional arguments. The drop-in's text comes on stdin (after the
# password sudo reads, when there is one), is checked by visudo under a name sudo ignores (it has a dot), then moved.
INSTALL_SUDOERS = (
    'set -e; f="$3"; if [ -e "$f" ] && ! head -n 1 "$f" | grep -q "^' + SUDOERS_MARK + '"; then '
    'echo "$f is not wirespeed'
    "'"
    's: left alone" >&2; exit 3; fi; '
    'install -d -m 0755 "$4"; install -m 0644 "$1" "$4/$2"; umask 0227; cat > "$f.wirespeed-tmp"; '
    'visudo -c -q -f "$f.wirespeed-tmp" || { rm -f "$f.wirespeed-tmp"; echo "visudo refused the drop-in" >&2; '
    'exit 4; }; mv -f "$f.wirespeed-tmp" "$f"'
)


def install_sudoers_argv(agent_file: str, agent_name: str, user: str) -> list[str]:
    return ["sh", "-c", INSTALL_SUDOERS, "sh", agent_file, agent_name, sudoers_path(user), SYSTEM_AGENT_DIR]


def system_agent_argv(argv: list[str], name: str, real_python: str) -> list[str]:
    """A command of wirespeed's agent rewritten to run the root-owned copy `name` by the system's python: the one
    the drop-in allows. `[python, X.pyz, args]` and `[python, -m, wirespeed, args]` both become
    `[real_python, SYSTEM_AGENT_DIR/name, args]`; anything else is left as it is (sudo will say no)."""
    if len(argv) >= 2 and argv[1].endswith(".pyz"):
        return [real_python, f"{SYSTEM_AGENT_DIR}/{name}", *argv[2:]]
    if argv[1:3] == ["-m", "wirespeed"]:
        return [real_python, f"{SYSTEM_AGENT_DIR}/{name}", *argv[3:]]
    return argv
