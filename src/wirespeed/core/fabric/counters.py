"""Which NIC counters count the wire, and rates from two readings. Pure.

RDMA bytes never pass the kernel's network stack, so the netdev counters (`ip -s link`) miss them; mlx5's
`*_bytes_phy` count everything on the physical port, RoCE included (spark-facts 4.1). On a multi-host port (the
Spark's two PCIe halves of one 200G port) both functions may report the PHY counters of the one shared wire:
a cable is then counted once, and the per-half split comes from the per-function vport counters, where RDMA is
`*_vport_rdma_*` and the rest `*_vport_unicast/multicast/broadcast_*`.

Counters are 64-bit; a counter that goes backwards was reset (driver reload, interface re-created), not wrapped,
unless it was near the top of its width: that interval then has no rate rather than an invented spike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from types import MappingProxyType
from typing import NamedTuple

PHY = ("tx_bytes_phy", "rx_bytes_phy", "tx_packets_phy", "rx_packets_phy")
NETDEV = ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets")
VPORT_TX = (
    "tx_vport_unicast_bytes",
    "tx_vport_multicast_bytes",
    "tx_vport_broadcast_bytes",
    "tx_vport_rdma_unicast_bytes",
    "tx_vport_rdma_multicast_bytes",
)
VPORT_RX = tuple(name.replace("tx_", "rx_", 1) for name in VPORT_TX)
VPORT_RDMA = ("tx_vport_rdma_unicast_bytes", "rx_vport_rdma_unicast_bytes")
VPORT_NEEDED = (*VPORT_RDMA, "tx_vport_unicast_bytes", "rx_vport_unicast_bytes")  # for a function's own bytes
# Counters whose growth explains trouble (spark-facts 4.1-4.3). Pause/CNP/ECN grow legitimately with PFC/ECN on.
ERROR_NAMES = frozenset(
    {
        "rx_discards_phy",
        "tx_discards_phy",
        "tx_errors_phy",
        "rx_crc_errors_phy",
        "rx_symbol_err_phy",
        "rx_in_range_len_errors_phy",
        "rx_out_of_range_len_phy",
        "rx_oversize_pkts_phy",
        "rx_undersize_pkts_phy",
        "rx_fragments_phy",
        "rx_jabbers_phy",
        "rx_pcs_symbol_err_phy",
        "link_down_events_phy",
        "rx_out_of_buffer",
        # drops for lack of receive WQEs on an internal device RQ (en_stats.c vnic_env_stats_dev_oob_desc,
        # counters.rst); "dev_out_of_buffer" was only its name in review, never the driver's
        "dev_internal_queue_oob",
        "outbound_pci_buffer_overflow",
        "rx_pci_signal_integrity",
        "tx_pci_signal_integrity",
        "rx_pause_ctrl_phy",
        "tx_pause_ctrl_phy",
        "tx_pause_storm_warning_events",
        "tx_pause_storm_error_events",
        "rx_global_pause",
        "tx_global_pause",
        "rx_oversize_pkts_sw_drop",
        # netdev statistics (sysfs)
        "rx_dropped",
        "tx_dropped",
        "rx_errors",
        "tx_errors",
        "rx_crc_errors",
        "rx_missed_errors",
        "rx_over_errors",
        "rx_fifo_errors",
        "rx_frame_errors",
        "tx_fifo_errors",
        "tx_carrier_errors",
        # RDMA hw_counters
        "out_of_sequence",
        "packet_seq_err",
        "local_ack_timeout_err",
        "rnr_nak_retry_err",
        "out_of_buffer",
        "rx_icrc_encapsulated",
        "req_cqe_error",
        "resp_cqe_error",
        "roce_adp_retrans",
        "roce_adp_retrans_to",
        "np_cnp_sent",
        "rp_cnp_handled",
        "np_ecn_marked_roce_packets",
        # RDMA port counters
        "port_xmit_discards",
        "port_rcv_errors",
        "link_downed",
        "symbol_error",
    }
)
ERROR_PATTERN = re.compile(r"^(rx_prio\d_(discards|buf_discard|cong_discard|pause)|tx_prio\d_pause)$")
# Congestion signals, not faults: they grow by design with PFC and ECN on (shown, not called errors).
CONGESTION = frozenset(
    {
        "rx_pause_ctrl_phy",
        "tx_pause_ctrl_phy",
        "rx_global_pause",
        "tx_global_pause",
        "np_cnp_sent",
        "rp_cnp_handled",
        "np_ecn_marked_roce_packets",
    }
)
CONGESTION_PATTERN = re.compile(r"^[rt]x_prio\d_pause$")


def is_congestion(name: str) -> bool:
    """Pause frames, CNPs and ECN marks (names may carry a "netdev:" or "rdma:" prefix)."""
    bare = name.rsplit(":", 1)[-1]
    return bare in CONGESTION or bool(CONGESTION_PATTERN.match(bare))


RDMA_WORDS = ("port_xmit_data", "port_rcv_data")  # 4-byte words (K-ABI)
RDMA_PACKETS = ("port_xmit_packets", "port_rcv_packets")
WIDTH = 64
NEAR_TOP = 1 << 40  # a 64-bit counter within this of 2^64 may wrap; anything else going backwards was reset


@lru_cache(maxsize=8192)  # the controller asks for every counter of every line; the names repeat
def is_error_counter(name: str) -> bool:
    return name in ERROR_NAMES or bool(ERROR_PATTERN.match(name))


def select_counters(names: Iterable[str]) -> list[str]:
    """The driver statistics worth sending per sample: the wire, the per-function split and the error counters."""
    wanted = set(PHY) | set(VPORT_TX) | set(VPORT_RX)
    return [name for name in names if name in wanted or is_error_counter(name)]


def wire_source(stats: Container[str]) -> str:
    """ "phy" when the driver counts the physical port (RDMA included), else "netdev" (the kernel stack only);
    `stats`: the counters, or their names."""
    return "phy" if all(name in stats for name in PHY) else "netdev"


def delta(previous: int, current: int, width: int = WIDTH) -> int | None:
    """How much a counter grew; None when it went backwards for any reason but a wrap at its width."""
    if current >= previous:
        return current - previous
    top = 1 << width
    if width < WIDTH and previous >= top // 2 and current < top // 2:
        return current + top - previous
    if width == WIDTH and previous >= top - NEAR_TOP:
        return current + top - previous
    return None


@dataclass(frozen=True)
class IfaceReading:
    """One interface at one instant, as the node's sampler read it."""

    stats: Mapping[str, int] = field(default_factory=dict)  # selected driver statistics (ethtool -S names)
    netdev: Mapping[str, int] = field(default_factory=dict)  # /sys/class/net/IF/statistics
    rdma: Mapping[str, int] = field(default_factory=dict)  # RDMA port counters and hw_counters, raw
    pci: str | None = None
    speed_mbps: int | None = None

    # A reading is metered twice (as the interval's end, then as the next one's start): what `iface_rate` derives
    # from it is kept on it the first time (frozen fields; the derived values are not fields, so not compared).
    def derived(self) -> Derived:
        """The figures a rate needs, taken once through the plan for this reading's counter names."""
        found: Derived | None = self.__dict__.get("_derived")
        if found is not None:
            return found
        stats, netdev, rdma = self.stats, self.netdev, self.rdma
        plan = _plan(tuple(stats), tuple(netdev), tuple(rdma))
        found = Derived(
            plan,
            plan.wire_tx(wire := stats if plan.source == "phy" else netdev),
            plan.wire_rx(wire),
            (plan.function_tx(stats), plan.function_rx(stats)) if plan.function else None,
            plan.rdma(rdma),
            plan.stats_errors(stats) + plan.netdev_errors(netdev) + plan.rdma_errors(rdma),
        )
        self.__dict__["_derived"] = found
        return found

    def wire(self) -> tuple[str, dict[str, int]]:
        """(source, {tx_bytes, rx_bytes, tx_packets, rx_packets}) from the best counters this interface has."""
        if wire_source(self.stats) == "phy":
            return "phy", {n.removesuffix("_phy"): self.stats[n] for n in PHY}
        return "netdev", {n: self.netdev[n] for n in NETDEV if n in self.netdev}

    def rdma_words(self) -> tuple[int, int] | None:
        """(xmit, rcv) RDMA port data in 4-byte words, as the counters hold them (wrap is in words)."""
        return self.derived().rdma_words

    def errors(self) -> dict[str, int]:
        found = self.derived()
        return dict(zip(found.plan.error_keys, found.error_values, strict=True))


