"""Collect one node's facts through a `NodeSource` (live, snapshot or recording): the same code for all three."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
from collections.abc import Callable
from types import ModuleType
from typing import TypeVar

from wirespeed.adapters.configroot import system_path
from wirespeed.adapters.source import NOT_INSTALLED, NodeSource, Output, run_command
from wirespeed.core import tools as bench_tools
from wirespeed.core.facts import (
    NEEDS_ROOT,
    Gid,
    Gpu,
    Netdev,
    NodeFacts,
    PciFunction,
    PciRootPort,
    PendingFix,
    RdmaDevice,
    RdmaPort,
    Route,
    Tool,
    Unknown,
)
from wirespeed.core.fixplan import MANAGED_FILES, NETPLAN_DIR
from wirespeed.core.parsers import ethtool, fatbin, hoststate, jobconf, kernel_log, pcie_log
from wirespeed.core.parsers import ldd as ldd_output
from wirespeed.core.parsers import sysfs_values as sv
from wirespeed.core.ports import group_ports
from wirespeed.engine import fixjournal

T = TypeVar("T")
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
# Where nccl-tests are looked for, after NCCL_TESTS_DIR: first what `wirespeed setup` built (a `current` symlink to
# its latest tree), before PATH; then PATH; then the other usual build directories.
NCCL_TESTS_DIRS = (
    "~/.local/share/wirespeed/nccl-tests/current/build",
    "~/nccl-tests/build",
    "/opt/nccl-tests/build",
    "/usr/local/nccl-tests/build",
)
NCCL_TESTS_DIRS_BEFORE_PATH = 1
BUILD_RECORD = "wirespeed-build.json"  # in a tree `wirespeed setup` built: {"library_path": [dir, ...]}
NCCL_TESTS_BINARIES = ("all_reduce_perf", "all_gather_perf", "sendrecv_perf", "reduce_scatter_perf", "alltoall_perf")


def _read(source: NodeSource, path: str, parse: Callable[[str], T], what: str) -> T | Unknown:
    try:
        text = source.read(path)
    except FileNotFoundError:
        return Unknown(f"{what}: {path} does not exist")
    except OSError as exc:
        return Unknown(f"{what}: {path}: {exc.strerror or exc}")
    try:
        return parse(text)
    except ValueError as exc:
        return Unknown(f"{what}: {path}: cannot parse {text!r} ({exc})")


def _text(value: str) -> str:
    return value


def _listdir(source: NodeSource, path: str) -> list[str]:
    try:
        return source.listdir(path)
    except OSError:
        return []


def _interfaces(source: NodeSource) -> list[str]:
    """The net devices under /sys/class/net: each is a directory (a link to its device's `net/NAME`); a plain file
    there is a class attribute, such as the bonding driver's `bonding_masters` (drivers/net/bonding/bond_sysfs.c,
    `netdev_class_create_file_ns`), never an interface."""
    return [name for name in _listdir(source, NET) if source.is_dir(f"{NET}/{name}")]


def _command_unknown(name: str, result: Output, program: str) -> Unknown:
    if result.returncode is None:
        return Unknown(f"{name} was not recorded in this snapshot")
    if result.returncode == NOT_INSTALLED:
        return Unknown(f"{program} is not installed")
    return Unknown(f"{program} exited with status {result.returncode}")


def _parsed(name: str, result: Output, program: str, parse: Callable[[str], T]) -> T | Unknown:
    if not result.ok:
        return _command_unknown(name, result, program)
    try:
        return parse(result.stdout)
    except (ValueError, KeyError, TypeError) as exc:
        return Unknown(f"{program}: cannot parse its output ({exc})")


def _bdf_of(source: NodeSource, device_link: str) -> str | None:
    if not source.exists(device_link):
        return None
    resolved = source.realpath(device_link)
    name = os.path.basename(resolved)
    return name if "/devices/pci" in resolved and ":" in name else None


def _pci(source: NodeSource, bdf: str) -> PciFunction:
    base = f"/sys/bus/pci/devices/{bdf}"
    driver: str | Unknown = (
        os.path.basename(source.realpath(f"{base}/driver"))
        if source.exists(f"{base}/driver")
        else Unknown("no driver bound")
    )
    return PciFunction(
        bdf=bdf,
        driver=driver,
        numa_node=_read(source, f"{base}/numa_node", int, "NUMA node"),
        current_speed_gts=_read(source, f"{base}/current_link_speed", sv.pcie_speed_gts, "PCIe speed"),
        current_width=_read(source, f"{base}/current_link_width", int, "PCIe width"),
        max_speed_gts=_read(source, f"{base}/max_link_speed", sv.pcie_speed_gts, "PCIe max speed"),
        max_width=_read(source, f"{base}/max_link_width", int, "PCIe max width"),
    )


PCI_DEVICES = "/sys/bus/pci/devices"
_HOST_BRIDGE = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
DMI = "/sys/class/dmi/id"
DMI_FIELDS = ("sys_vendor", "product_name", "board_name")


def _root_ports(source: NodeSource) -> tuple[PciRootPort, ...] | Unknown:
    """Every PCIe root port: a PCI bridge (class 0x0604xx) whose parent in sysfs is a host bridge (pciDDDD:BB),
    with its link (pci-sysfs.c: "32.0 GT/s PCIe" as drivers/pci/probe.c spells each speed) and what sits below."""
    try:
        names = source.listdir(PCI_DEVICES)
    except OSError as exc:
        return Unknown(f"{PCI_DEVICES}: {exc.strerror or exc}")
    ports: list[PciRootPort] = []
    for bdf in names:
        base = f"{PCI_DEVICES}/{bdf}"
        resolved = source.realpath(base)
        if not _HOST_BRIDGE.match(os.path.basename(os.path.dirname(resolved))):
            continue
        pci_class = _read(source, f"{base}/class", _text, "PCI class")
        if isinstance(pci_class, Unknown) or not pci_class.lower().startswith("0x0604"):
            continue
        ports.append(
            PciRootPort(
                bdf=bdf,
                current_speed_gts=_read(source, f"{base}/current_link_speed", sv.pcie_speed_gts, "PCIe speed"),
                current_width=_read(source, f"{base}/current_link_width", int, "PCIe width"),
                max_speed_gts=_read(source, f"{base}/max_link_speed", sv.pcie_speed_gts, "PCIe max speed"),
                max_width=_read(source, f"{base}/max_link_width", int, "PCIe max width"),
                downstream=tuple(n for n in _listdir(source, resolved) if _BDF.match(n)),
            )
        )
    return tuple(ports)


def _dmi(source: NodeSource) -> dict[str, str]:
    """The machine model from DMI (absent fields: unreadable, as on boards without SMBIOS)."""
    found: dict[str, str] = {}
    for name in DMI_FIELDS:
        value = _read(source, f"{DMI}/{name}", _text, f"DMI {name}")
        if not isinstance(value, Unknown):
            found[name] = value.strip()
    return found


def _netdev(source: NodeSource, name: str, addresses: sv.IpAddresses | Unknown) -> Netdev:
    base = f"{NET}/{name}"
    resolved = source.realpath(base)
    bdf = _bdf_of(source, f"{base}/device") if "/devices/virtual/" not in resolved else None
    kind = (
        "loopback" if name == "lo" else ("virtual" if "/devices/virtual/" in resolved else ("pci" if bdf else "other"))
    )
    operstate = _read(source, f"{base}/operstate", _text, "operstate")
    carrier = _read(source, f"{base}/carrier", lambda t: t == "1", "carrier")
    if isinstance(carrier, Unknown) and operstate == "down":
        carrier = Unknown("interface is administratively down")
    speed = _read(source, f"{base}/speed", int, "speed")
    if isinstance(speed, int) and speed < 0:
        speed = Unknown("no link (speed -1)")
    info = source.output(f"ethtool_i_{name}", lambda: run_command(["ethtool", "-i", name]))
    details = sv.ethtool_info(info.stdout) if info.ok else {}
    driver: str | Unknown = details.get("driver") or _command_unknown(f"ethtool_i_{name}", info, "ethtool -i")
    firmware: str | Unknown = details.get("firmware-version") or Unknown("the driver reports no firmware version")
    return Netdev(
        name=name,
        operstate=operstate,
        carrier=carrier,
        speed_mbps=speed,
        mtu=_read(source, f"{base}/mtu", int, "MTU"),
        mac=_read(source, f"{base}/address", _text, "MAC"),
        ipv4=addresses.ipv4.get(name, ()) if isinstance(addresses, sv.IpAddresses) else (),
        ipv6=addresses.ipv6.get(name, ()) if isinstance(addresses, sv.IpAddresses) else (),
        kind=kind,
        link_type=_read(source, f"{base}/type", int, "link type"),
        pci=bdf,
        rdma_devices=tuple(_listdir(source, f"{base}/device/infiniband")) if bdf else (),
        driver=driver,
        firmware=firmware if details else Unknown("ethtool -i gave nothing"),
    )


def _rdma_port(source: NodeSource, base: str, number: int, v4: dict[str, set[str]]) -> RdmaPort:
    rate = _read(source, f"{base}/rate", sv.port_rate, "rate")
    gids: list[Gid] = []
    for index_text in _listdir(source, f"{base}/gids"):
        if not index_text.isdigit():
            continue
        gid = _read(source, f"{base}/gids/{index_text}", _text, "GID")
        if isinstance(gid, Unknown) or gid in sv.EMPTY_GIDS:
            continue
        gid_type = _read(source, f"{base}/gid_attrs/types/{index_text}", sv.gid_type, "GID type")
        ndev = _read(source, f"{base}/gid_attrs/ndevs/{index_text}", _text, "GID netdev")
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
    link_layer = _read(source, f"{base}/link_layer", _text, "link layer")
    rocev2: int | Unknown
    if index is not None:
        rocev2 = index
    elif link_layer == "InfiniBand":
        rocev2 = Unknown("InfiniBand link layer: no RoCE GIDs")
    else:
        rocev2 = Unknown("no RoCE v2 GID with an IPv4 address of its netdev (is the interface addressed?)")
    return RdmaPort(
        number=number,
        state=_read(source, f"{base}/state", sv.port_state, "port state"),
        phys_state=_read(source, f"{base}/phys_state", sv.port_state, "physical state"),
        rate=_read(source, f"{base}/rate", _text, "rate"),
        rate_gbps=rate.gbps if isinstance(rate, sv.Rate) else rate,
        link_layer=link_layer,
        gids=tuple(gids),
        rocev2_ipv4_index=rocev2,
    )


def _rdma(source: NodeSource, v4: dict[str, set[str]]) -> tuple[tuple[RdmaDevice, ...], str | None]:
    if not source.exists(IB):
        reason = "no RDMA devices: /sys/class/infiniband does not exist"
        if source.emulated:
            reason += " (emulated cluster: its links are macvlan or veth, not ConnectX)"
        return (), reason
    devices: list[RdmaDevice] = []
    for name in _listdir(source, IB):
        base = f"{IB}/{name}"
        bdf = _bdf_of(source, f"{base}/device")
        ports = [
            _rdma_port(source, f"{base}/ports/{p}", int(p), v4)
            for p in _listdir(source, f"{base}/ports")
            if p.isdigit()
        ]
        devices.append(
            RdmaDevice(
                name=name,
                netdevs=tuple(_listdir(source, f"{base}/device/net")) if bdf else (),
                pci=bdf,
                fw_ver=_read(source, f"{base}/fw_ver", _text, "firmware"),
                node_guid=_read(source, f"{base}/node_guid", _text, "node GUID"),
                ports=tuple(ports),
            )
        )
    return tuple(devices), None if devices else "no RDMA devices: /sys/class/infiniband is empty"


def _management(source: NodeSource, netdevs: list[Netdev]) -> str | Unknown:
    """The interface of the ssh session's server address, else the one that reaches the host srun started this
    job step from, else that of the default route."""
    session = source.output("ssh_connection", lambda: Output(0, os.environ.get("SSH_CONNECTION", "")))
    parts = session.stdout.split()
    if len(parts) == 4:
        for netdev in netdevs:
            if any(address.split("/")[0] == parts[2] for address in netdev.ipv4 + netdev.ipv6):
                return netdev.name
    launch = source.output("slurm_launch_node", lambda: Output(0, os.environ.get("SLURM_LAUNCH_NODE_IPADDR", "")))
    launch_address = launch.stdout.strip()
    if launch.ok and launch_address:
        towards = source.output("slurm_launch_route", lambda: run_command(["ip", "-j", "route", "get", launch_address]))
        if towards.ok:
            with contextlib.suppress(ValueError):
                device = sv.route_get_iface(towards.stdout)
                if device and device != "lo":
                    return device
    route = source.output("ip_route", lambda: run_command(["ip", "-j", "route", "show", "table", "main"]))
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


def _tool(source: NodeSource, module: ModuleType) -> Tool | None:
    """A tool module's version on this node; None where a snapshot did not record it (made before the tool was)."""
    name, program = module.NAME, module.VERSION_ARGV[0]
    found = source.output(module.VERSION_KEY, lambda: run_command(list(module.VERSION_ARGV)))
    if found.returncode is None:
        return None
    if found.returncode != NOT_INSTALLED and found.stdout.strip():
        try:  # some print their version and exit 1 (perftest): the version is what counts
            version = module.parse_version(found.stdout)
        except ValueError as exc:
            why = Unknown(f"{program}: cannot parse its output ({exc})")
            return Tool(name, why if found.ok else _command_unknown(module.VERSION_KEY, found, program))
        detail = module.version_detail(version) if hasattr(module, "version_detail") else None
        return Tool(name, version, detail=detail)
    return Tool(name, _command_unknown(module.VERSION_KEY, found, program))


