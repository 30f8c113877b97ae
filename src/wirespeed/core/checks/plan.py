"""The static per-half address plan that address fixes propose, and the netplan file that makes it persistent.

Every L2 segment of the fabric (a direct cable's half, or one half of every node's port through a switch) gets a
/24 of its own, and every node the same host number on each: NVIDIA's current playbooks address the Spark this
way (192.168.100.10/24 on one half, 192.168.101.10/24 on its twin; "exactly one interface per device on a given
subnet"). Subnets that already work are kept, so a fix changes only what is wrong.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from wirespeed.core.checks.common import (
    RECOMMENDED_MTU,
    cabled_ports,
    is_ethernet,
    is_link_local,
    network,
    port_label_of,
)
from wirespeed.core.checks.model import CheckInput, Fix
from wirespeed.core.fabric.facts import NodeFacts

End = tuple[str, str]  # (node, interface)
NETPLAN_PATH = "/etc/netplan/40-cx7.yaml"
FIRST_HOST = 10
FIRST_SUBNET = ipaddress.IPv4Network("192.168.100.0/24")
# On the emulated cluster, fresh subnets come from RFC 2544's benchmarking space, as all of the testbed's addresses
# do: its nodes are namespaces on a host whose own networks may well include 192.168.100.0/24.
EMULATED_FIRST_SUBNET = ipaddress.IPv4Network("198.19.100.0/24")


def planned_ends(all_facts: Mapping[str, NodeFacts]) -> list[End]:
    """Both halves of every physical port that has a link on at least one half."""
    return sorted((node, half) for node, facts in all_facts.items() for p in cabled_ports(facts) for half in p.halves)


def _components(ends: list[End], links: tuple[tuple[End, End], ...]) -> list[list[End]]:
    scope = set(ends)
    neighbours: dict[End, set[End]] = {}
    for a, b in links:
        if a in scope and b in scope:
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
    seen: set[End] = set()
    components: list[list[End]] = []
    for start in sorted(neighbours):
        if start in seen:
            continue
        stack, members = [start], []
        while stack:
            end = stack.pop()
            if end not in seen:
                seen.add(end)
                members.append(end)
                stack.extend(neighbours[end] - seen)
        components.append(sorted(members))
    return components


def _split(all_facts: Mapping[str, NodeFacts], component: list[End]) -> list[list[End]]:
    """A segment with two interfaces of one node (a switch's single bridge): one subnet per (port, half)."""
    nodes = [node for node, _ in component]
    if len(set(nodes)) == len(nodes):
        return [component]
    groups: dict[tuple[str, int], list[End]] = {}
    for node, iface in component:
        key = port_label_of(all_facts[node], iface) or (iface, 0)
        groups.setdefault(key, []).append((node, iface))
    return [groups[k] for k in sorted(groups)]


def _counterpart(all_facts: Mapping[str, NodeFacts], end: End, segments: list[list[End]]) -> End | None:
    """Where a half with no seen peer most likely goes: the same half of the port its twin is cabled to."""
    node, iface = end
    where = port_label_of(all_facts[node], iface)
    if where is None:
        return None
    port = next(p for p in all_facts[node].ports if p.label == where[0])
    for twin in (h for h in port.halves if h != iface):
        segment = next((s for s in segments if (node, twin) in s), [])
        for peer_node, peer_iface in segment:
            peer_where = port_label_of(all_facts[peer_node], peer_iface) if peer_node != node else None
            peer_port = next((p for p in all_facts[peer_node].ports if peer_where and p.label == peer_where[0]), None)
            if peer_port is not None and len(peer_port.halves) > where[1]:
                return peer_node, peer_port.halves[where[1]]
    return None


def segments(data: CheckInput) -> list[list[End]]:
    """The fabric's L2 segments among the planned ends, from the cabling map; loose halves placed by their twin."""
    ends = planned_ends(data.facts)
    found = [s for c in _components(ends, data.cabling.links) for s in _split(data.facts, c)]
    result = [s for s in found if len(s) > 1]
    for end in ends:
        if any(end in s for s in result):
            continue
        target = _counterpart(data.facts, end, result)
        segment = next((s for s in result if target in s), None)
        if segment is not None:
            segment.append(end)
        elif target is not None and target in ends:
            result.append([target, end])
        else:
            result.append([end])
    return result


def _host_number(all_facts: Mapping[str, NodeFacts], node: str) -> int:
    return FIRST_HOST + sorted(all_facts).index(node)


def _networks(all_facts: Mapping[str, NodeFacts], end: End) -> set[ipaddress.IPv4Network]:
    netdev = all_facts[end[0]].netdev(end[1])
    return {network(c) for c in netdev.ipv4 if not is_link_local(c)} if netdev else set()


def _reusable(
    all_facts: Mapping[str, NodeFacts], segment: list[End], claimed: set[ipaddress.IPv4Network]
) -> ipaddress.IPv4Network | None:
    """A subnet every addressed member of the segment already shares, not taken by an earlier segment."""
    addressed = [nets for end in segment if (nets := _networks(all_facts, end))]
    if not addressed:
        return None
    common = set.intersection(*addressed) - claimed
    return min(common) if common else None


def _fresh(used: set[ipaddress.IPv4Network], first: ipaddress.IPv4Network = FIRST_SUBNET) -> ipaddress.IPv4Network:
    candidate = first
    while candidate in used:
        candidate = ipaddress.IPv4Network((int(candidate.network_address) + 256, 24))
    return candidate


def _hosts_in_use(facts: NodeFacts, moving: str) -> list[int]:
    """Host numbers this node has on its other fabric /24s (.2 on one half: .2 on the other too)."""
    numbers: list[int] = []
    for name in (n for n in facts.fabric if n != moving):
        netdev = facts.netdev(name)
        for cidr in netdev.ipv4 if netdev and name != facts.management else ():
            iface = ipaddress.IPv4Interface(cidr)
            if not is_link_local(cidr) and iface.network.prefixlen == 24:
                numbers.append(int(iface.ip) - int(iface.network.network_address))
    return list(dict.fromkeys(numbers))


def _address(
    all_facts: Mapping[str, NodeFacts], end: End, subnet: ipaddress.IPv4Network, taken: set[ipaddress.IPv4Address]
) -> str:
    netdev = all_facts[end[0]].netdev(end[1])
    for cidr in netdev.ipv4 if netdev else ():
        if network(cidr) == subnet:
            return cidr
    preferred = [*_hosts_in_use(all_facts[end[0]], end[1]), _host_number(all_facts, end[0])]
    hosts = [*preferred, *range(FIRST_HOST, subnet.num_addresses - 1)]
    host = next(h for h in hosts if subnet.network_address + h not in taken)
    taken.add(subnet.network_address + host)
    return f"{subnet.network_address + host}/{subnet.prefixlen}"


def address_plan(data: CheckInput) -> dict[End, str]:
    """(node, interface) -> CIDR for both halves of every cabled port; working subnets are kept."""
    used = {
        network(c)
        for facts in data.facts.values()
        for netdev in facts.netdevs
        for c in netdev.ipv4
        if not is_link_local(c)
    }
    taken = {
        ipaddress.IPv4Interface(c).ip for facts in data.facts.values() for netdev in facts.netdevs for c in netdev.ipv4
    }
    claimed: set[ipaddress.IPv4Network] = set()
    plan: dict[End, str] = {}
    emulated = bool(data.facts) and all(facts.emulated for facts in data.facts.values())
    first = EMULATED_FIRST_SUBNET if emulated else FIRST_SUBNET
    for segment in sorted(segments(data), key=lambda s: _segment_key(data.facts, s)):
        subnet = _reusable(data.facts, segment, claimed) or _fresh(used | claimed, first)
        claimed.add(subnet)
        for end in sorted(segment):
            plan[end] = _address(data.facts, end, subnet, taken)
    return plan


def _segment_key(all_facts: Mapping[str, NodeFacts], segment: list[End]) -> tuple[str, int, str, str]:
    return min((*(port_label_of(all_facts[n], i) or (i, 0)), n, i) for n, i in segment)


# ------------------------------------------------------------------------------------------------------ netplan
def netplan_yaml(facts: NodeFacts, addresses: Mapping[str, str]) -> str:
    """/etc/netplan/40-cx7.yaml for one node: static addresses, MTU 9000 on Ethernet, no DHCP, no link-local."""
    lines = [
        f"# {NETPLAN_PATH} on {facts.node} (wirespeed): one subnet per fabric half, MTU {RECOMMENDED_MTU}, no IPv6",
        "network:",
        "  version: 2",
        "  ethernets:",
    ]
    for iface in sorted(addresses, key=lambda i: (port_label_of(facts, i) or (i, 0), i)):
        netdev = facts.netdev(iface)
        lines += [f"    {iface}:", "      addresses:", f"        - {addresses[iface]}"]
        lines += ["      dhcp4: false", "      dhcp6: false", "      link-local: []"]
        if netdev is None or is_ethernet(netdev):
            lines.append(f"      mtu: {RECOMMENDED_MTU}")
    return "\n".join(lines) + "\n"


def address_commands(facts: NodeFacts, addresses: Mapping[str, str]) -> list[str]:
    """The same change now, without waiting for netplan: drop addresses the plan replaces, add the new ones."""
    commands: list[str] = []
    for iface, cidr in sorted(addresses.items()):
        netdev = facts.netdev(iface)
        current = netdev.ipv4 if netdev else ()
        if netdev is not None and netdev.carrier is not True and netdev.operstate != "up":
            commands.append(f"sudo ip link set {iface} up")
        if cidr in current:
            continue
        commands += [f"sudo ip addr del {old} dev {iface}" for old in current]
        commands.append(f"sudo ip addr add {cidr} dev {iface}")
    return commands


def plan_fix(data: CheckInput, node: str, plan: Mapping[End, str], description: str) -> Fix:
    """Apply the node's part of the plan now and make it persistent in NVIDIA's netplan file."""
    facts = data.facts[node]
    addresses = {iface: cidr for (n, iface), cidr in plan.items() if n == node}
    names = " ".join(f"-e {iface}" for iface in sorted(addresses))
    commands = [
        *address_commands(facts, addresses),
        f"sudo grep -ln {names} /etc/netplan/*.yaml   # other files naming these interfaces: fold them in or remove"
        " them (netplan merges address lists across files)",
        f"sudo chmod 600 {NETPLAN_PATH}",
        "sudo netplan apply",
    ]
    return Fix(node, description, tuple(commands), ((NETPLAN_PATH, netplan_yaml(facts, addresses)),))
