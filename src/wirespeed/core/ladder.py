"""The bandwidth ladder's rungs, their results, and the ceiling each one hit, with evidence. Pure.

Expectations come from discovery (the link speed of each half used, how many halves and cables), never from
constants. A rung's throughput is read at the wire by the sampler as well as by the tool, so that the diagnosis
can tell a tool's figure from what the links carried.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wirespeed.core.fabric.cabling import CablingMap
from wirespeed.core.fabric.facts import PCIE_PAYLOAD_EFFICIENCY, NodeFacts
from wirespeed.core.fabric.units import format_size_bytes
from wirespeed.core.records.results import (
    BITS_PER_BYTE,
    Ceiling,
    Direction,
    End,
    Flow,
    NotRunnable,
    RungResult,
    RungStatus,
    WireFigures,
)

WIRE_FRACTION = 0.90  # at or above this share of the line rate, the wire is the ceiling
CPU_SATURATED = 90.0  # a core this busy limits a TCP flow
DEGRADED_FRACTION = 0.5  # a flow this far below the others (or its line rate) marks a degraded half
# The wire carried this much more than the test sent on a half (headers add about 1%, start-up and the tool's
# omitted first second a few more): another flow shares the link, and the test's figure is not the link's.
CONTENTION_FRACTION = 1.15
IDLE_HALF_SHARE = 0.05  # a half that carried under this share of its node's busiest half was left idle
IDLE_FABRIC_GBPS = 0.05  # the fabric of a node that carried less than this (TX+RX) saw none of the traffic
CONTENTION_MIN_GBPS = 0.05  # and by at least this much, so that an idle half's noise never reads as a flow
# NCCL's busbw x 8 under this share of what perftest carried per direction on the same halves in the same run: the
# cables and the RDMA path are sound and NCCL is not (one owner: ib_write_bw 196 Gb/s, NCCL 24.2; a reboot: 187).
NCCL_BELOW_RDMA = 0.5
RDMA_BW_RUNG = "rdma-bw"
SMALL_PEAK_BYTES = 64 << 20  # a peak below this message size says the sizes, not the links, held NCCL back


def _ipv4(facts: NodeFacts, iface: str) -> str | None:
    netdev = facts.netdev(iface)
    return netdev.ipv4[0].split("/")[0] if netdev and netdev.ipv4 else None


def _speed(facts: NodeFacts, iface: str) -> float | None:
    return facts.line_rate_gbps(iface)


def _pcie(facts: NodeFacts, iface: str) -> float | None:
    rate = facts.pcie_gbps(iface)
    return None if rate is None else rate * PCIE_PAYLOAD_EFFICIENCY


def _port(facts: NodeFacts, iface: str) -> tuple[str, float | None]:
    port = next((p for p in facts.ports if iface in p.halves), None)
    return (port.label, facts.port_rate_gbps(port.halves)) if port else (iface, _speed(facts, iface))


def _same_subnet(facts: NodeFacts, iface: str, address: str) -> bool:
    """Whether `address` is on a subnet of `iface`: through a switch every half hears every other at L2, but only a
    peer on its own subnet is reached through it (the kernel routes the others out of the sibling half)."""
    netdev = facts.netdev(iface)
    target = ipaddress.ip_address(address)
    return netdev is None or any(target in ipaddress.ip_interface(c).network for c in netdev.ipv4)


def flows_between(facts: Mapping[str, NodeFacts], cabling: CablingMap, client: str, server: str) -> list[Flow]:
    """Every addressed link between two nodes on one subnet, one flow per half, in port order."""
    flows: list[Flow] = []
    for a, b in cabling.links:
        if {a[0], b[0]} != {client, server}:
            continue
        src, dst = (a, b) if a[0] == client else (b, a)
        src_addr, dst_addr = _ipv4(facts[client], src[1]), _ipv4(facts[server], dst[1])
        if src_addr is None or dst_addr is None or not _same_subnet(facts[client], src[1], dst_addr):
            continue
        speeds = [s for s in (_speed(facts[client], src[1]), _speed(facts[server], dst[1])) if s is not None]
        pcie = [p for p in (_pcie(facts[client], src[1]), _pcie(facts[server], dst[1])) if p is not None]
        cable, cable_rate = _port(facts[client], src[1])
        line = min(speeds) if speeds else None
        flows.append(Flow(src, dst, src_addr, dst_addr, line, min(pcie) if pcie else None, cable, cable_rate))
    order = [half for port in facts[client].ports for half in port.halves]
    return sorted(flows, key=lambda f: (order.index(f.source[1]) if f.source[1] in order else len(order), f.source))


def linked_halves(cabling: CablingMap, client: str, server: str) -> int:
    """How many halves link the two nodes, addressed or not: what a rung that leaves some idle is measured against
    (a Spark as shipped addresses one half of each port; its twin, cabled all the same, carries nothing)."""
    return sum(1 for a, b in cabling.links if {a[0], b[0]} == {client, server} and a[0] != b[0])


def first_pair(cabling: CablingMap) -> tuple[str, str] | None:
    """The two nodes the single-pair rungs use: the first pair (by name) with a link between them."""
    pairs = sorted({tuple(sorted((a[0], b[0]))) for a, b in cabling.links if a[0] != b[0]})
    return (pairs[0][0], pairs[0][1]) if pairs else None


def first_pair_flows(
    facts: Mapping[str, NodeFacts], cabling: CablingMap
) -> tuple[tuple[str, str], list[Flow]] | NotRunnable:
    """The pair the single-pair rungs use and its addressed halves, in port order; or why there is none."""
    pair = first_pair(cabling)
    if pair is None:
        return NotRunnable("no two nodes have a link between them", "run `wirespeed discover`")
    flows = flows_between(facts, cabling, *pair)
    if not flows:
        return NotRunnable(f"no addressed link between {pair[0]} and {pair[1]}", "wirespeed fix")
    return pair, flows


def _loss(result: RungResult) -> Ceiling | None:
    """Error counters that grew on a half while the rung ran (congestion counters are not errors)."""
    grew = {end: counters for end, counters in result.wire.errors.items() if counters}
    if not grew:
        return None
    shown = "; ".join(f"{n} {i}: " + ", ".join(f"{k} +{v}" for k, v in c.items()) for (n, i), c in grew.items())
    return Ceiling("loss", (f"error counters grew during the rung: {shown}",))


def _contention(result: RungResult) -> Ceiling | None:
    """A half whose wire carried clearly more than the test sent through it: someone else's traffic shares the
    link (another bench, a training job), so neither the CPU nor the wire can be blamed for the test's figure."""
    sent: dict[tuple[str, str], float] = {}
    for f in result.flows:
        if f.tool_gbps is not None:
            end = f.flow.source if f.direction is Direction.FORWARD else f.flow.target
            sent[end] = sent.get(end, 0.0) + f.tool_gbps
    shared = []
    for end, tool in sorted(sent.items()):
        wire = result.wire.tx_gbps.get(end)
        if wire is not None and wire >= CONTENTION_FRACTION * tool and wire - tool >= CONTENTION_MIN_GBPS:
            shared.append(
                f"{end[0]} {end[1]}: the test sent {tool:.2f} Gb/s while the wire carried {wire:.2f} Gb/s: "
                f"{wire - tool:.2f} Gb/s of another flow shares the link"
            )
    return Ceiling("contention", tuple(shared)) if shared else None


