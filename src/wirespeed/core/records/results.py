"""What a rung measured, as typed records that write themselves to JSON and read themselves back. Pure.

Every view (`runs`, `compare`, `report`, the takeaway) reads these records, never the JSON: numbers stay numbers
with their unit in the field name (`_gbps` Gb/s = 10^9 bit/s, `_GBps` GB/s = 10^9 B/s, `_us` microseconds, `_s`
seconds), and only the UI formats them. `SCHEMA_VERSION` 2 is the first versioned layout; files written by
wirespeed 0.1 carry no version and are read as version 1 (the same fields, fewer of them).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from wirespeed.core.records.decode import Fields, Figures

SCHEMA_VERSION = 2  # the record format, apart from the package's version (wirespeed.__version__)
UNVERSIONED_SCHEMA = 1  # records written before they carried `schema_version`
End = tuple[str, str]  # (node, interface)
E = TypeVar("E", bound=StrEnum)


class RungStatus(StrEnum):
    RAN = "ran"
    SKIPPED = "skipped"  # could not run here: the reason and the fix say why
    FAILED = "failed"  # ran and did not finish cleanly: what finished is kept
    INTERRUPTED = "interrupted"  # cut short by a signal: what it measured until then is kept


class Direction(StrEnum):
    FORWARD = "forward"  # client -> server
    REVERSE = "reverse"  # server -> client, at the same time (--bidir)


def check_version(data: Fields) -> int:
    """The record's schema version (UNVERSIONED_SCHEMA when absent); a newer one is refused with an upgrade hint."""
    version = data.whole("schema_version") if "schema_version" in data else UNVERSIONED_SCHEMA
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"{data.where}: schema version {version} is newer than this wirespeed reads ({SCHEMA_VERSION}): upgrade it"
        )
    return version


@dataclass(frozen=True)
class NotRunnable:
    """Why a rung cannot run here, and what would make it runnable: it becomes a skipped rung, never a figure."""

    reason: str
    fix: str


@dataclass(frozen=True)
class Flow:
    """One sender/receiver pair on one half: client on `source`, server on `target` at `target_address`."""

    source: End
    target: End
    source_address: str
    target_address: str
    line_rate_gbps: float | None  # the slower end's link speed (or shaping)
    pcie_gbps: float | None = None  # the slower end's PCIe payload rate, where a PCIe link feeds the half
    cable: str = ""  # the source's physical port: halves of one port share its cable
    cable_rate_gbps: float | None = None  # what that port carries per direction
    # Through a ring's relays (pairs that share no cable): the nodes between, in order, and the sending end of every
    # cable half crossed, each way; empty for a flow over one cable (it crosses `source` alone, `target` back).
    relays: tuple[str, ...] = ()
    crossed: tuple[End, ...] = ()
    crossed_back: tuple[End, ...] = ()

    @property
    def hops(self) -> int:
        return len(self.relays) + 1

    @property
    def halves_crossed(self) -> tuple[End, ...]:
        """The sending end of every cable half the flow crosses: what flows of one round may share."""
        return self.crossed or (self.source,)

    @property
    def limit_gbps(self) -> float | None:
        """The most this half can carry: its link, or its PCIe link when that is slower (a Spark half)."""
        rates = [r for r in (self.line_rate_gbps, self.pcie_gbps) if r is not None]
        return min(rates) if rates else None

    @property
    def pcie_bound(self) -> bool:
        return self.pcie_gbps is not None and (self.line_rate_gbps is None or self.pcie_gbps < self.line_rate_gbps)

    def reversed(self) -> Flow:
        """The same half, server to client: what the server sends when both directions run at once."""
        return Flow(
            self.target, self.source, self.target_address, self.source_address, self.line_rate_gbps, self.pcie_gbps,
            self.cable, self.cable_rate_gbps, tuple(reversed(self.relays)), self.crossed_back, self.crossed,
        )  # fmt: skip

    def label(self) -> str:
        return f"{self.source[0]} {self.source[1]} -> {self.target[0]} {self.target[1]}"

    def to_json(self) -> dict[str, Any]:
        return {
            "client": list(self.source),
            "server": list(self.target),
            "client_address": self.source_address,
            "server_address": self.target_address,
            "line_rate_gbps": self.line_rate_gbps,
            "pcie_gbps": self.pcie_gbps,
            "cable": self.cable,
            "cable_rate_gbps": self.cable_rate_gbps,
        } | (
            {"relays": list(self.relays), "crossed": [list(e) for e in self.crossed],
             "crossed_back": [list(e) for e in self.crossed_back]}
            if self.relays
            else {}
        )  # fmt: skip

    @staticmethod
    def from_json(data: Fields) -> Flow:
        return Flow(
            source=_end(data, "client"),
            target=_end(data, "server"),
            source_address=data.text("client_address"),
            target_address=data.text("server_address"),
            line_rate_gbps=data.opt_num("line_rate_gbps"),
            pcie_gbps=data.opt_num("pcie_gbps"),
            cable=data.opt_text("cable") or "",
            cable_rate_gbps=data.opt_num("cable_rate_gbps"),
            relays=data.texts("relays"),
            crossed=_ends(data, "crossed"),
            crossed_back=_ends(data, "crossed_back"),
        )


