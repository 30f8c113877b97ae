"""The RDMA rungs, planned: one perftest pair per fabric half, each side with its own device, port and GID. Pure.

The GID index is looked up per device, not pinned: it is the RoCE v2 GID
whose IPv4-mapped address (::ffff:a.b.c.d) is the half's own address on that netdev; IPv6 addresses shift it (3 on
one node, 7 on the other is real), and perftest's default picks the link-local GID. InfiniBand needs no `-x`.
perftest's command lines and its output read back live in `wirespeed.core.tools.perftest`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from wirespeed.core.fabric.cabling import CablingMap
from wirespeed.core.fabric.facts import NodeFacts, RdmaDevice, RdmaPort, Unknown
from wirespeed.core.ladder import flows_between
from wirespeed.core.records.results import Flow, NotRunnable
from wirespeed.core.tools import perftest

GID_FIX = "wirespeed check --only gid.rocev2"
RDMA_FIX = "RDMA NICs (RoCE or InfiniBand) with their driver loaded (mlx5_ib), then `wirespeed discover`"
PERFTEST_FIX = perftest.INSTALL_HINT


@dataclass(frozen=True)
class RdmaOptions:
    qps: int = 8  # one QP cannot fill a half; NVIDIA's figures are with several
    seconds: int = 5
    size_bytes: int = 65536  # bandwidth message size
    bidir: bool = False
    lat_iterations: int = 1000
    lat_size_bytes: int = 2
    test: str = "write"  # write (ib_write_*) or send (ib_send_*)

    def __post_init__(self) -> None:
        if self.test not in perftest.TESTS:
            raise ValueError(f"RDMA test {self.test!r}: one of {', '.join(perftest.TESTS)}")
        numbers = {
            "qps": self.qps,
            "seconds": self.seconds,
            "size_bytes": self.size_bytes,
            "lat_iterations": self.lat_iterations,
            "lat_size_bytes": self.lat_size_bytes,
        }
        low = [f"{name} {value}" for name, value in numbers.items() if value < 1]
        if low:
            raise ValueError(f"RDMA options must be positive: {', '.join(low)}")


@dataclass(frozen=True)
class RdmaEnd:
    """One side of a pair: the half (node, netdev, its IPv4) and what perftest gets for it there."""

    node: str
    iface: str
    address: str
    device: str
    port: int
    gid_index: int | None  # None on an InfiniBand link layer (no -x)


@dataclass(frozen=True)
class RdmaPair:
    flow: Flow
    client: RdmaEnd
    server: RdmaEnd


def _mapped_ipv4(text: str) -> str | None:
    """The IPv4 address of an IPv4-mapped GID (0000:...:ffff:c0a8:640a), None for any other GID."""
    try:
        mapped = ipaddress.IPv6Address(text).ipv4_mapped
    except ValueError:
        return None
    return None if mapped is None else str(mapped)


def _device(facts: NodeFacts, iface: str) -> RdmaDevice | None:
    netdev = facts.netdev(iface)
    names = netdev.rdma_devices if netdev is not None else ()
    return next((d for d in facts.rdma if iface in d.netdevs or d.name in names), None)


def _port(device: RdmaDevice, iface: str) -> RdmaPort | None:
    """The port that carries `iface`: the one whose GIDs name it, else the device's only (or first active) port."""
    bound = [p for p in device.ports if any(g.ndev == iface for g in p.gids)]
    ports = bound or sorted(device.ports, key=lambda p: (p.state != "ACTIVE", p.number))
    return ports[0] if ports else None


def _end(facts: NodeFacts, iface: str, address: str) -> RdmaEnd | NotRunnable:
    where = f"{facts.node} {iface}"
    device = _device(facts, iface)
    if device is None:
        return NotRunnable(f"{where}: no RDMA device", RDMA_FIX)
    port = _port(device, iface)
    if port is None:
        return NotRunnable(f"{where}: {device.name} has no port", RDMA_FIX)
    if isinstance(port.state, str) and port.state != "ACTIVE":
        return NotRunnable(
            f"{where}: {device.name} port {port.number} is {port.state}",
            f"bring {iface} up on {facts.node} (cable, `ip link set {iface} up`), then `wirespeed discover`",
        )
    if port.link_layer == "InfiniBand":
        return RdmaEnd(facts.node, iface, address, device.name, port.number, None)
    found = sorted(
        g.index
        for g in port.gids
        if g.type == "RoCE v2" and g.ndev in (None, iface) and address in (g.ipv4, _mapped_ipv4(g.gid))
    )
    if not found:
        return NotRunnable(f"{where}: no RoCE v2 GID for {address} ({device.name} port {port.number})", GID_FIX)
    return RdmaEnd(facts.node, iface, address, device.name, port.number, found[0])