def diagnose(
    result: RungResult, single_flow: bool = False, halves_available: int = 0, defaults: Sequence[str] = ()
) -> Ceiling:
    """The ceiling of a rung that ran, first match wins: loss, contention (another flow on a half), degraded, wire
    (or half-port when halves of the cabled ports stayed idle), defaults (the checks found the MTU at its default
    while a core saturated, or MTU or buffers at their defaults with no core saturated), cpu, single-flow,
    half-port. `defaults` is the checks' evidence, one line each, starting with the check id."""
    flows = [f for f in result.flows if f.tool_gbps is not None]
    if not flows:
        return Ceiling("unknown", ("no flow finished",))
    if (loss := _loss(result)) is not None:
        return loss
    if (contention := _contention(result)) is not None:
        return contention
    rates = [(f, f.tool_gbps or 0.0) for f in flows]
    best = max(rate for _, rate in rates)
    slow = [(f, rate) for f, rate in rates if len(rates) > 1 and rate < DEGRADED_FRACTION * best]
    if slow:
        names = ", ".join(f"{f.flow.source[0]} {f.flow.source[1]} ({rate:.2f} Gb/s)" for f, rate in slow)
        return Ceiling("degraded", (f"{names}: below half of the best flow ({best:.2f} Gb/s) on identical links",))
    at_limit = [(f, rate) for f, rate in rates if f.flow.limit_gbps and rate >= WIRE_FRACTION * f.flow.limit_gbps]
    if at_limit and len(at_limit) == len(rates):
        used = {f.flow.source for f in result.flows if f.direction is Direction.FORWARD}
        total = sum(rate for _, rate in rates)
        if any(f.flow.pcie_bound for f, _ in rates):
            cables: dict[tuple[str, str], list[float]] = {}
            for f, rate in rates:
                cables.setdefault((f.flow.source[0], f.flow.cable), []).append(rate)
            line = sum(
                next((f.flow.cable_rate_gbps or 0.0 for f, _ in rates if (f.flow.source[0], f.flow.cable) == k), 0.0)
                for k in cables
            )
            share = f"{total:.2f} Gb/s of {line:g} Gb/s on {len(cables)} cable(s)"
            caps = ", ".join(sorted({f"{f.flow.pcie_gbps:.0f}" for f, _ in rates if f.flow.pcie_gbps}))
            if line and total >= WIRE_FRACTION * line:
                if len(used) < halves_available:
                    idle = f"{share}, on {len(used)} of {halves_available} cabled halves: the rest idle"
                    return Ceiling("half-port", (idle,))
                return Ceiling("wire", (f"{share}: every half at its PCIe cap (~{caps} Gb/s), the cables full",))
            return Ceiling(
                "half-port",
                (f"{share}: each half at its PCIe cap (~{caps} Gb/s); a port needs both halves to fill its cable",),
            )
        line = sum(f.flow.limit_gbps or 0.0 for f, _ in rates)
        share = f"{total:.2f} Gb/s of {line:g} Gb/s line rate ({100 * total / line:.0f}%)"
        if len(used) < halves_available:
            return Ceiling("half-port", (f"{share} on {len(used)} of {halves_available} cabled halves: the rest idle",))
        return Ceiling("wire", (f"{share} on every cabled half ({len(used)})",))
    hot = {node: core for node, core in result.wire.busiest_core.items() if core[1] >= CPU_SATURATED}
    # MTU 1500 makes the CPU handle six times the packets of 9000: with a saturated core, that is the cause to fix.
    # Small buffers limit TCP without heating a core; with a core saturated and jumbo frames, the CPU is the limit.
    mtu = [line for line in defaults if line.startswith("mtu.")]
    if hot and mtu:
        cores = ", ".join(f"{node} core {c} at {b:.0f}%" for node, (c, b) in sorted(hot.items()))
        return Ceiling("defaults", (*mtu, f"and the CPU ran hot: {cores}"))
    if defaults and not hot:
        return Ceiling("defaults", tuple(defaults))
    if hot:
        shown = ", ".join(f"{node} core {c} at {b:.0f}%" for node, (c, b) in sorted(hot.items()))
        return Ceiling("cpu", (f"{shown} while the wire ran below {WIRE_FRACTION:.0%} of line rate",))
    if single_flow:
        return Ceiling("single-flow", (f"one TCP stream: {best:.2f} Gb/s; more streams or halves go further",))
    speeds = [f.flow.limit_gbps for f, _ in rates if f.flow.limit_gbps]
    if len(rates) == 1 and speeds:
        return Ceiling("half-port", (f"one half carried {best:.2f} Gb/s of its {speeds[0]:g} Gb/s",))
    return Ceiling("unknown", ("below line rate with no saturated core and no errors",))


