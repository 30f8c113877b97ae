"""What `wirespeed fix` would change on each node, as operations with a target and a value. Pure.

The plan comes from the checks' own fixes: every file a failing check proposes (a sysctl.d drop-in, a netplan
drop-in such as NVIDIA's 40-cx7.yaml) is written, and what the file says is also applied now (each sysctl
line; the addresses of the address plan; the fabric MTU; a half left down; a ring's routes between the nodes that
share no cable, live only). On a node that is a network namespace of its own (a container, an emulated node), a
host-wide sysctl is not set but noted: the kernel refuses it there.
The management interface is never touched. The node's agent applies each operation and reports the value it
replaced, so that `fix --revert` puts back exactly what was there, files included (a file that did not exist is
removed again).
"""

from __future__ import annotations

import difflib
import ipaddress
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from wirespeed.core.checks.addressing import IPV6_NETPLAN, IPV6_SYSCTL, SUBNETS
from wirespeed.core.checks.links import HALVES
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus
from wirespeed.core.checks.mtu import MTU_NETPLAN
from wirespeed.core.checks.plan import NETPLAN_PATH, address_plan
from wirespeed.core.checks.ring import FORWARD, FORWARD_FILE, ROUTES, missing_routes
from wirespeed.core.checks.sysctl import (
    ARP,
    ARP_FILE,
    HOST_WIDE_REASON,
    HOST_WIDE_SYSCTLS,
    TCP,
    TCP_FILE,
    in_network_namespace,
    sysctl_arp,
)
from wirespeed.core.fabric.facts import NodeFacts, Unknown

RECOMMENDED_MTU = 9000
KINDS = ("sysctl", "mtu", "link", "addr", "route", "file", "unlink")
# Every file `fix` may write: discovery reads their current content so that the plan is a diff.
MANAGED_FILES = (TCP_FILE, ARP_FILE, IPV6_SYSCTL, FORWARD_FILE, NETPLAN_PATH, MTU_NETPLAN, IPV6_NETPLAN)
NETPLAN_DIR = "/etc/netplan/"
SYSCTL_DIR = "/etc/sysctl.d/"
# Checks whose fixes `fix` applies (the others need a person: cables, switch ports, environment files).
APPLIED = (TCP, ARP, "ipv6.fabric", "mtu.host", SUBNETS, HALVES, FORWARD, ROUTES)
# A route operation's value: "via GATEWAY dev IFACE" (ip route replace TARGET VALUE), "dev IFACE" (a route on the
# link, as an undo may put back), or empty: no route to TARGET.
_ROUTE_VALUE = re.compile(r"(?:via (?P<via>\S+) )?dev (?P<dev>[A-Za-z0-9_.:@-]{1,15})")


@dataclass(frozen=True)
class Operation:
    kind: str  # one of KINDS; addr: the interface's whole IPv4 list, space separated; file: the content; route:
    # "via GATEWAY dev IFACE", or empty for no route at all
    target: str  # sysctl key, interface name, route destination (CIDR), or absolute file path
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
    if kind not in KINDS:
        raise ValueError(f"unknown operation kind {kind!r}")
    if kind in ("file", "unlink") and (
        posixpath.normpath(target) != target or not target.startswith((SYSCTL_DIR, NETPLAN_DIR))
    ):
        raise ValueError(f"{target}: fix writes only under {SYSCTL_DIR} and {NETPLAN_DIR}")
    if kind == "route":
        check_route(target, value)
    return Operation(kind, target, value, str(data.get("reason", "")), bool(data.get("network", False)))


def check_route(target: str, value: str) -> None:
    """A route operation names an IPv4 network and, unless it removes the route, one gateway and interface."""
    try:
        ipaddress.IPv4Network(target)
    except ValueError:
        raise ValueError(f"route target {target!r} is not an IPv4 network") from None
    if not value:
        return
    match = _ROUTE_VALUE.fullmatch(value)
    if match is None:
        raise ValueError(f"route {target}: {value!r} is not 'via GATEWAY dev IFACE'")
    try:
        if match["via"] is not None:
            ipaddress.IPv4Address(match["via"])
    except ValueError:
        raise ValueError(f"route {target}: gateway {match['via']!r} is not an IPv4 address") from None


def undo_of(op: Mapping[str, object], original: str | None) -> Operation:
    """The operation that puts back `original` (None: a file that was not there)."""
    kind, target = str(op["kind"]), str(op["target"])
    if kind in ("file", "unlink"):
        if original is None:
            return Operation("unlink", target, "", "revert")
        return Operation("file", target, original, "revert")
    return Operation(kind, target, original or "", "revert", bool(op.get("network", False)))


def sysctl_lines(content: str) -> list[tuple[str, str]]:
    """(key, value) pairs of a sysctl.d file, as `sysctl --system` reads them."""
    pairs: list[tuple[str, str]] = []
    for raw in content.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")) or "=" not in line:
            continue
        key, _, value = line.lstrip("-").partition("=")
        pairs.append((key.strip().replace("/", "."), " ".join(value.split())))
    return pairs


def _fabric(facts: NodeFacts) -> list[str]:
    return [name for name in facts.fabric if name != facts.management]


def _link_ops(facts: NodeFacts) -> list[Operation]:
    ops: list[Operation] = []
    for name in _fabric(facts):
        netdev = facts.netdev(name)
        if netdev is None:
            continue
        cabled = netdev.carrier is True
        if cabled and netdev.link_type == 1 and isinstance(netdev.mtu, int) and netdev.mtu < RECOMMENDED_MTU:
            ops.append(Operation("mtu", name, str(RECOMMENDED_MTU), "mtu.host", network=True))
        if netdev.operstate == "down" and isinstance(netdev.carrier, Unknown):
            ops.append(Operation("link", name, "up", HALVES, network=True))
    return ops


