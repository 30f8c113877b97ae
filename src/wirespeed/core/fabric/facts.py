"""What discovery found on a node, as plain data. Anything unreadable is an `Unknown` with its reason."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from wirespeed.core.records.decode import _kind
from wirespeed.core.records.typed import read_dataclass


@dataclass(frozen=True)
class Unknown:
    """A value that could not be read, and why (never a guess)."""

    reason: str

    def to_json(self) -> dict[str, str]:
        return {"unknown": self.reason}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Unknown:
        """`{"unknown": why}`, exactly."""
        if not isinstance(data, dict) or set(data) != {"unknown"}:
            raise ValueError(f'{where}: expected unknown ({{"unknown": why}}), found {_kind(data)}')
        if not isinstance(data["unknown"], str):
            raise ValueError(f"{where}: unknown: expected text, found {_kind(data['unknown'])}")
        return cls(data["unknown"])


def known(value: object) -> bool:
    return not isinstance(value, Unknown)


# Share of a PCIe link's encoded rate left for payload (TLP and DLLP headers, 256-byte payloads): Gen5 x4's
# 126 Gb/s carries about 108, which matches the 92-111 Gb/s ib_write_bw measures on one Spark half.
PCIE_PAYLOAD_EFFICIENCY = 0.86


@dataclass(frozen=True)
class PciFunction:
    """A PCI function and its link: an OEM half trained at x2 instead of x4 is a known fault."""

    bdf: str  # 0002:01:00.1
    driver: str | Unknown
    numa_node: int | Unknown
    current_speed_gts: float | Unknown
    current_width: int | Unknown
    max_speed_gts: float | Unknown
    max_width: int | Unknown

    @property
    def domain(self) -> str:
        return self.bdf.split(":")[0]

    @property
    def bus_device_function(self) -> str:
        return self.bdf.split(":", 1)[1]

    @property
    def link_gbps(self) -> float | None:
        """The PCIe link's data rate after line encoding (8b/10b below 8 GT/s, 128b/130b from 8 GT/s): a Spark
        half at Gen5 x4 is 32 x 4 x 128/130 = 126 Gb/s, which is why one half cannot fill a 200G port."""
        if isinstance(self.current_speed_gts, Unknown) or isinstance(self.current_width, Unknown):
            return None
        encoding = 128 / 130 if self.current_speed_gts >= 8 else 8 / 10
        return self.current_speed_gts * self.current_width * encoding


@dataclass(frozen=True)
class PciRootPort:
    """A PCIe root port (a bridge straight below a host bridge) and the link it trained. On a DGX Spark the ConnectX-7
    halves sit below 0000:00:00.0 and 0002:00:00.0; a port that trained 2.5 GT/s of 32 with nothing below it is
    the field's "CX-7 gone after boot" signature (forum threads 363193, 362667)."""

    bdf: str  # 0000:00:00.0
    current_speed_gts: float | Unknown
    current_width: int | Unknown
    max_speed_gts: float | Unknown
    max_width: int | Unknown
    downstream: tuple[str, ...] = ()  # the PCI functions enumerated below it (BDFs); empty: nothing there

    @property
    def domain(self) -> str:
        return self.bdf.split(":")[0]


@dataclass(frozen=True)
class Netdev:
    name: str
    operstate: str | Unknown
    carrier: bool | Unknown
    speed_mbps: int | Unknown  # Mb/s as the kernel reports it; Unknown when the link is down
    mtu: int | Unknown
    mac: str | Unknown
    ipv4: tuple[str, ...]  # CIDR
    ipv6: tuple[str, ...]  # CIDR
    kind: str  # "pci", "virtual", "loopback"
    link_type: int | Unknown  # ARPHRD: 1 Ethernet, 32 InfiniBand (IPoIB), 772 loopback
    pci: str | None  # BDF when PCI-backed
    rdma_devices: tuple[str, ...] = ()
    driver: str | Unknown = field(default_factory=lambda: Unknown("not read"))
    firmware: str | Unknown = field(default_factory=lambda: Unknown("not read"))