def _tools(source: NodeSource) -> tuple[Tool, ...]:
    tools = [t for module in bench_tools.versioned() if (t := _tool(source, module)) is not None]
    mpirun = source.output("mpirun_version", lambda: run_command(["mpirun", "--version"]))
    tools.append(Tool("mpirun", _parsed("mpirun_version", mpirun, "mpirun", sv.mpirun_version)))
    nccl_tests = source.output("nccl_tests", _find_nccl_tests)
    if nccl_tests.ok and nccl_tests.stdout.strip():
        tools += [tool for line in nccl_tests.stdout.splitlines() if (tool := _nccl_tests_tool(line)) is not None]
    else:
        tools.append(
            Tool(
                "nccl-tests",
                _command_unknown("nccl_tests", nccl_tests, "nccl-tests")
                if not nccl_tests.ok
                else Unknown(f"no nccl-tests binaries on PATH or in {', '.join(NCCL_TESTS_DIRS)}"),
            )
        )
    return tuple(tools)


# One line per nccl-tests binary in a snapshot's nccl_tests.txt: `PATH mpi=yes|no|unknown`, then (since wirespeed
# read them) ` nccl=PATH|not-found nccl_file=PATH cudart=PATH|not-found library_path=DIR:DIR`, each only when known.
NOT_FOUND = "not-found"
_LINE_FIELD = re.compile(r"(?:^| )(\w+)=(.*?)(?= \w+=|$)")


