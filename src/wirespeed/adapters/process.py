"""Local processes with an owner: timeouts kill the whole process group, nothing is left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Runs argv ($@) so that it dies when our stdin closes: the controller holds the other end of that pipe, so a
# remote server or sampler never outlives it, even if the controller is killed. The script is a constant;
# user-supplied values only ever travel as quoted positional parameters.
WATCHDOG_SCRIPT = r"""exec 3<&0
setsid "$@" </dev/null &
child=$!
stop() {
  kill -TERM -"$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 -"$child" 2>/dev/null || kill -0 "$child" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL -"$child" 2>/dev/null || kill -KILL "$child" 2>/dev/null
}
trap 'stop; exit 143' TERM HUP INT
{ cat <&3 >/dev/null 2>&1; stop; } >/dev/null 2>&1 &
watcher=$!
exec 3<&-
wait "$child"
rc=$?
kill "$watcher" 2>/dev/null
exit "$rc"
"""


def watchdog_argv(argv: Sequence[str]) -> list[str]:
    """Wrap argv so it is killed (with its process group) when stdin reaches end of file."""
    return ["sh", "-c", WATCHDOG_SCRIPT, "wirespeed-watchdog", *argv]


@dataclass(frozen=True)
class ProcessOutcome:
    """A finished local process. `spawn_error` is set when it could not be started at all."""

    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    spawn_error: str | None = None


def kill_group(proc: subprocess.Popen[str], grace_s: float = 2.0) -> None:
    """SIGTERM the process group, SIGKILL what is left after `grace_s`; always reaps the leader.

    The group is signalled even when its leader has exited: a background child may still hold its pipes.
    """
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        proc.wait()
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and group_members(proc.pid):
        proc.poll()
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, read from /proc."""
    members: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, pgrp, ...
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            members.append(int(entry.name))
    return members


def run_process(
    argv: Sequence[str],
    *,
    timeout_s: float | None = None,
    input_text: str | None = None,
    env: Mapping[str, str] | None = None,
    hold_stdin: bool = False,
) -> ProcessOutcome:
    """Run argv to completion in its own process group and capture its output as text.

    With `hold_stdin`, the child's stdin is a pipe whose write end we keep open until it ends: a command
    wrapped by `watchdog_argv` (even on another node, through ssh) then dies as soon as we stop waiting.
    """
    started = time.monotonic()
    held: tuple[int, int] | None = os.pipe() if hold_stdin and input_text is None else None
    stdin: int = subprocess.PIPE if input_text is not None else (held[0] if held else subprocess.DEVNULL)
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        if held:
            os.close(held[0])
            os.close(held[1])
        return ProcessOutcome(None, "", "", time.monotonic() - started, spawn_error=exc.strerror or str(exc))
    if held:
        os.close(held[0])
    try:
        return _finish(proc, started, input_text, timeout_s)
    finally:
        if held:
            os.close(held[1])


def _finish(
    proc: subprocess.Popen[str], started: float, input_text: str | None, timeout_s: float | None
) -> ProcessOutcome:
    try:
        stdout, stderr = proc.communicate(input=input_text, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        stdout, stderr = proc.communicate()
        return ProcessOutcome(proc.returncode, stdout, stderr, time.monotonic() - started, timed_out=True)
    except BaseException:
        kill_group(proc)
        raise
    return ProcessOutcome(proc.returncode, stdout, stderr, time.monotonic() - started)


def spawn(argv: Sequence[str], env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """Start a long-running process in its own group, stdin a pipe we own (see `watchdog_argv`)."""
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        bufsize=1,
        start_new_session=True,
        env=dict(env) if env is not None else None,
    )
