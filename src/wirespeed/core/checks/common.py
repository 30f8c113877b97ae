"""Small helpers the checks share: which halves are cabled, which RDMA port backs a netdev, address tests."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from wirespeed.core.fabric.facts import Netdev, NodeFacts, PhysicalPort, RdmaDevice, RdmaPort

LINK_LOCAL_V4 = ipaddress.IPv4Network("169.254.0.0/16")
ARPHRD_INFINIBAND = 32
RECOMMENDED_MTU = 9000
FIND_ENV = "grep -n {var} ~/.bashrc ~/.profile ~/.ssh/environment /etc/environment 2>/dev/null   # where it is set"


def fabric_netdevs(facts: NodeFacts) -> list[Netdev]:
    """The node's fabric interfaces that discovery found, in the order discovery lists them."""
    return [n for name in facts.fabric if (n := facts.netdev(name)) is not None]


def has_carrier(netdev: Netdev | None) -> bool:
    return netdev is not None and netdev.carrier is True


def cabled(facts: NodeFacts) -> list[Netdev]:
    """Fabric interfaces with carrier: a cable (or a switch port) at the far end."""
    return [n for n in fabric_netdevs(facts) if has_carrier(n)]


def cabled_ends(all_facts: Mapping[str, NodeFacts]) -> Iterator[tuple[str, Netdev]]:
    for node in sorted(all_facts):
        for netdev in cabled(all_facts[node]):
            yield node, netdev


def cabled_ports(facts: NodeFacts) -> list[PhysicalPort]:
    """Physical ports with at least one half that has carrier."""
    return [p for p in facts.ports if any(has_carrier(facts.netdev(h)) for h in p.halves)]


def is_ethernet(netdev: Netdev) -> bool:
    return netdev.link_type != ARPHRD_INFINIBAND


def is_link_local(cidr: str) -> bool:
    return ipaddress.IPv4Interface(cidr).ip in LINK_LOCAL_V4


def network(cidr: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Interface(cidr).network


def rdma_device(facts: NodeFacts, name: str) -> RdmaDevice | None:
    return next((d for d in facts.rdma if d.name == name), None)


def rdma_port(facts: NodeFacts, netdev: Netdev) -> RdmaPort | None:
    """The first port of the first RDMA device behind `netdev` (mlx5: one device per function, one port)."""
    for name in netdev.rdma_devices:
        device = rdma_device(facts, name)
        if device is not None and device.ports:
            return device.ports[0]
    return None


def rdma_devices_of(facts: NodeFacts, iface: str) -> tuple[str, ...]:
    """RDMA devices behind an interface, from the netdev and from the RDMA side."""
    netdev = facts.netdev(iface)
    names = list(netdev.rdma_devices) if netdev is not None else []
    names += [d.name for d in facts.rdma if iface in d.netdevs and d.name not in names]
    return tuple(names)


def port_label_of(facts: NodeFacts, iface: str) -> tuple[str, int] | None:
    """(port label, half index) of a fabric interface."""
    for port in facts.ports:
        if iface in port.halves:
            return port.label, port.halves.index(iface)
    return None


def any_rdma(all_facts: Mapping[str, NodeFacts]) -> bool:
    return any(f.rdma for f in all_facts.values())


def no_rdma_reason(all_facts: Mapping[str, NodeFacts]) -> str:
    reasons = sorted({f.rdma_absent_reason for f in all_facts.values() if f.rdma_absent_reason})
    return reasons[0] if len(reasons) == 1 else "no RDMA devices on any node"


def count(n: int, word: str) -> str:
    """`1 port`, `2 ports`, `2 halves`."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-1]}ves" if word.endswith("half") else f"{n} {word}s"


def joined(items: list[str], limit: int = 4) -> str:
    """`a, b, c and 2 more`: keeps summaries to one line."""
    if len(items) <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])} and {len(items) - limit} more"


@dataclass(frozen=True)
class NcclList:
    """An NCCL interface/HCA list (NCCL_IB_HCA, NCCL_SOCKET_IFNAME): `^` excludes, `=` matches exactly, else
    each item is a prefix; HCA items may carry `:port`."""

    exclude: bool
    exact: bool
    items: tuple[str, ...]

    @classmethod
    def parse(cls, value: str) -> NcclList:
        text = value.strip()
        exclude = text.startswith("^")
        text = text.removeprefix("^")
        exact = text.startswith("=")
        text = text.removeprefix("=")
        items = tuple(item.strip().split(":")[0] for item in text.split(",") if item.strip())
        return cls(exclude, exact, items)

    def item_matches(self, item: str, name: str) -> bool:
        return name == item if self.exact else name.startswith(item)

    def selects(self, name: str) -> bool:
        """Whether NCCL would use `name` under this list."""
        return any(self.item_matches(item, name) for item in self.items) != self.exclude