def _ends(data: Fields, key: str) -> tuple[End, ...]:
    """A list of [node, interface] (absent in records from before relayed flows: empty)."""
    value = data.raw(key) or []
    if not isinstance(value, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in value
    ):
        raise ValueError(f"{data.where}: {key}: expected a list of [node, interface]")
    return tuple((e[0], e[1]) for e in value)


def _end(data: Fields, key: str) -> End:
    parts = data.texts(key)
    if len(parts) != 2:
        raise ValueError(f"{data.where}: {key}: expected [node, interface]")
    return parts[0], parts[1]


@dataclass(frozen=True)
class FlowResult:
    flow: Flow
    direction: Direction
    tool_gbps: float | None  # what the tool reported at the receiver
    error: str | None = None
    # The tool's own per-second rates (iperf3's intervals, the warm-up left out): what the figure's spread is
    # taken from (wirespeed.core.records.spread). Absent from records written before it was kept: read as ().
    intervals_gbps: tuple[float, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**self.flow.to_json(), "direction": self.direction.value, "receiver_gbps": self.tool_gbps,
                "error": self.error, "intervals_gbps": list(self.intervals_gbps)}  # fmt: skip

    @staticmethod
    def from_json(data: Fields) -> FlowResult:
        return FlowResult(
            Flow.from_json(data), choice(data, "direction", Direction), data.opt_num("receiver_gbps"),
            data.opt_text("error"), data.number_list("intervals_gbps"),
        )  # fmt: skip


def choice(data: Fields, key: str, kind: type[E]) -> E:
    value = data.text(key)
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(item.value for item in kind)
        raise ValueError(f"{data.where}: {key}: {value!r} is not one of {allowed}") from None


def _end_key(key: str, where: str) -> End:
    node, sep, iface = key.rpartition(":")
    if not sep or not node or not iface:
        raise ValueError(f"{where}: {key!r} is not node:interface")
    return node, iface


