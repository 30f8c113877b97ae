"""The node side of the counter sampler: NIC counters, RDMA port counters and per-core CPU, cheaply, many times a
second (what `wirespeed agent sample` streams).

Driver statistics come through the SIOCETHTOOL ioctl (the string set once, then only values), netdev counters
from one read of /proc/net/dev for all interfaces, RDMA data counters from sysfs (their error counters at most
once a second), CPU from /proc/stat. An interface that disappears is looked for again by its PCI function, so a
NIC that comes back under another name (hot-plug on the Spark) keeps its place. Between full readings the line
comes from a steady layout, which the compiled reader (`steadyreader`) can take over where the node builds it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path

from wirespeed.adapters.ethtool_ioctl import EthtoolError, StatsReader
from wirespeed.core.fabric.counters import (
    RDMA_WORDS,
    CpuTimes,
    IfaceReading,
    cores_json,
    is_error_counter,
    parse_proc_stat,
    select_counters,
)
from wirespeed.core.fabric.meter import NodeSample

NET = Path("/sys/class/net")
RESCAN_S = 1.0
CPU_INTERVAL_S = 0.1
PROC_READ = 65536


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
NETDEV_KEPT_NAMES = tuple(name for _, name in NETDEV_KEPT)
_NETDEV_PICK = itemgetter(*(i for i, _ in NETDEV_KEPT))
# The netdev object of a sample line, numbers left out: /proc/net/dev's digits go in as they are.
NETDEV_FORMAT = "{" + ",".join(f'"{name}":%s' for name in NETDEV_KEPT_NAMES) + "}"


def proc_net_dev_fields(text: str, only: Collection[str] | None = None) -> dict[str, tuple[str, ...]]:
    """/proc/net/dev as {iface: the kept fields' digits, in NETDEV_KEPT_NAMES order} (no number parsed)."""
    found: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        name = name.strip()
        if not sep or (only is not None and name not in only):
            continue
        values = rest.split()
        if len(values) < len(PROC_NET_DEV_FIELDS) or not "".join(values).isdigit():  # digits only: JSON numbers
            continue
        found[name] = _NETDEV_PICK(values)
    return found


class ProcFile:
    """A /proc file kept open and read again from the start each time (no open/close per sample)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def read(self) -> str:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        first = os.pread(self._fd, PROC_READ, 0)
        if len(first) < PROC_READ:  # all of it in one read (the usual case): no second call to see the end
            return first.decode("ascii", "replace")
        chunks, offset = [first], len(first)
        while chunk := os.pread(self._fd, PROC_READ, offset):
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
    # Laid out once per string set: the selected names, how to take their values, their JSON with holes for them.
    selected_names: tuple[str, ...] = ()
    pick: Callable[[Sequence[int]], tuple[int, ...]] = field(default=lambda _: ())
    stats_format: str = "{}"
    has_phy: bool = False  # the driver counts the physical port: /proc/net/dev is not needed
    head: str = ""  # `"label":{"stats":` of the sample line
    tail: str = ""  # `,"pci":...,"speed_mbps":...}`

    def choose(self, names: tuple[str, ...]) -> None:
        """Select the counters worth sending from a (new) string set, and lay out their part of the line."""
        self.names = names
        wanted = set(select_counters(names))
        self.selected = [(i, name) for i, name in enumerate(names) if name in wanted]
        self.selected_names = tuple(name for _, name in self.selected)
        indices = [i for i, _ in self.selected]
        if len(indices) > 1:
            self.pick = itemgetter(*indices)
        else:
            self.pick = (lambda values: (values[indices[0]],)) if indices else (lambda _: ())
        entries = (json.dumps(name).replace("%", "%%") + ":%d" for name in self.selected_names)
        self.stats_format = "{" + ",".join(entries) + "}"
        self.has_phy = "tx_bytes_phy" in self.selected_names


@dataclass
class _Reading:
    """One tick, as read: (interface, selected driver values, netdev digits or None, RDMA counters) per interface
    found, and the rest of a sample."""

    t: float
    wall: float
    ifaces: list[tuple[_Iface, tuple[int, ...], tuple[str, ...] | None, dict[str, int]]]
    cpu: list[CpuTimes]
    missing: list[str]
    renamed: dict[str, str]


def _tuple_getter(indices: Sequence[int]) -> Callable[[Sequence[str]], tuple[str, ...]]:
    """itemgetter that gives a tuple for one index too."""
    if len(indices) == 1:
        (only,) = indices
        return lambda items: (items[only],)
    return itemgetter(*indices)


def _literal(text: str) -> str:
    """Literal text inside a %-format template."""
    return text.replace("%", "%%")


@dataclass(frozen=True)
class _SteadyLayout:
    """A full reading's line as a %-format template, for the lines that follow while nothing changes. Its values
    are gathered as `_steady_line` reads them (the clocks, every interface's selected driver values, every netdev
    digit, the RDMA counters, CPU) and `order` puts them in the template's order: one C call each, where laying
    the line out interface by interface runs Python per counter (%-format, since str.format parses its template
    on every call: 20 us against 8 for a 2 KB line)."""

    since: float
    template: str
    order: Callable[[Sequence[object]], tuple[object, ...]]
    stat_ifaces: tuple[_Iface, ...]  # read by ioctl on every line, in the order their values are gathered
    rdma_ifaces: tuple[_Iface, ...]
    netdev_names: Callable[[Sequence[str]], tuple[str, ...]]  # the name tokens where the interfaces were
    netdev_expected: tuple[str, ...]
    netdev_digits: Callable[[Sequence[str]], tuple[str, ...]] | None  # every kept field, interface by interface
    compiled: str | None = None  # the same layout for the compiled reader (`reader_layout`); None: Python only

    @classmethod
    def of(cls, reading: _Reading, node_json: str, net_dev_text: str) -> _SteadyLayout | None:
        """The layout of a reading with nothing missing or renamed whose netdev interfaces are where
        /proc/net/dev's tokens can find them again; None otherwise (every line is then a full reading)."""
        if reading.missing or reading.renamed:
            return None
        tokens = net_dev_text.split()
        stat_ifaces = [i for i, values, _, _ in reading.ifaces if values]
        netdev_ifaces = [i for i, _, netdev, _ in reading.ifaces if netdev is not None]
        rdma_ifaces = [i for i, _, _, _ in reading.ifaces if i.rdma_ports]
        positions: list[int] = []
        for iface in netdev_ifaces:
            try:
                at = tokens.index(iface.name + ":")
            except ValueError:  # `name:digits` glued together (old kernels): no fixed place
                return None
            if len(tokens) < at + 1 + len(PROC_NET_DEV_FIELDS):
                return None
            positions.append(at)
        gathered = iter(range(2, 1 << 30))  # where each value lands in the gathered list: 0 and 1 are the clocks
        stat_at = {id(i): [next(gathered) for _ in i.selected_names] for i in stat_ifaces}
        netdev_at = {id(i): [next(gathered) for _ in NETDEV_KEPT_NAMES] for i in netdev_ifaces}
        rdma_at = {id(i): next(gathered) for i in rdma_ifaces}
        cpu_at = next(gathered)
        # What the compiled reader reads for each gathered value: (kind, a, b), kinds as steady_reader.c has them.
        sources = {0: (SLOT_T, 0, 0), 1: (SLOT_WALL, 0, 0), cpu_at: (SLOT_CPU, 0, 0)}
        for k, iface in enumerate(stat_ifaces):
            for at, (index, _) in zip(stat_at[id(iface)], iface.selected, strict=True):
                sources[at] = (SLOT_STAT, k, index)
        for iface, token_at in zip(netdev_ifaces, positions, strict=True):
            for at, (field_index, _) in zip(netdev_at[id(iface)], NETDEV_KEPT, strict=True):
                sources[at] = (SLOT_NETDEV, token_at + 1 + field_index, 0)
        for k, iface in enumerate(rdma_ifaces):
            sources[rdma_at[id(iface)]] = (SLOT_RDMA, k, 0)
        order = [0, 1]
        parts = [_literal(f'{{"node":{node_json},"t":') + "%r" + ',"wall":%r,"ifaces":{']
        for n, (iface, _, _, _) in enumerate(reading.ifaces):
            parts.append(_literal(("," if n else "") + iface.head))
            if id(iface) in stat_at:
                parts.append("{" + ",".join(_literal(json.dumps(name)) + ":%s" for name in iface.selected_names) + "}")
                order += stat_at[id(iface)]
            else:
                parts.append("{}")
            parts.append(',"netdev":')
            if id(iface) in netdev_at:
                parts.append("{" + ",".join(f'"{name}":%s' for name in NETDEV_KEPT_NAMES) + "}")
                order += netdev_at[id(iface)]
            else:
                parts.append("{}")
            parts.append(',"rdma":')
            if id(iface) in rdma_at:
                parts.append("%s")
                order.append(rdma_at[id(iface)])
            else:
                parts.append("{}")
            parts.append(_literal(iface.tail))
        parts.append('},"cpu":%s,"missing":[],"renamed":{}}')
        order.append(cpu_at)
        template = "".join(parts)
        rdma_found = {id(i): rdma for i, _, _, rdma in reading.ifaces}
        return cls(
            since=reading.t,
            template=template,
            order=itemgetter(*order),
            stat_ifaces=tuple(stat_ifaces),
            rdma_ifaces=tuple(rdma_ifaces),
            netdev_names=_tuple_getter(positions) if positions else (lambda _: ()),
            netdev_expected=tuple(i.name + ":" for i in netdev_ifaces),
            netdev_digits=(
                _tuple_getter([at + 1 + k for at in positions for k, _ in NETDEV_KEPT]) if positions else None
            ),
            compiled=reader_layout(
                template,
                [sources[at] for at in order],
                [(i.name, len(i.names)) for i in stat_ifaces],
                [(i, rdma_found[id(i)]) for i in rdma_ifaces],
                list(zip(positions, (i.name + ":" for i in netdev_ifaces), strict=True)),
            ),
        )


# The value after a literal part of the reader's layout (steady_reader.c's K_ numbers): none (the last part), the
# monotonic clock, the wall clock, driver value b of STATS interface a, /proc/net/dev token a, RDMA object a, CPU.
SLOT_NONE, SLOT_T, SLOT_WALL, SLOT_STAT, SLOT_NETDEV, SLOT_RDMA, SLOT_CPU = range(7)


def _record(head: str, text: str) -> str:
    """One record of the reader's layout: its header with the text's length in bytes, then the text."""
    data = text.encode("utf-8", "surrogateescape")
    return f"{head} {len(data)}\n{text}\n"


def reader_layout(
    template: str,
    slots: Sequence[tuple[int, int, int]],
    stats: Sequence[tuple[str, int]],
    rdma: Sequence[tuple[_Iface, dict[str, int]]],
    names: Sequence[tuple[int, str]],
) -> str | None:
    """A steady layout as `steady_reader.c` reads it: the netdev tokens to find, the interfaces to read by ioctl,
    the RDMA objects, then the template as literal parts each followed by the value of one slot. None where the
    reader would not make the same line (an RDMA error counter named as a data counter: Python's dict keeps the
    first place, the reader would not)."""
    records = [_record(f"NAME {at}", token) for at, token in names]
    records += [_record(f"STATS {count}", name) for name, count in stats]
    for iface, found in rdma:
        words = [w for w in RDMA_WORDS if w in found]
        if iface.rdma_errors.keys() & words or len(found) != len(words) + len(iface.rdma_errors):
            return None  # a clash, or a counter the reader does not know
        errors = json.dumps(iface.rdma_errors, separators=(",", ":"))[1:-1]
        records.append(_record("RDMA", errors))
        for word in words:
            records.append(_record(f"WORD {len(iface.rdma_ports)}", word))
            records += [_record("FILE", str(port / "counters" / word)) for port in iface.rdma_ports]
    literals = template.replace("%%", "\0").replace("%r", "%s").split("%s")
    if len(literals) != len(slots) + 1:
        return None
    for literal, (kind, a, b) in zip(literals, [*slots, (SLOT_NONE, 0, 0)], strict=True):
        records.append(_record(f"PART {kind} {a} {b}", literal.replace("\0", "%")))
    return "".join(records)


class NodeSampler:
    """Reads the chosen interfaces of this node; one `sample()` per tick."""

    def __init__(self, node: str, ifaces: Sequence[str]) -> None:
        self.node = node
        self._node_json = json.dumps(node)
        self._ifaces = [self._open(label, label) for label in ifaces]
        self._last_scan = 0.0
        self._last_rdma_errors = 0.0
        self._last_cpu = 0.0
        self._net_dev = ProcFile("/proc/net/dev")
        self._net_dev_text = ""  # what the last full reading read of it
        self._stat = ProcFile("/proc/stat")
        self._steady: _SteadyLayout | None = None

    def _open(self, label: str, name: str) -> _Iface:
        speed = _read_int(NET / name / "speed")
        iface = _Iface(label, name, _pci_of(name), speed if speed and speed > 0 else None)
        iface.head = json.dumps(label) + ':{"stats":'
        iface.tail = f',"pci":{json.dumps(iface.pci)},"speed_mbps":{json.dumps(iface.speed_mbps)}}}'
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

    def _stats(self, iface: _Iface) -> tuple[int, ...] | None:
        """Selected driver statistics' values, in `iface.selected_names` order; None when the interface is gone."""
        if iface.reader is None:
            return () if (NET / iface.name).exists() else None
        if iface.names and not iface.selected and time.monotonic() - iface.checked < RESCAN_S:
            return ()  # nothing worth reading in this driver's set (veth): look again once a second
        iface.checked = time.monotonic()
        try:
            values = iface.reader.values_view()
        except EthtoolError:
            iface.reader.close()
            iface.reader = None
            return None
        if iface.reader.names is not iface.names:  # the string set changed (PFC on, channels): choose again
            iface.choose(iface.reader.names)
        return iface.pick(values)

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

    def _read(self) -> _Reading:
        """One tick's reading of every interface, kept as the kernel gave it (what `sample` and `line` share)."""
        now = time.monotonic()
        with_errors = now - self._last_rdma_errors >= 1.0
        if with_errors:
            self._last_rdma_errors = now
        all_stats: list[tuple[_Iface, tuple[int, ...] | None]] = []
        for iface in self._ifaces:
            if iface.reader is None and (NET / iface.name).exists():
                try:
                    iface.reader = StatsReader(iface.name)
                except EthtoolError:
                    iface.reader = None
            all_stats.append((iface, self._stats(iface)))
        # The kernel's counters only where the driver has no PHY counters (veth, virtio, most non-mlx5 NICs).
        need = {i.name for i, values in all_stats if values is not None and not (values and i.has_phy)}
        self._net_dev_text = ""
        try:
            if need:
                self._net_dev_text = self._net_dev.read()
            netdev = proc_net_dev_fields(self._net_dev_text, need) if need else {}
        except OSError:
            netdev = {}
        found: list[tuple[_Iface, tuple[int, ...], tuple[str, ...] | None, dict[str, int]]] = []
        missing: list[str] = []
        for iface, values in all_stats:
            if values is None or (iface.name in need and iface.name not in netdev):
                missing.append(iface.label)
                continue
            rdma = self._rdma(iface, with_errors) if iface.rdma_ports else {}
            found.append((iface, values, netdev.get(iface.name), rdma))
        if missing:
            self._find_renamed()
        cpu: list[CpuTimes] = []
        if now - self._last_cpu >= CPU_INTERVAL_S:  # /proc/stat is costly to generate: ten times a second is plenty
            self._last_cpu = now
            try:
                cpu = parse_proc_stat(self._stat.read())
            except OSError:
                cpu = []
        renamed = {i.label: i.name for i in self._ifaces if i.name != i.label}
        return _Reading(now, time.time(), found, cpu, missing, renamed)

    def sample(self) -> NodeSample:
        reading = self._read()
        return NodeSample(
            node=self.node,
            t=reading.t,
            ifaces={
                iface.label: IfaceReading(
                    stats=dict(zip(iface.selected_names, values, strict=True)) if values else {},
                    netdev={} if netdev is None else dict(zip(NETDEV_KEPT_NAMES, map(int, netdev), strict=True)),
                    rdma=rdma,
                    pci=iface.pci,
                    speed_mbps=iface.speed_mbps,
                )
                for iface, values, netdev, rdma in reading.ifaces
            },
            cpu=reading.cpu,
            wall=reading.wall,
            missing=tuple(reading.missing),
            renamed=reading.renamed,
        )

    def line(self) -> str:
        """The same sample as `sample()`, as its JSON line (`sample_to_json`'s layout).

        Between full readings (at least once every RESCAN_S, and whenever anything changes) the line comes from a
        steady layout: one %-format template for the whole line, the driver values each interface's one ioctl gives, and
        the netdev digits taken from /proc/net/dev's tokens at known places. At 100 lines a second most of an
        agent's CPU goes on work done cold after each sleep, so the less Python a line runs, the cheaper it is.
        """
        steady = self._steady
        if steady is not None:
            line = self._steady_line(steady)
            if line is not None:
                return line
            self._steady = None
        reading = self._read()
        self._steady = _SteadyLayout.of(reading, self._node_json, self._net_dev_text)
        return self._full_line(reading)

    def compiled_layout(self) -> tuple[str, float] | None:
        """The compiled reader's layout for the lines after the one just made, and when a full reading is due
        (monotonic seconds); None when they must come from `line()`."""
        steady = self._steady
        if steady is None or steady.compiled is None:
            return None
        return steady.compiled, steady.since + RESCAN_S

    @property
    def last_cpu(self) -> float:
        """When /proc/stat was last read (monotonic seconds): the compiled reader carries it on."""
        return self._last_cpu

    @last_cpu.setter
    def last_cpu(self, value: float) -> None:
        self._last_cpu = value

    def _steady_line(self, steady: _SteadyLayout) -> str | None:
        """The line from the steady layout; None when a full reading is due or anything differs from it."""
        now = time.monotonic()
        if now - steady.since >= RESCAN_S:
            return None
        values: list[object] = [now, time.time()]
        try:
            for iface in steady.stat_ifaces:
                reader = iface.reader
                if reader is None:
                    return None
                raw = reader.values_view()
                if reader.names is not iface.names:  # the string set changed: choose again
                    return None
                values += iface.pick(raw)
        except EthtoolError:
            return None
        if steady.netdev_digits is not None:
            try:
                tokens = self._net_dev.read().split()
                if steady.netdev_names(tokens) != steady.netdev_expected:
                    return None  # an interface came or went: its counters moved
                digits = steady.netdev_digits(tokens)
            except (OSError, IndexError):
                return None
            if not "".join(digits).isdigit():
                return None
            values += digits
        for iface in steady.rdma_ifaces:
            rdma = self._rdma(iface, with_errors=False)  # error counters: the full reading, once a second
            values.append(json.dumps(rdma, separators=(",", ":")) if rdma else "{}")
        cpu = "[]"
        if now - self._last_cpu >= CPU_INTERVAL_S:
            self._last_cpu = now
            try:
                text = self._stat.read()
            except OSError:
                text = ""
            cpu = cores_json(text) or json.dumps(parse_proc_stat(text), separators=(",", ":"))
        values.append(cpu)
        return steady.template % steady.order(values)

    def _full_line(self, reading: _Reading) -> str:
        """A full reading as its line, each interface laid out in turn."""
        parts = [f'{{"node":{self._node_json},"t":{reading.t!r},"wall":{reading.wall!r},"ifaces":{{']
        first = True
        for iface, values, netdev, rdma in reading.ifaces:
            if not first:
                parts.append(",")
            first = False
            parts.append(iface.head)
            parts.append(iface.stats_format % values if values else "{}")
            parts.append(',"netdev":')
            parts.append(NETDEV_FORMAT % tuple(netdev) if netdev is not None else "{}")
            parts.append(',"rdma":')
            parts.append(json.dumps(rdma, separators=(",", ":")) if rdma else "{}")
            parts.append(iface.tail)
        parts.append('},"cpu":')
        parts.append(json.dumps(reading.cpu, separators=(",", ":")) if reading.cpu else "[]")
        parts.append(',"missing":')
        parts.append(json.dumps(reading.missing) if reading.missing else "[]")
        parts.append(',"renamed":')
        parts.append(json.dumps(reading.renamed, separators=(",", ":")) if reading.renamed else "{}")
        parts.append("}")
        return "".join(parts)