def _nccl_tests_line(binary: str, ldd: Output, library_path: list[str]) -> str:
    """The line for one binary; paths may hold spaces (a field ends where the next ` name=` begins)."""
    line = f"{binary} mpi={'yes' if 'libmpi' in ldd.stdout else ('no' if ldd.ok else 'unknown')}"
    if ldd.ok:
        libraries = ldd_output.resolved(ldd.stdout)
        for key, name in (("nccl", "libnccl"), ("cudart", "libcudart")):
            linked = ldd_output.library(libraries, name)
            if linked is not None:
                line += f" {key}={linked[1] or NOT_FOUND}"
                if key == "nccl" and linked[1]:
                    line += f" nccl_file={os.path.realpath(linked[1])}"
    if library_path:
        line += f" library_path={':'.join(library_path)}"
    return line


def _linked(value: str | None, soname: str) -> str | Unknown | None:
    if value is None:
        return None
    return Unknown(f"{soname} => not found") if value == NOT_FOUND else value


def _nccl_tests_tool(line: str) -> Tool | None:
    """A binary's line read back; a line from before the library fields still reads (they stay None)."""
    path, _, flags = line.rstrip().partition(" mpi=")
    path = path.strip()
    if not path:
        return None
    fields = dict(_LINE_FIELD.findall("mpi=" + flags))
    return Tool(
        os.path.basename(path),
        "present",
        path=path,
        detail=f"mpi={fields['mpi']}",
        nccl_library=_linked(fields.get("nccl"), "libnccl.so.2"),
        nccl_library_file=fields.get("nccl_file") or None,
        cudart_library=_linked(fields.get("cudart"), "libcudart.so"),
        library_path=tuple(d for d in fields.get("library_path", "").split(":") if d),
    )


