"""What the live view shows, as data: the latest interval of every node, NOW and PEAK per node and for the cluster,
error counters that grew, and what runs (the steps of a bench and where it is). Pure: `Board` takes views and
progress as they come; `Board.frame()` is the snapshot a display renders, the same for the full screen and the
plain line.

NOW and PEAK follow the seeds' picture: TX and RX at a node summed over its cables, full duplex their sum. For the
cluster, TX is what every node sent and RX what every node received, and full duplex is what the fabric carried:
(TX + RX) / 2, which for a pair of nodes is exactly one node's full duplex (the figure the seeds quote).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from wirespeed.core.fabric.counters import is_congestion
from wirespeed.core.fabric.meter import NodeView, Rates


@dataclass(frozen=True)
class NowPeak:
    now: Rates = field(default_factory=Rates)
    peak: Rates = field(default_factory=Rates)


def node_rates(view: NodeView) -> Rates:
    tx = sum(c.tx_gbps or 0.0 for c in view.cables)
    rx = sum(c.rx_gbps or 0.0 for c in view.cables)
    return Rates(tx, rx, tx + rx)


def cluster_rates(views: Sequence[NodeView]) -> Rates:
    nodes = [node_rates(v) for v in views]
    tx = sum(r.tx_gbps for r in nodes)
    rx = sum(r.rx_gbps for r in nodes)
    return Rates(tx, rx, (tx + rx) / 2)


def counter_source(view: NodeView) -> str:
    """Where a node's figures come from, said once per node: the PHY counters see RDMA; the kernel's do not."""
    sources = {h.source for c in view.cables for h in c.halves.values() if h.source != "gone"}
    if sources == {"phy"}:
        return "PHY counters: RDMA included"
    if "netdev" in sources:
        return "kernel counters: RDMA not seen"
    return "no counters yet" if not sources else ", ".join(sorted(sources))


class StepState:
    WAITING = "waiting"
    RUNNING = "running"


@dataclass(frozen=True)
class Step:
    """One rung (or matrix layer, or commission step): its name, its state (waiting, running, or how it ended:
    ran, failed, skipped, interrupted) and, once ended, its figure in a few words."""

    name: str
    state: str = StepState.WAITING
    figure: str | None = None


@dataclass(frozen=True)
class Frame:
    """One snapshot of the live view."""

    title: str  # "bench ladder", "watch", "watch: all_reduce_perf -b 1G"
    interval_s: float
    views: Mapping[str, NodeView]
    nodes: Mapping[str, NowPeak]
    cluster: NowPeak
    waiting: tuple[str, ...] = ()  # nodes without a first interval yet
    errors: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)  # node -> iface -> grew
    steps: tuple[Step, ...] = ()
    running: str | None = None  # the step running now
    detail: str | None = None  # what it does now, in a few words ("round 2 of 3")
    elapsed_s: float | None = None  # in the running step
    expected_s: float | None = None  # how long the running step should take, when known
    messages: tuple[str, ...] = ()  # the last lines said (a rung skipped, a round done)
    tail: tuple[str, ...] = ()  # the last lines of a command run alongside
    show_halves: bool = False
    intervals: int = 0  # intervals seen so far, all nodes

    @property
    def position(self) -> tuple[int, int] | None:
        """(i, n) of the running step among the steps."""
        names = [s.name for s in self.steps]
        if self.running is None or self.running not in names:
            return None
        return names.index(self.running) + 1, len(names)

    @property
    def seconds_left(self) -> float | None:
        if self.elapsed_s is None or self.expected_s is None:
            return None
        return max(0.0, self.expected_s - self.elapsed_s)


class Board:
    """Takes node views and progress as they come; `frame()` is what a display draws. Not thread-safe: the
    engine's `LiveBoard` puts a lock around it."""

    MESSAGES = 4

    def __init__(self, title: str, interval_s: float, nodes: Sequence[str] = (), steps: Sequence[str] = ()) -> None:
        self.title = title
        self.interval_s = interval_s
        self.views: dict[str, NodeView] = {}
        self.expected = list(nodes)
        self.node_peaks: dict[str, Rates] = {}
        self.cluster_peak = Rates()
        self.errors: dict[str, dict[str, dict[str, int]]] = {}
        self.steps = [Step(name) for name in steps]
        self.running: str | None = None
        self.detail: str | None = None
        self.started_at: float | None = None
        self.expected_s: float | None = None
        self.messages: list[str] = []
        self.tail: tuple[str, ...] = ()
        self.show_halves = False
        self.intervals = 0

    def add(self, view: NodeView) -> None:
        self.views[view.node] = view
        self.intervals += 1
        if view.node not in self.expected:
            self.expected.append(view.node)
        self.node_peaks[view.node] = self.node_peaks.get(view.node, Rates()).update(node_rates(view))
        self.cluster_peak = self.cluster_peak.update(cluster_rates(list(self.views.values())))
        for iface, grew in view.errors().items():
            bucket = self.errors.setdefault(view.node, {}).setdefault(iface, {})
            for counter, count in grew.items():
                if not is_congestion(counter):
                    bucket[counter] = bucket.get(counter, 0) + count

    def start(self, name: str, now: float, expected_s: float | None = None) -> None:
        """A step begins. The peaks stay: PEAK is the most the wire carried since the view started, as in the
        seeds' picture; each ended step keeps its own figure in the step list."""
        if name not in [s.name for s in self.steps]:
            self.steps.append(Step(name))
        self.steps = [replace(s, state=StepState.RUNNING) if s.name == name else s for s in self.steps]
        self.running, self.detail, self.started_at, self.expected_s = name, None, now, expected_s

    def end(self, name: str, state: str, figure: str | None = None) -> None:
        if name not in [s.name for s in self.steps]:
            self.steps.append(Step(name))
        self.steps = [replace(s, state=state, figure=figure) if s.name == name else s for s in self.steps]
        if self.running == name:
            self.running, self.detail, self.started_at, self.expected_s = None, None, None, None

    def say(self, text: str) -> None:
        self.messages = [*self.messages, text][-self.MESSAGES :]

    def frame(self, now: float) -> Frame:
        views = dict(self.views)
        return Frame(
            title=self.title,
            interval_s=self.interval_s,
            views=views,
            nodes={
                node: NowPeak(node_rates(view), self.node_peaks.get(node, Rates()))
                for node, view in sorted(views.items())
            },
            cluster=NowPeak(cluster_rates(list(views.values())), self.cluster_peak),
            waiting=tuple(n for n in self.expected if n not in views),
            errors={n: {i: dict(c) for i, c in found.items()} for n, found in self.errors.items()},
            steps=tuple(self.steps),
            running=self.running,
            detail=self.detail,
            elapsed_s=None if self.started_at is None else max(0.0, now - self.started_at),
            expected_s=self.expected_s,
            messages=tuple(self.messages),
            tail=self.tail,
            show_halves=self.show_halves,
            intervals=self.intervals,
        )


def step_figure(forward_gbps: float | None, p50_us: float | None, ceiling: str | None) -> str | None:
    """What an ended rung shows in the step list: its figure per direction (or its median latency) and ceiling."""
    parts = []
    if forward_gbps is not None:
        parts.append(f"{forward_gbps:.2f} Gb/s")
    elif p50_us is not None:
        parts.append(f"{p50_us:.1f} us")
    if ceiling:
        parts.append(f"({ceiling})")
    return " ".join(parts) or None