@dataclass(frozen=True)
class WireFigures:
    """What the sampler saw during a rung: per (node, interface) average Gb/s each way, and CPU."""

    tx_gbps: Mapping[End, float] = field(default_factory=dict)
    rx_gbps: Mapping[End, float] = field(default_factory=dict)
    busiest_core: Mapping[str, tuple[int, float]] = field(default_factory=dict)  # node -> (core, busy %)
    cpu_average: Mapping[str, float] = field(default_factory=dict)
    errors: Mapping[End, Mapping[str, int]] = field(default_factory=dict)  # counters that grew (not congestion)
    source: str = "phy"  # "netdev" when the kernel's counters stood in (RDMA invisible)
    # The highest one sample interval reached per node, all fabric halves added: what the seeds' PEAK line shows.
    peak_tx_gbps: Mapping[str, float] = field(default_factory=dict)
    peak_rx_gbps: Mapping[str, float] = field(default_factory=dict)
    peak_duplex_gbps: Mapping[str, float] = field(default_factory=dict)  # TX and RX of the same interval added
    # While the traffic ran (meter.steady_rate): per node, all fabric halves added, the median interval of those at
    # half the peak or more; what a collective's busbw x 8 is held against.
    steady_tx_gbps: Mapping[str, float] = field(default_factory=dict)
    steady_rx_gbps: Mapping[str, float] = field(default_factory=dict)
    steady_intervals: Mapping[str, int] = field(default_factory=dict)
    interval_s: float | None = None  # the sampler's interval

    @property
    def peak(self) -> tuple[float, float, float] | None:
        """The cluster's peak at the wire: the busiest node's TX, RX and full duplex in one interval, Gb/s."""
        if not self.peak_duplex_gbps:
            return None
        return max(self.peak_tx_gbps.values()), max(self.peak_rx_gbps.values()), max(self.peak_duplex_gbps.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "peak_tx_gbps": dict(self.peak_tx_gbps),
            "peak_rx_gbps": dict(self.peak_rx_gbps),
            "peak_duplex_gbps": dict(self.peak_duplex_gbps),
            "steady_tx_gbps": dict(self.steady_tx_gbps),
            "steady_rx_gbps": dict(self.steady_rx_gbps),
            "steady_intervals": dict(self.steady_intervals),
            "interval_s": self.interval_s,
            "tx_gbps": {f"{n}:{i}": v for (n, i), v in self.tx_gbps.items()},
            "rx_gbps": {f"{n}:{i}": v for (n, i), v in self.rx_gbps.items()},
            "busiest_core": {n: {"core": c, "busy_percent": b} for n, (c, b) in self.busiest_core.items()},
            "cpu_average_percent": dict(self.cpu_average),
            "errors": {f"{n}:{i}": dict(v) for (n, i), v in self.errors.items()},
        }

    @staticmethod
    def from_json(data: Fields | None) -> WireFigures:
        if data is None:
            return WireFigures()
        busiest: dict[str, tuple[int, float]] = {}
        cores = data.opt_obj("busiest_core")
        for node in cores.data if cores is not None else ():
            core = cores.obj(node) if cores is not None else None
            if core is not None:
                busiest[str(node)] = (core.whole("core"), core.num("busy_percent"))
        errors: dict[End, dict[str, int]] = {}
        grown = data.opt_obj("errors")
        for key in grown.data if grown is not None else ():
            counters = grown.obj(key) if grown is not None else None
            if counters is not None:
                errors[_end_key(key, data.where)] = {str(k): counters.whole(k) for k in counters.data}
        return WireFigures(
            tx_gbps={_end_key(k, data.where): v for k, v in data.numbers("tx_gbps").items()},
            rx_gbps={_end_key(k, data.where): v for k, v in data.numbers("rx_gbps").items()},
            busiest_core=busiest,
            cpu_average=data.numbers("cpu_average_percent"),
            errors=errors,
            source=data.opt_text("source") or "phy",
            peak_tx_gbps=data.numbers("peak_tx_gbps"),
            peak_rx_gbps=data.numbers("peak_rx_gbps"),
            peak_duplex_gbps=data.numbers("peak_duplex_gbps"),
            steady_tx_gbps=data.numbers("steady_tx_gbps"),
            steady_rx_gbps=data.numbers("steady_rx_gbps"),
            steady_intervals={k: int(v) for k, v in data.numbers("steady_intervals").items()},
            interval_s=data.opt_num("interval_s"),
        )


@dataclass(frozen=True)
class SizeFigures:
    """One message size of a collective (out-of-place): nccl-tests' algbw and busbw in GB/s (10^9 B/s)."""

    size_bytes: int
    algbw_GBps: float
    busbw_GBps: float
    time_us: float

    def to_json(self) -> dict[str, Any]:
        return {"size_bytes": self.size_bytes, "time_us": self.time_us, "algbw_GBps": self.algbw_GBps,
                "busbw_GBps": self.busbw_GBps}  # fmt: skip

    @staticmethod
    def from_json(data: Fields) -> SizeFigures:
        return SizeFigures(
            data.whole("size_bytes"), data.num("algbw_GBps"), data.num("busbw_GBps"), data.num("time_us")
        )


BITS_PER_BYTE = 8  # busbw GB/s (10^9 B/s) x 8 = Gb/s (10^9 bit/s) per direction


