"""Local processes with an owner: timeouts kill the whole process group, nothing is left behind."""

from __future__ import annotations

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
stop() { kill -TERM -"$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null; }
trap 'stop' TERM HUP INT
{
  cat <&3 >/dev/null 2>&1
  stop
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 -"$child" 2>/dev/null || kill -0 "$child" 2>/dev/null || exit 0
    sleep 0.3
  done
  kill -KILL -"$child" 2>/dev/null || kill -KILL "$child" 2>/dev/null
} >/dev/null 2>&1 &
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
    """SIGTERM the process group, then SIGKILL after `grace_s`; always reaps the child."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


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
