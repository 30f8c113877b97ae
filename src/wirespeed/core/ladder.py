"""The bandwidth ladder's rungs, their results, and the ceiling each one hit, with evidence. Pure.

Expectations come from discovery (the link speed of each half used, how many halves and cables), never from
constants. A rung's throughput is read at the wire by the sampler as well as by the tool, so that the diagnosis
can tell a tool's figure from what the links carried.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.cabling import CablingMap
from wirespeed.core.facts import NodeFacts

End = tuple[str, str]  # (node, interface)
WIRE_FRACTION = 0.90  # at or above this share of the line rate, the wire is the ceiling
CPU_SATURATED = 90.0  # a core this busy limits a TCP flow
DEGRADED_FRACTION = 0.5  # a flow this far below the others (or its line rate) marks a degraded half


@dataclass(frozen=True)
class Flow:
    """One sender/receiver pair on one half: client on `source`, server on `target` at `target_address`."""

    source: End
    target: End
    source_address: str
    target_address: str
    line_rate_gbps: float | None  # the slower end's link speed


def _ipv4(facts: NodeFacts, iface: str) -> str | None:
    netdev = facts.netdev(iface)
    return netdev.ipv4[0].split("/")[0] if netdev and netdev.ipv4 else None


def _speed(facts: NodeFacts, iface: str) -> float | None:
    return facts.line_rate_gbps(iface)


def flows_between(facts: Mapping[str, NodeFacts], cabling: CablingMap, client: str, server: str) -> list[Flow]:
    """Every addressed link between two nodes, one flow per half, in port order."""
    flows: list[Flow] = []
    for a, b in cabling.links:
        if {a[0], b[0]} != {client, server}:
            continue
        src, dst = (a, b) if a[0] == client else (b, a)
        src_addr, dst_addr = _ipv4(facts[client], src[1]), _ipv4(facts[server], dst[1])
        if src_addr is None or dst_addr is None:
            continue
        speeds = [s for s in (_speed(facts[client], src[1]), _speed(facts[server], dst[1])) if s is not None]
        flows.append(Flow(src, dst, src_addr, dst_addr, min(speeds) if speeds else None))
    order = [half for port in facts[client].ports for half in port.halves]
    return sorted(flows, key=lambda f: (order.index(f.source[1]) if f.source[1] in order else len(order), f.source))


def first_pair(cabling: CablingMap) -> tuple[str, str] | None:
    """The two nodes the single-pair rungs use: the first pair (by name) with a link between them."""
    pairs = sorted({tuple(sorted((a[0], b[0]))) for a, b in cabling.links if a[0] != b[0]})
    return (pairs[0][0], pairs[0][1]) if pairs else None


@dataclass(frozen=True)
class FlowResult:
    flow: Flow
    direction: str  # "forward" (client -> server) or "reverse" (with --bidir)
    tool_gbps: float | None  # what the tool reported at the receiver
    error: str | None = None


@dataclass(frozen=True)
class WireFigures:
    """What the sampler saw during a rung: per (node, interface) average Gb/s each way, and CPU."""

    tx_gbps: Mapping[End, float] = field(default_factory=dict)
    rx_gbps: Mapping[End, float] = field(default_factory=dict)
    busiest_core: Mapping[str, tuple[int, float]] = field(default_factory=dict)  # node -> (core, busy %)
    cpu_average: Mapping[str, float] = field(default_factory=dict)
    errors: Mapping[End, Mapping[str, int]] = field(default_factory=dict)  # counters that grew (not congestion)
    source: str = "phy"  # "netdev" when the kernel's counters stood in (RDMA invisible)


@dataclass(frozen=True)
class Ceiling:
    name: str  # wire, cpu, single-flow, half-port, degraded, loss, defaults, fallback, unknown
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class RungResult:
    rung: str
    status: str  # "ran", "skipped", "failed"
    reason: str | None = None  # why skipped or failed, one line
    fix: str | None = None  # how to make a skipped rung runnable
    flows: tuple[FlowResult, ...] = ()
    wire: WireFigures = field(default_factory=WireFigures)
    ceiling: Ceiling | None = None
    seconds: float | None = None

    def total_gbps(self, direction: str = "forward") -> float | None:
        values = [f.tool_gbps for f in self.flows if f.direction == direction]
        return None if not values or any(v is None for v in values) else sum(v for v in values if v is not None)

    @property
    def duplex_gbps(self) -> float | None:
        forward, reverse = self.total_gbps("forward"), self.total_gbps("reverse")
        return None if forward is None else forward + (reverse or 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "rung": self.rung,
            "status": self.status,
            "reason": self.reason,
            "fix": self.fix,
            "seconds": self.seconds,
            "forward_gbps": self.total_gbps("forward"),
            "reverse_gbps": self.total_gbps("reverse"),
            "full_duplex_gbps": self.duplex_gbps,
            "flows": [
                {
                    "client": list(r.flow.source),
                    "server": list(r.flow.target),
                    "client_address": r.flow.source_address,
                    "server_address": r.flow.target_address,
                    "line_rate_gbps": r.flow.line_rate_gbps,
                    "direction": r.direction,
                    "receiver_gbps": r.tool_gbps,
                    "error": r.error,
                }
                for r in self.flows
            ],
            "wire": {
                "source": self.wire.source,
                "tx_gbps": {f"{n}:{i}": v for (n, i), v in self.wire.tx_gbps.items()},
                "rx_gbps": {f"{n}:{i}": v for (n, i), v in self.wire.rx_gbps.items()},
                "busiest_core": {n: {"core": c, "busy_percent": b} for n, (c, b) in self.wire.busiest_core.items()},
                "cpu_average_percent": dict(self.wire.cpu_average),
                "errors": {f"{n}:{i}": dict(v) for (n, i), v in self.wire.errors.items()},
            },
            "ceiling": None if self.ceiling is None else {"name": self.ceiling.name, "evidence": self.ceiling.evidence},
        }


def diagnose(result: RungResult, single_flow: bool = False, halves_available: int = 0) -> Ceiling:
    """The ceiling of a rung that ran, first match wins: loss, degraded, wire (or half-port when halves of the
    cabled ports stayed idle), cpu, single-flow, half-port."""
    flows = [f for f in result.flows if f.tool_gbps is not None]
    if not flows:
        return Ceiling("unknown", ("no flow finished",))
    grew = {end: counters for end, counters in result.wire.errors.items() if counters}
    if grew:
        shown = "; ".join(f"{n} {i}: " + ", ".join(f"{k} +{v}" for k, v in c.items()) for (n, i), c in grew.items())
        return Ceiling("loss", (f"error counters grew during the rung: {shown}",))
    rates = [(f, f.tool_gbps or 0.0) for f in flows]
    best = max(rate for _, rate in rates)
    slow = [(f, rate) for f, rate in rates if len(rates) > 1 and rate < DEGRADED_FRACTION * best]
    if slow:
        names = ", ".join(f"{f.flow.source[0]} {f.flow.source[1]} ({rate:.2f} Gb/s)" for f, rate in slow)
        return Ceiling("degraded", (f"{names}: below half of the best flow ({best:.2f} Gb/s) on identical links",))
    at_wire = [
        (f, rate) for f, rate in rates if f.flow.line_rate_gbps and rate >= WIRE_FRACTION * f.flow.line_rate_gbps
    ]
    if at_wire and len(at_wire) == len(rates):
        line = sum(f.flow.line_rate_gbps or 0.0 for f, _ in rates)
        total = sum(rate for _, rate in rates)
        used = {f.flow.source for f in result.flows if f.direction == "forward"}
        share = f"{total:.2f} Gb/s of {line:g} Gb/s line rate ({100 * total / line:.0f}%)"
        if len(used) < halves_available:
            return Ceiling("half-port", (f"{share} on {len(used)} of {halves_available} cabled halves: the rest idle",))
        return Ceiling("wire", (f"{share} on every cabled half ({len(used)})",))
    hot = {node: core for node, core in result.wire.busiest_core.items() if core[1] >= CPU_SATURATED}
    if hot:
        shown = ", ".join(f"{node} core {c} at {b:.0f}%" for node, (c, b) in sorted(hot.items()))
        return Ceiling("cpu", (f"{shown} while the wire ran below {WIRE_FRACTION:.0%} of line rate",))
    if single_flow:
        return Ceiling("single-flow", (f"one TCP stream: {best:.2f} Gb/s; more streams or halves go further",))
    speeds = [f.flow.line_rate_gbps for f, _ in rates if f.flow.line_rate_gbps]
    if len(rates) == 1 and speeds:
        return Ceiling("half-port", (f"one half carried {best:.2f} Gb/s of its {speeds[0]:g} Gb/s",))
    return Ceiling("unknown", ("below line rate with no saturated core and no errors",))


def takeaway(results: Sequence[RungResult]) -> list[dict[str, str]]:
    """The seeds' summary table: what was measured, per direction, full duplex, CPU, ceiling."""
    rows: list[dict[str, str]] = []
    for r in results:
        cpu = ", ".join(f"{n} {b:.0f}%" for n, (_, b) in sorted(r.wire.busiest_core.items())) or "-"
        forward, duplex = r.total_gbps("forward"), r.duplex_gbps
        rows.append(
            {
                "rung": r.rung,
                "result": "-" if forward is None else f"{forward:.2f} Gb/s",
                "full duplex": "-" if duplex is None or r.total_gbps("reverse") is None else f"{duplex:.2f} Gb/s",
                "busiest core": cpu,
                "ceiling": r.ceiling.name if r.ceiling else (r.status if r.status != "ran" else "-"),
                "why": (r.ceiling.evidence[0] if r.ceiling else r.reason) or "",
            }
        )
    return rows
