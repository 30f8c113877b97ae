"""The cabling map: which interface of which node shares a link with which interface of another, and what
topology that makes (direct with one or two cables, a ring of three to eight nodes in its order, a ring cut to a
chain, switch).

Pure: it takes each node's facts and what an active probe heard on each interface (or, for snapshots taken
without a probe, the address plan) and returns the map with findings for a person to act on.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.fabric.facts import NodeFacts

End = tuple[str, str]  # (node, interface)


@dataclass(frozen=True)
class Heard:
    """One probe frame: `rx_iface` on `node` received a beacon sent by `from_node`'s `from_iface`."""

    node: str
    rx_iface: str
    from_node: str
    from_iface: str
    from_mac: str | None = None


@dataclass(frozen=True)
class Finding:
    severity: str  # "info", "warn", "fail"
    message: str
    hint: str | None = None


@dataclass(frozen=True)
class PortLink:
    """Two physical ports joined by a cable (or by a switch), with the halves that were seen to pair."""

    a_node: str
    a_port: str
    b_node: str
    b_port: str
    halves: tuple[tuple[str, str], ...]  # (a interface, b interface)


@dataclass(frozen=True)
class CablingMap:
    method: str  # "active probe (L2 broadcast)" or "address plan"
    topology: str  # direct, ring, switch, none, partial
    cables: int | None
    links: tuple[tuple[End, End], ...]  # interface level, each pair once, sorted
    port_links: tuple[PortLink, ...]
    unpaired: tuple[End, ...]  # fabric halves with carrier that heard no peer
    findings: tuple[Finding, ...] = field(default_factory=tuple)
    # A ring's nodes in cable order (node i's port 0 cabled to node i+1's port 1, the last back to the first), or a
    # cut ring's from one end of the chain to the other; empty for any other topology.
    order: tuple[str, ...] = ()

    def peers(self, end: End) -> list[End]:
        return sorted({b for a, b in self.links if a == end} | {a for a, b in self.links if b == end})


def _port_of(facts: NodeFacts) -> dict[str, tuple[str, int]]:
    """Interface -> (port label, half index)."""
    mapping: dict[str, tuple[str, int]] = {}
    for port in facts.ports:
        for half, name in enumerate(port.halves):
            mapping[name] = (port.label, half)
    return mapping


def _has_link(facts: NodeFacts, iface: str) -> bool:
    netdev = facts.netdev(iface)
    return netdev is not None and netdev.carrier is True and netdev.operstate in ("up", "unknown")


def edges_from_probe(heard: Iterable[Heard]) -> set[frozenset[End]]:
    edges: set[frozenset[End]] = set()
    for item in heard:
        if item.from_node != item.node:
            edges.add(frozenset({(item.node, item.rx_iface), (item.from_node, item.from_iface)}))
    return edges


def edges_from_addresses(facts: Mapping[str, NodeFacts]) -> set[frozenset[End]]:
    """Fallback without a probe: interfaces of different nodes on the same IPv4 subnet are taken as linked."""
    members: dict[ipaddress.IPv4Network, list[End]] = {}
    for node, node_facts in facts.items():
        for iface in node_facts.fabric:
            netdev = node_facts.netdev(iface)
            if netdev is None or not _has_link(node_facts, iface):
                continue
            for cidr in netdev.ipv4:
                members.setdefault(ipaddress.IPv4Interface(cidr).network, []).append((node, iface))
    edges: set[frozenset[End]] = set()
    for ends in members.values():
        for i, a in enumerate(ends):
            for b in ends[i + 1 :]:
                if a[0] != b[0]:
                    edges.add(frozenset({a, b}))
    return edges


