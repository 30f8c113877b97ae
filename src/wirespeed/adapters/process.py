"""Local processes with an owner: timeouts kill the whole process group, nothing is left behind."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
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
wait "$child" 2>/dev/null  # dash says "Terminated" there: on a full stderr pipe that would block it
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


MiB = 1 << 20


@dataclass(frozen=True)
class Budget:
    """How much a process may write before it is stopped: bytes per stream over its whole life (None: no limit,
    for a stream read as it comes and not kept), and the longest line where its lines are parsed. An agent that
    floods must cost the controller a bounded amount of memory, never all of it."""

    stdout_bytes: int | None = 64 * MiB
    stderr_bytes: int | None = 16 * MiB
    line_bytes: int = 4 * MiB


DEFAULT_BUDGET = Budget()
FLOOD_KEPT = 64 * 1024  # of a stream that went past its budget, only this much is kept


def _size(count: int) -> str:
    return f"{count // MiB} MiB" if count >= MiB and count % MiB == 0 else f"{count} bytes"


@dataclass(frozen=True)
class Flood:
    """A stream that went past its budget: which one, and the limit it passed (a whole stream's bytes, or a line's)."""

    stream: str  # "stdout" or "stderr"
    limit_bytes: int
    line: bool = False

    def describe(self) -> str:
        """What the process did, as the end of a sentence: `wrote more than 64 MiB to stdout`."""
        if self.line:
            return f"wrote a line longer than {_size(self.limit_bytes)} to {self.stream}"
        return f"wrote more than {_size(self.limit_bytes)} to {self.stream}"


@dataclass(frozen=True)
class ProcessOutcome:
    """A finished local process. `spawn_error` is set when it could not be started at all; `flood` when it wrote
    past its budget and was stopped for it (its output is then what came before, cut)."""

    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    spawn_error: str | None = None
    flood: Flood | None = None


def kill_group(proc: subprocess.Popen[Any], grace_s: float = 2.0) -> None:
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
    budget: Budget = DEFAULT_BUDGET,
) -> ProcessOutcome:
    """Run argv to completion in its own process group and capture its output as text.

    stdout and stderr are read together as they come, each within its `budget`: past it, or past `timeout_s`,
    the whole group is killed (and what it left is read no further). With `hold_stdin`, the child's stdin is a
    pipe whose write end we keep open until it ends: a command wrapped by `watchdog_argv` (even on another node,
    through ssh) then dies as soon as we stop waiting.
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

    def let_go() -> None:
        """Close our end of its stdin: the watchdog there (through ssh, while it still runs) stops the command."""
        if beat is not None:
            heartbeat.remove(beat)
            beat.close()

    try:
        return _finish(proc, started, input_text, timeout_s, budget, let_go)
    finally:
        let_go()


def _finish(
    proc: subprocess.Popen[bytes],
    started: float,
    input_text: str | None,
    timeout_s: float | None,
    budget: Budget,
    let_go: Callable[[], None],
) -> ProcessOutcome:
    try:
        drained = drain(proc, input_text.encode("utf-8") if input_text is not None else None, timeout_s, budget)
    except BaseException:
        let_go()
        kill_group(proc)
        _close(proc)
        raise
    if drained.timed_out or drained.flood is not None:
        let_go()  # the node's side first (our end of its stdin), then everything here, at once: a flood is not read
        kill_group(proc)
    else:
        proc.wait()
    _close(proc)
    return ProcessOutcome(
        proc.returncode,
        as_text(drained.stdout),
        as_text(drained.stderr),
        time.monotonic() - started,
        timed_out=drained.timed_out,
        flood=drained.flood,
    )


def as_text(data: bytes | bytearray) -> str:
    """A process's bytes as text, the way a text-mode pipe reads them: undecodable bytes replaced, universal
    newlines."""
    text = data.decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _close(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


@dataclass
class Drained:
    """What `drain` read: each stream's bytes (cut at its budget), and why it stopped reading early, if it did."""

    stdout: bytearray
    stderr: bytearray
    timed_out: bool = False
    flood: Flood | None = None


def drain(proc: subprocess.Popen[bytes], input_bytes: bytes | None, timeout_s: float | None, budget: Budget) -> Drained:
    """Feed `input_bytes` to stdin and read stdout and stderr together until both end, a stream passes its budget
    or `timeout_s` passes, then wait for the process within what is left of that time. Never kills: the caller does,
    when `timed_out` or `flood` is set. communicate() drains concurrently too, but keeps whatever comes."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    found = Drained(bytearray(), bytearray())
    limits = {"stdout": budget.stdout_bytes, "stderr": budget.stderr_bytes}
    with selectors.DefaultSelector() as selector:
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            if stream is not None:
                selector.register(stream.fileno(), selectors.EVENT_READ, name)
        pending = memoryview(input_bytes) if input_bytes else None
        if proc.stdin is not None:
            if pending is None:
                proc.stdin.close()
            else:
                os.set_blocking(proc.stdin.fileno(), False)
                selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "stdin")
        while selector.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                found.timed_out = True
                return found
            for key, _ in selector.select(left):
                if key.data == "stdin":
                    assert proc.stdin is not None and pending is not None
                    try:
                        pending = pending[os.write(key.fd, pending[: 1 << 16]) :]
                    except BlockingIOError:
                        continue
                    except OSError:  # the process closed its stdin (or ended): what it did not read is dropped
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(key.fd)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                kept = found.stdout if key.data == "stdout" else found.stderr
                limit = limits[key.data]
                if limit is not None and len(kept) + len(chunk) > limit:
                    del kept[FLOOD_KEPT:]  # a flood is not read: its start is enough to show what it was
                    found.flood = Flood(key.data, limit)
                    return found
                kept += chunk
    try:
        proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        found.timed_out = True
    return found


def spawn(
    argv: Sequence[str], env: Mapping[str, str] | None = None, *, alongside: bool = False, cwd: Path | None = None
) -> subprocess.Popen[str]:
    """Start a long-running process in its own group, stdin a pipe we own (see `watchdog_argv`). `alongside`: a
    command run beside a view (`watch --run`): no stdin, its stderr joined to its stdout (one pipe to read, which
    cannot fill unread while the other is)."""
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL if alongside else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if alongside else subprocess.PIPE,
        text=True,
        errors="replace",
        bufsize=1,
        start_new_session=True,
        env=dict(env) if env is not None else None,
        cwd=cwd,
    )


def detach(argv: Sequence[str]) -> int:
    """A process that outlives us on purpose (the fix's rollback timer): its own session, no pipes to us, no
    descriptors of ours; its pid."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)  # fmt: skip
    return proc.pid


def run_attached(argv: Sequence[str]) -> int:
    """A command that takes over our terminal until it ends (`testbed exec`, `testbed login`): its exit status."""
    return subprocess.run(list(argv), check=False).returncode