def _build_library_path(binary: str) -> list[str]:
    """The library directories a tree `wirespeed setup` built names in its wirespeed-build.json, for a binary in
    `<tree>/build/`: the environment it is meant to run in. Empty where there is no such file or it is unreadable
    or malformed."""
    build = os.path.dirname(binary)
    if os.path.basename(build) != "build":
        return []
    try:
        with open(os.path.join(os.path.dirname(build), BUILD_RECORD)) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    dirs = data.get("library_path") if isinstance(data, dict) else None
    if not isinstance(dirs, list) or not all(isinstance(d, str) and d.startswith("/") for d in dirs):
        return []
    return list(dirs)


def _executable_in(dirs: list[str], binary: str) -> str | None:
    return next((path for d in dirs if os.access(path := os.path.join(d, binary), os.X_OK)), None)


def _nccl_tests_binary(binary: str) -> str | None:
    """NCCL_TESTS_DIR first, then `wirespeed setup`'s build, then PATH, then the usual build directories."""
    first = [os.environ["NCCL_TESTS_DIR"]] if os.environ.get("NCCL_TESTS_DIR") else []
    first += [os.path.expanduser(d) for d in NCCL_TESTS_DIRS[:NCCL_TESTS_DIRS_BEFORE_PATH]]
    rest = [os.path.expanduser(d) for d in NCCL_TESTS_DIRS[NCCL_TESTS_DIRS_BEFORE_PATH:]]
    return _executable_in(first, binary) or shutil.which(binary) or _executable_in(rest, binary)


def _find_nccl_tests() -> Output:
    """Where the nccl-tests binaries are, whether each was built with MPI (links libmpi), and the libnccl and
    libcudart ldd resolves for it: with its build tree's library path when `wirespeed setup` recorded one, else in
    this session's environment, which is what ranks that mpirun starts over ssh get too."""
    lines: list[str] = []
    for binary in NCCL_TESTS_BINARIES:
        found = _nccl_tests_binary(binary)
        if found:
            library_path = _build_library_path(found)
            env = ["env", f"LD_LIBRARY_PATH={':'.join(library_path)}"] if library_path else []
            lines.append(_nccl_tests_line(found, run_command([*env, "ldd", found]), library_path))
    return Output(0, "\n".join(lines) + ("\n" if lines else ""))