def _getter(keys: tuple[str, ...]) -> Callable[[Mapping[str, int]], tuple[int, ...]]:
    """The values at `keys`, always as a tuple (`itemgetter` of one key returns the bare value)."""
    if not keys:
        return lambda _: ()
    if len(keys) == 1:
        (key,) = keys
        return lambda counters: (counters[key],)
    return itemgetter(*keys)


def _pair_getter(a: str, b: str, names: tuple[str, ...]) -> Callable[[Mapping[str, int]], tuple[int, int] | None]:
    """(counters[a], counters[b]) when `names` has both, else a getter of None."""
    if a in names and b in names:
        return itemgetter(a, b)
    return lambda _: None


def _one_getter(key: str, names: tuple[str, ...]) -> Callable[[Mapping[str, int]], int | None]:
    """counters[key] when `names` has it, else a getter of None."""
    return itemgetter(key) if key in names else lambda _: None


def _sum_getter(keys: tuple[str, ...]) -> Callable[[Mapping[str, int]], int]:
    get = _getter(keys)
    return lambda counters: sum(get(counters))


@dataclass(frozen=True)
class CounterPlan:
    """What to take from a reading with these counter names: which source counts the wire, and getters (C-level
    `itemgetter`s) for the figures and the error counters. Made once per set of names, which stays the same from
    one line to the next; `error_keys` is one tuple object per plan, so two readings of one plan compare their
    error values as two tuples."""

    source: str  # "phy" or "netdev"
    wire_tx: Callable[[Mapping[str, int]], int | None]  # tx_bytes of the source's counters
    wire_rx: Callable[[Mapping[str, int]], int | None]
    function: bool  # the vport counters needed for a function's own bytes are there
    function_tx: Callable[[Mapping[str, int]], int]
    function_rx: Callable[[Mapping[str, int]], int]
    rdma: Callable[[Mapping[str, int]], tuple[int, int] | None]
    error_keys: tuple[str, ...]  # as `errors()` names them: stats bare, then "netdev:" and "rdma:" prefixed
    stats_errors: Callable[[Mapping[str, int]], tuple[int, ...]]
    netdev_errors: Callable[[Mapping[str, int]], tuple[int, ...]]
    rdma_errors: Callable[[Mapping[str, int]], tuple[int, ...]]


