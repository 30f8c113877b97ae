"""Counter sampling on every node at once: `agent sample` streams JSON lines; the controller reads them all.

The node's agent exits when its stdin closes (and the watchdog of the execution layer kills it anyway), so a
sampler never outlives the controller. Samples carry the node's own monotonic clock.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from wirespeed.adapters import steadyreader
from wirespeed.core.fabric.meter import NodeLayout, NodeSample, sample_from_json
from wirespeed.engine.remote import Remote, RemoteProcess

decode_line: Callable[[str], Any]
try:  # a sample line decodes four times faster (6 against 25 us for 1.2 KB): a fifth of the controller per line
    from orjson import loads as decode_line
except ImportError:  # installed without its dependencies: the standard library's, the same objects
    from json import loads as decode_line


def _watch_stdin(halt: Callable[[], None]) -> None:
    try:
        while os.read(sys.stdin.fileno(), 4096):
            pass
    except (OSError, ValueError):
        pass
    halt()


def _stdout_fd() -> int | None:
    """stdout's file descriptor, where it has one (the compiled reader writes there itself); None otherwise."""
    try:
        return sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _stdin_is_a_pipe() -> bool:
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


FLUSH_S = 0.05  # lines wait at most this long on the node: at 100 samples/s, one write (and ssh packet) per 5
SLEEP_MAX_S = 0.1  # waits longer than this are on the stop event (a stop is seen at once); shorter ones sleep


def stream_samples(node: str, ifaces: Sequence[str], interval: float, count: int = 0) -> None:
    """The node side: one JSON line per tick on stdout, on a fixed schedule (no drift), until told to stop.

    Lines go out together at most every FLUSH_S (each line as soon as it is made at longer intervals): every
    write costs a wake-up of sshd, of the ssh client and of the controller's reader, more than the line itself.
    A short wait is a plain sleep (an event's timed wait costs twice as much CPU); a stop (stdin closed, or
    SIGTERM from the execution layer's watchdog) is then seen within SLEEP_MAX_S and what is held is written.

    While nothing changes, the compiled steady reader (where the node could build it) makes the lines between
    full readings on the same schedule, and hands back to this loop for each full reading.
    """
    from wirespeed.adapters.nicsampler import CPU_INTERVAL_S, NodeSampler

    stop = threading.Event()
    compiled = steadyreader.StreamReader(_stdout_fd())

    def halt() -> None:
        stop.set()
        compiled.interrupt()

    if count == 0 and _stdin_is_a_pipe():  # under the execution layer's watchdog it is /dev/null: TERM stops us
        threading.Thread(target=_watch_stdin, args=(halt,), daemon=True).start()
    restore = _stop_on_term(halt) if count == 0 else None
    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
    sampler = NodeSampler(node, ifaces)
    next_tick = time.monotonic()
    held: list[str] = []  # lines not yet written
    held_since = 0.0  # the tick of the oldest of them
    sent = 0

    def write_held() -> None:
        """One write for all the lines held: stdout's own buffer is a pipe's 4 KB, which a few lines overflow
        (it wrote 3 lines then 2 at 1.2 KB a line, and each line alone at 2.3 KB)."""
        text = "".join(held)
        held.clear()
        if out is not None:
            out.write(text.encode("utf-8", "surrogateescape"))
        else:
            sys.stdout.write(text)
        sys.stdout.flush()

    try:
        while not stop.is_set() and (count == 0 or sent < count):
            if not held:
                held_since = next_tick  # as scheduled: no float jitter
            held.append(sampler.line() + "\n")
            sent += 1
            next_tick += interval
            if next_tick - held_since >= FLUSH_S - 1e-9 or (count and sent >= count):
                write_held()
            handoff = sampler.compiled_layout() if count == 0 or sent < count else None
            reader = compiled.reader() if handoff is not None and next_tick < handoff[1] else None
            if reader is not None and handoff is not None and not stop.is_set():
                if held:
                    write_held()
                back = reader.run(handoff[0], handoff[1], CPU_INTERVAL_S, FLUSH_S, next_tick=next_tick,
                                  interval=interval, remaining=count - sent if count else 0,
                                  last_cpu=sampler.last_cpu)  # fmt: skip
                if back is None:
                    compiled.give_up()
                else:
                    sent += back.ticks
                    next_tick, sampler.last_cpu = back.next_tick, back.last_cpu
                    if back.reason == "pipe":
                        raise BrokenPipeError
                    compiled.handed_back(back, stop.is_set())
                    if back.reason != "stop" or stop.is_set():
                        continue  # the tick due now (the reader woke for it and left it to this loop), or the end
            delay = next_tick - time.monotonic()
            if delay < 0:  # fell behind (a slow read): skip ticks rather than burst
                next_tick = time.monotonic()
            elif count == 0 or sent < count:
                if delay <= SLEEP_MAX_S:
                    time.sleep(delay)
                else:
                    stop.wait(delay)
        if held:
            write_held()
    except BrokenPipeError:
        pass
    finally:
        compiled.close()
        sampler.close()
        if restore is not None:
            restore()


