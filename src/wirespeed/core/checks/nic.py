"""NIC-level checks: offloads TCP needs at 200G, error counters, and firewalls that drop fabric traffic."""

from __future__ import annotations

import re

from wirespeed.core.checks.common import cabled, is_ethernet, network
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.counters import is_congestion
from wirespeed.core.fabric.facts import NEEDS_ROOT
from wirespeed.core.parsers.ethtool import ERROR_COUNTERS

ID_OFFLOADS = "nic.offloads"
ID_ERRORS = "nic.errors"
ID_FIREWALL = "firewall"
# Without these, TCP at 100G per half spends its CPU on per-packet work (the seeds' CPU ceiling comes sooner).
WANTED = {
    "tcp-segmentation-offload": "tso",
    "generic-segmentation-offload": "gso",
    "generic-receive-offload": "gro",
    "rx-checksumming": "rx",
    "tx-checksumming": "tx",
    "scatter-gather": "sg",
}


@check(ID_OFFLOADS, "segmentation, receive and checksum offloads on")
def nic_offloads(data: CheckInput) -> CheckResult:
    evidence: list[Evidence] = []
    fixes: list[Fix] = []
    read = 0
    for node, facts in sorted(data.facts.items()):
        for netdev in cabled(facts):
            features = facts.offloads.get(netdev.name)
            if not is_ethernet(netdev) or not features:
                continue
            read += 1
            off = [(name, short) for name, short in WANTED.items() if name in features and not features[name][0]]
            if netdev.pci is None:  # a virtual link (the emulated cluster's macvlan halves have no rx-checksumming):
                off = [(name, short) for name, short in off if not features[name][1]]  # fixed off is its nature
            for name, _ in off:
                fixed = features[name][1]
                evidence.append(Evidence(node, netdev.name, name, "off [fixed]" if fixed else "off"))
            changeable = [short for name, short in off if not features[name][1]]
            if changeable:
                fixes.append(
                    Fix(
                        node,
                        f"turn the offloads back on for {netdev.name}",
                        (f"ethtool -K {netdev.name} " + " ".join(f"{s} on" for s in changeable),),
                    )
                )
    if not read:
        return skip(ID_OFFLOADS, "no offload settings read (ethtool -k) on cabled Ethernet fabric interfaces")
    if not evidence:
        return result(ID_OFFLOADS, CheckStatus.PASS, f"TSO, GSO, GRO, checksums and SG on for {read} interfaces")
    where = ", ".join(sorted({f"{e.node} {e.subject}" for e in evidence}))
    return result(ID_OFFLOADS, CheckStatus.WARN, f"offloads off on {where}", evidence, fixes)


def _growth(data: CheckInput) -> CheckResult | None:
    """With two readings (live runs): fail on error counters that grew, whatever their totals say."""
    growth = data.active.counter_growth
    if growth is None:
        return None
    if not growth:
        return skip(ID_ERRORS, "no interface could be sampled twice")
    seconds = data.active.growth_window_s
    evidence = [
        Evidence(node, iface, f"{name} grew in {seconds:g} s", f"+{count}")
        for (node, iface), grew in sorted(growth.items())
        for name, count in sorted(grew.items())
        if not is_congestion(name)
    ]
    if not evidence:
        return result(
            ID_ERRORS,
            CheckStatus.PASS,
            f"no error or discard counter grew on {len(growth)} interfaces in {seconds:g} s",
        )
    fix = Fix(
        None,
        "rx_oversize/out_of_range_len: a peer or switch with a larger MTU; discards, out_of_sequence: congestion "
        "or drops in a lossy fabric (PFC/ECN); CRC/symbol errors: the cable or its seating; rx_out_of_buffer: the "
        "host cannot keep up",
        tuple(
            sorted({f"wirespeed watch --hosts {e.node}   # error counters that grow are shown live" for e in evidence})
        ),
    )
    where = ", ".join(sorted({f"{e.node} {e.subject}" for e in evidence}))
    return result(ID_ERRORS, CheckStatus.FAIL, f"error counters growing on {where}", evidence, (fix,))


