"""Counter sampling on every node at once: `agent sample` streams JSON lines; the controller reads them all.

The node's agent exits when its stdin closes (and the watchdog of the execution layer kills it anyway), so a
sampler never outlives the controller. Samples carry the node's own monotonic clock.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import stat
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from wirespeed.core.meter import NodeLayout, NodeSample, sample_from_json, sample_to_json
from wirespeed.engine.remote import Remote, RemoteProcess


def _watch_stdin(stop: threading.Event) -> None:
    try:
        while os.read(sys.stdin.fileno(), 4096):
            pass
    except (OSError, ValueError):
        pass
    stop.set()


def _stdin_is_a_pipe() -> bool:
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def stream_samples(node: str, ifaces: Sequence[str], interval: float, count: int = 0) -> None:
    """The node side: one JSON line per tick on stdout, on a fixed schedule (no drift), until told to stop."""
    from wirespeed.adapters.nicsampler import NodeSampler

    stop = threading.Event()
    if count == 0 and _stdin_is_a_pipe():  # under the execution layer's watchdog it is /dev/null: TERM stops us
        threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    sampler = NodeSampler(node, ifaces)
    next_tick = time.monotonic()
    sent = 0
    try:
        while not stop.is_set() and (count == 0 or sent < count):
            line = json.dumps(sample_to_json(sampler.sample()), separators=(",", ":"))
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            sent += 1
            next_tick += interval
            delay = next_tick - time.monotonic()
            if delay < 0:  # fell behind (a slow read): skip ticks rather than burst
                next_tick = time.monotonic()
            elif count == 0 or sent < count:
                stop.wait(delay)
    except BrokenPipeError:
        pass
    finally:
        sampler.close()


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
        self._queue: queue.Queue[NodeSample | Ended] = queue.Queue()
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
        reason = "sampler ended"
        try:
            for line in process.lines():
                try:
                    self._queue.put(sample_from_json(json.loads(line), line))
                except (ValueError, KeyError, TypeError):
                    reason = f"unexpected sampler output: {line[:80]!r}"
        except (OSError, ValueError):
            pass
        self._queue.put(Ended(process.node.name, reason))

    def samples(self, timeout_s: float) -> Iterator[NodeSample | Ended | None]:
        """Samples and endings as they come; None when nothing came within `timeout_s` (time to redraw)."""
        while self.running:
            try:
                item = self._queue.get(timeout=timeout_s)
            except queue.Empty:
                yield None
                continue
            if isinstance(item, Ended):
                self.running -= 1
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
