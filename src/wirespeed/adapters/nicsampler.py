"""The node side of the counter sampler: NIC counters, RDMA port counters and per-core CPU, cheaply, many times a
second (what `wirespeed agent sample` streams).

Driver statistics come through the SIOCETHTOOL ioctl (the string set once, then only values), netdev counters
from one read of /proc/net/dev for all interfaces, RDMA data counters from sysfs (their error counters at most
once a second), CPU from /proc/stat. An interface that disappears is looked for again by its PCI function, so a
NIC that comes back under another name (hot-plug on the Spark) keeps its place.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wirespeed.adapters.ethtool_ioctl import EthtoolError, StatsReader
from wirespeed.core.counters import (
    RDMA_WORDS,
    CpuTimes,
    IfaceReading,
    is_error_counter,
    parse_proc_stat,
    select_counters,
)
from wirespeed.core.meter import NodeSample

NET = Path("/sys/class/net")
RESCAN_S = 1.0
CPU_INTERVAL_S = 0.1


PROC_NET_DEV_FIELDS = (
    *(f"rx_{f}" for f in ("bytes", "packets", "errors", "dropped", "fifo_errors", "frame_errors", "compressed")),
    "multicast",
    *(f"tx_{f}" for f in ("bytes", "packets", "errors", "dropped", "fifo_errors", "collisions", "carrier_errors")),
    "tx_compressed",
)
# What a sample keeps of them: the traffic and the error counters (compressed, multicast, collisions are noise).
NETDEV_KEPT = tuple(
    (i, name)
    for i, name in enumerate(PROC_NET_DEV_FIELDS)
    if name.endswith(("_bytes", "_packets")) or is_error_counter(name)
)


def parse_proc_net_dev(text: str, only: Collection[str] | None = None) -> dict[str, dict[str, int]]:
    """/proc/net/dev as {iface: {rx_bytes, rx_packets, rx_errors, rx_dropped, tx_bytes, ...}} (kept fields)."""
    found: dict[str, dict[str, int]] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        name = name.strip()
        if not sep or (only is not None and name not in only):
            continue
        values = rest.split()
        if len(values) < len(PROC_NET_DEV_FIELDS):
            continue
        found[name] = {key: int(values[i]) for i, key in NETDEV_KEPT}
    return found


class ProcFile:
    """A /proc file kept open and read again from the start each time (no open/close per sample)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def read(self) -> str:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        chunks, offset = [], 0
        while chunk := os.pread(self._fd, 65536, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks).decode("ascii", "replace")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _pci_of(name: str) -> str | None:
    try:
        return os.path.basename(os.path.realpath(NET / name / "device")) if (NET / name / "device").exists() else None
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


@dataclass
class _Iface:
    label: str  # the name asked for
    name: str  # the name it has now
    pci: str | None
    speed_mbps: int | None
    reader: StatsReader | None = None
    names: tuple[str, ...] = ()
    selected: list[tuple[int, str]] = field(default_factory=list)  # (index in the string set, name)
    rdma_ports: list[Path] = field(default_factory=list)
    rdma_errors: dict[str, int] = field(default_factory=dict)
    checked: float = 0.0  # when the driver statistics were last read


