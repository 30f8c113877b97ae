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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wirespeed.adapters.ethtool_ioctl import EthtoolError, StatsReader
from wirespeed.core.counters import RDMA_WORDS, IfaceReading, is_error_counter, parse_proc_stat, select_counters
from wirespeed.core.meter import NodeSample

NET = Path("/sys/class/net")
RESCAN_S = 1.0


def parse_proc_net_dev(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/dev as {iface: {rx_bytes, rx_packets, rx_errors, rx_dropped, tx_bytes, ...}}."""
    fields = ("bytes", "packets", "errors", "dropped", "fifo_errors", "frame_errors", "compressed", "multicast")
    tx_fields = ("bytes", "packets", "errors", "dropped", "fifo_errors", "collisions", "carrier_errors", "compressed")
    found: dict[str, dict[str, int]] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        values = rest.split()
        if not sep or len(values) < 16:
            continue
        counters = {f"rx_{f}": int(v) for f, v in zip(fields, values[:8], strict=True)}
        counters.update({f"tx_{f}": int(v) for f, v in zip(tx_fields, values[8:16], strict=True)})
        found[name.strip()] = counters
    return found


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
    selected: list[str] = field(default_factory=list)
    rdma_ports: list[Path] = field(default_factory=list)
    rdma_errors: dict[str, int] = field(default_factory=dict)


class NodeSampler:
    """Reads the chosen interfaces of this node; one `sample()` per tick."""

    def __init__(self, node: str, ifaces: Sequence[str]) -> None:
        self.node = node
        self._ifaces = [self._open(label, label) for label in ifaces]
        self._last_scan = 0.0
        self._last_rdma_errors = 0.0

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
        for iface in self._ifaces:
            if iface.reader is not None:
                iface.reader.close()

    def _stats(self, iface: _Iface) -> dict[str, int] | None:
        """Selected driver statistics; None when the interface is gone."""
        if iface.reader is None:
            return {} if (NET / iface.name).exists() else None
        try:
            values = iface.reader.read()
        except EthtoolError:
            iface.reader.close()
            iface.reader = None
            return None
        if iface.reader.names is not iface.names:  # the string set changed (PFC on, channels): choose again
            iface.names = iface.reader.names
            iface.selected = select_counters(iface.names)
        return {name: values[name] for name in iface.selected if name in values}

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
        try:
            netdev = parse_proc_net_dev(Path("/proc/net/dev").read_text())
        except OSError:
            netdev = {}
        readings: dict[str, IfaceReading] = {}
        missing: list[str] = []
        for iface in self._ifaces:
            if iface.reader is None and (NET / iface.name).exists():
                try:
                    iface.reader = StatsReader(iface.name)
                except EthtoolError:
                    iface.reader = None
            stats = self._stats(iface)
            if stats is None or iface.name not in netdev:
                missing.append(iface.label)
                continue
            phy = "tx_bytes_phy" in stats
            readings[iface.label] = IfaceReading(
                stats=stats,
                netdev={}
                if phy
                else {k: v for k, v in netdev[iface.name].items() if k.endswith(("bytes", "packets"))}
                | {k: v for k, v in netdev[iface.name].items() if is_error_counter(k)},
                rdma=self._rdma(iface, with_errors) if iface.rdma_ports else {},
                pci=iface.pci,
                speed_mbps=iface.speed_mbps,
            )
        if missing:
            self._find_renamed()
        try:
            cpu = parse_proc_stat(Path("/proc/stat").read_text())
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