def collect(source: NodeSource, node: str) -> NodeFacts:
    """Everything discovery reports for one node, read through `source`."""
    hostname = _read(source, "/proc/sys/kernel/hostname", _text, "host name")
    addr_out = source.output("ip_addr", lambda: run_command(["ip", "-j", "addr", "show"]))
    addresses = _parsed("ip_addr", addr_out, "ip -j addr", sv.ip_addr_json)
    netdevs = [_netdev(source, name, addresses) for name in _interfaces(source)]
    v4 = {n.name: {a.split("/")[0] for a in n.ipv4} for n in netdevs}
    rdma, absent = _rdma(source, v4)
    for device in rdma:  # the netdev's own list can be empty (IPoIB child devices); trust the RDMA side too
        for name in device.netdevs:
            for i, netdev in enumerate(netdevs):
                if netdev.name == name and device.name not in netdev.rdma_devices:
                    netdevs[i] = Netdev(**{**netdev.__dict__, "rdma_devices": (*netdev.rdma_devices, device.name)})
    management = _management(source, netdevs)
    with_rdma = [n for n in netdevs if n.rdma_devices and n.name != management]
    fabric = with_rdma or [n for n in netdevs if _is_fabric_candidate(source, n, management)]
    bdfs = sorted({n.pci for n in netdevs if n.pci} | {d.pci for d in rdma if d.pci})
    smi = source.output(
        "nvidia_smi",
        lambda: run_command(
            ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version,memory.free", "--format=csv,noheader"]
        ),
    )
    gpu_rows = _parsed("nvidia_smi", smi, "nvidia-smi", sv.nvidia_smi_csv)
    gpus: tuple[Gpu, ...] | Unknown = (
        gpu_rows
        if isinstance(gpu_rows, Unknown)
        else tuple(
            Gpu(
                r.name,
                r.compute_capability or Unknown("nvidia-smi did not say"),
                r.driver or Unknown("nvidia-smi did not say"),
                r.memory_free_mib if r.memory_read else Unknown("not read (an older snapshot)"),
            )
            for r in gpu_rows
        )
    )
    nccl = source.output("nccl_version", _find_nccl)
    privileged = _privileged(source)
    return NodeFacts(
        node=node,
        hostname=hostname,
        netdevs=tuple(netdevs),
        rdma=rdma,
        rdma_absent_reason=absent,
        pci=tuple(_pci(source, bdf) for bdf in bdfs),
        ports=group_ports([(n.name, n.pci) for n in fabric]),
        management=management,
        fabric=tuple(n.name for n in fabric),
        gpus=gpus,
        nccl_version=_nccl_version(nccl),
        tools=_tools(source),
        emulated=source.emulated,
        source=source.description,
        nccl_archs=_parse_nccl_archs(source.output("nccl_archs", _nccl_archs)),
        privileged=privileged,
        **_for_checks(source, [n.name for n in fabric], privileged),  # type: ignore[arg-type]
        **_config(source),  # type: ignore[arg-type]
        **_management_radio(source, management),  # type: ignore[arg-type]
        packages=_packages(source),
    )


# Packages whose presence a check judges: mlnx-fw-updater flashes every Mellanox NIC it finds from its postinst, so
# an unrelated `apt install` that pulls or upgrades it can change the CX-7's firmware (field problems 2026-11-26, 4).
WATCHED_PACKAGES = ("mlnx-fw-updater",)


def _packages(source: NodeSource) -> dict[str, str] | Unknown:
    """dpkg's `${Status} ${Version}` for each watched package; a package dpkg knows nothing of is left out (it says
    "no packages found matching NAME" on stderr and exits 1)."""
    found: dict[str, str] = {}
    for name in WATCHED_PACKAGES:
        key, argv = f"dpkg_{name.replace('-', '_')}", ["dpkg-query", "-W", "-f", "${Status} ${Version}", name]
        result = source.output(key, lambda a=argv: run_command(a))  # type: ignore[misc]
        if result.ok and result.stdout.strip():
            found[name] = result.stdout.strip()
        elif result.returncode != 1:
            return _command_unknown(key, result, "dpkg-query")
    return found


def _management_radio(source: NodeSource, management: str | Unknown) -> dict[str, object]:
    """Whether the management interface is wireless, its power saving (iw) and its NetworkManager connection."""
    if isinstance(management, Unknown):
        return {}
    base = f"{NET}/{management}"
    wireless = (
        source.exists(f"{base}/wireless") or source.exists(f"{base}/phy80211") or management.startswith("wl")
    )  # cfg80211 links phy80211; systemd names WLAN interfaces wl*
    if not wireless:
        return {"management_wireless": False}
    iw = source.output(
        f"iw_power_save_{management}", lambda: run_command(["iw", "dev", management, "get", "power_save"])
    )
    power_save: str | Unknown = _parsed(f"iw_power_save_{management}", iw, "iw", hoststate.iw_power_save)
    nmcli = source.output(
        f"nmcli_connection_{management}",
        lambda: run_command(["nmcli", "-g", "GENERAL.CONNECTION", "device", "show", management]),
    )
    connection: str | Unknown = (
        (nmcli.stdout.strip() or Unknown("NetworkManager holds no connection on it"))
        if nmcli.ok
        else _command_unknown(f"nmcli_connection_{management}", nmcli, "nmcli")
    )
    return {"management_wireless": True, "management_power_save": power_save, "management_connection": connection}


def _find_nccl() -> Output:
    """`ldconfig -p` lines for libnccl, each followed by the file its link resolves to (which carries the
    version: libnccl.so.2 -> libnccl.so.2.28.9)."""
    listing = run_command(["ldconfig", "-p"])
    if not listing.ok:
        return listing
    lines: list[str] = []
    for line in listing.stdout.splitlines():
        if "libnccl" in line:
            lines.append(line.strip())
            path = line.rpartition("=>")[2].strip()
            if path:
                lines.append(f"=> {os.path.realpath(path)}")
    return Output(0, "\n".join(lines) + ("\n" if lines else ""))