@dataclass(frozen=True)
class Gid:
    index: int
    gid: str
    type: str | None  # "RoCE v2", "IB/RoCE v1"; None for an empty slot
    ndev: str | None
    ipv4: str | None  # the IPv4 address of an IPv4-mapped GID


@dataclass(frozen=True)
class RdmaPort:
    number: int
    state: str | Unknown  # ACTIVE, DOWN, ...
    phys_state: str | Unknown  # LinkUp, Disabled, Polling, ...
    rate: str | Unknown  # as sysfs says: "200 Gb/sec (2X NDR)"
    rate_gbps: float | Unknown
    link_layer: str | Unknown  # Ethernet or InfiniBand
    gids: tuple[Gid, ...]
    rocev2_ipv4_index: int | Unknown


@dataclass(frozen=True)
class RdmaDevice:
    name: str
    netdevs: tuple[str, ...]
    pci: str | None
    fw_ver: str | Unknown
    node_guid: str | Unknown
    ports: tuple[RdmaPort, ...]


@dataclass(frozen=True)
class PhysicalPort:
    """A physical port and its logical interfaces: on a Spark, the two PCIe halves of one QSFP port."""

    key: str  # e.g. "01:00.0" for a multi-host NIC, or the interface name
    label: str  # "port 0", "ib0", ...
    halves: tuple[str, ...]  # netdev names, half 0 first


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_capability: str | Unknown
    driver: str | Unknown
    # Free memory as discovery found it, MiB; None where nvidia-smi cannot say (GB10's unified memory: the node's
    # MemAvailable is what counts there).
    memory_free_mib: int | Unknown | None = field(default_factory=lambda: Unknown("not read"))


@dataclass(frozen=True)
class Tool:
    name: str
    version: str | Unknown
    path: str | None = None
    detail: str | None = None
    # An nccl-tests binary links libnccl and libcudart with no rpath, so what it loads depends on the environment.
    # As ldd resolved them on this node: the absolute path, Unknown where the loader finds none ("libnccl.so.2 =>
    # not found"), None where the binary does not link it dynamically or the snapshot predates this reading.
    nccl_library: str | Unknown | None = None
    nccl_library_file: str | None = None  # the file the libnccl link leads to: libnccl.so.2.28.9 names its version
    cudart_library: str | Unknown | None = None
    # The `library_path` of the binary's build tree (wirespeed-build.json), which ldd ran with as LD_LIBRARY_PATH.
    library_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class PendingFix:
    """A `fix` journal on the node that is not resolved: applied and waiting for its confirmation, or left so by a
    rollback timer that died (a reboot, a kill): its changes stay until something restores them."""

    token: str
    kind: str
    state: str
    created_utc: str
    timer_alive: bool
    overdue_s: float | None  # seconds past its deadline (negative: still ahead); None: no deadline yet


@dataclass(frozen=True)
class Route:
    """One IPv4 route of the node's main table (`ip -j route show table main`): where a destination is sent."""

    dst: str  # a network in CIDR form (a host route is /32), or "default"
    dev: str | None
    via: str | None = None  # the gateway; None: the destination is on the link itself
    protocol: str | None = None  # "kernel" for the routes of the node's own addresses, "static", "boot", ...


NEEDS_ROOT = "not read: needs root (--become)"  # how an unprivileged read is named, in facts and in the checks


