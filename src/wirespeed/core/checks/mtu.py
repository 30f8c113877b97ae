"""mtu.host and mtu.path: every cabled half at one MTU (9000 recommended), and full-size frames cross every link.

At MTU 1500 RDMA runs with 1024-byte packets and below ~80 Gb/s ("MTU not set to 9000"); a switch port with a
smaller MTU drops jumbo frames silently (spark-facts problem 5: RouterOS l2mtu >= MTU + 22). When the cluster
file names the switch, its ports' L2MTU and MTU explain a failed ping, or stand in for pings that were not made.
"""

from __future__ import annotations

import ipaddress
from collections import Counter

from wirespeed.core.checks.common import RECOMMENDED_MTU, cabled_ends, is_ethernet, joined, network
from wirespeed.core.checks.model import (
    SEVERITY_ORDER,
    CheckInput,
    CheckResult,
    CheckStatus,
    Evidence,
    Fix,
    check,
    result,
    skip,
)
from wirespeed.core.checks.switch import switch_fix, switch_problems
from wirespeed.core.cluster.routeros import L2MTU_MIN_OVERHEAD as ROUTEROS_L2MTU_OVERHEAD
from wirespeed.core.cluster.switchstate import PortProblem
from wirespeed.core.fabric.facts import Netdev, Unknown

HOST = "mtu.host"
PATH = "mtu.path"
MTU_NETPLAN = "/etc/netplan/41-wirespeed-mtu.yaml"

End = tuple[str, str]


def _target(mtus: list[int], ethernet: bool) -> int:
    """The MTU to converge on: the most common (ties: the highest), and never below 9000 on Ethernet."""
    counts = Counter(mtus)
    common = max(counts, key=lambda m: (counts[m], m))
    return max(common, RECOMMENDED_MTU) if ethernet else common


def _mtu_fix(node: str, ifaces: list[str], mtu: int, ethernet: bool) -> Fix:
    commands = [f"sudo ip link set {iface} mtu {mtu}" for iface in ifaces]
    if not ethernet:
        return Fix(node, f"set MTU {mtu} on {', '.join(ifaces)}", tuple(commands))
    netplan = ["network:", "  version: 2", "  ethernets:"]
    for iface in ifaces:
        netplan += [f"    {iface}:", f"      mtu: {mtu}"]
    commands += [f"sudo chmod 600 {MTU_NETPLAN}", "sudo netplan apply"]
    return Fix(
        node,
        f"set MTU {mtu} on {', '.join(ifaces)} now and in netplan (`mtu: {mtu}`; it merges with 40-cx7.yaml); "
        f"switch ports in between need mtu >= {mtu} (RouterOS: l2mtu >= {mtu + ROUTEROS_L2MTU_OVERHEAD})",
        tuple(commands),
        ((MTU_NETPLAN, "\n".join(netplan) + "\n"),),
    )


def _fixes(wrong: list[tuple[str, Netdev]], target: int, ethernet: bool) -> list[Fix]:
    nodes = sorted({node for node, _ in wrong})
    return [_mtu_fix(node, [d.name for n, d in wrong if n == node], target, ethernet) for node in nodes]


def _judge(ends: list[tuple[str, Netdev]], ethernet: bool) -> tuple[CheckStatus, str, list[Evidence], list[Fix]]:
    known = [(node, d) for node, d in ends if isinstance(d.mtu, int)]
    mtus = [d.mtu for _, d in known if isinstance(d.mtu, int)]
    target = _target(mtus, ethernet)
    counts = Counter(mtus)
    wrong = [(node, d) for node, d in known if d.mtu != target]
    evidence = [Evidence(node, d.name, f"MTU (target {target})", d.mtu) for node, d in wrong]
    if len(counts) > 1:
        seen = ", ".join(f"{m} on {counts[m]}" for m in sorted(counts, reverse=True))
        return CheckStatus.FAIL, f"MTU differs across cabled halves: {seen}", evidence, _fixes(wrong, target, ethernet)
    if wrong:
        summary = f"all {len(known)} cabled halves at MTU {mtus[0]}; {RECOMMENDED_MTU} recommended (jumbo frames)"
        return CheckStatus.WARN, summary, evidence, _fixes(wrong, target, ethernet)
    return CheckStatus.PASS, f"all {len(known)} cabled halves at MTU {target}", [], []


@check(HOST, "one MTU (9000) on every cabled half")
def mtu_host(data: CheckInput) -> CheckResult:
    ends = list(cabled_ends(data.facts))
    unread = [f"{node} {d.name}" for node, d in ends if isinstance(d.mtu, Unknown)]
    if len(unread) == len(ends):
        return skip(HOST, "no cabled half with a readable MTU" if ends else "no fabric interface has a link")
    verdicts = [
        _judge(group, ethernet)
        for ethernet in (True, False)
        if (group := [(n, d) for n, d in ends if is_ethernet(d) == ethernet and isinstance(d.mtu, int)])
    ]
    status = min((v[0] for v in verdicts), key=SEVERITY_ORDER.__getitem__)
    summary = "; ".join(v[1] for v in verdicts) + (f"; MTU unknown on {joined(unread)}" if unread else "")
    evidence = [e for v in verdicts for e in v[2]]
    fixes = [f for v in verdicts for f in v[3]]
    return result(HOST, status, summary, evidence, fixes)


