"""The compiled steady reader (`steady_reader.c`): the agent's steady lines made without an interpreter.

At 100 lines a second most of a Python agent's CPU is the interpreter run cold after each sleep; the C reader
makes the same lines for the wake-up and the kernel's reads alone. The agent keeps every decision: it makes each
full reading, lays out the steady line (`nicsampler._SteadyLayout`), and hands the layout and the schedule to the
reader, which makes the ticks that follow and hands back when anything differs, when the layout is due again,
or when told to stop. A node without a C compiler, or with WIRESPEED_AGENT_COMPILED=0, gets every line from Python.

The reader is built once per source and machine into the node's cache (`~/.cache/wirespeed`), and run only if the
file and its directory belong to this user and nobody else may write them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

SOURCE_NAME = "steady_reader.c"
ENV = "WIRESPEED_AGENT_COMPILED"  # "0": every line from Python
COMPILERS = ("cc", "gcc", "clang")
BUILD_TIMEOUT_S = 120.0
REASONS = frozenset({"rescan", "changed", "count", "stop", "pipe", "cpu"})


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() != "0"


def source() -> bytes:
    """The C source, from the package (a source tree, site-packages or the agent's zipapp alike)."""
    return resources.files("wirespeed.adapters").joinpath(SOURCE_NAME).read_bytes()


def binary_path(cache: Path, text: bytes) -> Path:
    digest = hashlib.sha256(text).hexdigest()[:16]
    return cache / f"steady-reader-{digest}-{platform.machine() or 'unknown'}"


def _ours(info: os.stat_result) -> bool:
    return info.st_uid == os.geteuid() and not info.st_mode & 0o022


def trusted(path: Path) -> bool:
    """Ours to run: a regular file owned by this user in a directory owned by this user, neither writable by
    anyone else (a root agent must not run what another user could have put there)."""
    try:
        info, parent = path.lstat(), path.parent.stat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and _ours(info) and _ours(parent)


def build(cache: Path | None = None, started: Callable[[subprocess.Popen[bytes]], None] | None = None) -> Path | None:
    """The reader's binary, built now if this source has none yet; None when disabled, without a compiler, or
    when the build fails (the agent then makes every line itself). `started` is given the compiler's process
    (to stop it if the agent ends first)."""
    if not enabled():
        return None
    text = source()
    if cache is None:
        from wirespeed.adapters.agentzip import cache_dir  # the node's cache is where its agent was shipped

        cache = cache_dir()
    directory = cache
    target = binary_path(directory, text)
    if trusted(target):
        return target
    compiler = next((found for name in COMPILERS if (found := shutil.which(name))), None)
    if compiler is None:
        return None
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _ours(directory.stat()):  # what is built there could not be run: build nothing
            return None
        with tempfile.TemporaryDirectory(prefix="steady-reader-", dir=directory) as work:
            source_file, built = Path(work) / SOURCE_NAME, Path(work) / "steady-reader"
            source_file.write_bytes(text)
            with subprocess.Popen(
                [compiler, "-O2", "-o", str(built), str(source_file)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ) as compiling:
                if started is not None:
                    started(compiling)
                try:
                    code = compiling.wait(timeout=BUILD_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    compiling.kill()
                    compiling.wait()
                    return None
            if code != 0 or not built.is_file():
                return None
            built.chmod(0o700)
            os.replace(built, target)
    except (OSError, subprocess.SubprocessError):
        return None
    return target if trusted(target) else None


@dataclass(frozen=True)
class Handback:
    """Where the reader stopped: the ticks it made, the tick due next (monotonic seconds; not yet made), when it
    last read the CPU, and why (one of REASONS)."""

    ticks: int
    next_tick: float
    last_cpu: float
    reason: str


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


class SteadyReader:
    """One running reader, writing its lines to `stdout_fd` (the agent's own stdout)."""

    def __init__(self, binary: Path, stdout_fd: int) -> None:
        reply_read, reply_write = os.pipe()
        try:
            self._process = subprocess.Popen(
                [str(binary), str(reply_write)],
                stdin=subprocess.PIPE,
                stdout=stdout_fd,
                stderr=subprocess.DEVNULL,
                pass_fds=(reply_write,),
                close_fds=True,
            )
        except OSError:
            os.close(reply_read)
            raise
        finally:
            os.close(reply_write)
        self._replies = reply_read
        self._pending = b""

    @property
    def pid(self) -> int:
        return self._process.pid

    def run(self, layout: str, deadline: float, cpu_interval: float, flush: float, *, next_tick: float,
            interval: float, remaining: int, last_cpu: float) -> Handback | None:  # fmt: skip
        """Hand the layout over and wait for it to come back; None when the reader is gone or answers nonsense
        (the caller goes on in Python)."""
        message = (
            f"LAYOUT {_ns(deadline)} {_ns(cpu_interval)} {_ns(flush)}\n{layout}"
            f"RUN {_ns(next_tick)} {_ns(interval)} {max(0, remaining)} {_ns(last_cpu)}\n"
        )
        stdin = self._process.stdin
        try:
            assert stdin is not None
            stdin.write(message.encode("utf-8", "surrogateescape"))
            stdin.flush()
            line = self._reply()
        except (OSError, ValueError, EOFError):
            return None
        fields = line.split()
        if len(fields) != 5 or fields[0] != "DONE" or fields[4] not in REASONS:
            return None
        try:
            ticks, next_ns, cpu_ns = int(fields[1]), int(fields[2]), int(fields[3])
        except ValueError:
            return None
        return Handback(ticks, next_ns / 1e9, cpu_ns / 1e9, fields[4])

    def _reply(self) -> str:
        while b"\n" not in self._pending:
            chunk = os.read(self._replies, 256)
            if not chunk:
                raise EOFError
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode("ascii", "replace")

    def interrupt(self) -> None:
        """Stop the run in progress (from a signal handler or another thread): it writes what it holds and hands
        back with `stop`."""
        with contextlib.suppress(OSError):
            os.kill(self._process.pid, signal.SIGUSR1)

    def close(self) -> None:
        """End the reader and wait for it: none is left behind."""
        try:
            if self._process.stdin is not None:
                self._process.stdin.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        with contextlib.suppress(OSError):
            os.close(self._replies)


class Builder:
    """The reader built in the background, so that the agent's first lines do not wait for a compiler."""

    def __init__(self) -> None:
        self._binary: Path | None = None
        self._done = threading.Event()
        self._compiling: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        if enabled():
            self._thread = threading.Thread(target=self._build, name="steady-reader-build", daemon=True)
            self._thread.start()
        else:
            self._done.set()

    def _build(self) -> None:
        try:
            self._binary = build(started=self._started)
        finally:
            self._done.set()

    def _started(self, process: subprocess.Popen[bytes]) -> None:
        self._compiling = process
        if self._closing:
            process.kill()

    def ready(self) -> bool:
        return self._done.is_set()

    def binary(self) -> Path | None:
        """The binary once built (None before, or when there is none)."""
        return self._binary if self._done.is_set() else None

    def close(self) -> None:
        """Stop a build still running and wait for its thread: no compiler outlives the agent."""
        self._closing = True
        compiling = self._compiling
        if compiling is not None and compiling.poll() is None:
            with contextlib.suppress(OSError):
                compiling.kill()
        if self._thread is not None:
            self._thread.join(timeout=10)


class StreamReader:
    """The compiled reader of one agent's stream: built in the background, started once built, given up for good
    when it fails, keeps handing back at once (3 times with no line made), or meets a /proc/stat it does not read.
    None of it when stdout has no descriptor (the reader writes there) or the reader is turned off."""

    GIVE_UP_AFTER = 3

    def __init__(self, stdout_fd: int | None) -> None:
        self._stdout_fd = stdout_fd
        self._builder = Builder() if stdout_fd is not None and enabled() else None
        self._reader: SteadyReader | None = None
        self._given_up = self._builder is None
        self._idle_runs = 0
        self._lock = threading.Lock()

    def reader(self) -> SteadyReader | None:
        if self._reader is not None or self._given_up or self._builder is None or not self._builder.ready():
            return self._reader
        binary = self._builder.binary()
        if binary is None or self._stdout_fd is None:
            self._given_up = True
            return None
        try:
            with self._lock:
                self._reader = SteadyReader(binary, self._stdout_fd)
        except OSError:
            self._given_up = True
        return self._reader

    def handed_back(self, back: Handback, stopping: bool) -> None:
        if back.reason == "cpu" or (back.reason == "stop" and not stopping):  # killed by someone else
            self.give_up()
        elif back.reason == "changed" and back.ticks == 0:
            self._idle_runs += 1
            if self._idle_runs >= self.GIVE_UP_AFTER:
                self.give_up()
        else:
            self._idle_runs = 0

    def interrupt(self) -> None:
        reader = self._reader
        if reader is not None:
            reader.interrupt()

    def give_up(self) -> None:
        self._given_up = True
        with self._lock:
            reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()

    def close(self) -> None:
        self.give_up()
        if self._builder is not None:
            self._builder.close()