def socket_wire_evidence(
    wire: WireFigures, per_direction_gbps: float, socket_interfaces: Sequence[str], off_fabric: Sequence[str]
) -> list[str]:
    """What the fabric halves carried while NCCL's socket transport ran: each node's steady rate against busbw x 8
    (one rank per node sends its busbw: sendrecv, ring all_reduce and all_gather alike), the halves it left idle,
    and a fabric that carried nothing when the traffic took another interface."""
    lines: list[str] = []
    interval = f" of {wire.interval_s:g} s" if wire.interval_s else ""
    halves: dict[str, dict[str, float]] = {}
    for (node, iface), tx in wire.tx_gbps.items():
        halves.setdefault(node, {})[iface] = tx + wire.rx_gbps.get((node, iface), 0.0)
    moved = {node: max(by_half.values(), default=0.0) >= IDLE_FABRIC_GBPS for node, by_half in halves.items()}
    if halves and not any(moved.values()):
        went = f": the traffic went over {', '.join(off_fabric)}" if off_fabric else ""
        return [f"the fabric halves carried no traffic while NCCL ran ({len(wire.tx_gbps)} halves sampled){went}"]
    for node, steady in sorted(wire.steady_tx_gbps.items()):
        if not moved.get(node, True):
            continue
        count = wire.steady_intervals.get(node, 0)
        share = f": {100 * steady / per_direction_gbps:.0f}% of busbw x 8" if per_direction_gbps > 0 else ""
        lines.append(
            f"{node} sent {steady:.2f} Gb/s at the wire while NCCL ran (fabric halves added, median of {count} "
            f"intervals{interval} at half its peak or more){share}"
        )
    for node, by_half in sorted(halves.items()):
        busiest = max(by_half, key=lambda iface: by_half[iface])
        if by_half[busiest] < IDLE_FABRIC_GBPS:
            continue
        for iface in sorted(i for i, v in by_half.items() if v < IDLE_HALF_SHARE * by_half[busiest]):
            why = (
                "NCCL listed it but sent nothing over it"
                if iface in socket_interfaces
                else f"it is not among NCCL's socket interfaces ({', '.join(socket_interfaces) or 'none named'}): "
                "NCCL_SOCKET_IFNAME"
            )
            lines.append(
                f"{node} {iface} sat idle: {by_half[iface]:.2f} Gb/s (TX+RX, average over the rung) while "
                f"{busiest} carried {by_half[busiest]:.2f} Gb/s; {why}"
            )
    return lines