# ------------------------------------------------------------------------------------------------------ mtu.path
def _peer_iface(data: CheckInput, peer: str, address: str) -> Netdev | None:
    facts = data.facts.get(peer)
    if facts is None:
        return None
    return next((d for d in facts.netdevs if any(c.split("/")[0] == address for c in d.ipv4)), None)


def _same_subnet(data: CheckInput, key: tuple[str, str, str, str]) -> bool:
    """A ping counts when its target is on a subnet of the sending interface (a switch joins other pairs at L2
    only: one half's subnet is not the other's), or when the sender's addresses are not known."""
    node, iface, _, address = key
    facts = data.facts.get(node)
    netdev = facts.netdev(iface) if facts else None
    if netdev is None or not netdev.ipv4:
        return True
    target = ipaddress.IPv4Address(address) if _is_ipv4(address) else None
    return target is None or any(target in network(c) for c in netdev.ipv4)


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _mtu_of(data: CheckInput, node: str, iface: str) -> int | None:
    facts = data.facts.get(node)
    netdev = facts.netdev(iface) if facts else None
    return netdev.mtu if netdev and isinstance(netdev.mtu, int) else None


def _path_fix(data: CheckInput, key: tuple[str, str, str, str]) -> Fix:
    node, iface, peer, address = key
    mtu = _mtu_of(data, node, iface)
    size = f"-s {mtu - 28} " if mtu else ""
    verify = f"ping -M do {size}-c 3 -I {iface} {address}   # on {node}: answers once fixed"
    peer_if = _peer_iface(data, peer, address)
    if peer_if is not None and isinstance(peer_if.mtu, int) and mtu and peer_if.mtu < mtu:
        return Fix(
            peer,
            f"{peer} {peer_if.name} has MTU {peer_if.mtu}, smaller than {node} {iface} ({mtu}): raise it",
            (f"sudo ip link set {peer_if.name} mtu {mtu}", verify),
        )
    if data.cabling.topology == "switch" or len(data.cabling.peers((node, iface))) > 1:
        want = mtu or RECOMMENDED_MTU
        return Fix(
            None,
            f"switch: a port between {node} {iface} and {peer} carries smaller frames: set its MTU >= {want} "
            f"(RouterOS: /interface/ethernet/set PORT mtu={want} l2mtu={want + ROUTEROS_L2MTU_OVERHEAD}, "
            f"l2mtu >= MTU + {ROUTEROS_L2MTU_OVERHEAD})",
            (verify,),
        )
    return Fix(
        node,
        f"the peer {peer} or the path to it drops full-size frames: compare both ends' MTU, and check that a "
        "firewall (ufw) lets ICMP through on the fabric subnet",
        (f"ip link show {iface}", verify),
    )


def _clamps(data: CheckInput) -> tuple[list[PortProblem], Fix | None]:
    """Switch ports whose L2MTU or MTU is below what their node sends, and the switch-side fix."""
    found = switch_problems(data)
    if found is None:
        return [], None
    config, _, problems = found
    clamps = [p for p in problems if p.what in ("l2mtu", "mtu")]
    return clamps, switch_fix(config, clamps) if clamps else None


def _clamp_evidence(clamps: list[PortProblem]) -> list[Evidence]:
    return [Evidence(p.node, p.port, f"switch port {p.what} (needs {p.expected})", p.found) for p in clamps]


def _said(clamps: list[PortProblem]) -> str:
    return joined([f"{p.port} ({p.node}) {p.what} {p.found}, needs {p.expected}" for p in clamps])


@check(PATH, "full-MTU frames cross every link (don't-fragment ping)")
def mtu_path(data: CheckInput) -> CheckResult:
    pings = data.active.mtu_pings
    clamps, switch_fix_ = _clamps(data)
    if pings is None and clamps and switch_fix_ is not None:
        summary = f"not pinged (snapshot or --no-active), but the switch carries smaller frames: {_said(clamps)}"
        return result(PATH, CheckStatus.FAIL, summary, _clamp_evidence(clamps), [switch_fix_])
    if pings is None:
        return skip(PATH, "not measured: snapshot or --no-active")
    if not pings:
        return skip(PATH, "no addressed link to ping across")
    pings = {key: ok for key, ok in pings.items() if _same_subnet(data, key)}
    if not pings:
        return skip(PATH, "no ping between interfaces of one subnet")
    failed = [key for key, ok in sorted(pings.items()) if not ok]
    if not failed:
        return result(PATH, CheckStatus.PASS, f"all {len(pings)} full-MTU don't-fragment pings answered")
    evidence = [
        Evidence(
            node, iface, f"don't-fragment ping at MTU {_mtu_of(data, node, iface)} to {peer}", f"{addr}: no answer"
        )
        for node, iface, peer, addr in failed
    ]
    names = joined([f"{node} {iface} -> {peer} {addr}" for node, iface, peer, addr in failed])
    summary = f"{len(failed)} of {len(pings)} full-MTU pings got no answer: {names}"
    involved = {n for node, _, peer, _ in failed for n in (node, peer)}
    explaining = [p for p in clamps if p.node in involved]
    if explaining and switch_fix_ is not None:
        summary += f"; the switch explains it: {_said(explaining)}"
        return result(PATH, CheckStatus.FAIL, summary, evidence + _clamp_evidence(explaining), [switch_fix_])
    return result(PATH, CheckStatus.FAIL, summary, evidence, [_path_fix(data, key) for key in failed])