def build_map(facts: Mapping[str, NodeFacts], edges: set[frozenset[End]], method: str) -> CablingMap:
    """Classify the topology from interface-level links and call out what is wrong with the cabling."""
    links = sorted(tuple(sorted(edge)) for edge in edges if len(edge) == 2)
    pairs: list[tuple[End, End]] = [(a, b) for a, b in links]
    neighbours: dict[End, set[End]] = {}
    for a, b in pairs:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    findings: list[Finding] = []
    unpaired: list[End] = []
    for node, node_facts in facts.items():
        for iface in node_facts.fabric:
            if _has_link(node_facts, iface) and (node, iface) not in neighbours:
                unpaired.append((node, iface))
                findings.append(
                    Finding(
                        "warn",
                        f"{node}: {iface} has a link but no peer answered on it",
                        "check the far end of its cable: that half may be down, unaddressed or filtered",
                    )
                )
    ports = {node: _port_of(f) for node, f in facts.items()}
    port_links: dict[tuple[str, str, str, str], list[tuple[str, str]]] = {}
    for (a_node, a_if), (b_node, b_if) in pairs:
        a_port = ports.get(a_node, {}).get(a_if, (a_if, 0))[0]
        b_port = ports.get(b_node, {}).get(b_if, (b_if, 0))[0]
        port_links.setdefault((a_node, a_port, b_node, b_port), []).append((a_if, b_if))
    port_link_list = tuple(PortLink(k[0], k[1], k[2], k[3], tuple(sorted(v))) for k, v in sorted(port_links.items()))

    switched = any(len({n for n in peers}) > 1 for peers in neighbours.values())
    node_pairs = {frozenset({a[0], b[0]}) for a, b in pairs}
    nodes_linked = {n for pair in node_pairs for n in pair}
    topology: str
    cables: int | None = None
    order: tuple[str, ...] = ()
    walk = _walk(sorted(facts), node_pairs, port_link_list) if len(facts) >= 3 and not switched else None
    if len(facts) < 2:
        topology = "single"
        unpaired.clear()
        findings.clear()
    elif not pairs:
        topology = "none"
        findings.append(
            Finding("fail", "no fabric link between any two nodes was found", "check cables and link state")
        )
    elif switched:
        topology = "switch"
        missing = sorted(set(facts) - nodes_linked)
        if missing:
            findings.append(Finding("fail", f"not reached through the switch: {', '.join(missing)}"))
    elif len(facts) == 2 and len(nodes_linked) == 2:
        topology = "direct"
        cables = len({(pl.a_node, pl.a_port) for pl in port_link_list})
        for pl in port_link_list:
            if pl.a_port != pl.b_port:
                findings.append(
                    Finding(
                        "warn",
                        f"cross-cabled: {pl.a_node} {pl.a_port} is cabled to {pl.b_node} {pl.b_port}",
                        "cable the same port on each node (NVIDIA's playbooks ask for it; NCCL pairs them)",
                    )
                )
    elif walk is not None and walk[1]:
        topology = "ring"
        order = walk[0]
        cables = len(port_link_list)
        for pl in port_link_list:
            if pl.a_port == pl.b_port:
                findings.append(
                    Finding(
                        "warn",
                        f"cross-cabled ring: {pl.a_node} {pl.a_port} is cabled to {pl.b_node} {pl.b_port}",
                        "cable each node's port 0 to the next node's port 1 (connect-three-sparks playbook)",
                    )
                )
    elif walk is not None:
        topology = "chain"
        order = walk[0]
        cables = len(port_link_list)
        findings.append(
            Finding(
                "warn",
                f"cut ring: no cable between {order[-1]} and {order[0]}; the nodes form a chain "
                f"{' - '.join(order)}, and {order[0]} reaches {order[-1]} through {len(order) - 2} relay(s)",
                f"cable {order[-1]}'s free port to {order[0]}'s free port (port 0 to the next node's port 1)",
            )
        )
    else:
        topology = "partial"
        findings.append(
            Finding("warn", f"nodes linked: {', '.join(sorted(nodes_linked))} of {len(facts)}; not a known topology")
        )
    for pl in port_link_list:
        a_halves = {ports.get(pl.a_node, {}).get(a, ("", -1))[1] for a, _ in pl.halves}
        for a_if, b_if in pl.halves:
            a_half = ports.get(pl.a_node, {}).get(a_if, ("", -1))[1]
            b_half = ports.get(pl.b_node, {}).get(b_if, ("", -1))[1]
            if topology != "switch" and a_half != b_half and a_half >= 0 and b_half >= 0:
                findings.append(Finding("warn", f"halves crossed: {pl.a_node} {a_if} pairs with {pl.b_node} {b_if}"))
        if topology != "switch" and len(a_halves) == 1 and _two_halves(facts, pl.a_node, pl.a_port):
            findings.append(
                Finding(
                    "warn",
                    f"only one half of {pl.a_node} {pl.a_port} reaches {pl.b_node}: the port runs at half its rate",
                    "bring up and address both halves (each on its own subnet)",
                )
            )
    return CablingMap(
        method=method,
        topology=topology,
        cables=cables,
        links=tuple(pairs),
        port_links=port_link_list,
        unpaired=tuple(sorted(unpaired)),
        findings=tuple(findings),
        order=order,
    )


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """spark-2 before spark-10."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part)


def _walk(
    nodes: Sequence[str], node_pairs: set[frozenset[str]], port_links: Sequence[PortLink]
) -> tuple[tuple[str, ...], bool] | None:
    """The nodes in cable order and whether they close a ring (else a chain from one end to the other), when the
    node-level links make exactly one ring or one chain through every node; None otherwise.

    A ring starts at the first node by name and goes the way its port 0 is cabled (cable c joins node c's port 0 to
    node c+1's port 1); a chain starts at the end whose port 0 is cabled, else at the first end by name."""
    adjacent: dict[str, set[str]] = {n: set() for n in nodes}
    for pair in node_pairs:
        a, b = sorted(pair)
        if a not in adjacent or b not in adjacent:
            return None
        adjacent[a].add(b)
        adjacent[b].add(a)
    degrees = sorted(len(peers) for peers in adjacent.values())
    closed = all(d == 2 for d in degrees)
    if not closed and degrees != [1, 1] + [2] * (len(nodes) - 2):
        return None

    def via_port0(node: str) -> str | None:
        found = {pl.b_node for pl in port_links if pl.a_node == node and pl.a_port == "port 0"}
        found |= {pl.a_node for pl in port_links if pl.b_node == node and pl.b_port == "port 0"}
        return next(iter(found)) if len(found) == 1 else None

    ordered = sorted(nodes, key=natural_key)
    if closed:
        start = ordered[0]
        second = via_port0(start)
        if second not in adjacent[start]:
            second = min(adjacent[start], key=natural_key)
    else:
        ends = [n for n in ordered if len(adjacent[n]) == 1]
        start = next((n for n in ends if via_port0(n) is not None), ends[0])
        second = next(iter(adjacent[start]))
    walk = [start, second]
    while len(walk) < len(nodes):
        step = adjacent[walk[-1]] - {walk[-2]}
        if len(step) != 1:
            return None
        walk.append(step.pop())
    if len(set(walk)) != len(nodes) or (closed and walk[0] not in adjacent[walk[-1]]):
        return None  # two separate rings, or a ring and a chain
    return tuple(walk), closed


def _two_halves(facts: Mapping[str, NodeFacts], node: str, port_label: str) -> bool:
    node_facts = facts.get(node)
    if node_facts is None:
        return False
    return any(p.label == port_label and len(p.halves) == 2 for p in node_facts.ports)


def _port_link(raw: Mapping[str, Any]) -> PortLink:
    halves = tuple((str(a), str(b)) for a, b in raw.get("halves") or [])
    return PortLink(str(raw["a_node"]), str(raw["a_port"]), str(raw["b_node"]), str(raw["b_port"]), halves)


def cabling_from_json(data: Mapping[str, Any]) -> CablingMap:
    """Rebuild the map from its JSON (discovery.json's `cabling`), for reading a run back."""

    def end(raw: Sequence[str]) -> End:
        return (str(raw[0]), str(raw[1]))

    return CablingMap(
        method=str(data.get("method", "")),
        topology=str(data.get("topology", "none")),
        cables=data.get("cables"),
        links=tuple((end(a), end(b)) for a, b in data.get("links") or []),
        port_links=tuple(_port_link(p) for p in data.get("port_links") or []),
        unpaired=tuple(end(u) for u in data.get("unpaired") or []),
        findings=tuple(
            Finding(str(f["severity"]), str(f["message"]), f.get("hint")) for f in data.get("findings") or []
        ),
        order=tuple(str(n) for n in data.get("order") or []),
    )