def _no_rdma(facts: Mapping[str, NodeFacts], nodes: tuple[str, str]) -> NotRunnable | None:
    def detail(node: str) -> str:
        reason = facts[node].rdma_absent_reason or "none found"
        return reason.removeprefix("no RDMA devices: ")

    lacking = [n for n in nodes if not facts[n].rdma]
    if len(lacking) == len(nodes):
        shown = "; ".join(f"{n}: {detail(n)}" for n in lacking)
        return NotRunnable(f"no RDMA devices on the nodes ({shown})", RDMA_FIX)
    if lacking:
        return NotRunnable(f"{lacking[0]}: no RDMA devices ({detail(lacking[0])})", RDMA_FIX)
    return None


def plan_rdma(
    facts: Mapping[str, NodeFacts], cabling: CablingMap, client: str, server: str, options: RdmaOptions
) -> list[RdmaPair] | NotRunnable:
    """A perftest pair per addressed, linked half between `client` and `server` (in port order), or exactly why
    the RDMA rungs cannot run and what would fix it."""
    absent = _no_rdma(facts, (client, server))
    if absent is not None:
        return absent
    for node in (client, server):
        tool = next((t for t in facts[node].tools if t.name == "perftest"), None)
        if tool is None or not isinstance(tool.version, str):
            why = tool.version.reason if tool is not None and isinstance(tool.version, Unknown) else "not looked for"
            return NotRunnable(f"{node}: perftest not found ({why})", PERFTEST_FIX)
    if options.bidir and options.test == "send":
        # send_bw.c: in duration mode with -b it prints its own side only and exchanges no report with the peer.
        return NotRunnable(
            "ib_send_bw -b -D reports one side only (perftest exchanges no reports in duration mode)",
            "use the write test for both directions at once",
        )
    flows = flows_between(facts, cabling, client, server)
    if not flows:
        return NotRunnable(f"no addressed link between {client} and {server}", "wirespeed fix")
    pairs: list[RdmaPair] = []
    for flow in flows:
        a = _end(facts[client], flow.source[1], flow.source_address)
        if isinstance(a, NotRunnable):
            return a
        b = _end(facts[server], flow.target[1], flow.target_address)
        if isinstance(b, NotRunnable):
            return b
        pairs.append(RdmaPair(flow, a, b))
    return pairs


def _argv(end: RdmaEnd, options: RdmaOptions, tcp_port: int, lat: bool) -> list[str]:
    if lat:
        return perftest.lat_argv(
            test=options.test, device=end.device, ib_port=end.port, gid_index=end.gid_index, tcp_port=tcp_port,
            size_bytes=options.lat_size_bytes, iterations=options.lat_iterations,
        )  # fmt: skip
    return perftest.bw_argv(
        test=options.test, device=end.device, ib_port=end.port, gid_index=end.gid_index, tcp_port=tcp_port,
        qps=options.qps, size_bytes=options.size_bytes, seconds=options.seconds, bidir=options.bidir,
    )  # fmt: skip


def server_argv(pair: RdmaPair, options: RdmaOptions, tcp_port: int, lat: bool = False) -> list[str]:
    """The server side: its own device, port and GID index, the shared test parameters, no address."""
    return _argv(pair.server, options, tcp_port, lat)


def client_argv(pair: RdmaPair, options: RdmaOptions, tcp_port: int, lat: bool = False) -> list[str]:
    """The client side: the server's arguments with the client's own device, port and GID index, then the
    server half's IPv4 (perftest's out-of-band TCP connection goes there, over that half's subnet)."""
    return [*_argv(pair.client, options, tcp_port, lat), pair.server.address]