@lru_cache(maxsize=1024)  # an interface's counter names are the same in every reading
def _plan(stats: tuple[str, ...], netdev: tuple[str, ...], rdma: tuple[str, ...]) -> CounterPlan:
    phy = wire_source(stats) == "phy"
    errors = [tuple(n for n in names if is_error_counter(n)) for names in (stats, netdev, rdma)]
    present_tx = tuple(n for n in VPORT_TX if n in stats)
    present_rx = tuple(n for n in VPORT_RX if n in stats)
    return CounterPlan(
        source="phy" if phy else "netdev",
        wire_tx=_one_getter("tx_bytes_phy", stats) if phy else _one_getter("tx_bytes", netdev),
        wire_rx=_one_getter("rx_bytes_phy", stats) if phy else _one_getter("rx_bytes", netdev),
        function=all(n in stats for n in VPORT_NEEDED),
        function_tx=_sum_getter(present_tx),
        function_rx=_sum_getter(present_rx),
        rdma=_pair_getter(*RDMA_WORDS, rdma),
        error_keys=(*errors[0], *(f"netdev:{n}" for n in errors[1]), *(f"rdma:{n}" for n in errors[2])),
        stats_errors=_getter(errors[0]),
        netdev_errors=_getter(errors[1]),
        rdma_errors=_getter(errors[2]),
    )