@dataclass(frozen=True)
class CollectiveSummary:
    """What an NCCL rung measured. busbw is nccl-tests' bus bandwidth: comparable with one link direction's rate
    (every rank sends and receives that much at once), so per direction = busbw x 8 Gb/s, full duplex twice that."""

    collective: str
    ranks: int | None
    rows: tuple[SizeFigures, ...]
    avg_busbw_GBps: float | None
    transport: str | None  # NET/IB, NET/Socket, P2P/CUMEM, ... from NCCL's INFO lines
    gdr: bool | None
    socket_interfaces: tuple[str, ...] = ()
    ib_devices: tuple[str, ...] = ()
    source: str = "json"  # where the figures came from: nccl-tests' own JSON, or its text table
    wrong: int = 0  # elements nccl-tests found wrong (data corruption)
    complete: bool = True
    nccl_version: str | None = None
    # What GPUDirect RDMA's state means on this platform (wirespeed.core.fabric.gdr), and whether it is a finding to
    # fix.
    gdr_note: str | None = None
    gdr_finding: bool = False

    @property
    def peak(self) -> SizeFigures | None:
        return max(self.rows, key=lambda r: r.busbw_GBps) if self.rows else None

    @property
    def per_direction_gbps(self) -> float | None:
        peak = self.peak
        return None if peak is None else peak.busbw_GBps * BITS_PER_BYTE

    def to_json(self) -> dict[str, Any]:
        peak = self.peak
        return {
            "collective": self.collective,
            "ranks": self.ranks,
            "transport": self.transport,
            "gdr": self.gdr,
            "gdr_note": self.gdr_note,
            "gdr_finding": self.gdr_finding,
            "socket_interfaces": list(self.socket_interfaces),
            "ib_devices": list(self.ib_devices),
            "figures_from": self.source,
            "wrong_elements": self.wrong,
            "complete": self.complete,
            "nccl_version": self.nccl_version,
            "avg_busbw_GBps": self.avg_busbw_GBps,
            "peak_busbw_GBps": None if peak is None else peak.busbw_GBps,
            "peak_at_bytes": None if peak is None else peak.size_bytes,
            "rows": [r.to_json() for r in self.rows],
        }

    @staticmethod
    def from_json(data: Fields) -> CollectiveSummary:
        data.opt_num("peak_busbw_GBps")  # derived from the rows, but a file that lies is not read
        data.opt_whole("peak_at_bytes")
        return CollectiveSummary(
            collective=data.text("collective"),
            ranks=data.opt_whole("ranks"),
            rows=tuple(SizeFigures.from_json(r) for r in data.objects("rows")),
            avg_busbw_GBps=data.opt_num("avg_busbw_GBps"),
            transport=data.opt_text("transport"),
            gdr=data.opt_flag("gdr"),
            gdr_note=data.opt_text("gdr_note"),
            gdr_finding=data.flag("gdr_finding", False),
            socket_interfaces=data.texts("socket_interfaces"),
            ib_devices=data.texts("ib_devices"),
            source=data.opt_text("figures_from") or "json",
            wrong=data.opt_whole("wrong_elements") or 0,
            complete=data.flag("complete", True),
            nccl_version=data.opt_text("nccl_version"),
        )


@dataclass(frozen=True)
class Latency:
    """One half's latency in microseconds, one way (the tools halve the round trip): the median (p50) and the tail.
    perftest's t_typical is its median; sockperf prints percentiles of its observations."""

    flow: Flow
    tool: str  # "sockperf", "perftest"
    message_bytes: int
    p50_us: float
    p99_us: float | None = None
    p999_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    avg_us: float | None = None
    samples: int | None = None  # round trips measured
    p25_us: float | None = None  # sockperf's quartiles of the round trips: the p50's spread (absent in older records)
    p75_us: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.flow.to_json(), "tool": self.tool, "message_bytes": self.message_bytes, "p50_us": self.p50_us,
            "p99_us": self.p99_us, "p999_us": self.p999_us, "min_us": self.min_us, "max_us": self.max_us,
            "avg_us": self.avg_us, "samples": self.samples, "p25_us": self.p25_us, "p75_us": self.p75_us,
        }  # fmt: skip

    @staticmethod
    def from_json(data: Fields) -> Latency:
        return Latency(
            flow=Flow.from_json(data), tool=data.text("tool"), message_bytes=data.whole("message_bytes"),
            p50_us=data.num("p50_us"), p99_us=data.opt_num("p99_us"), p999_us=data.opt_num("p999_us"),
            min_us=data.opt_num("min_us"), max_us=data.opt_num("max_us"), avg_us=data.opt_num("avg_us"),
            samples=data.opt_whole("samples"), p25_us=data.opt_num("p25_us"), p75_us=data.opt_num("p75_us"),
        )  # fmt: skip


@dataclass(frozen=True)
class Ceiling:
    # wire, cpu, single-flow, half-port, degraded, loss, contention, defaults, fallback, below-rdma, gdr-off, unknown
    name: str
    evidence: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "evidence": list(self.evidence)}


