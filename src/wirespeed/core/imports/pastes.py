"""What owners paste when they ask for help, read into the facts the checks look at. Pure: texts in, `NodeFacts` per
node out (each field a paste cannot fill stays Unknown), and which checks those facts allow.

A file is split at its prompts (wirespeed.core.parsers.paste); each output is told apart by its content, never by the
command before it (people paste `ip a` under `$ ip addr show`), and read by its own parser in core/parsers/. The
command only names what the output itself does not: the interface of `ethtool IFACE | grep Speed`, the function of
`lspci -vv -s BDF | grep LnkSta`. Each node is the host its prompt or NCCL's line prefix names, else the file.

Every line no parser read is kept with its line number and why (a prompt, a fence, `...`, a note, an output wirespeed
does not read), so an annotated or interleaved paste says what was skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from wirespeed.core.fabric import gdr
from wirespeed.core.fabric.facts import Gpu, Netdev, NodeFacts, PciFunction, RdmaDevice, RdmaPort, Unknown
from wirespeed.core.fabric.ports import group_ports, pci_address
from wirespeed.core.imports import pasted
from wirespeed.core.imports.rdma_tools import ibdev2netdev_devices
from wirespeed.core.parsers import (
    dmesg,
    ethtool_fec,
    ethtool_settings,
    ip_addr,
    ip_brief,
    lspci,
    nccl_info,
    nvidia_topo,
    rdma_tools,
)
from wirespeed.core.parsers.paste import Section, SkippedLine, split, unread

# The kinds this module reads, in the order detect() tries them (the most particular mark first).
KINDS = (
    "ethtool-fec",
    "ethtool",
    "lspci",
    "nvidia-smi-topo",
    "ip-addr",
    "ip-brief",
    "nccl-info",
    "kernel-log",
    "ibdev2netdev",
)
KIND_NAMES = {
    "ethtool-fec": "ethtool --show-fec",
    "ethtool": "ethtool IFACE",
    "lspci": "lspci -vv",
    "nvidia-smi-topo": "nvidia-smi topo -m",
    "ip-addr": "ip addr",
    "ip-brief": "ip -br addr / ip -br link",
    "nccl-info": "NCCL_DEBUG=INFO log",
    "kernel-log": "dmesg / journalctl -k",
    "ibdev2netdev": "ibdev2netdev",
}


def _looks_ibdev2netdev(text: str) -> bool:
    return rdma_tools.looks_like(text) == "ibdev2netdev"


_LOOKS: dict[str, Callable[[str], bool]] = {
    "ethtool-fec": ethtool_fec.looks_like,
    "ethtool": ethtool_settings.looks_like,
    "lspci": lspci.looks_like,
    "nvidia-smi-topo": nvidia_topo.looks_like,
    "ip-addr": ip_addr.looks_like,
    "ip-brief": ip_brief.looks_like,
    "nccl-info": nccl_info.looks_like,
    "kernel-log": dmesg.looks_like,
    "ibdev2netdev": _looks_ibdev2netdev,
}
_IFACE_ARG = re.compile(r"\bethtool\s+(?:-\S+\s+)*(?P<iface>[A-Za-z][\w.-]*)")
_BDF_ARG = re.compile(r"\s-s\s*(?P<bdf>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])")
# Spark's (and any mlx5 host's) udev names: RDMA `rocep1s0f1` / `roceP2p1s0f1` beside netdev `enp1s0f1np1`
_ROCE_NAME = re.compile(r"^roce(?P<path>[Pp]\w+)$")
_VIRTUAL = ("lo", "docker", "veth", "virbr", "br-", "tailscale", "tun", "tap", "wg", "cni", "flannel", "cali")


def detect(text: str) -> str | None:
    """Which of KINDS `text` is, told from its content; None when none."""
    for kind in KINDS:
        if _LOOKS[kind](text):
            return kind
    return None


@dataclass(frozen=True)
class Reading:
    """One output of a paste: its kind (None: no output wirespeed reads), the command and host its prompt named, the
    line it starts on, what its parser made of it, and the lines it read past."""

    file: str
    kind: str | None
    command: str | None
    host: str | None
    first_line: int
    parsed: Any
    skipped: tuple[SkippedLine, ...]
    numbers: tuple[int, ...] = ()  # the paste's line number of each line the parser was given

    def line_in_paste(self, line: int) -> int:
        """A parser's 1-based line as the paste's line number."""
        return self.numbers[line - 1] if 0 < line <= len(self.numbers) else line


def _parse(kind: str, text: str, command: str | None) -> Any:
    if kind == "ethtool":
        named = _IFACE_ARG.search(command or "")
        return ethtool_settings.parse(text, named["iface"] if named else None)
    if kind == "lspci":
        bdf = _BDF_ARG.search(command or "")
        value = bdf["bdf"].lower() if bdf else None
        return lspci.parse(text, value if value is None or value.count(":") == 2 else f"0000:{value}")
    if kind == "ibdev2netdev":
        return rdma_tools.read_ibdev2netdev(text)
    module = {
        "ethtool-fec": ethtool_fec,
        "nvidia-smi-topo": nvidia_topo,
        "ip-addr": ip_addr,
        "ip-brief": ip_brief,
        "nccl-info": nccl_info,
        "kernel-log": dmesg,
    }[kind]
    return module.parse(text)


def _read_lines(kind: str, parsed: Any, count: int) -> set[int]:
    if kind == "ibdev2netdev":  # its reader names what it skipped rather than what it read
        return set(range(1, count + 1)) - {s.line for s in parsed.skipped}
    return set(parsed.read)


def read_section(section: Section, file: str) -> Reading:
    """One section told apart and read; what it holds that its parser did not read is named."""
    kind = detect(section.text)
    if kind is None:
        return Reading(
            file, None, section.command, section.host, section.first_line, None, tuple(unread(section.lines, set()))
        )
    numbers = tuple(number for number, _ in section.lines)
    parsed = _parse(kind, section.text, section.command)
    read = _read_lines(kind, parsed, len(section.lines))
    why = f"not part of the {KIND_NAMES[kind]} output"
    skipped = tuple(unread(section.lines, read, why))
    return Reading(file, kind, section.command, section.host, section.first_line, parsed, skipped, numbers)


def read_text(text: str, file: str) -> tuple[list[Reading], list[SkippedLine]]:
    """Every output of one pasted file, and the lines between them that were read past (prompts, fences, `...`)."""
    paste = split(text)
    return [read_section(section, file) for section in paste.sections], list(paste.skipped)


# ----------------------------------------------------------------------------------------------------- facts

# What the pastes can fill, by area; a check runs when every area it reads was filled on some node.
ADDRESSES, CARRIER, MTU, SPEED, PCIE, KERNEL, NCCL_ENV, RDMA, GPUS = (
    "addresses",
    "carrier",
    "mtu",
    "link speed",
    "PCIe links",
    "kernel log",
    "NCCL environment",
    "RDMA devices",
    "GPUs",
)
AREA_SOURCES = {
    ADDRESSES: "ip addr or ip -br addr",
    CARRIER: "ip addr, ip -br link or ethtool IFACE",
    MTU: "ip addr",
    SPEED: "ethtool IFACE",
    PCIE: "lspci -vv of the NIC",
    KERNEL: "dmesg or journalctl -k",
    NCCL_ENV: "an NCCL_DEBUG=INFO log",
    RDMA: "an NCCL_DEBUG=INFO log, nvidia-smi topo -m or ibdev2netdev",
    GPUS: "nvidia-smi topo -m",
}
# Check id -> the areas it reads. A check not named here reads what no paste holds (a live node's sysctls, files,
# ssh, counters, the switch): it is listed as having nothing to read.
CHECK_AREAS: dict[str, tuple[str, ...]] = {
    "addr.subnets": (ADDRESSES,),
    "ipv6.fabric": (ADDRESSES,),
    "link.speed": (SPEED, CARRIER),
    "link.halves": (ADDRESSES, CARRIER),
    "mtu.host": (MTU, CARRIER),
    "pcie.width": (PCIE,),
    "power.slot": (KERNEL,),
    "nic.reprobe": (KERNEL,),
    "pcie.aer": (KERNEL,),
    "nccl.env": (NCCL_ENV, RDMA),
    "nccl.rails": (NCCL_ENV, RDMA, CARRIER),
}
NO_PASTE = "a live node or a snapshot (no pasted output holds it)"


@dataclass
class _Netdev:
    """What the pastes said of one interface so far; None: nothing (its NodeFacts field stays Unknown)."""

    operstate: str | None = None
    carrier: bool | None = None
    speed_mbps: int | Unknown | None = None  # Unknown: ethtool printed `Speed: Unknown!`
    mtu: int | None = None
    mac: str | None = None
    ipv4: tuple[str, ...] = ()
    ipv6: tuple[str, ...] = ()
    link_type: int | None = None


@dataclass
class _Rdma:
    """What the pastes said of one RDMA device so far."""

    netdevs: set[str] = field(default_factory=set)  # as ibdev2netdev mapped them
    link_layer: str | None = None
    port: int | None = None


@dataclass
class _Node:
    netdevs: dict[str, _Netdev] = field(default_factory=dict)
    pci: dict[str, lspci.PciDevice] = field(default_factory=dict)
    kernel: list[str] = field(default_factory=list)
    nccl: list[nccl_info.NcclHost] = field(default_factory=list)
    rdma: dict[str, _Rdma] = field(default_factory=dict)
    gpus: list[str] = field(default_factory=list)
    fec: dict[str, ethtool_fec.FecSetting] = field(default_factory=dict)
    asked: set[str] = field(default_factory=set)  # interfaces a paste asked about by name (ethtool IFACE)
    areas: set[str] = field(default_factory=set)

    def netdev(self, name: str) -> _Netdev:
        return self.netdevs.setdefault(name, _Netdev())

    def rdma_device(self, name: str) -> _Rdma:
        return self.rdma.setdefault(name, _Rdma())


@dataclass(frozen=True)
class PasteFacts:
    """The facts built per node, which areas each node's pastes filled, and per node the NCCL readings (transport,
    GID indices, GPUDirect RDMA) and FEC settings that no NodeFacts field holds."""

    facts: dict[str, NodeFacts]
    areas: dict[str, frozenset[str]]
    nccl: dict[str, tuple[nccl_info.NcclHost, ...]]
    fec: dict[str, dict[str, ethtool_fec.FecSetting]]


def _node_of(reading: Reading, default: str) -> str:
    return reading.host or default


def _add_ip_addr(node: _Node, parsed: ip_addr.IpAddr) -> None:
    for iface in parsed.interfaces:
        entry = node.netdev(iface.name)
        entry.ipv4, entry.ipv6 = tuple(iface.ipv4), tuple(iface.ipv6)
        if iface.mtu is not None:
            entry.mtu = iface.mtu
            node.areas.add(MTU)
        if iface.state:
            entry.operstate = iface.state.lower()
        if iface.carrier is not None:
            entry.carrier = iface.carrier
            node.areas.add(CARRIER)
        if iface.mac:
            entry.mac = iface.mac
        if iface.link_type in ip_addr.LINK_TYPES:
            entry.link_type = ip_addr.LINK_TYPES[iface.link_type]
    node.areas.add(ADDRESSES)


def _add_ip_brief(node: _Node, parsed: ip_brief.IpBrief) -> None:
    for iface in parsed.interfaces:
        entry = node.netdev(iface.name)
        entry.operstate = iface.state.lower()
        if iface.flags is None or iface.ipv4 or iface.ipv6:
            entry.ipv4, entry.ipv6 = tuple(iface.ipv4), tuple(iface.ipv6)
            node.areas.add(ADDRESSES)
        if iface.mac:
            entry.mac = iface.mac
        if iface.carrier is not None:
            entry.carrier = iface.carrier
            node.areas.add(CARRIER)


def _add_ethtool(node: _Node, parsed: ethtool_settings.EthtoolSettings) -> None:
    for link in parsed.links:
        if link.name is None:
            continue
        entry = node.netdev(link.name)
        node.asked.add(link.name)
        if "Speed" in link.fields:
            entry.speed_mbps = link.speed_mbps if link.speed_mbps is not None else Unknown("ethtool: Speed Unknown!")
            node.areas.add(SPEED)
        if link.link_detected is not None:
            entry.carrier = link.link_detected
            node.areas.add(CARRIER)


def _add_lspci(node: _Node, parsed: lspci.Lspci) -> None:
    for device in parsed.devices:
        if device.bdf is None:
            continue
        node.pci[device.bdf] = device
        if device.sta_width is not None or device.sta_speed_gts is not None:
            node.areas.add(PCIE)


def _add_nccl(nodes: dict[str, _Node], reading: Reading, default: str) -> None:
    for host in reading.parsed.hosts:
        node = nodes.setdefault(host.host or _node_of(reading, default), _Node())
        node.nccl.append(host)
        if host.environment or host.version:
            node.areas.add(NCCL_ENV)
        for address in [host.oob, *host.socket_interfaces]:  # `enp1s0f1np1:192.168.100.16`: it exists there
            if address and ":" in address:
                node.netdev(address.split(":", 1)[0])
        for entry in host.hcas:  # `rocep1s0f1:1/RoCE`
            name, _, rest = entry.partition(":")
            port, _, layer = rest.partition("/")
            device = node.rdma_device(name)
            device.port = int(port) if port.isdigit() else 1
            device.link_layer = "Ethernet" if layer == "RoCE" else layer or None
            node.areas.add(RDMA)


def _add_topo(node: _Node, parsed: nvidia_topo.NvidiaTopo) -> None:
    topology = parsed.topology
    for nic in topology.nics.values():
        node.rdma_device(nic)
        node.areas.add(RDMA)
    node.gpus = list(topology.gpus) or node.gpus
    if topology.gpus:
        node.areas.add(GPUS)


def _add_ibdev2netdev(node: _Node, parsed: rdma_tools.NetdevListing) -> None:
    for mapping in parsed.mappings:
        device = node.rdma_device(mapping.rdma_device)
        device.netdevs.add(mapping.netdev)
        device.port = mapping.port
        entry = node.netdev(mapping.netdev)
        if mapping.state in ("Up", "Down"):
            if entry.carrier is None:
                entry.carrier = mapping.state == "Up"
            node.areas.add(CARRIER)
        node.areas.add(RDMA)


def _rdma_netdevs(name: str, info: _Rdma, netdevs: Iterable[str]) -> tuple[str, ...]:
    """The netdevs of an RDMA device: as ibdev2netdev said, else by the udev names mlx5 hosts share
    (`roceP2p1s0f1` is `enP2p1s0f1np1`'s), else none."""
    if info.netdevs:
        return tuple(sorted(info.netdevs))
    roce = _ROCE_NAME.match(name)
    if roce is None:
        return ()
    return tuple(n for n in netdevs if re.fullmatch(rf"en{re.escape(roce['path'])}(?:np\d+)?", n))


def _bdf_of(name: str) -> str | None:
    """The PCI address a predictable interface name encodes (`enP2p1s0f1np1` is 0002:01:00.1)."""
    address = pci_address(name, None)
    return f"{address[0]:04x}:{address[1]}" if address else None


def _unknown(why: str) -> Unknown:
    return Unknown(why)


def _facts(name: str, node: _Node, source: str) -> NodeFacts:
    missing = "not in the pastes"
    names = list(node.netdevs)
    rdma_devices: list[RdmaDevice] = []
    by_netdev: dict[str, list[str]] = {}
    for rdma_name, info in sorted(node.rdma.items()):
        linked = _rdma_netdevs(rdma_name, info, names)
        for n in linked:
            by_netdev.setdefault(n, []).append(rdma_name)
            node.netdev(n)
        port = RdmaPort(
            number=int(info.port or 1),
            state=_unknown(missing),
            phys_state=_unknown(missing),
            rate=_unknown(missing),
            rate_gbps=_unknown(missing),
            link_layer=info.link_layer or _unknown(missing),
            gids=(),
            rocev2_ipv4_index=_unknown(missing),
        )
        rdma_bdf = next((b for n in linked if (b := _bdf_of(n))), None)
        rdma_devices.append(RdmaDevice(rdma_name, linked, rdma_bdf, _unknown(missing), _unknown(missing), (port,)))
    # lspci functions no interface name leads to are shown by their address, so their links are still judged
    bdf_names = {b: n for n in node.netdevs if (b := _bdf_of(n))}
    for address, function in node.pci.items():
        if (
            address not in bdf_names
            and function.device_class in ("Ethernet controller", "Infiniband controller", "Network controller")
            and "Virtual Function" not in (function.name or "")
        ):
            node.netdev(address)
            bdf_names[address] = address
    netdevs: list[Netdev] = []
    for iface, entry in node.netdevs.items():
        virtual = iface.startswith(_VIRTUAL)
        bdf = _bdf_of(iface) or (iface if iface in node.pci else None)
        lspci_device = node.pci.get(bdf) if bdf else None
        netdevs.append(
            Netdev(
                name=iface,
                operstate=entry.operstate if entry.operstate is not None else _unknown(missing),
                carrier=entry.carrier if entry.carrier is not None else _unknown(missing),
                speed_mbps=entry.speed_mbps if entry.speed_mbps is not None else _unknown(missing),
                mtu=entry.mtu if entry.mtu is not None else _unknown(missing),
                mac=entry.mac if entry.mac is not None else _unknown(missing),
                ipv4=entry.ipv4,
                ipv6=entry.ipv6,
                kind="loopback" if iface == "lo" else "virtual" if virtual else "pci",
                link_type=entry.link_type
                if entry.link_type is not None
                else (772 if iface == "lo" else _unknown(missing)),
                pci=bdf,
                rdma_devices=tuple(by_netdev.get(iface, ())),
                driver=(lspci_device.driver if lspci_device and lspci_device.driver else _unknown(missing)),
            )
        )
    fabric = [
        n.name
        for n in netdevs
        if n.kind == "pci"
        and (
            n.rdma_devices
            or re.search(r"np\d+$", n.name)
            or n.name in node.asked
            or n.name in node.pci
            or n.name in node.fec
        )
    ]
    functions = [
        PciFunction(
            bdf=bdf,
            driver=d.driver or _unknown(missing),
            numa_node=d.numa_node if d.numa_node is not None else _unknown(missing),
            current_speed_gts=d.sta_speed_gts if d.sta_speed_gts is not None else _unknown("lspci: Speed unknown"),
            current_width=d.sta_width if d.sta_width is not None else _unknown(missing),
            max_speed_gts=d.cap_speed_gts if d.cap_speed_gts is not None else _unknown(missing),
            max_width=d.cap_width if d.cap_width is not None else _unknown(missing),
        )
        for bdf, d in sorted(node.pci.items())
    ]
    versions = sorted({h.version for h in node.nccl if h.version})
    environment = {k: v for h in node.nccl for k, v in h.environment.items()}
    return NodeFacts(
        node=name,
        hostname=name if any(h.host for h in node.nccl) else _unknown(missing),
        netdevs=tuple(netdevs),
        rdma=tuple(rdma_devices),
        rdma_absent_reason=None if rdma_devices else "no RDMA device in the pastes",
        pci=tuple(functions),
        ports=group_ports([(n, next((d.pci for d in netdevs if d.name == n), None)) for n in fabric]),
        management=_unknown(missing),
        fabric=tuple(fabric),
        gpus=tuple(Gpu(g, _unknown(missing), _unknown(missing)) for g in node.gpus) if node.gpus else _unknown(missing),
        nccl_version=versions[-1] if versions else _unknown(missing),
        tools=(),
        source=source,
        kernel_messages=tuple(node.kernel) if KERNEL in node.areas else _unknown(missing),
        environment=environment,
    )


def _name_gids(hosts: list[nccl_info.NcclHost]) -> None:
    """A log cut after NCCL listed its HCAs names them `IbDev N`: name them from another part of the same host's log."""
    names = {i: hca.split(":", 1)[0] for host in hosts for i, hca in enumerate(host.hcas)}
    for host in hosts:
        host.gids = [
            replace(g, device=names.get(int(g.device.split()[1]), g.device)) if g.device.startswith("IbDev ") else g
            for g in host.gids
        ]


def build_facts(readings: Iterable[Reading], default_node: str) -> PasteFacts:
    """NodeFacts per node from every reading of every file: a node is the host its prompt or NCCL named, else
    `default_node` (the file's name, for a file that names none)."""
    nodes: dict[str, _Node] = {}
    for reading in readings:
        if reading.kind is None:
            continue
        if reading.kind == "nccl-info":
            _add_nccl(nodes, reading, default_node if reading.host is None else reading.host)
            continue
        node = nodes.setdefault(_node_of(reading, default_node), _Node())
        parsed = reading.parsed
        if reading.kind == "ip-addr":
            _add_ip_addr(node, parsed)
        elif reading.kind == "ip-brief":
            _add_ip_brief(node, parsed)
        elif reading.kind == "ethtool":
            _add_ethtool(node, parsed)
        elif reading.kind == "ethtool-fec":
            for setting in parsed.settings:
                node.fec[setting.name] = setting
                node.netdev(setting.name)
        elif reading.kind == "lspci":
            _add_lspci(node, parsed)
        elif reading.kind == "kernel-log":
            node.kernel += [line.as_dmesg() for line in parsed.lines]
            node.areas.add(KERNEL)
        elif reading.kind == "nvidia-smi-topo":
            _add_topo(node, parsed)
        elif reading.kind == "ibdev2netdev":
            _add_ibdev2netdev(node, parsed)
    for node in nodes.values():
        _name_gids(node.nccl)
    facts = {name: _facts(name, node, "pastes") for name, node in sorted(nodes.items())}
    return PasteFacts(
        facts=facts,
        areas={name: frozenset(node.areas) for name, node in nodes.items()},
        nccl={name: tuple(node.nccl) for name, node in nodes.items() if node.nccl},
        fec={name: dict(node.fec) for name, node in nodes.items() if node.fec},
    )


@dataclass(frozen=True)
class CheckPlan:
    runnable: tuple[tuple[str, tuple[str, ...]], ...]  # (check id, the nodes whose pastes hold what it reads)
    nothing_to_read: tuple[tuple[str, str], ...]  # (check id, what it would need)


def plan_checks(ids: Iterable[str], areas: Mapping[str, frozenset[str]]) -> CheckPlan:
    """Which of `ids` the pasted facts allow, and on which nodes: a check runs on the nodes whose pastes filled every
    area it reads (a node known only from its NCCL log is not judged on interfaces it never showed). For each other
    check, what would give it something to read."""
    runnable: list[tuple[str, tuple[str, ...]]] = []
    nothing: list[tuple[str, str]] = []
    filled = frozenset().union(*areas.values()) if areas else frozenset()
    for check_id in ids:
        needs = CHECK_AREAS.get(check_id)
        if needs is None:
            nothing.append((check_id, NO_PASTE))
            continue
        nodes = tuple(sorted(node for node, have in areas.items() if all(area in have for area in needs)))
        if nodes:
            runnable.append((check_id, nodes))
            continue
        missing = [area for area in needs if area not in filled] or list(needs)
        one_node = " on one node" if all(area in filled for area in needs) else ""
        nothing.append((check_id, "; ".join(f"{area} ({AREA_SOURCES[area]})" for area in missing) + one_node))
    return CheckPlan(tuple(runnable), tuple(nothing))


# ------------------------------------------------------------------------------------------- the import view


def _nccl_host(host: nccl_info.NcclHost, where: str | None = None) -> pasted.NcclInfoHost:
    verdict = gdr.explain_hosts([host], where)
    return pasted.NcclInfoHost(
        host=host.host,
        nccl_version=host.version,
        environment=host.environment,
        network=host.network,
        transport=host.transport,
        hcas=tuple(host.hcas),
        socket_interfaces=tuple(host.socket_interfaces),
        oob=host.oob,
        gdr=host.gdr,
        gdr_by_hca=host.gdr_by_hca,
        ring_gdr=host.ring_gdr,
        gdr_note=None if verdict is None else verdict.line,
        gdr_finding=verdict is not None and verdict.finding,
        gid_indices=tuple(pasted.NcclGid(**asdict(g)) for g in host.gids),
        channels=host.channels,
        via=dict(host.via),
        ranks=host.ranks,
        nodes=host.nodes,
        warnings=tuple(host.warnings),
    )


def _ip_interface(i: ip_addr.Interface) -> pasted.IpInterface:
    fields = {**asdict(i), "flags": tuple(i.flags), "ipv4": tuple(i.ipv4), "ipv6": tuple(i.ipv6)}
    return pasted.IpInterface(**fields, carrier=i.carrier)


def _brief_interface(i: ip_brief.BriefInterface) -> pasted.BriefInterface:
    return pasted.BriefInterface(**asdict(i), carrier=i.carrier)


def body(reading: Reading) -> pasted.Content:
    """A reading as wirespeed's import format keeps it (docs/import-format.md): its kind's own record. ValueError
    for a reading of no kind."""
    parsed = reading.parsed
    kind = reading.kind
    if kind == "nccl-info":
        # nccl-tests' `#  Rank  0 ... NVIDIA GB10` lines, read past as not NCCL's, say which GPU the log ran on
        where = gdr.platform_in_text("\n".join(s.text for s in reading.skipped))
        return pasted.NcclInfo(tuple(_nccl_host(h, where) for h in parsed.hosts))
    if kind == "kernel-log":
        return pasted.KernelLog(tuple(_kernel_line(line, reading.line_in_paste(line.line)) for line in parsed.lines))
    if kind == "lspci":
        return pasted.Lspci(tuple(pasted.PciDevice(**asdict(d)) for d in parsed.devices))
    if kind == "ip-addr":
        return pasted.IpAddr(tuple(_ip_interface(i) for i in parsed.interfaces))
    if kind == "ip-brief":
        return pasted.IpBrief(tuple(_brief_interface(i) for i in parsed.interfaces))
    if kind == "ethtool":
        return pasted.Ethtool(
            tuple(
                pasted.EthtoolLink(**{k: v for k, v in asdict(link).items() if k != "fields"}) for link in parsed.links
            )
        )
    if kind == "ethtool-fec":  # per-lane values as lists, lane 0 first (JSON keys cannot be numbers)
        return pasted.EthtoolFec(
            tuple(
                pasted.FecInterface(
                    name=s.name,
                    configured=tuple(s.configured),
                    active=tuple(s.active),
                    statistics=s.statistics,
                    lanes={k: tuple(v for _, v in sorted(lanes.items())) for k, lanes in s.lanes.items()},
                )
                for s in parsed.settings
            )
        )
    if kind == "nvidia-smi-topo":
        topology = parsed.topology
        return pasted.NvidiaSmiTopo(
            gpus=tuple(topology.gpus),
            nics=topology.nics,
            links=topology.links,
            cpu_affinity=topology.cpu_affinity,
            numa_affinity=topology.numa_affinity,
        )
    if kind == "ibdev2netdev":
        return pasted.PastedIbdev2netdev(ibdev2netdev_devices(parsed))
    raise ValueError(f"no pasted output of kind {kind!r}")


def _kernel_line(line: dmesg.KernelLine, number: int) -> pasted.KernelLine:
    """A kernel line as the format keeps it, numbered as in the paste."""
    return pasted.KernelLine(line=number, seconds=line.seconds, clock=line.clock, text=line.text)


def skipped_records(lines: Iterable[SkippedLine]) -> tuple[pasted.PasteSkipped, ...]:
    """The lines read past, in file order, as the format keeps them."""
    return tuple(pasted.PasteSkipped(s.line, s.text, s.why) for s in sorted(lines, key=lambda s: s.line))
