"""A run's counter samples replayed into time series: throughput per cable (TX and RX) and CPU per node, with
where each rung started and ended, on one clock. Pure: it takes the samples `bench` recorded in
`<rung>.samples.jsonl` and the node layouts from the run's discovery, and goes through the same `Meter` that
`watch` and the rungs use, so a plot shows exactly the figures the rungs were judged on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wirespeed.core.fabric.meter import Meter, NodeLayout, NodeSample

MAX_POINTS = 600  # per series: enough for a plot a page wide, a long run's report stays small


@dataclass(frozen=True)
class Point:
    t_s: float  # seconds since the run's first sample
    tx_gbps: float | None
    rx_gbps: float | None


@dataclass(frozen=True)
class CpuPoint:
    t_s: float
    average_pct: float | None  # all cores
    busiest_pct: float | None  # the busiest single core: what caps one TCP flow


@dataclass(frozen=True)
class CableSeries:
    node: str
    cable: str  # "port 0"
    line_rate_gbps: float | None  # per direction
    points: tuple[Point, ...]


@dataclass(frozen=True)
class RungSpan:
    rung: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Timeline:
    cables: tuple[CableSeries, ...]
    cpu: Mapping[str, tuple[CpuPoint, ...]]  # node -> points
    spans: tuple[RungSpan, ...]
    sources: frozenset[str]  # "phy" (the NIC's own counters, RDMA included) and/or "netdev" (kernel: no RDMA)
    unreadable_lines: int  # sample lines that were not samples (a run killed mid-write leaves half a line)

    @property
    def empty(self) -> bool:
        return not self.spans


def _thin(points: list[Any], limit: int) -> tuple[Any, ...]:
    """Every n-th point so that at most `limit` remain, the last one always kept."""
    if len(points) <= limit:
        return tuple(points)
    step = -(-len(points) // limit)
    kept = points[::step]
    if kept[-1] is not points[-1]:
        kept.append(points[-1])
    return tuple(kept)


def build_timeline(
    layouts: Sequence[NodeLayout],
    rungs: Sequence[tuple[str, Sequence[NodeSample | None]]],
    max_points: int = MAX_POINTS,
) -> Timeline:
    """`rungs`: each rung's name and its samples (None: a line that was none, `meter.read_sample`), in run order.
    Times are the nodes' wall clocks (each sample carries one) relative to the first sample of the run; each rung
    gets a fresh meter, as it had while it ran."""
    cable_points: dict[tuple[str, str], list[tuple[float, float | None, float | None]]] = {}
    line_rates: dict[tuple[str, str], float | None] = {
        (layout.node, cable.label): cable.line_rate_gbps for layout in layouts for cable in layout.cables
    }
    cpu_points: dict[str, list[tuple[float, float | None, float | None]]] = {}
    spans: list[tuple[str, float, float]] = []
    sources: set[str] = set()
    unreadable = 0
    for rung, lines in rungs:
        meter = Meter(layouts)
        first: float | None = None
        last: float | None = None
        for sample in lines:
            if sample is None:
                unreadable += 1
                continue
            clock = sample.wall if sample.wall is not None else sample.t
            first = clock if first is None else min(first, clock)
            last = clock if last is None else max(last, clock)
            view = meter.add(sample)
            if view is None:
                continue
            for cable in view.cables:
                cable_points.setdefault((view.node, cable.label), []).append((clock, cable.tx_gbps, cable.rx_gbps))
                sources.update(half.source for half in cable.halves.values() if half.source in ("phy", "netdev"))
            busiest = view.busiest_core
            cpu_points.setdefault(view.node, []).append(
                (clock, view.cpu_average, None if busiest is None else busiest[1])
            )
        if first is not None and last is not None:
            spans.append((rung, first, last))
    origin = min((start for _, start, _ in spans), default=0.0)
    cables = tuple(
        CableSeries(
            node,
            label,
            line_rates.get((node, label)),
            _thin([Point(t - origin, tx, rx) for t, tx, rx in pts], max_points),
        )
        for (node, label), pts in cable_points.items()
    )
    cpu = {
        node: _thin([CpuPoint(t - origin, avg, top) for t, avg, top in pts], max_points)
        for node, pts in cpu_points.items()
    }
    return Timeline(
        cables=cables,
        cpu=cpu,
        spans=tuple(RungSpan(rung, start - origin, end - origin) for rung, start, end in spans),
        sources=frozenset(sources),
        unreadable_lines=unreadable,
    )
