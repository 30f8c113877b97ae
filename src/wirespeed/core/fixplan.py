"""What `wirespeed fix` would change on each node, as operations with a target and a value. Pure.

Only settings that can be changed safely at run time are planned: sysctls, the MTU and admin state of fabric
halves. The management interface is never touched. Each operation is applied by the node's agent, which
records the value it replaced so that `fix --revert` puts back exactly what was there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wirespeed.core.facts import NodeFacts, Unknown

TCP_BUFFER = 268435456  # 256 MiB: above the seeds' 128 MiB floor, as the Spark tuning guides set it
TCP_TRIPLE = f"4096 87380 {TCP_BUFFER}"
BACKLOG = 250000
RECOMMENDED_MTU = 9000


@dataclass(frozen=True)
class Operation:
    kind: str  # "sysctl" | "mtu" | "link"
    target: str  # sysctl key, or interface name
    value: str
    reason: str  # the check id it answers
    network: bool = False  # may cut the node off: applied with the self-rollback safety net

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "target": self.target,
            "value": self.value,
            "reason": self.reason,
            "network": self.network,
        }


def operation_from_json(data: Mapping[str, object]) -> Operation:
    kind, target, value = str(data["kind"]), str(data["target"]), str(data["value"])
    if kind not in ("sysctl", "mtu", "link"):
        raise ValueError(f"unknown operation kind {kind!r}")
    return Operation(kind, target, value, str(data.get("reason", "")), bool(data.get("network", False)))


def _int(text: str | None) -> int | None:
    try:
        return int(text.split()[-1]) if text else None
    except ValueError:
        return None


def _fabric(facts: NodeFacts) -> list[str]:
    return [name for name in facts.fabric if name != facts.management]


def plan_node(facts: NodeFacts) -> list[Operation]:
    """Operations for one node, from what discovery read there."""
    ops: list[Operation] = []
    sysctls = facts.sysctls
    for key, floor, value in (
        ("net.core.rmem_max", TCP_BUFFER, str(TCP_BUFFER)),
        ("net.core.wmem_max", TCP_BUFFER, str(TCP_BUFFER)),
        ("net.ipv4.tcp_rmem", TCP_BUFFER, TCP_TRIPLE),
        ("net.ipv4.tcp_wmem", TCP_BUFFER, TCP_TRIPLE),
        ("net.core.netdev_max_backlog", BACKLOG, str(BACKLOG)),
    ):
        current = _int(sysctls.get(key))
        if current is not None and current < floor:
            ops.append(Operation("sysctl", key, value, "sysctl.tcp"))
    addressed = [n for name in _fabric(facts) if (n := facts.netdev(name)) and n.ipv4]
    if len(addressed) >= 2:
        for key, want in (("net.ipv4.conf.all.arp_ignore", 1), ("net.ipv4.conf.all.arp_announce", 2)):
            current = _int(sysctls.get(key))
            if current is not None and current < want:
                ops.append(Operation("sysctl", key, str(want), "sysctl.arp"))
        if _int(sysctls.get("net.ipv4.conf.all.rp_filter")) == 1:
            ops.append(Operation("sysctl", "net.ipv4.conf.all.rp_filter", "2", "sysctl.arp"))
    for name in _fabric(facts):
        netdev = facts.netdev(name)
        if netdev is None:
            continue
        if netdev.ipv6 and sysctls.get(f"net.ipv6.conf.{name}.disable_ipv6", "0") != "1":
            ops.append(Operation("sysctl", f"net.ipv6.conf.{name}.disable_ipv6", "1", "ipv6.fabric"))
        cabled = netdev.carrier is True
        if cabled and netdev.link_type == 1 and isinstance(netdev.mtu, int) and netdev.mtu < RECOMMENDED_MTU:
            ops.append(Operation("mtu", name, str(RECOMMENDED_MTU), "mtu.host", network=True))
        if netdev.operstate == "down" and isinstance(netdev.carrier, Unknown) and netdev.ipv4:
            ops.append(Operation("link", name, "up", "link.halves", network=True))
    return ops


def plan(facts: Mapping[str, NodeFacts]) -> dict[str, list[Operation]]:
    return {node: ops for node, node_facts in sorted(facts.items()) if (ops := plan_node(node_facts))}
