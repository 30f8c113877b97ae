"""An `NCCL_DEBUG=INFO` log on its own (from PyTorch, SGLang, nccl-tests or anything else linking NCCL), read per
host: the NCCL version, the variables NCCL says were set, the network it chose (NET/IB or NET/Socket), the HCAs and
interfaces it uses, the GID index each HCA's queue pairs use, GPUDirect RDMA per HCA and per ring, the channels, and
its warnings. Pure: text in, one record per host out.

The formats are NCCL's (src/init.cc, src/transport/net_ib.cc, src/transport/net_socket.cc, src/graph/connect.cc,
src/misc/param.cc), as 2.18 to 2.28 print them, each line prefixed `HOST:PID:TID [DEV] NCCL INFO`:

    NCCL version 2.28.9+cuda13.0
    NCCL_SOCKET_IFNAME set by environment to enp1s0f1np1        (2.28 also: `NCCL_SOCKET_IFNAME set to ...`)
    NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB enp1s0f1np1:192.168.100.16<0>
    NET/Socket : Using [0]enp1s0f0np0:198.19.0.1<0> [1]enP2p1s0f0np0:198.19.1.1<0>
    Using network IB
    NET/IB : GPU Direct RDMA Disabled for HCA 0 'rocep1s0f1'
    GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 9 <= 9), read 1 mode Default
    Channel 00/16 : 0 1
    Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
    NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 576 mtu 3 GID 3 (0/1064A8C0FFFF0000)   (older: `NET/IB: Dev 0 Port 1 ...`)
    Connected all rings, use ring PXN 0 GDR 0
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from dataclasses import dataclass, field

_LINE = re.compile(
    r"^(?:(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[(?P<dev>[^\]]*)\]\s+)?"
    r"NCCL (?P<level>INFO|WARN|TRACE)\s?(?P<msg>.*)$"
)
_TAG = re.compile(r"^(?:\[\d+,\d+\]<(?:stdout|stderr)>:|\[\d+\] |\s*\d+: )")
_VERSION = re.compile(r"^NCCL version (?P<v>\d+\.\d+\.\d+\S*)")
_ENV = re.compile(r"^(?P<name>NCCL_\w+) set (?:by environment )?to (?P<value>.*?)\.?\s*$")
_USING_NETWORK = re.compile(r"^Using network (?P<name>.+?)\s*$")
_NET_USING = re.compile(r"^NET/(?P<plugin>IB|Socket)\s*: Using (?P<list>[^;]*)(?:;\s*OOB (?P<oob>\S+?)(?:<\d+>)?)?\s*$")
_ENTRY = re.compile(r"\[(?P<index>\d+)\](?P<entry>[^\s;\[]+)")
_BOOTSTRAP = re.compile(r"^Bootstrap\s*: Using (?P<iface>[^:\s]+):(?P<addr>[^<\s]+)")
_GDR_HCA = re.compile(r"GPU Direct RDMA (?P<state>Enabled|Disabled) for HCA (?P<index>\d+) '(?P<dev>[^']+)'")
# A net plugin's own claim (nccl-rdma-sharp-plugins' p2p_plugin.c: `NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA
# 0 'rocep1s0f0`, its format missing the closing quote), printed before NCCL's verdict for the same HCA.
_GDR_PLUGIN = re.compile(r"GPU Direct RDMA \((?P<how>[^)]+)\) enabled for HCA (?P<index>\d+) '(?P<dev>[^'\s]+)")
_GDR_GPU = re.compile(r"GPU Direct RDMA (?P<state>Enabled|Disabled) for GPU (?P<gpu>\S+) / HCA (?P<index>\d+)")
_CHANNELS = re.compile(r"^Channel (?P<channel>\d+)/(?P<count>\d+) :(?: \d+)+\s*$")
_COLL_CHANNELS = re.compile(r"^(?P<n>\d+) coll channels")
_VIA = re.compile(r"->.*?\bvia (?P<kind>[A-Za-z0-9]+)/(?P<name>[^/\s]+)(?P<rest>\S*)")
_QP = re.compile(
    r"^NET/IB\s*: (?:NCCL )?Dev (?P<dev>\d+)(?: (?:IbDev|IBDev) (?P<ibdev>\d+))? Port (?P<port>\d+) qpn \d+"
    r" mtu (?P<mtu>\d+) GID (?P<gid>\d+)(?: \((?P<prefix>[0-9A-Fa-f]+)/(?P<iid>[0-9A-Fa-f]+)\))?"
)
_RINGS = re.compile(r"^Connected all rings(?:, use ring PXN (?P<pxn>\d+) GDR (?P<gdr>\d+))?")
_RANKS = re.compile(r"\bnRanks (?P<ranks>\d+) nNodes (?P<nodes>\d+)")

# ibv_mtu: IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5
IB_MTU_BYTES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}


@dataclass(frozen=True)
class QueuePairGid:
    """The GID index an HCA's queue pairs use, and what that GID is: `::ffff:a.b.c.d` (RoCE v2 over IPv4), `fe80::`
    (a link-local IPv6 GID: the interface had no IPv4 address, or the index was pinned to it)."""

    device: str  # the HCA's name, or `IbDev N` where the log did not list its devices
    index: int
    address: str | None
    mtu_bytes: int | None


@dataclass
class NcclHost:
    host: str | None
    version: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    network: str | None = None  # IB, Socket, or a plugin's name (`AWS Libfabric`)
    hcas: list[str] = field(default_factory=list)  # `rocep1s0f1:1/RoCE`
    socket_interfaces: list[str] = field(default_factory=list)  # `enp1s0f0np0:198.19.0.1`
    oob: str | None = None  # the interface and address NCCL bootstraps over
    gdr_by_hca: dict[str, bool] = field(default_factory=dict)
    gdr_capability: dict[str, list[str]] = field(default_factory=dict)  # a net plugin's `(DMABUF) enabled` per HCA
    gdr_no_module: bool = False  # NCCL 2.12 and older: `Disabled for HCA 0 'mlx5_0' (no module)`
    gids: list[QueuePairGid] = field(default_factory=list)
    channels: int | None = None
    via: Counter[str] = field(default_factory=Counter)  # NET/IB, NET/Socket, P2P/IPC ... per channel connection
    via_gdrdma: bool = False
    rings_connected: bool = False
    ring_gdr: bool | None = None
    ranks: int | None = None
    nodes: int | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def transport(self) -> str | None:
        """NET/IB or NET/Socket when a channel went over the network, else what `Using network` said."""
        net = [name for name in self.via if name.startswith("NET/")]
        if net:
            return max(net, key=lambda name: self.via[name])
        return f"NET/{self.network}" if self.network else None

    @property
    def gdr(self) -> bool | None:
        """Whether GPUDirect RDMA was used: a `/GDRDMA` channel or `GDR 1` on the rings; `GDR 0`, or every HCA
        `Disabled`, is no; None when the log does not say."""
        if self.via_gdrdma or self.ring_gdr:
            return True
        if self.ring_gdr is False or (self.gdr_by_hca and not any(self.gdr_by_hca.values())):
            return False
        return None


@dataclass(frozen=True)
class NcclLog:
    hosts: tuple[NcclHost, ...]
    read: frozenset[int]


def _gid_address(prefix: str | None, iid: str | None) -> str | None:
    """NCCL prints a GID as two 64-bit halves in the host's (little-endian) byte order: `0/1064A8C0FFFF0000` is
    ::ffff:192.168.100.16, `80FE/...` a fe80:: link-local GID."""
    if prefix is None or iid is None:
        return None
    try:
        raw = int(prefix, 16).to_bytes(8, "little") + int(iid, 16).to_bytes(8, "little")
    except (ValueError, OverflowError):
        return None
    address = ipaddress.IPv6Address(raw)
    return str(address.ipv4_mapped) if address.ipv4_mapped else str(address)


def _read(host: NcclHost, level: str, msg: str, ib_index: dict[int, str]) -> None:
    if level == "WARN":
        host.warnings.append(msg.strip())
        return
    if version := _VERSION.match(msg):
        host.version = version["v"]
    elif env := _ENV.match(msg):
        host.environment[env["name"]] = env["value"]
    elif using := _USING_NETWORK.match(msg):
        host.network = using["name"]
    elif net := _NET_USING.match(msg):
        for entry in _ENTRY.finditer(net["list"]):
            if net["plugin"] == "IB":
                if entry["entry"] not in host.hcas:
                    host.hcas.append(entry["entry"])
                ib_index[int(entry["index"])] = entry["entry"].split(":", 1)[0]
            else:
                name = entry["entry"].split("<", 1)[0]
                if name not in host.socket_interfaces:
                    host.socket_interfaces.append(name)
        if net["oob"]:
            host.oob = net["oob"]
    elif boot := _BOOTSTRAP.match(msg):
        host.oob = host.oob or f"{boot['iface']}:{boot['addr']}"
    elif gdr := _GDR_HCA.search(msg):
        host.gdr_by_hca[gdr["dev"]] = gdr["state"] == "Enabled"
        host.gdr_no_module = host.gdr_no_module or "(no module)" in msg
    elif plugin := _GDR_PLUGIN.search(msg):
        claims = host.gdr_capability.setdefault(plugin["dev"], [])
        if plugin["how"] not in claims:
            claims.append(plugin["how"])
    elif gdr := _GDR_GPU.search(msg):
        device = ib_index.get(int(gdr["index"]), f"HCA {gdr['index']}")
        host.gdr_by_hca[device] = host.gdr_by_hca.get(device, False) or gdr["state"] == "Enabled"
    elif channels := _CHANNELS.match(msg):
        host.channels = max(host.channels or 0, int(channels["count"]))
    elif coll := _COLL_CHANNELS.match(msg):
        host.channels = host.channels or int(coll["n"])
    elif via := _VIA.search(msg):
        host.via[f"{via['kind']}/{via['name']}"] += 1
        host.via_gdrdma = host.via_gdrdma or "GDRDMA" in via["rest"]
    elif qp := _QP.match(msg):
        index = int(qp["ibdev"] if qp["ibdev"] is not None else qp["dev"])
        gid = QueuePairGid(
            ib_index.get(index, f"IbDev {index}"),
            int(qp["gid"]),
            _gid_address(qp["prefix"], qp["iid"]),
            IB_MTU_BYTES.get(int(qp["mtu"])),
        )
        if gid not in host.gids:
            host.gids.append(gid)
    elif rings := _RINGS.match(msg):
        host.rings_connected = True
        if rings["gdr"] is not None:
            host.ring_gdr = rings["gdr"] != "0"
    elif ranks := _RANKS.search(msg):
        host.ranks, host.nodes = int(ranks["ranks"]), int(ranks["nodes"])


def parse(text: str) -> NcclLog:
    hosts: dict[str | None, NcclHost] = {}
    indices: dict[str | None, dict[int, str]] = {}
    read: set[int] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        tag = _TAG.match(line)
        match = _LINE.match(line[tag.end() :] if tag else line)
        if match is None:
            continue
        read.add(number)
        name = match["host"]
        host = hosts.setdefault(name, NcclHost(name))
        _read(host, match["level"], match["msg"], indices.setdefault(name, {}))
    return NcclLog(tuple(hosts.values()), frozenset(read))


def looks_like(text: str) -> bool:
    """Two NCCL INFO or WARN lines at least."""
    count = 0
    for raw in text.splitlines():
        line = raw.strip()
        tag = _TAG.match(line)
        if _LINE.match(line[tag.end() :] if tag else line):
            count += 1
            if count >= 2:
                return True
    return False