class NodeSampler:
    """Reads the chosen interfaces of this node; one `sample()` per tick."""

    def __init__(self, node: str, ifaces: Sequence[str]) -> None:
        self.node = node
        self._ifaces = [self._open(label, label) for label in ifaces]
        self._last_scan = 0.0
        self._last_rdma_errors = 0.0
        self._last_cpu = 0.0
        self._net_dev = ProcFile("/proc/net/dev")
        self._stat = ProcFile("/proc/stat")

    def _open(self, label: str, name: str) -> _Iface:
        speed = _read_int(NET / name / "speed")
        iface = _Iface(label, name, _pci_of(name), speed if speed and speed > 0 else None)
        try:
            iface.reader = StatsReader(name)
        except EthtoolError:
            iface.reader = None
        iface.rdma_ports = sorted((NET / name / "device" / "infiniband").glob("*/ports/*"))
        return iface

    def close(self) -> None:
        self._net_dev.close()
        self._stat.close()
        for iface in self._ifaces:
            if iface.reader is not None:
                iface.reader.close()

    def _stats(self, iface: _Iface) -> dict[str, int] | None:
        """Selected driver statistics; None when the interface is gone."""
        if iface.reader is None:
            return {} if (NET / iface.name).exists() else None
        if iface.names and not iface.selected and time.monotonic() - iface.checked < RESCAN_S:
            return {}  # nothing worth reading in this driver's set (veth): look again once a second
        iface.checked = time.monotonic()
        try:
            values = iface.reader.values()
        except EthtoolError:
            iface.reader.close()
            iface.reader = None
            return None
        if iface.reader.names is not iface.names:  # the string set changed (PFC on, channels): choose again
            iface.names = iface.reader.names
            wanted = set(select_counters(iface.names))
            iface.selected = [(i, name) for i, name in enumerate(iface.names) if name in wanted]
        return {name: values[i] for i, name in iface.selected}

    def _rdma(self, iface: _Iface, with_errors: bool) -> dict[str, int]:
        found: dict[str, int] = {}
        for port in iface.rdma_ports:
            for name in RDMA_WORDS:
                value = _read_int(port / "counters" / name)
                if value is not None:
                    found[name] = found.get(name, 0) + value
            if with_errors:
                errors: dict[str, int] = {}
                for directory in (port / "hw_counters", port / "counters"):
                    try:
                        entries = [e for e in os.listdir(directory) if is_error_counter(e)]
                    except OSError:
                        continue
                    for entry in entries:
                        value = _read_int(directory / entry)
                        if value is not None:
                            errors[entry] = errors.get(entry, 0) + value
                iface.rdma_errors = errors
        found.update(iface.rdma_errors)
        return found

    def _find_renamed(self) -> None:
        """Interfaces that are gone: look for a netdev on the same PCI function under another name."""
        now = time.monotonic()
        if now - self._last_scan < RESCAN_S:
            return
        self._last_scan = now
        try:
            present = os.listdir(NET)
        except OSError:
            return
        for i, iface in enumerate(self._ifaces):
            if iface.name in present or iface.pci is None:
                continue
            match = next((name for name in present if _pci_of(name) == iface.pci), None)
            if match is not None:
                self._ifaces[i] = self._open(iface.label, match)

    def sample(self) -> NodeSample:
        now = time.monotonic()
        with_errors = now - self._last_rdma_errors >= 1.0
        if with_errors:
            self._last_rdma_errors = now
        readings: dict[str, IfaceReading] = {}
        missing: list[str] = []
        all_stats: list[tuple[_Iface, dict[str, int] | None]] = []
        for iface in self._ifaces:
            if iface.reader is None and (NET / iface.name).exists():
                try:
                    iface.reader = StatsReader(iface.name)
                except EthtoolError:
                    iface.reader = None
            all_stats.append((iface, self._stats(iface)))
        # The kernel's counters only where the driver has no PHY counters (veth, virtio, most non-mlx5 NICs).
        need = {i.name for i, stats in all_stats if stats is not None and "tx_bytes_phy" not in stats}
        try:
            netdev = parse_proc_net_dev(self._net_dev.read(), need) if need else {}
        except OSError:
            netdev = {}
        for iface, stats in all_stats:
            if stats is None or (iface.name in need and iface.name not in netdev):
                missing.append(iface.label)
                continue
            readings[iface.label] = IfaceReading(
                stats=stats,
                netdev=netdev.get(iface.name, {}),
                rdma=self._rdma(iface, with_errors) if iface.rdma_ports else {},
                pci=iface.pci,
                speed_mbps=iface.speed_mbps,
            )
        if missing:
            self._find_renamed()
        cpu: list[CpuTimes] = []
        if now - self._last_cpu >= CPU_INTERVAL_S:  # /proc/stat is costly to generate: ten times a second is plenty
            self._last_cpu = now
            try:
                cpu = parse_proc_stat(self._stat.read())
            except OSError:
                cpu = []
        return NodeSample(
            node=self.node,
            t=now,
            ifaces=readings,
            cpu=cpu,
            wall=time.time(),
            missing=tuple(missing),
            renamed={i.label: i.name for i in self._ifaces if i.name != i.label},
        )
