"""The emulated cluster as data: nodes, interfaces, cables, subnets and addresses. Pure; no system access.

Names and cabling follow the DGX Spark (shared research, spark-facts sections 1-2): each node has a management
interface `enP7s7` and two 200G ports, each seen by Linux as two ~100G PCIe halves. Each half is its own link to
the peer's matching half, shaped to `half_rate_bps`, and its own subnet, as NVIDIA's current playbooks address
them. Addresses stay inside 198.18.0.0/15 (RFC 2544 benchmarking space): management 198.18.K.0/24, fabric
198.19.S.0/24.

`as_shipped` lays the fabric out as a Spark comes out of the box with NVIDIA's connect-two-sparks netplan
(`link-local: [ ipv4 ]` on `enp1s0f0np0` and `enp1s0f1np1` only): the PCI-domain-0000 half of each cabled port has
an IPv4 link-local address (169.254.S+1.N/16, one /16 shared by every such half, as IPv4LL gives them), its twin
only the IPv6 link-local address the kernel gives every interface, and the MTU is 1500.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from wirespeed.core.errors import UsageError
from wirespeed.testbed.account import SudoMode, parse_sudo, validate_user

# (port, half) -> interface name. Half 0 is PCI domain 0000, half 1 is domain 0002 (spark-facts 2.1).
FABRIC_IFACES: dict[tuple[int, int], str] = {
    (0, 0): "enp1s0f0np0",
    (0, 1): "enP2p1s0f0np0",
    (1, 0): "enp1s0f1np1",
    (1, 1): "enP2p1s0f1np1",
}
MGMT_IFACE = "enP7s7"
SWITCH_BRIDGE = "br0"
MGMT_BRIDGE = "br0"
_PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,7}-?$")
MAX_NODES = 16
MIN_RING, MAX_RING = 3, 8  # past three, pairs that share no cable reach each other through relays


class Topology(StrEnum):
    DIRECT = "direct"
    RING = "ring"
    SWITCH = "switch"


@dataclass(frozen=True)
class Endpoint:
    """One end of a link: a namespace and an interface in it."""

    netns: str
    iface: str


@dataclass(frozen=True)
class FabricIface:
    """A fabric half on a node, with where its cable goes (None when the port is not cabled)."""

    node: str
    name: str
    port: int
    half: int
    mac: str
    address: str | None  # CIDR, e.g. 198.19.2.1/24
    peer: Endpoint | None  # the far end of its link (a node's half, or a switch port)
    placeholder: Endpoint | None = None  # where the unplugged end of an uncabled half lives

    @property
    def cabled(self) -> bool:
        return self.peer is not None


@dataclass(frozen=True)
class NodePlan:
    name: str
    index: int  # 1-based
    mgmt_address: str  # CIDR
    mgmt_mac: str
    mgmt_bridge_port: str  # the node's management cable end, in the management namespace
    fabric: tuple[FabricIface, ...]

    def iface(self, name: str) -> FabricIface:
        for item in self.fabric:
            if item.name == name:
                return item
        raise UsageError(
            f"{self.name} has no fabric interface {name!r}",
            hint=f"fabric interfaces are {', '.join(i.name for i in self.fabric)}",
        )


@dataclass(frozen=True)
class SwitchPort:
    name: str
    node: str
    node_iface: str


@dataclass(frozen=True)
class TestbedPlan:
    """Everything `testbed up` builds, and everything `testbed down` must remove."""

    prefix: str
    topology: Topology
    cables: int
    half_rate_bps: int  # 0: not shaped (`--half-rate none`), the CPU is the ceiling
    mtu: int
    switch_mtu: int
    mgmt_index: int
    nodes: tuple[NodePlan, ...]
    switch_ports: tuple[SwitchPort, ...]
    miswire: bool = False
    mdns: bool = False  # every node announces ssh over mDNS (avahi), as a Spark does
    user: str | None = None  # the nodes' own account that ssh logs in as (testbed/account.py); None: root
    sudo: str = "password"  # with `user`: how its sudo asks (account.SudoMode)
    as_shipped: bool = False  # link-local on one half of each port, the twin IPv6 link-local only (module docstring)

    @property
    def login_user(self) -> str:
        return self.user or "root"

    @property
    def mgmt_netns(self) -> str:
        return f"{self.prefix}mgmt"

    @property
    def switch_netns(self) -> str | None:
        return f"{self.prefix}switch" if self.topology is Topology.SWITCH else None

    @property
    def namespaces(self) -> tuple[str, ...]:
        extra = (self.switch_netns,) if self.switch_netns else ()
        return (*(n.name for n in self.nodes), self.mgmt_netns, *extra)

    @property
    def mgmt_subnet(self) -> str:
        return f"198.18.{self.mgmt_index}.0/24"

    @property
    def host_mgmt_address(self) -> str:
        return f"198.18.{self.mgmt_index}.1/24"

    @property
    def host_iface(self) -> str:
        return host_iface_name(self.prefix)

    def node(self, name: str) -> NodePlan:
        for node in self.nodes:
            if node.name == name:
                return node
        raise UsageError(f"no node {name!r} in testbed {self.prefix!r}", hint=f"nodes are {self.node_names}")

    @property
    def node_names(self) -> str:
        return ", ".join(n.name for n in self.nodes)

    def switch_port(self, name: str) -> SwitchPort:
        for port in self.switch_ports:
            if port.name == name:
                return port
        names = ", ".join(p.name for p in self.switch_ports) or "none (no switch in this topology)"
        raise UsageError(f"switch has no port {name!r}", hint=f"switch ports are {names}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def host_iface_name(prefix: str) -> str:
    """The management link's end on the controller; unique per prefix and at most 15 characters."""
    return "wsm" + hashlib.sha256(prefix.encode()).hexdigest()[:8]


