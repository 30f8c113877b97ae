"""link.speed and link.halves: every cabled half runs at the cluster's full rate, and both halves of a port work.

A Spark's 200G port is two ~100G PCIe halves, each its own netdev and RDMA device: a port with one half down or
unaddressed runs at half its rate (spark-facts 2.1, problem 3). A switch port that auto-negotiated 100G is the
classic slow link (problem 4: force 200G-baseCR4 with auto-negotiation off).
"""

from __future__ import annotations

from wirespeed.core.checks.common import (
    cabled_ends,
    cabled_ports,
    count,
    has_carrier,
    is_ethernet,
    joined,
    port_label_of,
    rdma_port,
)
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.checks.plan import address_plan, plan_fix
from wirespeed.core.fabric.facts import Netdev, NodeFacts, Unknown

SPEED = "link.speed"
HALVES = "link.halves"


def half_speed_mbps(facts: NodeFacts, netdev: Netdev) -> int | Unknown:
    """The netdev's speed, else its RDMA port's rate (both are the port rate on a Spark half)."""
    if isinstance(netdev.speed_mbps, int):
        return netdev.speed_mbps
    port = rdma_port(facts, netdev)
    if port is not None and isinstance(port.rate_gbps, float | int):
        return round(port.rate_gbps * 1000)
    return netdev.speed_mbps


def kind(netdev: Netdev) -> str:
    """Halves are compared with their own kind only: Ethernet with Ethernet, per driver."""
    layer = "Ethernet" if is_ethernet(netdev) else "InfiniBand"
    return f"{layer} ({netdev.driver})" if isinstance(netdev.driver, str) else layer


def _through_switch(data: CheckInput, node: str, iface: str) -> bool:
    return data.cabling.topology == "switch" or len({n for n, _ in data.cabling.peers((node, iface))}) > 1


def _speed_fix(data: CheckInput, node: str, ifaces: list[str], want: int) -> Fix:
    """One fix per physical port: its halves share the cable and the switch port."""
    ifaces = sorted(ifaces, key=lambda i: port_label_of(data.facts[node], i) or (i, 0))
    where = port_label_of(data.facts[node], ifaces[0])
    port = f"{where[0]} ({', '.join(ifaces)})" if where else ", ".join(ifaces)
    verify = tuple(f"ethtool {iface} | grep Speed   # on {node}; expect: Speed: {want}Mb/s" for iface in ifaces)
    if any(_through_switch(data, node, iface) for iface in ifaces):
        gbit = want // 1000
        return Fix(
            None,
            f"switch: on the port facing {node} {port}, turn auto-negotiation off and force {gbit}G "
            f"(e.g. {gbit}G-baseCR4; RouterOS: /interface/ethernet set PORT auto-negotiation=no "
            f"speed={gbit}G-baseCR4), then verify on {node}",
            verify,
        )
    return Fix(
        node,
        f"reseat the cable of {port} at both ends, or replace it (a direct cable should train at {want} Mb/s)",
        verify,
    )


def _by_port(data: CheckInput, slow: list[tuple[str, str, int]]) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """(node, port label) -> [(interface, wanted speed)] for the slow halves."""
    ports: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for node, iface, want in slow:
        where = port_label_of(data.facts[node], iface)
        ports.setdefault((node, where[0] if where else iface), []).append((iface, want))
    return ports


@check(SPEED, "every cabled half runs at the cluster's full link rate")
def link_speed(data: CheckInput) -> CheckResult:
    speeds: dict[tuple[str, str], tuple[str, int | Unknown]] = {
        (node, n.name): (kind(n), half_speed_mbps(data.facts[node], n)) for node, n in cabled_ends(data.facts)
    }
    if not speeds:
        return skip(SPEED, "no fabric interface has a link")
    best: dict[str, int] = {}
    for k, speed in speeds.values():
        if isinstance(speed, int):
            best[k] = max(best.get(k, 0), speed)
    slow = {end: (k, s) for end, (k, s) in speeds.items() if isinstance(s, int) and s < best[k]}
    unread = [f"{n} {i}" for (n, i), (_, s) in speeds.items() if isinstance(s, Unknown)]
    if not best:
        return skip(SPEED, f"no speed readable on the cabled halves: {joined(unread)}")
    if not slow:
        rates = ", ".join(f"{v} Mb/s" for v in sorted(set(best.values())))
        note = f"; speed unknown on {joined(unread)}" if unread else ""
        halves = count(len(speeds) - len(unread), "cabled half")
        return result(SPEED, CheckStatus.PASS, f"{halves}, all at {rates}{note}")
    evidence = [
        Evidence(n, i, f"link speed in Mb/s (fastest cabled {k} half: {best[k]})", s) for (n, i), (k, s) in slow.items()
    ]
    ports = _by_port(data, [(n, i, best[k]) for (n, i), (k, _) in slow.items()])
    fixes = [_speed_fix(data, node, [i for i, _ in halves], halves[0][1]) for (node, _), halves in ports.items()]
    names = joined([f"{n} {i} {s}" for (n, i), (_, s) in slow.items()])
    return result(SPEED, CheckStatus.FAIL, f"slower than {max(best.values())} Mb/s: {names}", evidence, fixes)


def _half_problems(facts: NodeFacts) -> list[Evidence]:
    problems: list[Evidence] = []
    for port in cabled_ports(facts):
        for half in port.halves:
            netdev = facts.netdev(half)
            if netdev is None:
                problems.append(Evidence(facts.node, half, f"{port.label}: interface", "missing"))
            elif not has_carrier(netdev):
                state = netdev.carrier.reason if isinstance(netdev.carrier, Unknown) else "no carrier"
                problems.append(Evidence(facts.node, half, f"{port.label}: link (its twin has one)", state))
            elif not netdev.ipv4:
                problems.append(Evidence(facts.node, half, f"{port.label}: IPv4 address", "none"))
    return problems


@check(HALVES, "both halves of every cabled port are up and addressed")
def link_halves(data: CheckInput) -> CheckResult:
    ports = {node: cabled_ports(facts) for node, facts in data.facts.items()}
    ports_seen = sum(len(p) for p in ports.values())
    if not ports_seen:
        return skip(HALVES, "no fabric port has a link")
    evidence = [e for node in sorted(data.facts) for e in _half_problems(data.facts[node])]
    if not evidence:
        halves = sum(len(p.halves) for node_ports in ports.values() for p in node_ports)
        summary = f"{count(ports_seen, 'cabled port')}: {count(halves, 'half')} up and addressed"
        return result(HALVES, CheckStatus.PASS, summary)
    plan = address_plan(data)
    fixes = [
        plan_fix(
            data,
            node,
            plan,
            f"bring up {joined(sorted({e.subject or '' for e in evidence if e.node == node}))} and address each half "
            "on a subnet of its own (the same as its peer's half); the port runs at half its rate until then",
        )
        for node in sorted({e.node for e in evidence if e.node})
    ]
    names = joined([f"{e.node} {e.subject} ({e.value})" for e in evidence])
    return result(HALVES, CheckStatus.FAIL, f"half of a cabled port not working: {names}", evidence, fixes)