GLOBAL_SYSCTLS = (
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.netdev_max_backlog",
    "net.ipv4.conf.all.arp_ignore",
    "net.ipv4.conf.all.arp_announce",
    "net.ipv4.conf.all.rp_filter",
    "net.ipv4.conf.default.rp_filter",
    "net.ipv4.ip_forward",  # a ring's relays forward between their cables
)
PER_INTERFACE_SYSCTLS = (
    "net.ipv4.conf.{}.arp_ignore",
    "net.ipv4.conf.{}.arp_announce",
    "net.ipv4.conf.{}.rp_filter",
    "net.ipv6.conf.{}.disable_ipv6",
)
ENV_PREFIXES = ("NCCL_", "UCX_", "OMPI_MCA_", "GLOO_", "CUDA_VISIBLE_DEVICES", "VLLM_HOST_IP")
FIREWALL_COMMANDS = {
    "nft": ["nft", "list", "ruleset"],
    "iptables": ["iptables", "-S"],
    "ufw": ["ufw", "status"],
}


def _sysctls(source: NodeSource, fabric: list[str]) -> dict[str, str]:
    keys = list(GLOBAL_SYSCTLS) + [k.format(i) for i in fabric for k in PER_INTERFACE_SYSCTLS]
    values: dict[str, str] = {}
    for key in keys:
        value = _read(source, "/proc/sys/" + key.replace(".", "/"), _text, key)
        if not isinstance(value, Unknown):
            values[key] = " ".join(value.split())
    return values


def _memlock() -> Output:
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return Output(0, "unlimited\n" if soft == resource.RLIM_INFINITY else f"{soft}\n")


def _kernel_messages() -> Output:
    result = run_command(["dmesg"])
    if not result.ok:
        return result
    lines = [line for line in result.stdout.splitlines() if kernel_log.wanted(line) or pcie_log.wanted(line)]
    return Output(0, "\n".join(lines) + ("\n" if lines else ""))


def _previous_kernel_messages() -> Output:
    """The previous boot's kernel log, as journald kept it (only with persistent storage), filtered as dmesg is;
    wall-clock stamps (short-iso), since the boot-relative ones of a finished boot say little."""
    result = run_command(["journalctl", "-k", "-b", "-1", "-o", "short-iso", "--no-pager", "-q"])
    if not result.ok:
        return result
    lines = [line for line in result.stdout.splitlines() if kernel_log.wanted(line) or pcie_log.wanted(line)]
    return Output(0, "\n".join(lines) + ("\n" if lines else ""))


def _environment() -> Output:
    pairs = sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES))
    return Output(0, "".join(f"{k}={v}\n" for k, v in pairs))


def _in_container(source: NodeSource) -> bool | Unknown:
    if source.exists("/.dockerenv") or source.exists("/run/.containerenv"):
        return True
    cgroup = _read(source, "/proc/1/cgroup", _text, "cgroup of PID 1")
    if isinstance(cgroup, Unknown):
        return cgroup
    return any(word in cgroup for word in ("docker", "containerd", "kubepods", "libpod", "lxc"))


def _home() -> Output:
    """The home of this user's passwd entry: where NCCL looks for ~/.nccl.conf (not $HOME)."""
    import pwd

    try:
        return Output(0, pwd.getpwuid(os.getuid()).pw_dir + "\n")
    except KeyError:
        return Output(1, "")


def _count(text: str) -> int:
    """`nproc`'s answer: one whole number."""
    value = text.strip()
    if not value.isdigit():
        raise ValueError(f"{value[:40]!r} is not a count")
    return int(value)


def _meminfo(source: NodeSource) -> dict[str, object]:
    """CmaTotal, CmaFree and MemAvailable from /proc/meminfo (kB), and the kernel command line that sizes CMA."""
    found: dict[str, object] = {"kernel_cmdline": _read(source, "/proc/cmdline", _text, "kernel command line")}
    try:
        text = source.read("/proc/meminfo")
    except OSError as exc:
        why = Unknown(f"/proc/meminfo: {exc.strerror or exc}")
        return {**found, "cma_total_kb": why, "cma_free_kb": why, "mem_available_kb": why}
    for key, name in (("CmaTotal", "cma_total_kb"), ("CmaFree", "cma_free_kb"), ("MemAvailable", "mem_available_kb")):
        try:
            found[name] = jobconf.meminfo_kb(text, key)
        except ValueError as exc:
            found[name] = Unknown(f"/proc/meminfo: {exc}")
    return found