def plan_from_json(data: dict[str, Any]) -> TestbedPlan:
    """Rebuild a plan from `to_json` output (the testbed's state file)."""

    def endpoint(raw: dict[str, str] | None) -> Endpoint | None:
        return Endpoint(**raw) if raw else None

    nodes = tuple(
        NodePlan(
            name=n["name"],
            index=n["index"],
            mgmt_address=n["mgmt_address"],
            mgmt_mac=n["mgmt_mac"],
            mgmt_bridge_port=n["mgmt_bridge_port"],
            fabric=tuple(
                FabricIface(
                    **{k: v for k, v in f.items() if k not in ("peer", "placeholder")},
                    peer=endpoint(f["peer"]),
                    placeholder=endpoint(f.get("placeholder")),
                )
                for f in n["fabric"]
            ),
        )
        for n in data["nodes"]
    )
    return TestbedPlan(
        prefix=data["prefix"],
        topology=Topology(data["topology"]),
        cables=data["cables"],
        half_rate_bps=data["half_rate_bps"],
        mtu=data["mtu"],
        switch_mtu=data["switch_mtu"],
        mgmt_index=data["mgmt_index"],
        nodes=nodes,
        switch_ports=tuple(SwitchPort(**p) for p in data["switch_ports"]),
        miswire=bool(data.get("miswire", False)),
        mdns=bool(data.get("mdns", False)),
        user=data.get("user"),
        sudo=str(data.get("sudo", "password")),
        as_shipped=bool(data.get("as_shipped", False)),
    )


def _mac(node_index: int, slot: int) -> str:
    # Locally administered (02:...), unique per node and interface, stable across runs.
    return f"02:57:53:{node_index:02x}:{slot:02x}:01"


def validate_prefix(prefix: str) -> str:
    if not _PREFIX_RE.fullmatch(prefix):
        raise UsageError(
            f"testbed prefix {prefix!r} is not valid",
            hint="use 1-8 lower-case letters or digits, starting with a letter, optionally ending in '-'",
        )
    return prefix


