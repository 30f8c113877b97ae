"""`wirespeed watch`: sample every node, turn samples into views, hand them to the live board; optionally run a
command alongside (its last lines go to the board too) and stop when it ends. Every raw sample can be recorded as
it arrives (nothing is lost on Ctrl-C)."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wirespeed.adapters import files
from wirespeed.adapters.files import Appender, TextSink, open_append
from wirespeed.adapters.process import kill_group, spawn
from wirespeed.core.errors import WirespeedError
from wirespeed.core.fabric.meter import Meter, NodeLayout, NodeSample, NodeView, sample_line
from wirespeed.engine.live import LiveBoard
from wirespeed.engine.remote import Remote
from wirespeed.engine.sampling import ClusterSampler, Ended


@dataclass
class WatchResult:
    views: dict[str, NodeView] = field(default_factory=dict)
    intervals: int = 0
    samples: int = 0
    ended: dict[str, str] = field(default_factory=dict)  # node -> why its sampler stopped early
    silent: list[str] = field(default_factory=list)  # nodes that gave no reading in the time allowed (--once)
    run_returncode: int | None = None
    run_tail: list[str] = field(default_factory=list)  # the command's last lines of output
    interrupted: bool = False


class _Command:
    """A local command run alongside (an nccl-tests binary, say); its output tail is kept for the display."""

    def __init__(self, argv: Sequence[str], tail_lines: int = 8) -> None:
        try:
            self.popen = spawn(argv, alongside=True)
        except OSError as exc:
            raise WirespeedError(
                f"--run {argv[0]}: cannot start: {exc.strerror or exc}", hint="give the full path of the program"
            ) from None
        self.tail: collections.deque[str] = collections.deque(maxlen=tail_lines)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self, longest: int = 4096) -> None:
        """The last lines, each cut at `longest` characters (the rest of a longer line is dropped): a command that
        writes without a newline costs no more than one line's worth."""
        assert self.popen.stdout is not None
        cut = False
        while text := self.popen.stdout.readline(longest):
            if not cut:
                self.tail.append(text.rstrip("\n"))
            cut = not text.endswith("\n")

    def done(self) -> bool:
        return self.popen.poll() is not None

    def stop(self) -> int | None:
        if self.popen.poll() is None:
            kill_group(self.popen, grace_s=3.0)
        self.thread.join(timeout=2.0)
        return self.popen.returncode


def watch(
    remote: Remote,
    layouts: Sequence[NodeLayout],
    board: LiveBoard,
    *,
    interval: float = 0.5,
    duration_s: float | None = None,
    intervals: int | None = None,
    record: TextSink | None = None,
    run_argv: Sequence[str] | None = None,
    on_sample: Callable[[NodeSample, NodeView | None], None] | None = None,
) -> WatchResult:
    """Run until `duration_s` or `intervals` (per node) are reached, the command ends, or Ctrl-C. `on_sample` sees
    every sample with the view it made (None for a node's first): the Prometheus exporter's one hook."""
    meter = Meter(layouts)
    sampler = ClusterSampler(remote, layouts, interval)
    result = WatchResult()
    if not sampler.layouts:
        raise WirespeedError("nothing to watch: no node has an interface with a link", hint="run `wirespeed discover`")
    waiting = [layout.node for layout in sampler.layouts]
    per_node: collections.Counter[str] = collections.Counter()
    command: _Command | None = None
    started = time.monotonic()
    try:
        sampler.start()
        command = _Command(run_argv) if run_argv else None
        for item in sampler.samples(timeout_s=interval):
            if isinstance(item, Ended):
                result.ended[item.node] = item.reason
            elif item is not None:
                result.samples += 1
                if record is not None:
                    record.write(sample_line(item) + "\n")
                    record.flush()
                view = meter.add(item)
                if on_sample is not None:
                    on_sample(item, view)
                if view is not None:
                    result.views[item.node] = view
                    result.intervals += 1
                    per_node[item.node] += 1
                    board.view(view)
                if item.node in waiting and view is not None:
                    waiting.remove(item.node)
            if command is not None:
                board.tail(list(command.tail))
            if command is not None and command.done():
                break
            if duration_s is not None and time.monotonic() - started >= duration_s:
                break
            if intervals is not None and all(
                per_node[n.node] >= intervals or n.node in result.ended for n in sampler.layouts
            ):
                break  # every node read, or given up on
            if intervals is not None and waiting and time.monotonic() - started > max(30.0, 10 * interval):
                result.silent = [node for node in waiting if node not in result.ended]
                break  # a node that never answers must not hold `--once` forever
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        for node, reason in sampler.stop().items():
            result.ended.setdefault(node, reason)
        if command is not None:
            result.run_returncode = command.stop()
            result.run_tail = list(command.tail)
            board.tail(result.run_tail)
    return result


def open_record(path: Path) -> Appender:
    """`--record FILE`, appended to: each sample one whole line (never through a link planted at FILE); a full disk
    stops the watch with one line saying how many lines were kept."""
    return open_append(files.ensure_dir(path.parent) / path.name)