class Derived(NamedTuple):
    """One reading's figures, through its plan."""

    plan: CounterPlan
    wire_tx: int | None  # tx_bytes of the wire source
    wire_rx: int | None
    function: tuple[int, int] | None  # this function's own (tx, rx) bytes
    rdma_words: tuple[int, int] | None
    error_values: tuple[int, ...]  # in the order of plan.error_keys


def gbps(byte_delta: int | None, seconds: float) -> float | None:
    """Bytes in an interval as Gb/s (10^9 bit/s)."""
    if byte_delta is None or seconds <= 0:
        return None
    return byte_delta * 8 / seconds / 1e9


NO_ERRORS: Mapping[str, int] = MappingProxyType({})


class IfaceRate(NamedTuple):
    """One interface over one interval, in Gb/s per direction (None: no rate for this interval). A named tuple,
    as the interval's other figures (`CableRate`, `NodeView`): immutable, and made three times faster than a
    frozen dataclass, several times per node-sample."""

    source: str  # "phy" or "netdev"
    tx_gbps: float | None
    rx_gbps: float | None
    function_tx_gbps: float | None = None  # this half's own share (vport counters), when the PHY is shared
    function_rx_gbps: float | None = None
    rdma_tx_gbps: float | None = None  # RDMA port counters
    rdma_rx_gbps: float | None = None
    errors: Mapping[str, int] = NO_ERRORS  # counters that grew, by how much


def iface_rate(previous: IfaceReading, current: IfaceReading, seconds: float) -> IfaceRate:
    """Rates between two readings of one interface, `seconds` apart."""
    cur, prev = current.derived(), previous.derived()
    tx = rx = ftx = frx = rtx = rrx = None
    if seconds > 0:
        per_s = 8 / seconds / 1e9
        if cur.plan.source == prev.plan.source:  # else the string set changed under us: no rate this interval
            if cur.wire_tx is not None and prev.wire_tx is not None:
                tx = None if (d := delta(prev.wire_tx, cur.wire_tx)) is None else d * per_s
            if cur.wire_rx is not None and prev.wire_rx is not None:
                rx = None if (d := delta(prev.wire_rx, cur.wire_rx)) is None else d * per_s
        if cur.function is not None and prev.function is not None:
            ftx = None if (d := delta(prev.function[0], cur.function[0])) is None else d * per_s
            frx = None if (d := delta(prev.function[1], cur.function[1])) is None else d * per_s
        if cur.rdma_words is not None and prev.rdma_words is not None:  # words: 4 bytes each
            rtx = None if (d := delta(prev.rdma_words[0], cur.rdma_words[0])) is None else d * 4 * per_s
            rrx = None if (d := delta(prev.rdma_words[1], cur.rdma_words[1])) is None else d * 4 * per_s
    if cur.plan is prev.plan and cur.error_values == prev.error_values:  # the usual case: nothing moved, one compare
        grew: Mapping[str, int] = NO_ERRORS
    else:
        before = dict(zip(prev.plan.error_keys, prev.error_values, strict=True))
        grew = {
            n: d
            for n, v in zip(cur.plan.error_keys, cur.error_values, strict=True)
            if (b := before.get(n)) is not None and v != b and (d := delta(b, v)) and d > 0
        }
    return IfaceRate(cur.plan.source, tx, rx, ftx, frx, rtx, rrx, grew)


SHARED_TOLERANCE = 1e-3  # relative: two reads of one busy counter a few microseconds apart
SHARED_FLOOR = 1 << 20  # below 1 MiB in both directions the counters say nothing either way


