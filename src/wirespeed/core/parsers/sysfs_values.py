"""Parsers for single sysfs values and small tool outputs. Text in, typed value out; ValueError otherwise."""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from typing import Any

from wirespeed.core.fabric.facts import Route

_STATE_RE = re.compile(r"^\s*(\d+):\s*(.+?)\s*$")
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec\s*\((\d+)X\s*([A-Z0-9]*)\)\s*$")
_GT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")
EMPTY_GIDS = frozenset({"0000:0000:0000:0000:0000:0000:0000:0000", "fe80:0000:0000:0000:0000:0000:0000:0000"})


def port_state(text: str) -> str:
    """`4: ACTIVE` -> `ACTIVE` (ib_port_state names; phys_state the same shape: `5: LinkUp`)."""
    match = _STATE_RE.match(text)
    if not match:
        raise ValueError(f"not a port state: {text!r}")
    return match.group(2)


@dataclass(frozen=True)
class Rate:
    gbps: float
    width: int
    speed: str  # NDR, HDR, EDR, ...


def port_rate(text: str) -> Rate:
    """`200 Gb/sec (2X NDR)` -> Rate(200.0, 2, "NDR")."""
    match = _RATE_RE.match(text)
    if not match:
        raise ValueError(f"not a port rate: {text!r}")
    return Rate(float(match.group(1)), int(match.group(2)), match.group(3))


def pcie_speed_gts(text: str) -> float:
    """`32.0 GT/s PCIe` (or older `8 GT/s`) -> 32.0. `Unknown` speeds raise ValueError."""
    match = _GT_RE.match(text)
    if not match:
        raise ValueError(f"not a PCIe link speed: {text!r}")
    return float(match.group(1))


def gid_ipv4(gid: str) -> str | None:
    """The IPv4 address inside an IPv4-mapped GID (`...:0000:ffff:c0a8:640a` -> 192.168.100.10), else None."""
    groups = gid.strip().split(":")
    if len(groups) != 8 or groups[:5] != ["0000"] * 5 or groups[5].lower() != "ffff":
        return None
    raw = bytes.fromhex(groups[6] + groups[7])
    return str(ipaddress.IPv4Address(raw))


def gid_type(text: str) -> str:
    """Normalise `gid_attrs/types/I`: `RoCE v2`, `IB/RoCE v1`."""
    return text.strip()


def rocev2_ipv4_index(
    gids: list[tuple[int, str, str | None, str | None]], addresses: dict[str, set[str]]
) -> int | None:
    """show_gids logic: the RoCE v2 GID whose embedded IPv4 is an address of the netdev it is bound to.

    `gids` holds (index, gid, type, ndev); `addresses` maps a netdev to its IPv4 addresses (no prefix). If no
    GID matches a known address, the lowest RoCE v2 IPv4-mapped one is taken (addresses may be unreadable).
    """
    candidates = [(i, g, n) for i, g, t, n in gids if t == "RoCE v2" and gid_ipv4(g) is not None]
    for index, gid, ndev in sorted(candidates):
        if ndev is not None and gid_ipv4(gid) in addresses.get(ndev, set()):
            return index
    if candidates and not any(addresses.values()):
        return min(candidates)[0]
    return None


@dataclass(frozen=True)
class IpAddresses:
    ipv4: dict[str, tuple[str, ...]]
    ipv6: dict[str, tuple[str, ...]]


def ip_addr_json(text: str) -> IpAddresses:
    """`ip -j addr show` -> addresses per interface (CIDR)."""
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError("ip -j addr show: expected a JSON list")
    v4: dict[str, tuple[str, ...]] = {}
    v6: dict[str, tuple[str, ...]] = {}
    for link in data:
        name = link.get("ifname")
        if not isinstance(name, str):
            continue
        infos: list[dict[str, Any]] = link.get("addr_info", [])
        v4[name] = tuple(f"{a['local']}/{a['prefixlen']}" for a in infos if a.get("family") == "inet")
        v6[name] = tuple(f"{a['local']}/{a['prefixlen']}" for a in infos if a.get("family") == "inet6")
    return IpAddresses(v4, v6)