@dataclass(frozen=True)
class NodeFacts:
    """Everything discovery knows about one node."""

    node: str
    hostname: str | Unknown
    netdevs: tuple[Netdev, ...]
    rdma: tuple[RdmaDevice, ...]
    rdma_absent_reason: str | None
    pci: tuple[PciFunction, ...]
    ports: tuple[PhysicalPort, ...]
    management: str | Unknown
    fabric: tuple[str, ...]
    gpus: tuple[Gpu, ...] | Unknown
    nccl_version: str | Unknown
    tools: tuple[Tool, ...]
    emulated: bool = False
    source: str = "live"
    # Whether the agent read this as root (directly, or through sudo with --become); None: not recorded (a snapshot
    # made before wirespeed recorded it). Unprivileged, the kernel log, the firewall and the cabling probe are closed.
    privileged: bool | None = None
    # For the checks. sysctls holds what could be read (key as in sysctl: net.core.rmem_max); absent = unreadable.
    sysctls: dict[str, str] = field(default_factory=dict)
    memlock_bytes: int | Unknown | None = field(default_factory=lambda: Unknown("not read"))  # None = unlimited
    kernel_messages: tuple[str, ...] | Unknown = field(default_factory=lambda: Unknown("not read"))
    environment: dict[str, str] = field(default_factory=dict)  # NCCL_*, UCX_*, OMPI_MCA_* of an ssh session
    in_container: bool | Unknown = field(default_factory=lambda: Unknown("not read"))
    dev_infiniband: tuple[str, ...] | Unknown = field(default_factory=lambda: Unknown("not read"))
    # Per fabric interface: `ethtool -k` features {name: [on, fixed]} and `ethtool -S` counters; absent = unread.
    offloads: dict[str, dict[str, list[bool]]] = field(default_factory=dict)
    nic_counters: dict[str, dict[str, int]] = field(default_factory=dict)
    # Firewall listings by tool ("nft", "iptables", "ufw"): raw text; a tool that is not installed is absent.
    firewall: dict[str, str] = field(default_factory=dict)
    # Per fabric interface: a rate-limiting root qdisc (tc tbf), bits/s: the line the interface really has.
    shaped_bps: dict[str, int] = field(default_factory=dict)
    # Files `wirespeed fix` manages, by path, as they are now (absent: not there), and whether netplan is in use.
    config_files: dict[str, str] = field(default_factory=dict)
    netplan: bool | Unknown = field(default_factory=lambda: Unknown("not read"))
    # NCCL libraries found, by path: "elf=75,80,90 ptx=120" (cubins and PTX inside), or "error: why".
    nccl_archs: dict[str, str] | Unknown = field(default_factory=lambda: Unknown("not read"))
    # /proc/meminfo's CmaTotal and CmaFree in kB (None: no such line, a kernel built without CMA) and /proc/cmdline.
    cma_total_kb: int | Unknown | None = field(default_factory=lambda: Unknown("not read"))
    mem_available_kb: int | Unknown | None = field(default_factory=lambda: Unknown("not read"))  # MemAvailable
    cpus: int | Unknown = field(default_factory=lambda: Unknown("not read"))  # what `nproc` says: usable CPUs
    cma_free_kb: int | Unknown | None = field(default_factory=lambda: Unknown("not read"))
    kernel_cmdline: str | Unknown = field(default_factory=lambda: Unknown("not read"))
    # The home of the user who runs the jobs (its passwd entry, as NCCL finds ~/.nccl.conf), and the NCCL and
    # OpenMPI configuration files as that user reads them: real path -> text (absent: not there), or -> why not.
    home: str | Unknown = field(default_factory=lambda: Unknown("not read"))
    job_files: dict[str, str] = field(default_factory=dict)
    job_file_errors: dict[str, str] = field(default_factory=dict)
    # The node's `fix` journals that are not resolved (root's to read).
    pending_fixes: tuple[PendingFix, ...] | Unknown = field(default_factory=lambda: Unknown("not read"))
    # Packages dpkg was asked about (`dpkg-query -W -f '${Status} ${Version}' NAME`): name -> "install ok installed
    # 24.10-1.1.4" (dpkg's want, error flag and state, then the version); a name dpkg knows nothing of is absent.
    packages: dict[str, str] | Unknown = field(default_factory=lambda: Unknown("not read"))
    # The management interface's radio: whether it is wireless (/sys/class/net/IF/wireless or phy80211, or a `wl`
    # name), its power saving as `iw dev IF get power_save` says it ("on"/"off"), and NetworkManager's connection on it.
    management_wireless: bool | Unknown = field(default_factory=lambda: Unknown("not read"))
    management_power_save: str | Unknown = field(default_factory=lambda: Unknown("not read"))
    management_connection: str | Unknown = field(default_factory=lambda: Unknown("not read"))
    # /sys/class/dmi/id (product_name, sys_vendor, board_name) as read; absent = unreadable. A DGX Spark reads
    # NVIDIA / NVIDIA_DGX_Spark / P4242: the machine model says whether a ConnectX-7 should be there at all.
    dmi: dict[str, str] = field(default_factory=dict)
    # The PCIe root ports (found from sysfs, not by address) and their links.
    root_ports: tuple[PciRootPort, ...] | Unknown = field(default_factory=lambda: Unknown("not read"))
    # The previous boot's kernel messages of the NIC and its PCIe path (`journalctl -k -b -1`, kept only where
    # journald stores the journal persistently), filtered as `kernel_messages` is.
    kernel_messages_previous: tuple[str, ...] | Unknown = field(default_factory=lambda: Unknown("not read"))
    # The IPv4 main routing table: how the node reaches the fabric subnets it has no address on (a ring's relays).
    routes: tuple[Route, ...] | Unknown = field(default_factory=lambda: Unknown("not read"))

    def netdev(self, name: str) -> Netdev | None:
        return next((n for n in self.netdevs if n.name == name), None)

    def pcie_gbps(self, name: str) -> float | None:
        """The PCIe link rate behind a netdev (None when it is no PCI function or the link was unreadable)."""
        netdev = self.netdev(name)
        function = next((p for p in self.pci if netdev is not None and p.bdf == netdev.pci), None)
        return function.link_gbps if function else None

    def port_rate_gbps(self, halves: Sequence[str]) -> float | None:
        """What one physical port carries per direction: the cable's rate (its halves share it), or less when
        the halves' PCIe links together cannot feed it."""
        rates = [r for h in halves if (r := self.line_rate_gbps(h)) is not None]
        if not rates:
            return None
        pcie = [self.pcie_gbps(h) for h in halves]
        fed = sum(p * PCIE_PAYLOAD_EFFICIENCY for p in pcie if p is not None) if all(pcie) else None
        return min(max(rates), fed) if fed else max(rates)

    def line_rate_gbps(self, name: str) -> float | None:
        """What the interface can carry per direction: its link speed, or a shaping qdisc's rate if lower."""
        netdev = self.netdev(name)
        if name in self.shaped_bps and netdev is not None and netdev.driver == "veth":
            return self.shaped_bps[name] / 1e9  # a veth's 10000 Mb/s is a placeholder it does not enforce
        rates = [netdev.speed_mbps / 1000] if netdev and isinstance(netdev.speed_mbps, int) else []
        if name in self.shaped_bps:
            rates.append(self.shaped_bps[name] / 1e9)
        return min(rates) if rates else None

    def to_json(self) -> dict[str, Any]:
        return to_jsonable(self)  # type: ignore[no-any-return]


def to_jsonable(value: Any) -> Any:
    """Dataclasses to dicts, with Unknown as {"unknown": reason}."""
    if isinstance(value, Unknown):
        return value.to_json()
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def facts_from_json(data: Any, where: str = "facts") -> NodeFacts:
    """Rebuild `NodeFacts` from `to_json` output (what `wirespeed agent facts` prints, a run's discovery.json), every
    field checked against its declared type (wirespeed.core.records.typed): a value of the wrong type is a
    ValueError naming the field (`facts: netdevs[2]: mtu: expected a whole number or unknown, found text`), never a
    record that fails later. A field an older wirespeed did not write takes its default; one it does not know is
    left out."""
    found: NodeFacts = read_dataclass(NodeFacts, data, where)
    return found