def phy_shared(a: IfaceReading, b: IfaceReading) -> bool | None:
    """Do two halves of one port report the same PHY counters (one shared wire)? None: cannot tell (yet)."""
    if a.derived().plan.source != "phy" or b.derived().plan.source != "phy":
        return None  # a half without PHY counters (now, or for good) decides nothing
    pairs = [(a.stats[n], b.stats[n]) for n in ("tx_bytes_phy", "rx_bytes_phy")]
    if all(max(x, y) < SHARED_FLOOR for x, y in pairs):
        return None
    return all(abs(x - y) <= max(SHARED_TOLERANCE * max(x, y), 64 * 1024) for x, y in pairs)


class CableRate(NamedTuple):
    """One physical port (cable) over one interval: the wire per direction, and each half beneath it."""

    label: str
    halves: Mapping[str, IfaceRate]
    shared_phy: bool  # True: both halves report the one wire, counted once
    line_rate_gbps: float | None
    tx_gbps: float | None
    rx_gbps: float | None

    @property
    def duplex_gbps(self) -> float | None:
        return None if self.tx_gbps is None or self.rx_gbps is None else self.tx_gbps + self.rx_gbps


def _sum(values: Iterable[float | None]) -> float | None:
    total: float | None = None
    for value in values:
        if value is None:
            return None
        total = value if total is None else total + value
    return total


def _max(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def cable_rate(
    label: str, halves: Mapping[str, IfaceRate], shared_phy: bool, line_rate_gbps: float | None
) -> CableRate:
    """The cable's wire: the halves added up, or one of them when they report the same shared PHY."""
    combine = _max if shared_phy else _sum
    tx = combine(h.tx_gbps for h in halves.values())
    rx = combine(h.rx_gbps for h in halves.values())
    return CableRate(label, halves, shared_phy, line_rate_gbps, tx, rx)


# ----------------------------------------------------------------------------------------------------------- cpu
CpuTimes = tuple[int, ...]  # one core's /proc/stat jiffies: user nice system idle iowait irq softirq steal


def parse_proc_stat(text: str) -> list[CpuTimes]:
    """Per-core jiffies from /proc/stat (the `cpuN` lines, not the `cpu` total)."""
    cores: list[CpuTimes] = []
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit():
            cores.append(tuple(int(v) for v in rest.split()[:8]))
    return cores


def cores_json(text: str) -> str | None:
    """`parse_proc_stat`'s cores as the JSON a sample line carries (`[[user,nice,...],...]`), made from /proc/stat's
    digits as they stand: 15 us against 81 for parsing and dumping 16 cores. None when the text is not laid out as
    the kernel lays it out (the `cpu` total, then the `cpuN` lines, then `intr`): the caller parses it instead."""
    head, found, _ = text.partition("\nintr")
    lines = head.split("\n")
    if not found or not lines[0].startswith("cpu "):
        return None
    rows: list[str] = []
    for line in lines[1:]:
        fields = line.split()
        if not fields or not fields[0].startswith("cpu") or not fields[0][3:].isdigit():
            return None
        rows.append(",".join(fields[1:9]))
    if not rows:
        return "[]"
    if not "".join(rows).replace(",", "").isdigit():
        return None  # JSON numbers only
    return "[[" + "],[".join(rows) + "]]"


def cpu_busy(previous: list[CpuTimes], current: list[CpuTimes]) -> list[float | None]:
    """Per-core busy percentage over the interval (idle and iowait count as not busy)."""
    busy: list[float | None] = []
    for before, after in zip(previous, current, strict=False):
        total = sum(after) - sum(before)
        idle = (after[3] + after[4]) - (before[3] + before[4]) if len(after) > 4 and len(before) > 4 else 0
        busy.append(None if total <= 0 else max(0.0, min(100.0, 100.0 * (total - idle) / total)))
    return busy