def _address_ops(data: CheckInput, node: str, reason: str) -> list[Operation]:
    facts = data.facts[node]
    ops: list[Operation] = []
    for (n, iface), cidr in sorted(address_plan(data).items()):
        netdev = facts.netdev(iface)
        if n == node and netdev is not None and cidr not in netdev.ipv4 and iface != facts.management:
            ops.append(Operation("addr", iface, cidr, reason, network=True))
    return ops


def _foreseen(
    data: CheckInput, results: Sequence[CheckResult], addressing: Mapping[str, Sequence[Operation]]
) -> list[CheckResult]:
    """sysctl.arp as it will judge the nodes once the planned addresses are on: a node that gains a second addressed
    half needs its ARP settings in the same fix, not in a second one after (none when sysctl.arp already found it)."""
    if not any(addressing.values()) or any(r.id == ARP and r.status is not CheckStatus.SKIP for r in results):
        return []
    planned = {}
    for node, facts in data.facts.items():
        wanted = {op.target: tuple(op.value.split()) for op in addressing.get(node, ())}
        netdevs = tuple(replace(d, ipv4=wanted.get(d.name, d.ipv4)) for d in facts.netdevs)
        planned[node] = replace(facts, netdevs=netdevs)
    foreseen = sysctl_arp(CheckInput(planned, data.cabling))
    return [foreseen] if foreseen.status is CheckStatus.WARN else []


def _file_ops(facts: NodeFacts, results: Sequence[CheckResult]) -> tuple[list[Operation], list[str]]:
    ops: list[Operation] = []
    notes: list[str] = []
    written: set[str] = set()
    for found in results:
        if found.status not in (CheckStatus.FAIL, CheckStatus.WARN) or found.id not in APPLIED:
            continue
        for fix in (f for f in found.fixes if f.node == facts.node):
            for path, content in fix.files:
                if path in written:
                    continue
                written.add(path)
                if path.startswith(NETPLAN_DIR) and facts.netplan is not True:
                    notes.append(f"{path} not written: this node does not use netplan ({_why(facts.netplan)})")
                    continue
                if facts.config_files.get(path) != content:
                    ops.append(Operation("file", path, content, found.id))
                if path.startswith(SYSCTL_DIR):
                    live, skipped = _sysctl_ops(facts, content, found.id)
                    ops += live
                    if skipped:
                        notes.append(f"sysctl {', '.join(skipped)} skipped: {HOST_WIDE_REASON}")
    return ops, notes


def _sysctl_ops(facts: NodeFacts, content: str, reason: str) -> tuple[list[Operation], list[str]]:
    """Each line of a sysctl.d file that differs from the node's value, set now; on a node that is a network
    namespace of its own, the host-wide keys are left out (the kernel refuses them there) and returned."""
    namespaced = in_network_namespace(facts)
    ops: list[Operation] = []
    skipped: list[str] = []
    for key, value in sysctl_lines(content):
        if facts.sysctls.get(key) == value:
            continue
        if namespaced and key in HOST_WIDE_SYSCTLS:
            skipped.append(key)
        else:
            ops.append(Operation("sysctl", key, value, reason))
    return ops, skipped


def _why(value: bool | Unknown | None) -> str:
    return value.reason if isinstance(value, Unknown) else "no /etc/netplan"


@dataclass(frozen=True)
class NodePlan:
    operations: list[Operation]
    notes: list[str]  # what the plan leaves out on this node, and why


def plan_nodes(data: CheckInput, results: Sequence[CheckResult]) -> dict[str, NodePlan]:
    """Each node's operations, from the facts and the checks' results (files first, then the live changes)."""
    failing = {r.id for r in results if r.status in (CheckStatus.FAIL, CheckStatus.WARN)}
    plans: dict[str, NodePlan] = {}
    routes = missing_routes(data) if ROUTES in failing else {}  # after the addresses and links they leave by
    readdress = next((r for r in (SUBNETS, HALVES) if r in failing), None)
    addressing = {node: _address_ops(data, node, readdress) for node in data.facts} if readdress else {}
    results = [*results, *_foreseen(data, results, addressing)]
    for node in sorted(data.facts):
        facts = data.facts[node]
        ops, notes = _file_ops(facts, results)
        ops += addressing.get(node, [])
        ops += [op for op in _link_ops(facts) if op.reason in failing]
        ops += [Operation("route", r.dst, r.value, ROUTES, network=True) for r in routes.get(node, [])]
        if ops or notes:
            plans[node] = NodePlan(ops, notes)
    return plans


def plan(data: CheckInput, results: Sequence[CheckResult]) -> dict[str, list[Operation]]:
    return {node: p.operations for node, p in plan_nodes(data, results).items() if p.operations}


def file_diff(path: str, before: str | None, after: str) -> list[str]:
    """A unified diff of a planned file against what the node has now."""
    old = (before or "").splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    label = path if before is not None else "/dev/null"
    return [line.rstrip("\n") for line in difflib.unified_diff(old, new, label, path)]


@dataclass
class FixPlan:
    """What `fix` would change per node, the files each node has now (to diff against), and what it leaves out."""

    operations: dict[str, list[Operation]]
    current: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    unprivileged: tuple[str, ...] = ()  # nodes whose agent did not run as root (no --become)
    sources: dict[str, str] = field(default_factory=dict)  # a revert: where each node's old values come from
    reverts: dict[str, str] = field(default_factory=dict)  # a revert: the journal (token) it undoes, per node
    unread: tuple[str, ...] = ()  # nodes that could not be read: the plan leaves them out
