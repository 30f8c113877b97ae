"""What happened when a command ran on a node, classified so each failure reads as one clear line.

Pure: the execution layer hands in the exit status and stderr; this module decides what they mean.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    """Outcome of one command on one node; each failure kind has its own wording and hint."""

    OK = "ok"
    FAILED = "failed"  # the command ran and exited non-zero
    NOT_FOUND = "command-not-found"
    TIMED_OUT = "timed-out"
    UNREACHABLE = "unreachable"
    AUTH_FAILED = "auth-failed"
    HOST_KEY = "host-key-mismatch"


# ssh exits 255 for its own errors; stderr says which. Order matters: the first match wins.
_SSH_ERRORS: tuple[tuple[re.Pattern[str], Status, str, str], ...] = (
    (
        # ssh's own words when an established session dies (ServerAliveInterval ran out, the link dropped).
        re.compile(
            r"Timeout, server .* not responding|client_loop: send disconnect|Broken pipe|"
            r"closed by remote host|Connection to \S+ closed",
            re.I,
        ),
        Status.UNREACHABLE,
        "lost the connection",
        "the node or its management link went away ({dest}); what ran there stops by itself within 30 s",
    ),
    (
        re.compile(r"Permission denied|Too many authentication failures|no matching host key type", re.I),
        Status.AUTH_FAILED,
        "authentication failed",
        "check the user name and that your key is in the node's authorized_keys (ssh {dest} by hand to see)",
    ),
    (
        re.compile(r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED", re.I),
        Status.HOST_KEY,
        "host key not trusted",
        "confirm the node's host key and add it to known_hosts (ssh {dest} once by hand)",
    ),
    (
        re.compile(
            r"Connection refused|No route to host|Connection timed out|timed out during banner|"
            r"Network is unreachable|Could not resolve hostname|Name or service not known|"
            r"Connection closed by|Connection reset|kex_exchange_identification|Temporary failure in name",
            re.I,
        ),
        Status.UNREACHABLE,
        "unreachable",
        "check that the node is up, the address is right and sshd runs there",
    ),
)


@dataclass(frozen=True)
class CommandResult:
    """One command's outcome on one node. `message` is the one line a person reads."""

    node: str
    argv: tuple[str, ...]
    status: Status
    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    message: str
    hint: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "argv": list(self.argv),
            "status": self.status.value,
            "returncode": self.returncode,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "duration_s": round(self.duration_s, 3),
            "message": self.message,
            "hint": self.hint,
        }


# srun's own failures (the step never started) and its report of a task's end (the task's own stderr says more).
_SRUN_LAUNCH_ERROR = re.compile(
    r"^srun: (?:error|fatal): (?!\S+: tasks? [\d,-]+: )(.*)$",
    re.M,
)
_SRUN_TASK_LINE = re.compile(r"^srun: error: \S+: tasks? [\d,-]+: .*$", re.M)