@dataclass(frozen=True)
class RdmaReference:
    """What the RDMA rung (perftest) of the same run carried per direction, Gb/s (10^9 bit/s), every half it measured
    at once added (with --bidir, the smaller direction: both ran at once, as NCCL's do), and the halves and RDMA
    devices it ran on: what an NCCL rung's busbw x 8 is held against."""

    rung: str
    per_direction_gbps: float
    halves: tuple[End, ...]  # each forward flow's sender (node, interface)
    devices: tuple[str, ...]  # the RDMA devices of those halves, where discovery knows them


def rdma_reference(earlier: Sequence[RungResult], facts: Mapping[str, NodeFacts]) -> RdmaReference | None:
    """The rdma-bw rung that ran before, in the same run (and phase), as the NCCL rung's reference; None without
    one that finished with a figure."""
    for result in earlier:
        if result.rung != RDMA_BW_RUNG or result.status is not RungStatus.RAN:
            continue
        forward, reverse = result.forward_gbps, result.reverse_gbps
        if not forward:
            continue
        halves = tuple(f.flow.source for f in result.flows if f.direction is Direction.FORWARD)
        devices = sorted(
            {
                device.name
                for node, iface in halves
                if node in facts
                for device in facts[node].rdma
                if iface in device.netdevs
            }
        )
        per_direction = min(forward, reverse) if reverse else forward
        return RdmaReference(result.key, per_direction, halves, tuple(devices))
    return None


def _below_rdma(per_direction: float, figure: str, peak_bytes: int, ib_devices: Sequence[str],
                rdma: RdmaReference) -> Ceiling | None:  # fmt: skip
    """NCCL under half of what perftest carried per direction on the same halves: the `below-rdma` ceiling, with a
    reboot first. Not judged when NCCL's HCAs do not include the halves perftest measured (other links)."""
    used = {d.split(":")[0] for d in ib_devices}
    if used and rdma.devices and not set(rdma.devices) <= used:
        return None
    if rdma.per_direction_gbps <= 0 or per_direction >= NCCL_BELOW_RDMA * rdma.per_direction_gbps:
        return None
    by_node: dict[str, list[str]] = {}
    for node, iface in rdma.halves:
        by_node.setdefault(node, []).append(iface)
    halves = "; ".join(f"{node} {', '.join(ifaces)}" for node, ifaces in sorted(by_node.items()))
    share = 100 * per_direction / rdma.per_direction_gbps
    evidence = [
        f"NCCL {per_direction:.1f} Gb/s per direction ({figure}) against {rdma.per_direction_gbps:.1f} Gb/s per "
        f"direction from perftest ({rdma.rung}) on the same halves ({halves}) in this run: {share:.0f}%, under half",
        "the cables and the RDMA path carry the rate, NCCL does not: reboot every node first, then measure again "
        "(`wirespeed bench nccl`); one owner's NCCL ran at 24.2 Gb/s against ib_write_bw's 196 Gb/s after heavy "
        "nmcli network reconfiguration, and at 187 Gb/s after a reboot",
    ]
    if peak_bytes < SMALL_PEAK_BYTES:
        evidence.append(
            f"the peak was at {format_size_bytes(peak_bytes)}: messages this small do not fill the links either; "
            "measure up to 1 GiB (--max-size 1G)"
        )
    return Ceiling("below-rdma", tuple(evidence))


