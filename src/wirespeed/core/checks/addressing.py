"""addr.subnets and ipv6.fabric: one subnet per fabric interface of a node, peers on a shared subnet, no IPv6.

NVIDIA: "you must set up two separate subnets ... with exactly one interface per device on a given subnet"; two
halves on one /24 (the December 2025 playbook) or on 169.254/16 (its link-local option with several interfaces
up) give routing ambiguity (spark-facts 1.1, problems 3 and 6). IPv6 addresses on a RoCE interface add GIDs
and shift the RoCE v2 IPv4 GID index (section 3, problem 7).
"""

from __future__ import annotations

import ipaddress

from wirespeed.core.checks.common import fabric_netdevs, is_ethernet, is_link_local, joined, network
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.checks.plan import address_plan, plan_fix
from wirespeed.core.fabric.facts import NodeFacts

SUBNETS = "addr.subnets"
IPV6 = "ipv6.fabric"
IPV6_NETPLAN = "/etc/netplan/42-wirespeed-no-ipv6.yaml"
IPV6_SYSCTL = "/etc/sysctl.d/92-wirespeed-no-ipv6.conf"


def _shared_subnets(facts: NodeFacts) -> list[Evidence]:
    """Two or more fabric interfaces of one node in one IPv4 subnet (169.254/16 included)."""
    members: dict[ipaddress.IPv4Network, list[tuple[str, str]]] = {}
    for netdev in fabric_netdevs(facts):
        for cidr in netdev.ipv4:
            members.setdefault(network(cidr), []).append((netdev.name, cidr))
    evidence: list[Evidence] = []
    for subnet, ifaces in sorted(members.items()):
        if len({name for name, _ in ifaces}) > 1:
            others = ", ".join(name for name, _ in ifaces)
            evidence += [Evidence(facts.node, name, f"IPv4 address (subnet {subnet} shared by {others})", cidr)
                         for name, cidr in ifaces]  # fmt: skip
    return evidence


def _unshared_peers(data: CheckInput) -> list[Evidence]:
    """An addressed interface none of whose addressed link peers is on one of its subnets."""
    evidence: list[Evidence] = []
    for node in sorted(data.facts):
        for netdev in fabric_netdevs(data.facts[node]):
            peers = {p: cidrs for p in data.cabling.peers((node, netdev.name)) if (cidrs := _ipv4(data, p))}
            mine = {network(c) for c in netdev.ipv4}
            if not mine or not peers or any(mine & {network(c) for c in cidrs} for cidrs in peers.values()):
                continue
            seen = ", ".join(f"{n} {i} {' '.join(c)}" for (n, i), c in peers.items())
            evidence.append(Evidence(node, netdev.name, f"IPv4 address (link peers: {seen})", " ".join(netdev.ipv4)))
    return evidence


def _ipv4(data: CheckInput, end: tuple[str, str]) -> tuple[str, ...]:
    facts = data.facts.get(end[0])
    netdev = facts.netdev(end[1]) if facts else None
    return netdev.ipv4 if netdev else ()


def _changes(data: CheckInput, plan: dict[tuple[str, str], str], node: str) -> bool:
    return any(n == node and cidr not in _ipv4(data, (n, i)) for (n, i), cidr in plan.items())


@check(SUBNETS, "each fabric interface on its own subnet, shared with its link peer")
def addr_subnets(data: CheckInput) -> CheckResult:
    addressed = [(n, d) for n, f in data.facts.items() for d in fabric_netdevs(f) if d.ipv4]
    if not addressed:
        return skip(SUBNETS, "no fabric interface has an IPv4 address")
    shared = [e for node in sorted(data.facts) for e in _shared_subnets(data.facts[node])]
    unshared = _unshared_peers(data)
    if not shared and not unshared:
        return result(
            SUBNETS,
            CheckStatus.PASS,
            f"{len(addressed)} addressed fabric interfaces: one subnet each per node, shared with their link peers",
        )
    link_local = any(is_link_local(str(e.value)) for e in shared)
    plan = address_plan(data)
    fixes = [
        plan_fix(data, node, plan, _plan_description(link_local))
        for node in sorted(data.facts)
        if _changes(data, plan, node)
    ] or [Fix(None, "give each fabric interface its own subnet per node, shared with its link peer's interface")]
    parts = []
    if shared:
        nodes = joined(sorted({e.node or "" for e in shared}))
        kind = "169.254/16 link-local" if link_local else "one subnet"
        parts.append(f"several fabric interfaces of one node on {kind}: {nodes}")
    if unshared:
        parts.append(f"no link peer on a shared subnet: {joined([f'{e.node} {e.subject}' for e in unshared])}")
    return result(SUBNETS, CheckStatus.FAIL, "; ".join(parts), shared + unshared, fixes)


def _plan_description(link_local: bool) -> str:
    why = (
        "replace the link-local (169.254/16) addressing, which NVIDIA documents only for one cable with one "
        "interface up, with static addresses"
        if link_local
        else "readdress the fabric"
    )
    return (
        f"{why}: one /24 per half, shared with the peer's half and with no other interface of this node "
        "(NVIDIA: exactly one interface per device on a given subnet); the same plan on every node"
    )


def _ipv6_fix(node: str, ifaces: list[str]) -> Fix:
    commands = [f"sudo sysctl -w net.ipv6.conf.{i}.disable_ipv6=1" for i in ifaces]
    commands += [f"sudo chmod 600 {IPV6_NETPLAN}", "sudo netplan apply"]
    netplan = ["network:", "  version: 2", "  ethernets:"]
    for iface in ifaces:
        netplan += [f"    {iface}:", "      dhcp6: false", "      accept-ra: false", "      link-local: []"]
    sysctl = [f"net.ipv6.conf.{i}.disable_ipv6 = 1" for i in ifaces]
    return Fix(
        node,
        f"turn IPv6 off on {', '.join(ifaces)} (keeps the RoCE v2 IPv4 GID index stable; netplan: link-local: [] "
        "and no DHCPv6/RA; an explicit `link-local: [ ipv6 ]` in another netplan file must go too)",
        tuple(commands),
        ((IPV6_NETPLAN, "\n".join(netplan) + "\n"), (IPV6_SYSCTL, "\n".join(sysctl) + "\n")),
    )


@check(IPV6, "no IPv6 addresses on RoCE fabric interfaces")
def ipv6_fabric(data: CheckInput) -> CheckResult:
    ethernet = [(node, d) for node in sorted(data.facts) for d in fabric_netdevs(data.facts[node]) if is_ethernet(d)]
    if not ethernet:
        return skip(IPV6, "no Ethernet fabric interfaces (InfiniBand has no RoCE GIDs to shift)")
    with_v6 = [(node, d) for node, d in ethernet if d.ipv6]
    if not with_v6:
        return result(IPV6, CheckStatus.PASS, f"no IPv6 address on any of {len(ethernet)} Ethernet fabric interfaces")
    evidence = [
        Evidence(node, d.name, "IPv6 addresses (each adds RoCE GIDs)", ", ".join(d.ipv6)) for node, d in with_v6
    ]
    nodes = sorted({node for node, _ in with_v6})
    fixes = [_ipv6_fix(node, [d.name for n, d in with_v6 if n == node]) for node in nodes]
    names = joined([f"{node} {d.name}" for node, d in with_v6])
    return result(
        IPV6, CheckStatus.WARN, f"IPv6 on fabric interfaces shifts RoCE GID indices: {names}", evidence, fixes
    )
