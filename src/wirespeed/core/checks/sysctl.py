"""sysctl.tcp and sysctl.arp: kernel settings for 200G TCP and for a node with several addressed halves.

TCP at 200G needs socket buffers far above Ubuntu's defaults (rmem_max 212992, tcp_rmem max 6 MiB); the field
tuning that took iperf3 from 96 to 177 Gb/s used 128 MiB. With several interfaces of one node on one L2 domain
(a switch), Linux answers ARP for every local address on every interface ("ARP flux") unless arp_ignore=1 and
arp_announce=2, and strict reverse-path filtering (rp_filter=1) drops replies that come in on the other half.
"""

from __future__ import annotations

from dataclasses import dataclass

from wirespeed.core.checks.common import fabric_netdevs, joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import NodeFacts

TCP = "sysctl.tcp"
ARP = "sysctl.arp"
BUFFER_FLOOR = 134217728  # 128 MiB
TCP_FILE = "/etc/sysctl.d/90-wirespeed.conf"
ARP_FILE = "/etc/sysctl.d/91-wirespeed-arp.conf"
TCP_FLOORS: dict[str, int] = {
    "net.core.rmem_max": BUFFER_FLOOR,
    "net.core.wmem_max": BUFFER_FLOOR,
    "net.ipv4.tcp_rmem": BUFFER_FLOOR,  # the max field of "min default max"
    "net.ipv4.tcp_wmem": BUFFER_FLOOR,
    "net.core.netdev_max_backlog": 250000,
}
TCP_DEFAULT_FIELDS = {"net.ipv4.tcp_rmem": "4096 131072", "net.ipv4.tcp_wmem": "4096 16384"}
# Sysctls the kernel keeps once for the whole host (its net.core table), not per network namespace: a node that is
# a namespace other than its host's own (a container, an emulated node) cannot set them. Recent kernels show
# rmem_max and its kin read-only there; netdev_max_backlog they show in the host's own namespace only.
HOST_WIDE_SYSCTLS = frozenset(
    {
        "net.core.rmem_max",
        "net.core.wmem_max",
        "net.core.rmem_default",
        "net.core.wmem_default",
        "net.core.netdev_max_backlog",
    }
)
HOST_WIDE_REASON = "not settable in a network namespace: host-wide"
_INIT_NAMESPACE_ONLY = "net.core.netdev_max_backlog"


def in_network_namespace(facts: NodeFacts) -> bool:
    """Whether the node is a network namespace other than its host's, where the host-wide sysctls cannot be set.

    The kernel's own sign: the per-namespace sysctls (net.ipv4.conf.*) read, but net.core.netdev_max_backlog,
    which every host's own namespace shows, does not. The testbed also marks its nodes emulated (each one is a
    network namespace), which holds should a kernel start to show that sysctl inside namespaces too."""
    if facts.emulated:
        return True
    per_namespace = any(key.startswith("net.ipv4.conf.") for key in facts.sysctls)
    return per_namespace and _INIT_NAMESPACE_ONLY not in facts.sysctls


def _number(key: str, raw: str) -> int | None:
    """The value compared with the floor: the last field of tcp_rmem/tcp_wmem, else the whole value."""
    fields = raw.split()
    if not fields or not fields[-1].isdigit():
        return None
    return int(fields[-1]) if key in TCP_DEFAULT_FIELDS else (int(raw) if raw.isdigit() else None)


def _tcp_line(facts: NodeFacts, key: str, floor: int) -> str:
    raw = facts.sysctls.get(key, "")
    current = _number(key, raw) or 0
    if key in TCP_DEFAULT_FIELDS:
        fields = raw.split()
        head = " ".join(fields[:2]) if len(fields) == 3 else TCP_DEFAULT_FIELDS[key]
        return f"{key} = {head} {max(current, floor)}"
    return f"{key} = {max(current, floor)}"


def tcp_fix(facts: NodeFacts) -> Fix:
    lines = [f"# {TCP_FILE} (wirespeed): socket buffers for 200G TCP, 128 MiB as tuned in the field"]
    lines += [_tcp_line(facts, key, floor) for key, floor in TCP_FLOORS.items()]
    return Fix(
        facts.node,
        "raise the TCP buffer limits (higher values already set are kept) and load them",
        ("sudo sysctl --system", f"sysctl {' '.join(TCP_FLOORS)}   # check"),
        ((TCP_FILE, "\n".join(lines) + "\n"),),
    )