def _last_line(text: str) -> str:
    """The last line that says something: not blank, and not the dashes that frame OpenMPI's (show_help) messages."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip().strip("-")]
    return lines[-1] if lines else ""


def classify(
    *,
    node: str,
    argv: tuple[str, ...],
    returncode: int | None,
    stdout: str,
    stderr: str,
    duration_s: float,
    timed_out: bool,
    timeout_s: float | None,
    via_ssh: bool,
    destination: str,
    spawn_failed: str | None = None,
    via_srun: bool = False,
    flood: str | None = None,
    flood_hint: str | None = None,
) -> CommandResult:
    """Turn a finished process into a `CommandResult` with a one-line message naming the node.

    `spawn_failed` is the error when the local program (ssh itself, or the command for a local node) could
    not be started at all; `flood` what it did when it was stopped for writing past its budget ("the agent wrote
    more than 64 MiB to stdout").
    """
    program = argv[0] if argv else "?"

    def result(status: Status, message: str, hint: str | None = None) -> CommandResult:
        return CommandResult(node, argv, status, returncode, stdout, stderr, duration_s, f"{node}: {message}", hint)

    if spawn_failed is not None:
        if via_ssh:
            return result(Status.NOT_FOUND, f"cannot start ssh: {spawn_failed}", "install openssh-client")
        if via_srun:
            return result(Status.NOT_FOUND, f"cannot start srun: {spawn_failed}", "install slurm-client")
        return result(Status.NOT_FOUND, f"command not found: {program}", f"install {program} on {node}")
    if flood is not None:
        return result(Status.FAILED, f"{flood}; stopped", flood_hint)
    if timed_out:
        return result(
            Status.TIMED_OUT,
            f"timed out after {timeout_s:g} s running {program}"
            if timeout_s is not None
            else f"timed out running {program}",
            "raise --timeout or check what the command waits for",
        )
    if returncode == 0:
        return result(Status.OK, "ok")
    if via_ssh and returncode == 255:
        for pattern, status, what, hint in _SSH_ERRORS:
            if pattern.search(stderr):
                detail = _last_line(stderr)
                return result(status, f"{what} ({destination}): {detail}", hint.format(dest=destination))
    if via_srun:
        launch = _SRUN_LAUNCH_ERROR.findall(stderr)
        if launch:
            return result(
                Status.UNREACHABLE,
                f"srun could not start a step ({destination}): {launch[-1].strip()}",
                "check that the node is in the allocation (squeue -j $SLURM_JOB_ID) and that slurmd runs there",
            )
    own_stderr = _SRUN_TASK_LINE.sub("", stderr) if via_srun else stderr
    if via_ssh and returncode == 255:  # ssh's status when it fails, which the command may also have used
        detail = _last_line(stderr)
        if not detail:  # ssh says nothing at LogLevel=ERROR when ServerAliveInterval gives up on a silent link
            return result(
                Status.UNREACHABLE,
                f"lost the connection ({destination}): ssh ended with status 255 and no word",
                f"the node or its management link went away ({destination}); what ran there stops by itself "
                "within 30 s",
            )
        return result(
            Status.FAILED,
            f"exited with status 255 ({destination}): ssh's status for a failed session, or {program}'s own"
            + (f": {detail}" if detail else ""),
            f"ssh {destination} by hand to see whether the node answers",
        )
    if returncode == 127:
        return result(Status.NOT_FOUND, f"command not found: {program}", f"install {program} on {node}")
    if returncode == 126:
        return result(Status.NOT_FOUND, f"command not executable: {program}", f"check permissions of {program}")
    detail = _last_line(own_stderr) or _last_line(stdout)
    suffix = f": {detail}" if detail else ""
    if returncode is not None and returncode < 0:
        return result(Status.FAILED, f"{program} killed by signal {-returncode}{suffix}")
    return result(Status.FAILED, f"{program} exited with status {returncode}{suffix}")


def worst_exit_status(results: list[CommandResult]) -> int:
    """The exit status of a many-node command: 0 if all succeeded, else the highest non-zero code seen."""
    worst = 0
    for item in results:
        if item.ok:
            continue
        code = item.returncode if item.returncode is not None and item.returncode > 0 else 1
        worst = max(worst, code)
    return worst


def one_line(failures: Sequence[str]) -> str:
    """Several failures as one readable line: the same cause said once, with every place it happened.
    `where: cause` messages are grouped by cause (a node that went away fails every flow the same way)."""
    groups: dict[str, list[str]] = {}
    for failure in dict.fromkeys(failures):  # in order, each once
        where, sep, cause = failure.partition(": ")
        if not sep:
            where, cause = "", failure
        groups.setdefault(cause, []).append(where)
    parts = []
    for cause, wheres in groups.items():
        places = [w for w in wheres if w]
        if len(places) > 1:
            parts.append(f"{len(places)} flows ({', '.join(places)}): {cause}")
        else:
            parts.append(f"{places[0]}: {cause}" if places else cause)
    return "; ".join(parts)