def _job_files(source: NodeSource, environment: dict[str, str]) -> dict[str, object]:
    """NCCL's and OpenMPI's configuration files, read as the user who runs the jobs, at their real paths."""
    result = source.output("home", _home)
    home_text = result.stdout.strip()
    home: str | Unknown = home_text if result.ok and home_text else _command_unknown("home", result, "getpwuid")
    user_home = home if isinstance(home, str) else None
    files: dict[str, str] = {}
    errors: dict[str, str] = {}
    for path in jobconf.nccl_files(user_home, environment) + jobconf.openmpi_files(user_home):
        try:
            files[path] = source.read_exact(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors[path] = exc.strerror or str(exc)
    return {"home": home, "job_files": files, "job_file_errors": errors}


def _kernel_log(source: NodeSource, privileged: bool | None) -> tuple[str, ...] | Unknown:
    kernel = source.output("kernel_messages", _kernel_messages)
    if kernel.ok:
        return tuple(kernel.stdout.splitlines())
    if privileged is False and kernel.returncode not in (None, NOT_INSTALLED):
        return Unknown(f"kernel log {NEEDS_ROOT} (dmesg_restrict)")
    return _command_unknown("kernel_messages", kernel, "dmesg")


def _previous_kernel_log(source: NodeSource, privileged: bool | None) -> tuple[str, ...] | Unknown:
    """`journalctl -k -b -1`: a user outside the adm/systemd-journal groups reads nothing of the kernel's journal,
    and an empty answer then says nothing, so only root's reading counts."""
    if privileged is False:
        return Unknown(f"previous boot's kernel log {NEEDS_ROOT}")
    found = source.output("kernel_messages_previous", _previous_kernel_messages)
    if found.ok:
        return tuple(found.stdout.splitlines())
    if found.returncode not in (None, NOT_INSTALLED):
        return Unknown("no previous boot in the journal (journald keeps one only with persistent storage, "
                       "/var/log/journal)")  # fmt: skip
    return _command_unknown("kernel_messages_previous", found, "journalctl")


def _firewall(source: NodeSource) -> dict[str, str]:
    found: dict[str, str] = {}
    for tool, argv in FIREWALL_COMMANDS.items():
        listing = source.output(f"firewall_{tool}", lambda a=argv: run_command(a))  # type: ignore[misc]
        if listing.ok:
            found[tool] = listing.stdout
    return found


def _routes(source: NodeSource) -> tuple[Route, ...] | Unknown:
    """The IPv4 main table; the same reading `_management` takes for the default route (one recorded output)."""
    found = source.output("ip_route", lambda: run_command(["ip", "-j", "route", "show", "table", "main"]))
    return _parsed("ip_route", found, "ip -j route", sv.ip_routes_json)


def _fix_journals() -> Output:
    try:
        return Output(0, json.dumps(fixjournal.pending()) + "\n")
    except OSError:  # not root (the directory is 0700), or unreadable
        return Output(1, "")


def _pending_fixes(source: NodeSource, privileged: bool | None) -> tuple[PendingFix, ...] | Unknown:
    """The node's unresolved fix journals; closed to a user (the journal directory is root's alone)."""
    if privileged is False:
        return Unknown(f"fix journals {NEEDS_ROOT}")
    found = source.output("fix_journals", _fix_journals)
    if not found.ok:
        return Unknown(f"fix journals ({fixjournal.JOURNAL_DIR}) not read" if found.returncode is not None else
                       "fix_journals was not recorded in this snapshot")  # fmt: skip
    try:
        return tuple(PendingFix(**{k: item[k] for k in PENDING_FIELDS}) for item in json.loads(found.stdout))
    except (ValueError, TypeError, KeyError) as exc:
        return Unknown(f"fix_journals: unreadable ({exc})")


PENDING_FIELDS = ("token", "kind", "state", "created_utc", "timer_alive", "overdue_s")


def collect_root_parts(source: NodeSource) -> dict[str, object]:
    """What only root may read, for the controller to lay over the facts the user read (`agent facts
    --root-parts`, run through sudo with --become): the kernel log, the firewall, the files `fix` manages (netplan's
    are root's alone). Everything else stays the user's own reading: its environment, its ssh session, its home."""
    privileged = _privileged(source)
    return {
        "privileged": privileged,
        "kernel_messages": _kernel_log(source, privileged),
        "kernel_messages_previous": _previous_kernel_log(source, privileged),
        "firewall": _firewall(source),
        "pending_fixes": _pending_fixes(source, privileged),
        **_config(source),
    }


def _privileged(source: NodeSource) -> bool | None:
    """Whether this agent runs as root; None where a snapshot did not record it."""
    found = source.output("euid", lambda: Output(0, f"{os.geteuid()}\n"))
    text = found.stdout.strip()
    return None if found.returncode is None or not text.isdigit() else int(text) == 0


def _for_checks(source: NodeSource, fabric: list[str], privileged: bool | None) -> dict[str, object]:
    memlock = source.output("memlock", _memlock)
    memlock_bytes: int | Unknown | None
    if not memlock.ok:
        memlock_bytes = _command_unknown("memlock", memlock, "getrlimit")
    else:
        text = memlock.stdout.strip()
        memlock_bytes = None if text == "unlimited" else (int(text) if text.isdigit() else Unknown(f"memlock {text!r}"))
    messages = _kernel_log(source, privileged)
    env = source.output("environment", _environment)
    environment = dict(line.split("=", 1) for line in env.stdout.splitlines() if "=" in line) if env.ok else {}
    devices: tuple[str, ...] | Unknown = (
        tuple(_listdir(source, "/dev/infiniband"))
        if source.exists("/dev/infiniband")
        else Unknown("/dev/infiniband does not exist")
    )
    offloads: dict[str, dict[str, list[bool]]] = {}
    counters: dict[str, dict[str, int]] = {}
    for iface in fabric:
        features = source.output(f"ethtool_k_{iface}", lambda i=iface: run_command(["ethtool", "-k", i]))  # type: ignore[misc]
        if features.ok:
            with contextlib.suppress(ValueError):
                offloads[iface] = {k: [on, fixed] for k, (on, fixed) in ethtool.parse_features(features.stdout).items()}
        stats = source.output(f"ethtool_S_{iface}", lambda i=iface: run_command(["ethtool", "-S", i]))  # type: ignore[misc]
        if stats.ok:
            with contextlib.suppress(ValueError):
                counters[iface] = ethtool.parse_stats(stats.stdout)
    shaped: dict[str, int] = {}
    for iface in fabric:
        qdisc = source.output(f"tc_qdisc_{iface}", lambda i=iface: run_command(["tc", "-j", "qdisc", "show", "dev", i]))  # type: ignore[misc]
        if qdisc.ok:
            with contextlib.suppress(ValueError):
                rate = sv.tc_shaped_bps(qdisc.stdout)
                if rate is not None:
                    shaped[iface] = rate
    firewall = _firewall(source)
    return {
        "offloads": offloads,
        "nic_counters": counters,
        "firewall": firewall,
        "shaped_bps": shaped,
        "sysctls": _sysctls(source, fabric),
        "memlock_bytes": memlock_bytes,
        "kernel_messages": messages,
        "kernel_messages_previous": _previous_kernel_log(source, privileged),
        "dmi": _dmi(source),
        "root_ports": _root_ports(source),
        "pending_fixes": _pending_fixes(source, privileged),
        "routes": _routes(source),
        "environment": environment,
        "in_container": _in_container(source),
        "dev_infiniband": devices,
        **_meminfo(source),
        **_job_files(source, environment),
        "cpus": _parsed("nproc", source.output("nproc", lambda: run_command(["nproc"])), "nproc", _count),
    }


def _config_files() -> Output:
    """The files `fix` manages, as they are now, and whether the node uses netplan (JSON)."""
    files: dict[str, str] = {}
    for path in MANAGED_FILES:
        with contextlib.suppress(FileNotFoundError, PermissionError):  # unreadable as a user: root reads it (--become)
            files[path] = system_path(path).read_text()
    return Output(0, json.dumps({"files": files, "netplan": system_path(NETPLAN_DIR).is_dir()}) + "\n")


def _config(source: NodeSource) -> dict[str, object]:
    result = source.output("config_files", _config_files)
    if not result.ok:
        return {"netplan": _command_unknown("config_files", result, "wirespeed")}
    try:
        data = json.loads(result.stdout)
        return {"config_files": dict(data["files"]), "netplan": bool(data["netplan"])}
    except (ValueError, KeyError, TypeError) as exc:
        return {"netplan": Unknown(f"config_files: unreadable ({exc})")}


NCCL_VENV_GLOBS = (
    "/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
    "~/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "~/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
)


def _nccl_libraries() -> list[str]:
    """libnccl files: the ldconfig cache, NCCL_HOME, LD_LIBRARY_PATH, the build nccl-tests runs with and the usual
    Python venvs (PyTorch's)."""
    found: list[str] = []
    listing = run_command(["ldconfig", "-p"])
    found += [line.rpartition("=>")[2].strip() for line in listing.stdout.splitlines() if "libnccl.so" in line]
    dirs = [os.path.join(os.environ["NCCL_HOME"], "lib")] if os.environ.get("NCCL_HOME") else []
    dirs += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    tests = _nccl_tests_binary("all_reduce_perf")
    dirs += _build_library_path(tests) if tests else []  # the NCCL `wirespeed setup` built nccl-tests against
    found += [p for d in dirs for p in sorted(glob.glob(os.path.join(d, "libnccl.so*")))]
    found += [p for pattern in NCCL_VENV_GLOBS for p in sorted(glob.glob(os.path.expanduser(pattern)))]
    unique: dict[str, str] = {}
    for path in found:
        real = os.path.realpath(path)
        if os.path.isfile(real):
            unique.setdefault(real, path)
    return sorted(unique)


def _nccl_archs() -> Output:
    """Per NCCL library: the GPU architectures it carries code for (`cuobjdump --list-elf`, in Python)."""
    lines: list[str] = []
    for path in _nccl_libraries():
        try:
            with open(path, "rb") as handle:
                archs = fatbin.architectures(handle.read())
            lines.append(f"{path}\t{fatbin.encode(archs)}")
        except (OSError, ValueError) as exc:
            lines.append(f"{path}\terror: {getattr(exc, 'strerror', None) or exc}")
    return Output(0, "".join(f"{line}\n" for line in lines))


def _parse_nccl_archs(result: Output) -> dict[str, str] | Unknown:
    if not result.ok:
        return _command_unknown("nccl_archs", result, "wirespeed")
    return dict(line.split("\t", 1) for line in result.stdout.splitlines() if "\t" in line)


def _nccl_version(result: Output) -> str | Unknown:
    if result.ok and "libnccl" not in result.stdout:
        return Unknown("no libnccl in the ldconfig cache (NCCL inside a Python venv or container is not seen here)")
    return _parsed("nccl_version", result, "NCCL (ldconfig -p)", sv.nccl_version)