@dataclass(frozen=True)
class RungResult:
    """One rung of one run. Written to `<rung>.json` the moment it is known, interrupted ones included."""

    rung: str
    status: RungStatus
    reason: str | None = None  # why skipped, failed or interrupted, one line
    fix: str | None = None  # how to make a skipped rung runnable
    flows: tuple[FlowResult, ...] = ()
    wire: WireFigures = field(default_factory=WireFigures)
    ceiling: Ceiling | None = None
    duration_s: float | None = None
    collective: CollectiveSummary | None = None
    latency: tuple[Latency, ...] = ()  # one per half measured
    notes: tuple[str, ...] = ()
    phase: str | None = None  # `commission` measures twice: "before" and "after" the fixes

    @property
    def key(self) -> str:
        """Where the record lives in its run (`before/tcp-single`): what tells it from its twin of the other phase."""
        return f"{self.phase}/{self.rung}" if self.phase else self.rung

    @property
    def label(self) -> str:
        return f"{self.rung} ({self.phase})" if self.phase else self.rung

    def total_gbps(self, direction: Direction = Direction.FORWARD) -> float | None:
        """What the receivers counted in one direction, all flows added; None when any flow has no figure."""
        if self.collective is not None:  # busbw is per direction, and each direction carries it at once
            return self.collective.per_direction_gbps
        values = [f.tool_gbps for f in self.flows if f.direction == direction]
        return None if not values or any(v is None for v in values) else sum(v for v in values if v is not None)

    @property
    def forward_gbps(self) -> float | None:
        return self.total_gbps(Direction.FORWARD)

    @property
    def reverse_gbps(self) -> float | None:
        """Only where the reverse direction was measured (--bidir), or a collective (each direction at once)."""
        return self.total_gbps(Direction.REVERSE)

    @property
    def duplex_gbps(self) -> float | None:
        """Both directions added, only where both were measured at once: never a doubled one-way figure."""
        forward, reverse = self.forward_gbps, self.reverse_gbps
        return None if forward is None or reverse is None else forward + reverse

    @property
    def p50_us(self) -> float | None:
        """The median of the halves' medians: the latency a message typically sees."""
        return statistics.median(x.p50_us for x in self.latency) if self.latency else None

    @property
    def p99_us(self) -> float | None:
        """The worst half's p99: the tail a collective waits for."""
        tails = [x.p99_us for x in self.latency if x.p99_us is not None]
        return max(tails) if tails else None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "rung",
            "schema_version": SCHEMA_VERSION,
            "rung": self.rung,
            "phase": self.phase,
            "status": self.status.value,
            "reason": self.reason,
            "fix": self.fix,
            "duration_s": self.duration_s,
            "forward_gbps": self.forward_gbps,  # derived: for readers of the file; recomputed when read
            "reverse_gbps": self.reverse_gbps,
            "full_duplex_gbps": self.duplex_gbps,
            "p50_us": self.p50_us,
            "p99_us": self.p99_us,
            "flows": [r.to_json() for r in self.flows],
            "wire": self.wire.to_json(),
            "ceiling": None if self.ceiling is None else self.ceiling.to_json(),
            "collective": None if self.collective is None else self.collective.to_json(),
            "latency": [x.to_json() for x in self.latency],
            "notes": list(self.notes),
        }  # fmt: skip

    @staticmethod
    def from_json(data: Any, where: str) -> RungResult:
        """A rung record from its JSON (schema 1 or 2); ValueError names the file and the field that is wrong."""
        fields = Figures(data, where)  # every number checked against its unit: a damaged figure is `Damaged`
        check_version(fields)
        for derived in ("forward_gbps", "reverse_gbps", "full_duplex_gbps", "p50_us", "p99_us"):
            fields.opt_num(derived)  # recomputed from the flows and latencies, but a file that lies is not read
        ceiling = fields.opt_obj("ceiling")
        collective = fields.opt_obj("collective")
        duration = fields.opt_num("duration_s") if "duration_s" in fields else fields.opt_num("seconds")
        return RungResult(
            rung=fields.text("rung"),
            status=choice(fields, "status", RungStatus),
            reason=fields.opt_text("reason"),
            fix=fields.opt_text("fix"),
            flows=tuple(FlowResult.from_json(f) for f in fields.objects("flows")),
            wire=WireFigures.from_json(fields.opt_obj("wire")),
            ceiling=None if ceiling is None else Ceiling(ceiling.text("name"), ceiling.texts("evidence")),
            duration_s=duration,
            collective=None if collective is None else CollectiveSummary.from_json(collective),
            latency=tuple(Latency.from_json(x) for x in fields.objects("latency")),
            notes=fields.texts("notes"),
            phase=fields.opt_text("phase"),
        )