def make_plan(
    *,
    prefix: str = "spark-",
    nodes: int = 2,
    topology: Topology = Topology.DIRECT,
    cables: int = 1,
    half_rate_bps: int = 10**9,
    mtu: int = 9000,
    switch_mtu: int | None = None,
    mgmt_index: int = 0,
    miswire: bool = False,
    mdns: bool = False,
    user: str | None = None,
    sudo: str | None = None,
    as_shipped: bool = False,
) -> TestbedPlan:
    """Lay out a testbed. Raises `UsageError` for combinations that cannot be cabled."""
    validate_prefix(prefix)
    if cables not in (1, 2):
        raise UsageError(f"--cables must be 1 or 2, got {cables}")
    if half_rate_bps < 0:
        raise UsageError(f"half rate {half_rate_bps} bit/s is negative", hint="use 1gbit, or none for unshaped halves")
    if not 68 <= mtu <= 65535:
        raise UsageError(f"--mtu {mtu} is out of range", hint="use 1500 or 9000")
    if switch_mtu is not None and not 68 <= switch_mtu <= 65535:
        raise UsageError(f"--switch-mtu {switch_mtu} is out of range", hint="use 1500 or 9000")
    if user is not None:
        validate_user(user)
    if sudo is not None and user is None:
        raise UsageError("--sudo needs --user NAME", hint="root's sudo asks nothing: give the nodes an account")
    sudo_mode = parse_sudo(sudo or SudoMode.PASSWORD.value)
    if not 0 <= mgmt_index <= 255:
        raise UsageError(f"management index {mgmt_index} is out of range 0-255")
    if topology is Topology.DIRECT and nodes != 2:
        raise UsageError(f"a direct topology has exactly 2 nodes, not {nodes}", hint="use --topology switch for more")
    if topology is Topology.RING and not MIN_RING <= nodes <= MAX_RING:
        raise UsageError(
            f"a ring has {MIN_RING} to {MAX_RING} nodes, not {nodes}",
            hint="two nodes are --topology direct; use --topology switch for more",
        )
    if topology is Topology.RING and cables != 2:
        cables = 2  # every ring node uses both ports: port 0 to the next node, port 1 to the previous one
    if topology is Topology.SWITCH and not 2 <= nodes <= MAX_NODES:
        raise UsageError(f"a switch testbed has 2 to {MAX_NODES} nodes, not {nodes}")

    names = [f"{prefix}{i}" for i in range(1, nodes + 1)]
    mgmt_ns = f"{prefix}mgmt"
    switch_ns = f"{prefix}switch"
    # (node index, port, half) -> (peer endpoint, subnet number S of 198.19.S.0/24)
    wiring: dict[tuple[int, int, int], tuple[Endpoint, int]] = {}
    switch_ports: list[SwitchPort] = []
    cabled_ports = (1,) if cables == 1 else (0, 1)

    if topology is Topology.DIRECT:
        for port in cabled_ports:
            for half in (0, 1):
                iface = FABRIC_IFACES[(port, half)]
                subnet = 2 * port + half
                wiring[(1, port, half)] = (Endpoint(names[1], iface), subnet)
                wiring[(2, port, half)] = (Endpoint(names[0], iface), subnet)
    elif topology is Topology.RING:
        # Cable c joins node c's port 0 to node c+1's port 1 (the connect-three-sparks playbook), the last node's
        # back to node 1; each half of each cable is its own subnet, 198.19.(2c+half).0/24.
        for cable in range(nodes):
            a, b = cable + 1, (cable + 1) % nodes + 1
            for half in (0, 1):
                subnet = 2 * cable + half
                wiring[(a, 0, half)] = (Endpoint(names[b - 1], FABRIC_IFACES[(1, half)]), subnet)
                wiring[(b, 1, half)] = (Endpoint(names[a - 1], FABRIC_IFACES[(0, half)]), subnet)
    else:
        for index in range(1, nodes + 1):
            for port in cabled_ports:
                for half in (0, 1):
                    name = f"n{index}p{port}h{half}"
                    switch_ports.append(SwitchPort(name, names[index - 1], FABRIC_IFACES[(port, half)]))
                    wiring[(index, port, half)] = (Endpoint(switch_ns, name), 2 * port + half)

    if miswire:
        # Node 2's ports swapped: what should reach its port 0 lands on port 1 and the reverse (cross-cabling).
        def swap(key: tuple[int, int, int]) -> tuple[int, int, int]:
            return (key[0], 1 - key[1], key[2]) if key[0] == 2 else key

        def swap_end(end: Endpoint) -> Endpoint:
            if end.netns != names[1]:
                return end
            port, half = next(k for k, v in FABRIC_IFACES.items() if v == end.iface)
            return Endpoint(end.netns, FABRIC_IFACES[(1 - port, half)])

        wiring = {swap(key): (swap_end(peer), subnet) for key, (peer, subnet) in wiring.items()}
        switch_ports = [
            SwitchPort(p.name, p.node, swap_end(Endpoint(p.node, p.node_iface)).iface) for p in switch_ports
        ]

    node_plans: list[NodePlan] = []
    for index, name in enumerate(names, start=1):
        fabric: list[FabricIface] = []
        for slot, ((port, half), iface) in enumerate(sorted(FABRIC_IFACES.items()), start=1):
            wired = wiring.get((index, port, half))
            fabric.append(
                FabricIface(
                    node=name,
                    name=iface,
                    port=port,
                    half=half,
                    mac=_mac(index, slot),
                    address=_address(wired[1], index, half, as_shipped) if wired else None,
                    peer=wired[0] if wired else None,
                    placeholder=None if wired else Endpoint(mgmt_ns, f"u{index}p{port}h{half}"),
                )
            )
        node_plans.append(
            NodePlan(
                name=name,
                index=index,
                mgmt_address=f"198.18.{mgmt_index}.{10 + index}/24",
                mgmt_mac=_mac(index, 0),
                mgmt_bridge_port=f"m{index}",
                fabric=tuple(fabric),
            )
        )
    return TestbedPlan(
        prefix=prefix,
        topology=topology,
        cables=cables,
        half_rate_bps=half_rate_bps,
        mtu=mtu,
        switch_mtu=switch_mtu if switch_mtu is not None else mtu,
        mgmt_index=mgmt_index,
        nodes=tuple(node_plans),
        switch_ports=tuple(switch_ports),
        miswire=miswire,
        mdns=mdns,
        user=user,
        sudo=sudo_mode.value,
        as_shipped=as_shipped,
    )


def _address(subnet: int, node_index: int, half: int, as_shipped: bool) -> str | None:
    """A cabled half's IPv4 address: its own 198.19.S.0/24; as shipped, link-local on half 0 and none on half 1."""
    if not as_shipped:
        return f"198.19.{subnet}.{node_index}/24"
    return f"169.254.{subnet + 1}.{node_index}/16" if half == 0 else None


def links(plan: TestbedPlan) -> list[tuple[Endpoint, Endpoint]]:
    """Each cabled half once, as (this end, far end); node-to-node links are listed from the lower node."""
    seen: set[frozenset[tuple[str, str]]] = set()
    result: list[tuple[Endpoint, Endpoint]] = []
    for node in plan.nodes:
        for iface in node.fabric:
            if iface.peer is None:
                continue
            here = Endpoint(node.name, iface.name)
            key = frozenset({(here.netns, here.iface), (iface.peer.netns, iface.peer.iface)})
            if key not in seen:
                seen.add(key)
                result.append((here, iface.peer))
    return result