@check(ID_ERRORS, "NIC error and discard counters")
def nic_errors(data: CheckInput) -> CheckResult:
    measured = _growth(data)
    if measured is not None:
        return measured
    evidence: list[Evidence] = []
    read = 0
    for node, facts in sorted(data.facts.items()):
        for netdev in cabled(facts):
            counters = facts.nic_counters.get(netdev.name)
            if counters is None:
                continue
            read += 1
            evidence += [
                Evidence(node, netdev.name, name, counters[name])
                for name in ERROR_COUNTERS
                if counters.get(name, 0) > 0
            ]
    if not read:
        return skip(ID_ERRORS, "no driver statistics read (ethtool -S) on cabled fabric interfaces")
    if not evidence:
        return result(ID_ERRORS, CheckStatus.PASS, f"no error or discard counter above zero on {read} interfaces")
    fixes = [
        Fix(
            None,
            "see whether they still grow: a count since the driver loaded may be old news "
            "(rx_oversize/out_of_range_len: a peer with a larger MTU; discards: congestion or missing PFC; "
            "CRC/symbol errors: the cable or its seating)",
            tuple(
                sorted({f"watch -d -n1 'ethtool -S {e.subject} | grep -E \"discard|err|oversize\"'" for e in evidence})
            ),
        )
    ]
    summary = f"{len(evidence)} error/discard counters above zero (one reading: growth not measured)"
    return result(ID_ERRORS, CheckStatus.WARN, summary, evidence, fixes)


_NFT_INPUT_DROP = re.compile(r"hook\s+input\b[^;]*;\s*policy\s+drop", re.I)


@check(ID_FIREWALL, "no firewall dropping fabric traffic")
def firewall(data: CheckInput) -> CheckResult:
    evidence: list[Evidence] = []
    fixes: list[Fix] = []
    read = 0
    for node, facts in sorted(data.facts.items()):
        if not facts.firewall:
            continue
        read += 1
        subnets = sorted({str(network(c)) for n in cabled(facts) for c in n.ipv4})
        blocking: list[str] = []
        ufw = facts.firewall.get("ufw", "")
        if re.search(r"^Status:\s*active", ufw, re.M):
            blocking.append("ufw")
            evidence.append(Evidence(node, "ufw", "status", "active"))
        nft = facts.firewall.get("nft", "")
        if _NFT_INPUT_DROP.search(nft):
            blocking.append("nft")
            evidence.append(Evidence(node, "nft", "input chain policy", "drop"))
        iptables = facts.firewall.get("iptables", "")
        drops = [
            line
            for line in iptables.splitlines()
            if line.startswith("-P INPUT DROP")
            or (line.startswith("-A INPUT") and re.search(r"-j (DROP|REJECT)\b", line))
        ]
        if drops:
            blocking.append("iptables")
            evidence += [Evidence(node, "iptables", "rule", line) for line in drops[:5]]
        if blocking and subnets:
            commands: list[str] = []
            if "ufw" in blocking:
                commands += [f"ufw allow from {s}" for s in subnets]
            if "iptables" in blocking or "nft" in blocking:
                commands += [f"iptables -I INPUT -s {s} -j ACCEPT" for s in subnets]
            fixes.append(
                Fix(
                    node,
                    "accept traffic from the fabric subnets (NCCL, MPI and Ray use many TCP ports)",
                    tuple(commands),
                )
            )
    closed = sorted(n for n, f in data.facts.items() if f.privileged is False and not f.firewall)
    if closed:
        return skip(ID_FIREWALL, f"firewall {NEEDS_ROOT} on {', '.join(closed)}")
    if not read:
        return skip(ID_FIREWALL, "no firewall listing readable (nft, iptables, ufw absent, or not root)")
    if not evidence:
        return result(ID_FIREWALL, CheckStatus.PASS, f"no dropping input policy or rule on {read} node(s)")
    nodes = ", ".join(sorted({e.node for e in evidence if e.node}))
    return result(
        ID_FIREWALL, CheckStatus.WARN, f"input filtering that may drop fabric traffic on {nodes}", evidence, fixes
    )