def diagnose_collective(
    result: RungResult,
    rdma_devices: Sequence[str],
    fabric_interfaces: Sequence[str],
    line_rate_gbps: float | None,
    rdma: RdmaReference | None = None,
) -> Ceiling:
    """The ceiling of an NCCL rung, first match wins: loss, fallback (the socket transport, or a network that is
    not the fabric), half-port (NET/IB on fewer HCAs than the linked halves), below-rdma (busbw x 8 under half of
    what the RDMA rung carried per direction on the same halves: `rdma`), wire, cpu, gdr-off (GPUDirect RDMA off
    on a discrete GPU, where nothing else explains the figure). A GPUDirect finding joins the evidence of the last
    four."""
    c = result.collective
    peak = c.peak if c else None
    if c is None or peak is None:
        return Ceiling("unknown", ("no result",))
    if (loss := _loss(result)) is not None:
        return loss
    per_direction = peak.busbw_GBps * BITS_PER_BYTE
    figure = f"peak busbw {peak.busbw_GBps:.2f} GB/s ({per_direction:.1f} Gb/s per direction) at {peak.size_bytes} B"
    socket = c.transport == "NET/Socket"
    if socket:
        where = ", ".join(c.socket_interfaces) or "an interface NCCL chose"
        off_fabric = [i for i in c.socket_interfaces if i not in fabric_interfaces]
        evidence = [f"NCCL used NET/Socket on {where}: TCP through the CPU, {figure}"]
        if rdma_devices:
            evidence.append(
                f"RDMA devices {', '.join(rdma_devices)} are linked but NCCL did not use them: check NCCL_IB_HCA, "
                "NCCL_IB_DISABLE, a net plugin in the image, /dev/infiniband in a container"
            )
        else:
            evidence.append("no RDMA device on the linked halves: the socket transport was the only one left")
        if off_fabric:
            fabric = ", ".join(fabric_interfaces) or "none discovered"
            evidence.append(f"{', '.join(off_fabric)} is not a fabric interface (fabric: {fabric}): NCCL_SOCKET_IFNAME")
        evidence += socket_wire_evidence(result.wire, per_direction, c.socket_interfaces, off_fabric)
        cores = ", ".join(f"{n} core {cpu} at {b:.0f}%" for n, (cpu, b) in sorted(result.wire.busiest_core.items()))
        if cores:
            evidence.append(f"busiest core: {cores}")
        return Ceiling("fallback", tuple(evidence))
    if c.transport == "NET/IB" and rdma_devices:
        used = {d.split("/")[0] for d in c.ib_devices}
        idle = [d for d in rdma_devices if d not in used]
        if c.ib_devices and idle:
            return Ceiling(
                "half-port",
                (f"NCCL used {', '.join(sorted(used))} but not {', '.join(idle)}: list every half in NCCL_IB_HCA",),
            )
    if c.transport is not None and not c.transport.startswith("NET/"):
        return Ceiling("unknown", (f"no network in the path: ranks talked through {c.transport}; {figure}",))
    gdr = (c.gdr_note,) if c.gdr_finding and c.gdr_note else ()
    if rdma is not None and (below := _below_rdma(per_direction, figure, peak.size_bytes, c.ib_devices, rdma)):
        return Ceiling(below.name, (*below.evidence, *gdr))
    if line_rate_gbps and per_direction >= WIRE_FRACTION * line_rate_gbps:
        return Ceiling("wire", (f"{figure}: {100 * per_direction / line_rate_gbps:.0f}% of {line_rate_gbps:g} Gb/s",))
    hot = {node: core for node, core in result.wire.busiest_core.items() if core[1] >= CPU_SATURATED}
    if hot:
        shown = ", ".join(f"{node} core {cpu} at {b:.0f}%" for node, (cpu, b) in sorted(hot.items()))
        return Ceiling("cpu", (f"{shown}; {figure}", *gdr))
    line = f" of {line_rate_gbps:g} Gb/s" if line_rate_gbps else ""
    if gdr:
        return Ceiling("gdr-off", (f"{figure}{line}: below line rate with no saturated core and no errors", *gdr))
    return Ceiling("unknown", (f"{figure}{line}: below line rate with no saturated core and no errors",))
