"""Local processes with an owner: timeouts kill the whole process group, nothing is left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

# Runs argv ($@) so that it dies when our stdin closes, or when the controller has not been heard for $1 seconds:
# the controller holds the other end of that pipe and writes a line to it every HEARTBEAT_S, so a remote server or
# sampler never outlives it, even if the controller is killed or the management link is lost (when sshd on the node
# would not notice for hours). The script is a constant; user-supplied values only ever travel as quoted
# positional parameters.
WATCHDOG_SCRIPT = r"""limit=$1
shift
exec 3<&0
child=
stop() {
  [ -n "$child" ] || return 0
  kill -TERM -"$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 -"$child" 2>/dev/null || kill -0 "$child" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL -"$child" 2>/dev/null || kill -KILL "$child" 2>/dev/null
}
beat=$(mktemp 2>/dev/null) || beat=/tmp/wirespeed-beat.$$
echo 0 >"$beat"
trap 'stop; rm -f "$beat"; exit 143' TERM HUP INT
setsid "$@" </dev/null &
child=$!
{ n=0; while IFS= read -r _ <&3; do n=$((n+1)); echo "$n" >"$beat"; done; stop; } >/dev/null 2>&1 &
watcher=$!
exec 3<&-
checker=
if [ "$limit" -gt 0 ] 2>/dev/null; then
  { last=0; quiet=0
    while sleep 5; do
      now=$(cat "$beat" 2>/dev/null)
      if [ "$now" = "$last" ]; then
        quiet=$((quiet + 5))
        if [ "$quiet" -ge "$limit" ]; then stop; break; fi
      else quiet=0; last=$now; fi
    done; } >/dev/null 2>&1 &
  checker=$!
fi
wait "$child"
rc=$?
kill "$watcher" $checker 2>/dev/null
rm -f "$beat"
exit "$rc"
"""
HEARTBEAT_S = 2.0  # how often the controller tells every watched command it is still there
SILENCE_S = 15  # a watched command that has not heard from its controller for this long stops by itself


def watchdog_argv(argv: Sequence[str], silence_s: int = SILENCE_S) -> list[str]:
    """Wrap argv so it is killed (with its process group) when stdin reaches end of file, or when no heartbeat
    line came for `silence_s` seconds (0: no such limit; the stream must then be fed by `heartbeat`)."""
    return ["sh", "-c", WATCHDOG_SCRIPT, "wirespeed-watchdog", str(int(silence_s)), *argv]


class _Heartbeat:
    """One thread that writes a line every HEARTBEAT_S to the stdin of every watched command (see WATCHDOG_SCRIPT).
    A stream closed by its owner is dropped at the next beat; a write never blocks (a full pipe skips a beat)."""

    def __init__(self) -> None:
        self._streams: list[IO[Any]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, stream: IO[Any]) -> None:
        with self._lock:
            self._streams.append(stream)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="wirespeed-heartbeat", daemon=True)
                self._thread.start()

    def remove(self, stream: IO[Any]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._streams.remove(stream)

    def _run(self) -> None:
        while True:
            time.sleep(HEARTBEAT_S)
            with self._lock:
                streams = list(self._streams)
            for stream in streams:
                try:
                    stream.write(b"\n" if "b" in getattr(stream, "mode", "") else "\n")
                    stream.flush()
                except (OSError, ValueError):  # closed by its owner, or the command is gone
                    self.remove(stream)


heartbeat = _Heartbeat()


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
    beat: IO[bytes] | None = None
    if held:
        os.close(held[0])
        os.set_blocking(held[1], False)
        beat = os.fdopen(held[1], "wb", buffering=0)
        heartbeat.add(beat)  # the watchdog on the other end hears we are still here
    try:
        return _finish(proc, started, input_text, timeout_s)
    finally:
        if beat is not None:
            heartbeat.remove(beat)
            beat.close()


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