def _stop_on_term(halt: Callable[[], None]) -> Callable[[], None] | None:
    """SIGTERM calls `halt` (the lines held are written before the sampler exits); returns how to undo it. None
    where a handler cannot be set (not the main thread) or one is set already."""
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return None
        previous = signal.signal(signal.SIGTERM, lambda *_: halt())
    except ValueError:  # not the main thread
        return None

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def _line_batches(process: RemoteProcess, size: int = 65536) -> Iterator[list[str]]:
    """The complete lines of the process's stdout, as many as have come at each read, until it ends (a last line
    without its newline too), each line within the process's budget. Reads the pipe directly: one system call per
    batch rather than per line."""
    batches = getattr(process, "batches", None)
    if batches is None:  # a stand-in that only has lines
        yield from ([line] for line in process.lines())
        return
    yield from batches(size)


@dataclass(frozen=True)
class Ended:
    """A node's sampler stopped: its reason, one line."""

    node: str
    reason: str


class ClusterSampler:
    """Starts `agent sample` on every node and yields their samples as they arrive, from one queue."""

    def __init__(self, remote: Remote, layouts: Sequence[NodeLayout], interval: float) -> None:
        self.remote = remote
        self.layouts = [layout for layout in layouts if layout.interfaces]
        self.interval = interval
        self._queue: queue.Queue[list[NodeSample] | Ended] = queue.Queue()
        self._processes: list[RemoteProcess] = []
        self._threads: list[threading.Thread] = []
        self.running = 0

    def start(self) -> None:
        for layout in self.layouts:
            node = self.remote.cluster.node(layout.node)
            argv = [
                *self.remote.agent_argv(node),
                "agent",
                "sample",
                "--node",
                layout.node,
                "--ifaces",
                ",".join(layout.interfaces),
                "--interval",
                str(self.interval),
            ]
            process = self.remote.start(node, argv)
            self._processes.append(process)
            thread = threading.Thread(target=self._read, args=(process,), daemon=True)
            thread.start()
            self._threads.append(thread)
            self.running += 1

    def _read(self, process: RemoteProcess) -> None:
        """Whatever the node wrote since the last read, as one batch of samples on the queue: the agent writes
        several lines at once at short intervals, and one hand-over per batch wakes the consumer once."""
        reason = "sampler ended"
        try:
            for lines in _line_batches(process):
                batch: list[NodeSample] = []
                for line in lines:
                    try:
                        batch.append(sample_from_json(decode_line(line), line))
                    except (ValueError, KeyError, TypeError):
                        reason = f"unexpected sampler output: {line[:80]!r}"
                        break
                if batch:
                    self._queue.put(batch)
                if reason != "sampler ended":  # junk: this node cannot be read; it is stopped, not read on
                    if (give_up := getattr(process, "give_up", None)) is not None:
                        give_up()
                    break
        except (OSError, ValueError):
            pass
        flood = getattr(process, "flood", None)
        if flood is not None:
            reason = f"{process.subject()} {flood.describe()}; stopped"
        self._queue.put(Ended(process.node.name, reason))

    def batches(self, timeout_s: float) -> Iterator[list[NodeSample] | Ended | None]:
        """Samples as they came, one node's read at a time (several lines when the agent holds them at short
        intervals), and endings; None when nothing came within `timeout_s` (time to redraw)."""
        while self.running:
            try:
                item = self._queue.get(timeout=timeout_s)
            except queue.Empty:
                yield None
                continue
            if isinstance(item, Ended):
                self.running -= 1
            yield item

    def samples(self, timeout_s: float) -> Iterator[NodeSample | Ended | None]:
        """Samples and endings as they come; None when nothing came within `timeout_s` (time to redraw)."""
        for item in self.batches(timeout_s):
            if isinstance(item, list):
                yield from item
            else:
                yield item

    def stop(self) -> dict[str, str]:
        """Stop every node's sampler; returns the nodes whose sampler failed, with the reason."""
        failures: dict[str, str] = {}
        for process in self._processes:
            if process.popen.stdin is not None:
                with contextlib.suppress(OSError):
                    process.popen.stdin.close()
        for thread in self._threads:
            thread.join(timeout=5.0)
        for process in self._processes:
            result = process.stop(grace_s=3.0)
            if not result.ok:
                failures[process.node.name] = result.message
        self._processes = []
        return failures
