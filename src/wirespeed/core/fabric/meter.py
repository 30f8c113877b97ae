"""From streams of node samples to what a person watches: per node and cable, TX/RX now and peak, CPU. Pure.

The layout (which halves make which cable, at what line rate) comes from discovery; the samples from each node's
`wirespeed agent sample`. Rates use the node's own clock, so the controller's scheduling never skews them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple, Protocol

from wirespeed.core.fabric.counters import (
    CableRate,
    CpuTimes,
    IfaceRate,
    IfaceReading,
    cable_rate,
    cpu_busy,
    iface_rate,
    is_congestion,
    phy_shared,
)
from wirespeed.core.fabric.facts import NodeFacts


@dataclass(frozen=True)
class Cable:
    label: str  # "port 1"
    halves: tuple[str, ...]
    line_rate_gbps: float | None  # the link's speed per direction


@dataclass(frozen=True)
class NodeLayout:
    node: str
    cables: tuple[Cable, ...]

    @property
    def interfaces(self) -> list[str]:
        return [half for cable in self.cables for half in cable.halves]


def layout_from_facts(facts: NodeFacts) -> NodeLayout:
    """Cabled ports with their halves (nothing when no fabric port is cabled); a node without any fabric
    interface shows every interface that is up, so that `watch --hosts localhost` shows something."""

    def line_rate(halves: Sequence[str]) -> float | None:
        """The port's capacity per direction: its halves' rates added, capped by the PHY's link speed. A real
        port's halves both report the one PHY's speed (200 + 200 capped at 200); halves shaped below it, or halves
        with no PCI function behind them (the emulated cluster's, each a link of its own), each carry their own
        rate (1 + 1 = 2)."""
        speeds = [rate for h in halves if (rate := facts.line_rate_gbps(h)) is not None]
        if not speeds:
            return None
        phys = [
            netdev.speed_mbps / 1000
            for h in halves
            if (netdev := facts.netdev(h)) is not None
            and isinstance(netdev.speed_mbps, int)
            and netdev.pci is not None  # no PCI function: no PHY shared with a twin half
        ]
        return min(sum(speeds), max(phys)) if phys else sum(speeds)

    def cabled(name: str) -> bool:
        netdev = facts.netdev(name)
        return netdev is not None and netdev.carrier is True

    cables = [Cable(p.label, p.halves, line_rate(p.halves)) for p in facts.ports if any(cabled(h) for h in p.halves)]
    if not cables:
        # Fabric interfaces not grouped into ports; a node with no fabric at all shows what is up.
        names = [n for n in facts.fabric if cabled(n)] if facts.fabric else [
            n.name for n in facts.netdevs if n.name != "lo" and n.carrier is True
        ]  # fmt: skip
        cables = [Cable(name, (name,), line_rate([name])) for name in names]
    return NodeLayout(facts.node, tuple(cables))


@dataclass(frozen=True)
class NodeSample:
    """What one node's sampler read at one instant."""

    node: str
    t: float  # the node's monotonic clock, seconds
    ifaces: Mapping[str, IfaceReading]
    cpu: list[CpuTimes]
    wall: float | None = None  # the node's wall clock, for records
    missing: tuple[str, ...] = ()  # asked for, not there now (unplugged, renamed and not yet found)
    renamed: Mapping[str, str] = field(default_factory=dict)  # name asked for -> name it has now
    line: str | None = field(default=None, compare=False, repr=False)  # the JSON line it came in as, if any


class RateLike(Protocol):
    """TX, RX and full duplex in Gb/s per direction, where known: a cable's interval or a sum of them."""

    @property
    def tx_gbps(self) -> float | None: ...

    @property
    def rx_gbps(self) -> float | None: ...

    @property
    def duplex_gbps(self) -> float | None: ...


@dataclass(frozen=True)
class Rates:
    """Gb/s per direction; `duplex_gbps` is what the line calls full duplex. As a running highest (`Peak`), each
    figure is the highest any interval reached, apart from the others."""

    tx_gbps: float = 0.0
    rx_gbps: float = 0.0
    duplex_gbps: float = 0.0

    def update(self, rate: RateLike) -> Rates:
        """The highest of each figure, this one's and `rate`'s."""
        if (
            (rate.tx_gbps or 0.0) <= self.tx_gbps
            and (rate.rx_gbps or 0.0) <= self.rx_gbps
            and (rate.duplex_gbps or 0.0) <= self.duplex_gbps
        ):
            return self  # no new peak (most intervals): no new object
        return Rates(
            max(self.tx_gbps, rate.tx_gbps or 0.0),
            max(self.rx_gbps, rate.rx_gbps or 0.0),
            max(self.duplex_gbps, rate.duplex_gbps or 0.0),
        )


Peak = Rates  # a cable's highest intervals


STEADY_SHARE = 0.5  # an interval counts as "while the traffic ran" at half the peak interval or more


def steady_rate(series: Sequence[float]) -> tuple[float, int] | None:
    """What a node's wire carried while the traffic ran: the median of the intervals that reached at least half
    the peak interval, and how many they were. The launch, the gaps between message sizes and the ramp-up are
    left out without knowing when they happened; None when nothing moved."""
    peak = max(series, default=0.0)
    if peak <= 0.0:
        return None
    busy = sorted(v for v in series if v >= STEADY_SHARE * peak)
    middle = len(busy) // 2
    median = busy[middle] if len(busy) % 2 else (busy[middle - 1] + busy[middle]) / 2
    return median, len(busy)


class NodeView(NamedTuple):
    """One node over the last interval (a named tuple, as `CableRate` and `IfaceRate` are: one per node-sample)."""

    node: str
    seconds: float
    cables: tuple[CableRate, ...]
    peaks: Mapping[str, Peak]  # by cable label
    cpu: tuple[float | None, ...]  # busy % per core
    warnings: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()

    @property
    def cpu_average(self) -> float | None:
        known = [c for c in self.cpu if c is not None]
        return sum(known) / len(known) if known else None

    @property
    def busiest_core(self) -> tuple[int, float] | None:
        known = [(i, c) for i, c in enumerate(self.cpu) if c is not None]
        return max(known, key=lambda item: item[1]) if known else None

    def errors(self) -> dict[str, dict[str, int]]:
        """Interface -> counters that grew in this interval (congestion signals left out)."""
        found: dict[str, dict[str, int]] = {}
        for cable in self.cables:
            for name, half in cable.halves.items():
                grew = {k: v for k, v in half.errors.items() if not is_congestion(k)}
                if grew:
                    found[name] = grew
        return found

    def to_json(self) -> dict[str, Any]:
        def rate(value: float | None) -> float | None:
            return None if value is None else round(value, 6)

        return {
            "node": self.node,
            "seconds": round(self.seconds, 6),
            "cables": [
                {
                    "label": c.label,
                    "tx_gbps": rate(c.tx_gbps),
                    "rx_gbps": rate(c.rx_gbps),
                    "duplex_gbps": rate(c.duplex_gbps),
                    "line_rate_gbps": c.line_rate_gbps,
                    "shared_phy": c.shared_phy,
                    "peak": vars(self.peaks[c.label]) if c.label in self.peaks else None,
                    "halves": {
                        name: {
                            "source": h.source,
                            "tx_gbps": rate(h.tx_gbps),
                            "rx_gbps": rate(h.rx_gbps),
                            "function_tx_gbps": rate(h.function_tx_gbps),
                            "function_rx_gbps": rate(h.function_rx_gbps),
                            "rdma_tx_gbps": rate(h.rdma_tx_gbps),
                            "rdma_rx_gbps": rate(h.rdma_rx_gbps),
                            "errors": dict(h.errors),
                        }
                        for name, h in c.halves.items()
                    },
                }
                for c in self.cables
            ],
            "cpu_busy_percent": [None if c is None else round(c, 2) for c in self.cpu],
            "warnings": list(self.warnings),
            "missing": list(self.missing),
        }


NETDEV_WARNING = "no PHY counters on {names}: kernel netdev counters used, RDMA traffic is not in them"


class Meter:
    """Keeps the last sample and the peaks per node; `add` returns the view of the interval just ended."""

    def __init__(self, layouts: Sequence[NodeLayout]) -> None:
        self.layouts = {layout.node: layout for layout in layouts}
        self._last: dict[str, NodeSample] = {}
        self._shared: dict[tuple[str, str], bool] = {}
        self._cpu: dict[str, tuple[list[CpuTimes], tuple[float | None, ...]]] = {}  # last reading, last busy
        self.peaks: dict[str, dict[str, Peak]] = {layout.node: {} for layout in layouts}

    def _is_shared(self, node: str, cable: Cable, sample: NodeSample) -> bool:
        """Do the cable's two halves report one shared PHY? Decided once, from the first reading that tells."""
        key = (node, cable.label)
        verdict = self._shared.get(key)
        if verdict is None:
            if len(cable.halves) != 2:
                verdict = self._shared[key] = False
            else:
                a, b = (sample.ifaces.get(h) for h in cable.halves)
                verdict = phy_shared(a, b) if a is not None and b is not None else None
                if verdict is None:
                    return False  # cannot tell (yet): counted as two wires
                self._shared[key] = verdict
        return verdict

    def _cpu_busy(self, sample: NodeSample) -> tuple[float | None, ...]:
        """Busy % per core since the last CPU reading; samples without one (the sampler reads CPU at most ten
        times a second) keep the last figures."""
        last = self._cpu.get(sample.node)
        if not sample.cpu:
            return last[1] if last else ()
        busy = tuple(cpu_busy(last[0], sample.cpu)) if last else ()
        self._cpu[sample.node] = (sample.cpu, busy)
        return busy

    def add(self, sample: NodeSample) -> NodeView | None:
        node = sample.node
        layout = self.layouts.get(node)
        previous = self._last.get(node)
        self._last[node] = sample
        if layout is None or previous is None or sample.t <= previous.t:
            if layout is not None and sample.cpu:
                self._cpu_busy(sample)
            return None
        seconds = sample.t - previous.t
        before_ifaces, now_ifaces = previous.ifaces, sample.ifaces
        peaks = self.peaks[node]
        cables: list[CableRate] = []
        netdev_only: list[str] = []
        for cable in layout.cables:
            halves: dict[str, IfaceRate] = {}
            for half in cable.halves:
                before, now = before_ifaces.get(half), now_ifaces.get(half)
                if before is None or now is None:
                    halves[half] = IfaceRate("gone", None, None)
                    continue
                half_rate = halves[half] = iface_rate(before, now, seconds)
                if half_rate.source == "netdev":
                    netdev_only.append(half)
            rate = cable_rate(cable.label, halves, self._is_shared(node, cable, sample), cable.line_rate_gbps)
            label = cable.label
            peaks[label] = peaks[label].update(rate) if label in peaks else Peak().update(rate)
            cables.append(rate)
        warnings: tuple[str, ...] = (_netdev_warning(tuple(netdev_only)),) if netdev_only else ()
        if sample.renamed:
            warnings += tuple(f"{old} is now {new}" for old, new in sample.renamed.items())
        return NodeView(node, seconds, tuple(cables), dict(peaks), self._cpu_busy(sample), warnings, sample.missing)


@lru_cache(maxsize=256)  # the same halves every interval
def _netdev_warning(names: tuple[str, ...]) -> str:
    return NETDEV_WARNING.format(names=", ".join(names))


def sample_from_json(data: Mapping[str, Any], line: str | None = None) -> NodeSample:
    """One JSON line of `wirespeed agent sample` (`line`: its text, kept for the record); raises
    ValueError/KeyError/TypeError on anything else (a list where an object belongs too)."""
    try:
        ifaces = {
            name: IfaceReading(
                stats=_counters(raw.get("stats")),
                netdev=_counters(raw.get("netdev")),
                rdma=_counters(raw.get("rdma")),
                pci=raw.get("pci"),
                speed_mbps=raw.get("speed_mbps"),
            )
            for name, raw in data["ifaces"].items()
        }
        return NodeSample(
            node=str(data["node"]),
            t=float(data["t"]),
            ifaces=ifaces,
            cpu=[tuple(map(int, core)) for core in data.get("cpu", [])],
            wall=float(data["wall"]) if data.get("wall") is not None else None,
            missing=tuple(data.get("missing", ())),
            renamed=dict(data.get("renamed", {})),
            line=line,
        )
    except AttributeError as shape:  # `.items()`/`.get()` of a list or a number: not a sample line
        raise TypeError(f"not a sample: {shape}") from None


def read_sample(data: Any) -> NodeSample | None:
    """A line of a run's samples.jsonl, decoded: its sample, or None where it is not one (a run killed mid-write
    leaves half a line), which the timeline counts."""
    if data is None:
        return None
    try:
        return sample_from_json(data)
    except (KeyError, TypeError, ValueError):
        return None


def _counters(raw: Any) -> Mapping[str, int]:
    """A line's counters as ints (a number that is not one raises): the decoded object itself when every value is
    an int already, as the agent writes them (checked by type in C; converting each was a tenth of the
    controller's work per line); an empty or absent object costs nothing."""
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise TypeError(f"counters are not an object: {str(raw)[:40]}")
    if set(map(type, raw.values())) <= _INT_ONLY:
        return raw
    return dict(zip(raw, map(int, raw.values()), strict=True))


_INT_ONLY = frozenset({int})


def sample_line(sample: NodeSample) -> str:
    """The sample as one line of a samples.jsonl record: the node's own line when it came as one (encoding it
    again was a sixth of the controller's work per line), else encoded."""
    if sample.line is not None:
        return sample.line
    return json.dumps(sample_to_json(sample), separators=(",", ":"))


def sample_to_json(sample: NodeSample) -> dict[str, Any]:
    return {
        "node": sample.node,
        "t": sample.t,
        "wall": sample.wall,
        "ifaces": {
            name: {
                "stats": dict(r.stats),
                "netdev": dict(r.netdev),
                "rdma": dict(r.rdma),
                "pci": r.pci,
                "speed_mbps": r.speed_mbps,
            }
            for name, r in sample.ifaces.items()
        },
        "cpu": [list(core) for core in sample.cpu],
        "missing": list(sample.missing),
        "renamed": dict(sample.renamed),
    }
