"""The node's network as sysfs, ip, ethtool and tc show it: net devices, RDMA devices, which interface is the
management one and which are the fabric, the management radio, and the fabric NICs' offloads and shaping."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from wirespeed.adapters.source import NodeSource, Output
from wirespeed.core.fabric.facts import Gid, Netdev, RdmaDevice, RdmaPort, Unknown
from wirespeed.core.parsers import ethtool, hoststate
from wirespeed.core.parsers import sysfs_values as sv
from wirespeed.engine.probes.common import IP_ROUTE_MAIN, command, command_unknown, listdir, parsed, read, text
from wirespeed.engine.probes.hardware import bdf_of

NET = "/sys/class/net"
IB = "/sys/class/infiniband"
# Interfaces that are never fabric: bridges, containers, tunnels, wireless.
_NOT_FABRIC_PREFIXES = (
    "lo",
    "docker",
    "virbr",
    "br-",
    "veth",
    "vxlan",
    "tun",
    "tap",
    "wl",
    "cni",
    "flannel",
    "ifb",
    "dummy",
)


@dataclass(frozen=True)
class Rdma:
    """The RDMA devices, and why there are none (None where there are)."""

    devices: tuple[RdmaDevice, ...]
    absent_reason: str | None


@dataclass(frozen=True)
class ManagementRadio:
    """Whether the management interface is wireless, its power saving and NetworkManager's connection on it; a
    field not read (no management interface, or a wired one) stays "not read", as in `NodeFacts`."""

    wireless: bool | Unknown = field(default_factory=lambda: Unknown("not read"))
    power_save: str | Unknown = field(default_factory=lambda: Unknown("not read"))
    connection: str | Unknown = field(default_factory=lambda: Unknown("not read"))


@dataclass(frozen=True)
class NicState:
    """Per fabric interface: `ethtool -k` features {name: [on, fixed]}, `ethtool -S` counters and a rate-limiting
    root qdisc in bits/s; an interface whose reading failed is absent."""

    offloads: dict[str, dict[str, list[bool]]]
    counters: dict[str, dict[str, int]]
    shaped_bps: dict[str, int]


def interfaces(source: NodeSource) -> list[str]:
    """The net devices under /sys/class/net: each is a directory (a link to its device's `net/NAME`); a plain file
    there is a class attribute, such as the bonding driver's `bonding_masters` (drivers/net/bonding/bond_sysfs.c,
    `netdev_class_create_file_ns`), never an interface."""
    return [name for name in listdir(source, NET) if source.is_dir(f"{NET}/{name}")]


def addresses(source: NodeSource) -> sv.IpAddresses | Unknown:
    """Every interface's IPv4 and IPv6 addresses (`ip -j addr`)."""
    found = source.output("ip_addr", command(["ip", "-j", "addr", "show"]))
    return parsed("ip_addr", found, "ip -j addr", sv.ip_addr_json)


def netdev(source: NodeSource, name: str, addresses: sv.IpAddresses | Unknown) -> Netdev:
    """One net device: its link, addresses, kind (PCI, virtual, loopback), RDMA devices and driver (ethtool -i)."""
    base = f"{NET}/{name}"
    resolved = source.realpath(base)
    bdf = bdf_of(source, f"{base}/device") if "/devices/virtual/" not in resolved else None
    kind = (
        "loopback" if name == "lo" else ("virtual" if "/devices/virtual/" in resolved else ("pci" if bdf else "other"))
    )
    operstate = read(source, f"{base}/operstate", text, "operstate")
    carrier = read(source, f"{base}/carrier", _is_one, "carrier")
    if isinstance(carrier, Unknown) and operstate == "down":
        carrier = Unknown("interface is administratively down")
    speed = read(source, f"{base}/speed", int, "speed")
    if isinstance(speed, int) and speed < 0:
        speed = Unknown("no link (speed -1)")
    info = source.output(f"ethtool_i_{name}", command(["ethtool", "-i", name]))
    details = sv.ethtool_info(info.stdout) if info.ok else {}
    driver: str | Unknown = details.get("driver") or command_unknown(f"ethtool_i_{name}", info, "ethtool -i")
    firmware: str | Unknown = details.get("firmware-version") or Unknown("the driver reports no firmware version")
    return Netdev(
        name=name,
        operstate=operstate,
        carrier=carrier,
        speed_mbps=speed,
        mtu=read(source, f"{base}/mtu", int, "MTU"),
        mac=read(source, f"{base}/address", text, "MAC"),
        ipv4=addresses.ipv4.get(name, ()) if isinstance(addresses, sv.IpAddresses) else (),
        ipv6=addresses.ipv6.get(name, ()) if isinstance(addresses, sv.IpAddresses) else (),
        kind=kind,
        link_type=read(source, f"{base}/type", int, "link type"),
        pci=bdf,
        rdma_devices=tuple(listdir(source, f"{base}/device/infiniband")) if bdf else (),
        driver=driver,
        firmware=firmware if details else Unknown("ethtool -i gave nothing"),
    )


