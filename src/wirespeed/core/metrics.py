"""The live view's samples and a bench run's rungs as Prometheus metric families. Pure: plain records that an
adapter turns into `prometheus_client` families (wirespeed.adapters.prometheus), so the rules (names, labels,
units, counters against gauges) are tested without a server.

Prometheus' conventions: what only grows is a counter of its base unit (`_bytes_total`), never a rate (Prometheus
takes `rate()` itself, over whatever window a dashboard asks for); what goes up and down is a gauge; the unit is in
every name (`_bits_per_second`, `_bytes_per_second`, `_seconds`, `_ratio`), so a Gb/s figure is never read as GB/s.
A fact that is a string is an `_info` gauge of 1 with the string as a label.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from wirespeed.core.errors import UsageError
from wirespeed.core.fabric.counters import is_congestion
from wirespeed.core.fabric.meter import NodeLayout, NodeSample, NodeView
from wirespeed.core.records.matrix import MatrixResult
from wirespeed.core.records.results import Direction, RungResult

PREFIX = "wirespeed_"
GIGA = 1e9  # Gb/s and GB/s are 10^9 (core/fabric/units)
BYTES_PER_GIGABIT = GIGA / 8


LISTEN_HINT = "ADDR:PORT with ADDR an IP address: 127.0.0.1:9810, or [::1]:9810"


def parse_listen(text: str) -> tuple[str, int]:
    """`--serve ADDR:PORT`: an IP address (IPv6 in brackets) and a port, 0 to 65535 (0: the kernel picks one, and
    the URL printed says which). Never a name to resolve and never a default: where the wire's figures are
    served is said on purpose, as loopback or an address of the user's choosing."""
    host, sep, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise UsageError(f"--serve {text!r}: an IPv6 address goes in brackets", hint=LISTEN_HINT)
    if not sep or not host or not port_text:
        raise UsageError(f"--serve {text!r}: not ADDR:PORT", hint=LISTEN_HINT)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise UsageError(f"--serve {text!r}: {host!r} is not an IP address", hint=LISTEN_HINT) from None
    if not port_text.isdigit() or int(port_text) > 65535:
        raise UsageError(f"--serve {text!r}: {port_text!r} is not a port (0 to 65535)", hint=LISTEN_HINT)
    return str(address), int(port_text)