def ip_routes_json(text: str) -> tuple[Route, ...]:
    """`ip -j route show table main` -> the IPv4 routes (a host route's bare address as /32)."""
    data = json.loads(text) if text.strip() else []
    if not isinstance(data, list):
        raise ValueError("ip -j route show: expected a JSON list")
    routes: list[Route] = []
    for item in data:
        dst = item.get("dst") if isinstance(item, dict) else None
        if not isinstance(dst, str) or ":" in dst or item.get("type", "unicast") != "unicast":
            continue
        if dst != "default" and "/" not in dst:
            dst += "/32"
        gateway, dev, protocol = item.get("gateway"), item.get("dev"), item.get("protocol")
        routes.append(
            Route(
                dst=dst,
                dev=str(dev) if dev else None,
                via=str(gateway) if gateway else None,
                protocol=str(protocol) if protocol else None,
            )
        )
    return tuple(routes)


def default_route_iface(text: str) -> str | None:
    """`ip -j route show` -> the interface of the default route, if any."""
    data = json.loads(text) if text.strip() else []
    for route in data:
        if route.get("dst") == "default" and route.get("dev"):
            return str(route["dev"])
    return None


def route_get_iface(text: str) -> str | None:
    """`ip -j route get ADDR` -> the interface that reaches ADDR, if any."""
    data = json.loads(text) if text.strip() else []
    for route in data if isinstance(data, list) else []:
        if isinstance(route, dict) and route.get("dev"):
            return str(route["dev"])
    return None


def mpirun_version(text: str) -> str:
    """`mpirun (Open MPI) 4.1.6` -> `Open MPI 4.1.6`."""
    match = re.search(r"\((Open MPI|MPICH[^)]*|Intel[^)]*)\)\s+(\S+)", text)
    if match:
        return f"{match.group(1)} {match.group(2)}"
    match = re.search(r"Version:\s*(\S+)", text)
    if match:
        return match.group(1)
    raise ValueError("no mpirun version")


def nccl_version(text: str) -> str:
    """From `ldconfig -p` (`libnccl.so.2 ... => /usr/lib/.../libnccl.so.2.28.9`) or a bare `2.28.9`."""
    match = re.search(r"libnccl\.so\.(\d+\.\d+\.\d+)", text) or re.search(r"^\s*(\d+\.\d+\.\d+)\s*$", text, re.M)
    if not match:
        raise ValueError("no NCCL version")
    return match.group(1)


@dataclass(frozen=True)
class GpuRow:
    name: str
    compute_capability: str | None
    driver: str | None
    memory_free_mib: int | None = None  # None: nvidia-smi cannot say (`[N/A]`: GB10's unified memory)
    memory_read: bool = False  # the query asked for memory.free (older snapshots did not)


def nvidia_smi_csv(text: str) -> list[GpuRow]:
    """`nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.free --format=csv,noheader` (memory.free as
    `81559 MiB`, or `[N/A]`); the three-column answer of older snapshots reads as memory not asked."""
    rows: list[GpuRow] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        free = parts[3].split()[0] if len(parts) > 3 and parts[3] else ""
        rows.append(
            GpuRow(
                parts[0],
                parts[1] if len(parts) > 1 and parts[1] not in ("", "[N/A]") else None,
                parts[2] if len(parts) > 2 and parts[2] not in ("", "[N/A]") else None,
                int(free) if free.isdigit() else None,
                len(parts) > 3,
            )
        )
    return rows


def ethtool_info(text: str) -> dict[str, str]:
    """`ethtool -i IF` -> {"driver": ..., "firmware-version": ..., "bus-info": ...}."""
    info: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            info[key.strip()] = value.strip()
    return info


def tc_shaped_bps(text: str) -> int | None:
    """The rate of a root tbf qdisc from `tc -j qdisc show dev IF` (tc gives bytes/s), as bits/s; None if none."""
    try:
        entries = json.loads(text or "[]")
    except ValueError as exc:
        raise ValueError(f"tc -j qdisc: not JSON ({exc})") from None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("kind") == "tbf" and entry.get("root"):
            rate = entry.get("options", {}).get("rate")
            if isinstance(rate, int) and rate > 0:
                return rate * 8
    return None