def _is_one(value: str) -> bool:
    return value == "1"


def ipv4_by_netdev(netdevs: Sequence[Netdev]) -> dict[str, set[str]]:
    """Each net device's IPv4 addresses without their prefix: what a RoCE v2 GID must match."""
    return {n.name: {a.split("/")[0] for a in n.ipv4} for n in netdevs}


def rdma_port(source: NodeSource, base: str, number: int, v4: dict[str, set[str]]) -> RdmaPort:
    """One RDMA port: its state, rate, link layer, GIDs and the RoCE v2 GID of its netdev's IPv4 address."""
    rate = read(source, f"{base}/rate", sv.port_rate, "rate")
    gids: list[Gid] = []
    for index_text in listdir(source, f"{base}/gids"):
        if not index_text.isdigit():
            continue
        gid = read(source, f"{base}/gids/{index_text}", text, "GID")
        if isinstance(gid, Unknown) or gid in sv.EMPTY_GIDS:
            continue
        gid_type = read(source, f"{base}/gid_attrs/types/{index_text}", sv.gid_type, "GID type")
        ndev = read(source, f"{base}/gid_attrs/ndevs/{index_text}", text, "GID netdev")
        gids.append(
            Gid(
                index=int(index_text),
                gid=gid,
                type=None if isinstance(gid_type, Unknown) else gid_type,
                ndev=None if isinstance(ndev, Unknown) else ndev,
                ipv4=sv.gid_ipv4(gid),
            )
        )
    gids.sort(key=lambda g: g.index)
    index = sv.rocev2_ipv4_index([(g.index, g.gid, g.type, g.ndev) for g in gids], v4)
    link_layer = read(source, f"{base}/link_layer", text, "link layer")
    rocev2: int | Unknown
    if index is not None:
        rocev2 = index
    elif link_layer == "InfiniBand":
        rocev2 = Unknown("InfiniBand link layer: no RoCE GIDs")
    else:
        rocev2 = Unknown("no RoCE v2 GID with an IPv4 address of its netdev (is the interface addressed?)")
    return RdmaPort(
        number=number,
        state=read(source, f"{base}/state", sv.port_state, "port state"),
        phys_state=read(source, f"{base}/phys_state", sv.port_state, "physical state"),
        rate=read(source, f"{base}/rate", text, "rate"),
        rate_gbps=rate.gbps if isinstance(rate, sv.Rate) else rate,
        link_layer=link_layer,
        gids=tuple(gids),
        rocev2_ipv4_index=rocev2,
    )


def rdma(source: NodeSource, v4: dict[str, set[str]]) -> Rdma:
    """The RDMA devices under /sys/class/infiniband, or why there are none."""
    if not source.exists(IB):
        reason = "no RDMA devices: /sys/class/infiniband does not exist"
        if source.emulated:
            reason += " (emulated cluster: its links are macvlan or veth, not ConnectX)"
        return Rdma((), reason)
    devices: list[RdmaDevice] = []
    for name in listdir(source, IB):
        base = f"{IB}/{name}"
        bdf = bdf_of(source, f"{base}/device")
        ports = [
            rdma_port(source, f"{base}/ports/{p}", int(p), v4) for p in listdir(source, f"{base}/ports") if p.isdigit()
        ]
        devices.append(
            RdmaDevice(
                name=name,
                netdevs=tuple(listdir(source, f"{base}/device/net")) if bdf else (),
                pci=bdf,
                fw_ver=read(source, f"{base}/fw_ver", text, "firmware"),
                node_guid=read(source, f"{base}/node_guid", text, "node GUID"),
                ports=tuple(ports),
            )
        )
    return Rdma(tuple(devices), None if devices else "no RDMA devices: /sys/class/infiniband is empty")


def with_rdma_devices(netdevs: Sequence[Netdev], devices: Sequence[RdmaDevice]) -> list[Netdev]:
    """The net devices with the RDMA devices that name them added: the netdev's own list can be empty (IPoIB child
    devices), so the RDMA side is trusted too."""
    found = list(netdevs)
    for device in devices:
        for name in device.netdevs:
            for i, netdev in enumerate(found):
                if netdev.name == name and device.name not in netdev.rdma_devices:
                    found[i] = dataclasses.replace(netdev, rdma_devices=(*netdev.rdma_devices, device.name))
    return found


def _environ(name: str) -> Output:
    return Output(0, os.environ.get(name, ""))