@check(TCP, "TCP buffers and backlog sized for 200G")
def sysctl_tcp(data: CheckInput) -> CheckResult:
    evidence: list[Evidence] = []
    unread: list[str] = []
    hosts: list[str] = []  # host-wide values below the floor on nodes that cannot set them: the host's to set
    checked = 0
    for node in sorted(data.facts):
        sysctls = data.facts[node].sysctls
        namespaced = in_network_namespace(data.facts[node])
        for key, floor in TCP_FLOORS.items():
            value = _number(key, sysctls.get(key, ""))
            if namespaced and key in HOST_WIDE_SYSCTLS:
                if value is not None and value < floor:
                    hosts.append(f"{node} {key}={sysctls[key]}")
                continue
            if value is None:
                unread.append(f"{node} {key}")
                continue
            checked += 1
            if value < floor:
                evidence.append(Evidence(node, key, f"sysctl (at least {floor} recommended)", sysctls[key]))
    if not checked:
        return skip(TCP, "no TCP sysctl could be read")
    note = f"; not read: {joined(unread, 2)}" if unread else ""
    note += f"; left to the host ({HOST_WIDE_REASON}): {joined(hosts, 2)}" if hosts else ""
    if not evidence:
        where = "on every node" if not hosts else "where the nodes can set them"
        return result(TCP, CheckStatus.PASS, f"TCP buffers >= 128 MiB and backlog >= 250000 {where}{note}")
    nodes = sorted({e.node or "" for e in evidence})
    fixes = [tcp_fix(data.facts[node]) for node in nodes]
    summary = f"TCP buffers or backlog below the 200G tuning on {joined(nodes)}{note}"
    return result(TCP, CheckStatus.WARN, summary, evidence, fixes)


# ---------------------------------------------------------------------------------------------------- sysctl.arp
@dataclass(frozen=True)
class ArpRule:
    name: str  # arp_ignore, arp_announce, rp_filter
    good: frozenset[int]
    target: int
    why: str


ARP_RULES = (
    ArpRule("arp_ignore", frozenset({1, 2}), 1, "answer ARP only on the interface that owns the address"),
    ArpRule("arp_announce", frozenset({2}), 2, "use the outgoing interface's own address in ARP requests"),
    ArpRule("rp_filter", frozenset({0, 2}), 2, "1 (strict) drops replies that arrive on the other half"),
)


def _value(facts: NodeFacts, key: str) -> int | None:
    raw = facts.sysctls.get(key, "").strip()
    return int(raw) if raw.isdigit() else None


def effective(facts: NodeFacts, iface: str, name: str) -> int | None:
    """The kernel uses the larger of conf.all and conf.IF for arp_ignore, arp_announce and rp_filter."""
    values = [v for scope in ("all", iface) if (v := _value(facts, f"net.ipv4.conf.{scope}.{name}")) is not None]
    return max(values) if values else None


def _arp_problems(facts: NodeFacts, ifaces: list[str]) -> list[Evidence]:
    problems: list[Evidence] = []
    for iface in ifaces:
        for rule in ARP_RULES:
            value = effective(facts, iface, rule.name)
            if value is not None and value not in rule.good:
                what = f"{rule.name} (effective: max of conf.all and conf.{iface}; want {rule.target})"
                problems.append(Evidence(facts.node, iface, what, value))
    return problems


def arp_fix(facts: NodeFacts, ifaces: list[str], rules: list[ArpRule]) -> Fix:
    lines = [f"# {ARP_FILE} (wirespeed): several addressed fabric interfaces on one node"]
    for rule in rules:
        everywhere = _value(facts, f"net.ipv4.conf.all.{rule.name}")
        if everywhere is not None and everywhere not in rule.good and everywhere > rule.target:
            lines.append(f"net.ipv4.conf.all.{rule.name} = {rule.target}")
        lines += [f"net.ipv4.conf.{iface}.{rule.name} = {rule.target}" for iface in ifaces]
    commands = [f"sudo sysctl -w {line.replace(' = ', '=')}" for line in lines[1:]]
    return Fix(
        facts.node,
        "; ".join(f"{rule.name}={rule.target}: {rule.why}" for rule in rules),
        (*commands, "sudo sysctl --system   # after writing the file, so that it holds across reboots"),
        ((ARP_FILE, "\n".join(lines) + "\n"),),
    )


def _rules_seen(evidence: list[Evidence], node: str | None) -> list[ArpRule]:
    return [r for r in ARP_RULES if any(e.what.startswith(r.name + " ") and node in (None, e.node) for e in evidence)]


@check(ARP, "ARP and reverse-path filtering fit several addressed fabric interfaces")
def sysctl_arp(data: CheckInput) -> CheckResult:
    multi = {
        node: [d.name for d in fabric_netdevs(facts) if d.ipv4]
        for node, facts in sorted(data.facts.items())
        if sum(1 for d in fabric_netdevs(facts) if d.ipv4) >= 2
    }
    if not multi:
        return skip(ARP, "no node has two or more addressed fabric interfaces")
    unread = [
        n for n, ifaces in multi.items() if all(effective(data.facts[n], i, "arp_ignore") is None for i in ifaces)
    ]
    if len(unread) == len(multi):
        return skip(ARP, f"ARP sysctls not read on {joined(unread)}")
    evidence = [e for node, ifaces in multi.items() for e in _arp_problems(data.facts[node], ifaces)]
    note = f"; not read on {joined(unread)}" if unread else ""
    if not evidence:
        return result(
            ARP, CheckStatus.PASS, f"arp_ignore, arp_announce and rp_filter fit on {joined(list(multi))}{note}"
        )
    nodes = sorted({e.node or "" for e in evidence})
    fixes = [arp_fix(data.facts[node], multi[node], _rules_seen(evidence, node)) for node in nodes]
    settings = [rule.name for rule in _rules_seen(evidence, None)]
    summary = f"{', '.join(settings)} unfit for several addressed halves on {joined(nodes)}{note}"
    return result(ARP, CheckStatus.WARN, summary, evidence, fixes)