@dataclass(frozen=True)
class Family:
    """One metric family: `kind` "counter" (name ends `_total`) or "gauge"; samples are (label values, value)."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...]
    samples: tuple[tuple[tuple[str, ...], float], ...]


Rows = Iterable[tuple[tuple[str, ...], float]]


def _family(name: str, kind: str, text: str, labels: tuple[str, ...], rows: Rows) -> Family:
    return Family(PREFIX + name, kind, text, labels, tuple(rows))


@dataclass
class WatchMetrics:
    """The latest sample and view per node, and each cable's running total. `add` is on the sampling path, so it
    only keeps references and adds two numbers per cable; the families are built when a scrape asks.

    A cable's total is the gigabits it carried since the watch began (Gb/s x seconds, interval by interval, as the
    meter rated them), served as bytes: a counter that never goes backwards, whether the halves are counted as two
    wires or as one shared PHY (a decision the meter may only make after the first megabyte)."""

    layouts: Sequence[NodeLayout]
    samples: dict[str, NodeSample] = field(default_factory=dict)
    views: dict[str, NodeView] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    gigabits: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # node -> cable -> [tx, rx]

    def add(self, sample: NodeSample, view: NodeView | None) -> None:
        node = sample.node
        self.samples[node] = sample
        counts = self.counts
        counts[node] = counts.get(node, 0) + 1
        if view is None:
            return
        self.views[node] = view
        seconds = view.seconds
        totals = self.gigabits.get(node)
        if totals is None:
            totals = self.gigabits[node] = {}
        for rate in view.cables:
            total = totals.get(rate.label)
            if total is None:
                total = totals[rate.label] = [0.0, 0.0]
            tx, rx = rate.tx_gbps, rate.rx_gbps
            if tx is not None:
                total[0] += tx * seconds
            if rx is not None:
                total[1] += rx * seconds

    def snapshot(self) -> WatchMetrics:
        """A copy that later `add`s leave alone, made in O(nodes) while `add` may run on another thread: `add` has
        one caller (the sampling thread), and every dict here is copied by one `dict()` call before it is iterated,
        which no other thread interleaves (the GIL; a free-threaded build locks each dict for it). No lock on the
        sampling path, where one cost a third of what `add` costs."""
        gigabits = {node: {label: list(t) for label, t in dict(c).items()} for node, c in dict(self.gigabits).items()}
        return WatchMetrics(self.layouts, dict(self.samples), dict(self.views), dict(self.counts), gigabits)

    def families(self) -> list[Family]:
        """Every family the exporter serves, each present even with no sample yet (a dashboard's query then finds
        its name, with no series)."""
        halves = [
            (layout.node, cable.label, str(index), half)
            for layout in self.layouts
            for cable in layout.cables
            for index, half in enumerate(cable.halves)
        ]
        tx: list[tuple[tuple[str, ...], float]] = []
        rx: list[tuple[tuple[str, ...], float]] = []
        source: list[tuple[tuple[str, ...], float]] = []
        errors: list[tuple[tuple[str, ...], float]] = []
        for node, port, index, half in halves:
            sample = self.samples.get(node)
            reading = sample.ifaces.get(half) if sample is not None else None
            if reading is None:
                continue  # not read yet, or gone: no series rather than a made-up zero
            derived = reading.derived()
            labels = (node, half, port, index)
            if derived.wire_tx is not None:
                tx.append((labels, float(derived.wire_tx)))
            if derived.wire_rx is not None:
                rx.append((labels, float(derived.wire_rx)))
            source.append(((node, half, derived.plan.source), 1.0))
            for counter, value in zip(derived.plan.error_keys, derived.error_values, strict=True):
                congestion = "true" if is_congestion(counter) else "false"
                errors.append(((node, half, counter, congestion), float(value)))
        half_labels = ("node", "interface", "port", "half")
        cable_labels = ("node", "port")
        line_rates = [
            ((layout.node, cable.label), cable.line_rate_gbps * GIGA)
            for layout in self.layouts
            for cable in layout.cables
            if cable.line_rate_gbps is not None
        ]
        peaks: list[tuple[tuple[str, ...], float]] = []
        cpu: list[tuple[tuple[str, ...], float]] = []
        for node, view in sorted(self.views.items()):
            for label, peak in sorted(view.peaks.items()):
                peaks += [
                    ((node, label, "transmit"), peak.tx_gbps * GIGA),
                    ((node, label, "receive"), peak.rx_gbps * GIGA),
                    ((node, label, "duplex"), peak.duplex_gbps * GIGA),
                ]
            average, busiest = view.cpu_average, view.busiest_core
            if average is not None:
                cpu.append(((node, "all"), average / 100))
            if busiest is not None:
                cpu.append(((node, "busiest"), busiest[1] / 100))
        cables = [((node, label), t) for node, c in sorted(self.gigabits.items()) for label, t in sorted(c.items())]
        times = [((node,), s.wall) for node, s in sorted(self.samples.items()) if s.wall is not None]
        return [
            _family("phy_transmit_bytes_total", "counter",
                    "Bytes the interface sent on the wire, as its counters hold them: the NIC's PHY counters (RDMA "
                    "included) where the driver has them, else the kernel's (wirespeed_counter_source_info says "
                    "which). Halves of one shared PHY both report the port's bytes: per cable, use "
                    "wirespeed_cable_transmit_bytes_total.", half_labels, tx),
            _family("phy_receive_bytes_total", "counter",
                    "Bytes the interface received from the wire (see wirespeed_phy_transmit_bytes_total).",
                    half_labels, rx),
            _family("counter_source_info", "gauge",
                    'Which counters count the wire: source="phy" (the NIC port, RDMA included) or "netdev" (the '
                    "kernel stack only: RDMA traffic is not in them).", ("node", "interface", "source"), source),
            _family("cable_transmit_bytes_total", "counter",
                    "Bytes the cable (physical port) sent since this watch began: its halves added, or counted "
                    "once where they share one PHY.", cable_labels,
                    [(k, t[0] * BYTES_PER_GIGABIT) for k, t in cables]),
            _family("cable_receive_bytes_total", "counter",
                    "Bytes the cable (physical port) received since this watch began (see "
                    "wirespeed_cable_transmit_bytes_total).", cable_labels,
                    [(k, t[1] * BYTES_PER_GIGABIT) for k, t in cables]),
            _family("cable_line_rate_bits_per_second", "gauge",
                    "What the cable carries per direction: its link speed, or the shaping rate where lower.",
                    cable_labels, line_rates),
            _family("cable_peak_bits_per_second", "gauge",
                    "The highest one sample interval reached since this watch began (the live view's PEAK): "
                    "direction transmit, receive, or duplex (both of one interval added).",
                    ("node", "port", "direction"), peaks),
            _family("nic_errors_total", "counter",
                    'The interface\'s error counters as they stand (driver, "netdev:" and "rdma:" ones); '
                    'congestion="true" for pause frames, CNPs and ECN marks, which grow by design with PFC/ECN.',
                    ("node", "interface", "counter", "congestion"), errors),
            _family("cpu_busy_ratio", "gauge",
                    'CPU busy over the last sample interval, 0 to 1: scope="all" the cores\' average, "busiest" '
                    "the busiest core.", ("node", "scope"), cpu),
            _family("samples_total", "counter", "Samples read from the node's sampler since this watch began.",
                    ("node",), [((n,), float(c)) for n, c in sorted(self.counts.items())]),
            _family("sample_timestamp_seconds", "gauge", "The node's wall clock at its latest sample (Unix time).",
                    ("node",), times),
        ]  # fmt: skip


def bench_families(
    rungs: Sequence[RungResult],
    *,
    run: str,
    nodes: Sequence[str],
    finished_s: float,
    matrices: Sequence[MatrixResult] = (),
) -> list[Family]:
    """A bench run's figures for a textfile: per rung what the tools measured, the wire's peak, latency, busbw, the
    ceiling (an info gauge); per matrix cell (`bench matrix`) what one node sent another and what it should have;
    and when the run ended (a cron bench then plots as history beside the live metrics)."""
    throughput: list[tuple[tuple[str, ...], float]] = []
    busbw: list[tuple[tuple[str, ...], float]] = []
    latency: list[tuple[tuple[str, ...], float]] = []
    peaks: list[tuple[tuple[str, ...], float]] = []
    ceilings: list[tuple[tuple[str, ...], float]] = []
    status: list[tuple[tuple[str, ...], float]] = []
    for r in rungs:
        phase = r.phase or ""
        status.append(((r.rung, phase, r.status.value), 1.0))
        directions: Mapping[str, float | None] = {
            "forward": r.total_gbps(Direction.FORWARD) if r.collective is None else None,
            "reverse": r.total_gbps(Direction.REVERSE) if r.collective is None else None,
            "duplex": r.duplex_gbps if r.collective is None else None,
        }
        throughput += [((r.rung, phase, d), v * GIGA) for d, v in directions.items() if v is not None]
        if r.collective is not None and (peak := r.collective.peak) is not None:
            busbw.append(((r.rung, phase, r.collective.collective), peak.busbw_GBps * GIGA))
        for quantile, value in (("0.5", r.p50_us), ("0.99", r.p99_us)):
            if value is not None:
                latency.append(((r.rung, phase, quantile), value / 1e6))
        if (wire := r.wire.peak) is not None:
            named = zip(("transmit", "receive", "duplex"), wire, strict=True)
            peaks += [((r.rung, phase, d), v * GIGA) for d, v in named]
        if r.ceiling is not None:
            ceilings.append(((r.rung, phase, r.ceiling.name), 1.0))
    rung_labels = ("rung", "phase", "direction")
    cell_labels = ("layer", "source", "target")
    cells = [(m.layer, c) for m in matrices for c in m.cells]
    return [
        _family("bench_throughput_bits_per_second", "gauge",
                "What the receivers counted, all flows added (Gb/s x 10^9): direction forward, reverse (both only "
                "where measured at once), duplex their sum.", rung_labels, throughput),
        _family("bench_nccl_busbw_bytes_per_second", "gauge",
                "nccl-tests' peak bus bandwidth (GB/s x 10^9: bytes, not bits).", ("rung", "phase", "collective"),
                busbw),
        _family("bench_latency_seconds", "gauge", "One-way latency, the halves' median (0.5) and worst p99 (0.99).",
                ("rung", "phase", "quantile"), latency),
        _family("bench_wire_peak_bits_per_second", "gauge",
                "The highest one sample interval at the wire during the rung, the busiest node.", rung_labels, peaks),
        _family("bench_ceiling_info", "gauge", "The ceiling the rung hit (wire, cpu, single-flow, ...).",
                ("rung", "phase", "ceiling"), ceilings),
        _family("bench_rung_info", "gauge", "How the rung ended: ran, skipped, failed, interrupted.",
                ("rung", "phase", "status"), status),
        _family("bench_matrix_throughput_bits_per_second", "gauge",
                "What the target counted from the source, every half they share at once (Gb/s x 10^9); a cell "
                "whose flows failed has none.", cell_labels,
                [((layer, c.source, c.target), c.tool_gbps * GIGA) for layer, c in cells if c.tool_gbps is not None]),
        _family("bench_matrix_expected_bits_per_second", "gauge",
                "What the cell should carry: its halves' limits added, a shared cable half's fair share.", cell_labels,
                [((layer, c.source, c.target), c.expected_gbps * GIGA) for layer, c in cells
                 if c.expected_gbps is not None]),
        _family("bench_matrix_hops", "gauge", "Cables a cell's traffic crossed: 1 between neighbours, more through "
                "a ring's relays.", cell_labels, [((layer, c.source, c.target), float(c.hops)) for layer, c in cells]),
        _family("bench_run_info", "gauge", "The run these figures come from, and its nodes.", ("run", "nodes"),
                [((run, ",".join(nodes)), 1.0)]),
        _family("bench_timestamp_seconds", "gauge", "When the run's figures were written (Unix time).", (),
                [((), finished_s)]),
    ]  # fmt: skip