def management(source: NodeSource, netdevs: Sequence[Netdev]) -> str | Unknown:
    """The interface of the ssh session's server address, else the one that reaches the host srun started this
    job step from, else that of the default route."""
    session = source.output("ssh_connection", lambda: _environ("SSH_CONNECTION"))
    parts = session.stdout.split()
    if len(parts) == 4:
        for netdev in netdevs:
            if any(address.split("/")[0] == parts[2] for address in netdev.ipv4 + netdev.ipv6):
                return netdev.name
    launch = source.output("slurm_launch_node", lambda: _environ("SLURM_LAUNCH_NODE_IPADDR"))
    launch_address = launch.stdout.strip()
    if launch.ok and launch_address:
        towards = source.output("slurm_launch_route", command(["ip", "-j", "route", "get", launch_address]))
        if towards.ok:
            with contextlib.suppress(ValueError):
                device = sv.route_get_iface(towards.stdout)
                if device and device != "lo":
                    return device
    route = source.output("ip_route", command(IP_ROUTE_MAIN))
    if route.ok:
        try:
            device = sv.default_route_iface(route.stdout)
        except ValueError:
            device = None
        if device:
            return device
    return Unknown("no ssh session address, no Slurm launch node and no default route")


def _is_fabric_candidate(source: NodeSource, netdev: Netdev, management: str | Unknown) -> bool:
    if netdev.name == management or netdev.kind == "loopback":
        return False
    if netdev.name.startswith(_NOT_FABRIC_PREFIXES) or source.exists(f"{NET}/{netdev.name}/bridge"):
        return False
    return netdev.link_type in (1, 32)  # Ethernet or IPoIB


def fabric(source: NodeSource, netdevs: Sequence[Netdev], management: str | Unknown) -> list[Netdev]:
    """The fabric interfaces: those with RDMA devices other than the management one; without any, every Ethernet or
    IPoIB interface that is no bridge, container, tunnel or radio."""
    with_rdma = [n for n in netdevs if n.rdma_devices and n.name != management]
    return with_rdma or [n for n in netdevs if _is_fabric_candidate(source, n, management)]


def management_radio(source: NodeSource, management: str | Unknown) -> ManagementRadio:
    """Whether the management interface is wireless, its power saving (iw) and its NetworkManager connection."""
    if isinstance(management, Unknown):
        return ManagementRadio()
    base = f"{NET}/{management}"
    wireless = (
        source.exists(f"{base}/wireless") or source.exists(f"{base}/phy80211") or management.startswith("wl")
    )  # cfg80211 links phy80211; systemd names WLAN interfaces wl*
    if not wireless:
        return ManagementRadio(wireless=False)
    power_key, connection_key = f"iw_power_save_{management}", f"nmcli_connection_{management}"
    iw = source.output(power_key, command(["iw", "dev", management, "get", "power_save"]))
    nmcli = source.output(connection_key, command(["nmcli", "-g", "GENERAL.CONNECTION", "device", "show", management]))
    connection: str | Unknown = (
        (nmcli.stdout.strip() or Unknown("NetworkManager holds no connection on it"))
        if nmcli.ok
        else command_unknown(connection_key, nmcli, "nmcli")
    )
    return ManagementRadio(
        wireless=True, power_save=parsed(power_key, iw, "iw", hoststate.iw_power_save), connection=connection
    )


def nic_state(source: NodeSource, fabric: Sequence[str]) -> NicState:
    """The fabric interfaces' offloads and counters (ethtool -k, -S) and any shaping root qdisc (tc)."""
    offloads: dict[str, dict[str, list[bool]]] = {}
    counters: dict[str, dict[str, int]] = {}
    for iface in fabric:
        features = source.output(f"ethtool_k_{iface}", command(["ethtool", "-k", iface]))
        if features.ok:
            with contextlib.suppress(ValueError):
                offloads[iface] = {k: [on, fixed] for k, (on, fixed) in ethtool.parse_features(features.stdout).items()}
        stats = source.output(f"ethtool_S_{iface}", command(["ethtool", "-S", iface]))
        if stats.ok:
            with contextlib.suppress(ValueError):
                counters[iface] = ethtool.parse_stats(stats.stdout)
    shaped: dict[str, int] = {}
    for iface in fabric:
        qdisc = source.output(f"tc_qdisc_{iface}", command(["tc", "-j", "qdisc", "show", "dev", iface]))
        if qdisc.ok:
            with contextlib.suppress(ValueError):
                rate = sv.tc_shaped_bps(qdisc.stdout)
                if rate is not None:
                    shaped[iface] = rate
    return NicState(offloads=offloads, counters=counters, shaped_bps=shaped)
