"""The wire recorder: every node sampled while a rung runs, every sample appended to the run directory as it
arrives, and the figures the diagnosis reads (average Gb/s per half each way, the busiest core, error counters that
grew) computed from the same views `watch` shows."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from wirespeed.adapters.files import TextSink, Unwritable
from wirespeed.core.fabric.counters import is_congestion
from wirespeed.core.fabric.meter import Meter, NodeLayout, NodeView, sample_line, steady_rate
from wirespeed.core.records.results import WireFigures
from wirespeed.engine.remote import Remote
from wirespeed.engine.sampling import ClusterSampler


class WireRecorder:
    """Samples every node while a rung runs; averages per interface over the rung, the busiest core seen."""

    def __init__(
        self,
        remote: Remote,
        layouts: Sequence[NodeLayout],
        interval_s: float,
        record: TextSink,
        on_view: Callable[[NodeView], None] | None = None,
    ) -> None:
        self.on_view = on_view  # the live view hears every interval as it is metered
        self.sampler = ClusterSampler(remote, layouts, interval_s)
        self.interval_s = interval_s
        self.meter = Meter(layouts)
        self.views: list[NodeView] = []
        self.arrived: list[float] = []  # time.monotonic() when each view came in, for figures over a window
        self.record = record
        self.record_failed: Unwritable | None = None  # the disk filled (or failed): sampling goes on, unrecorded
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for batch in self.sampler.batches(timeout_s=1.0):
            if not isinstance(batch, list):
                continue
            # One write per node's read: the lines are on disk before they are metered, as they came.
            if self.record_failed is None:
                try:
                    self.record.write("".join([sample_line(sample) + "\n" for sample in batch]))
                    self.record.flush()
                except Unwritable as exc:
                    self.record_failed = exc
            for sample in batch:
                view = self.meter.add(sample)
                if view is not None:
                    self.arrived.append(time.monotonic())
                    self.views.append(view)
                    if self.on_view is not None:
                        self.on_view(view)

    def __enter__(self) -> WireRecorder:
        self.sampler.start()
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.sampler.stop()
        self.thread.join(timeout=10)
        self.record.close()
        if kind is None and self.record_failed is not None:
            raise self.record_failed  # one line naming the samples file and what it kept

    def figures(self, since: float = 0.0, between: tuple[float, float] | None = None) -> WireFigures:
        """Averages over the views after the first `since` seconds of each node (start-up left out), or over the
        views that came in `between` two time.monotonic() readings (one round of the matrix)."""
        tx: dict[tuple[str, str], list[float]] = {}
        rx: dict[tuple[str, str], list[float]] = {}
        busiest: dict[str, tuple[int, float]] = {}
        average: dict[str, list[float]] = {}
        errors: dict[tuple[str, str], dict[str, int]] = {}
        source = "phy"
        peak: dict[str, tuple[float, float, float]] = {}  # node -> the highest TX, RX and TX+RX of one interval
        elapsed: dict[str, float] = {}
        series: dict[str, tuple[list[float], list[float]]] = {}  # node -> every interval's TX and RX, halves added
        for arrived, view in zip(list(self.arrived), list(self.views), strict=False):
            if between is not None and not between[0] <= arrived <= between[1]:
                continue
            elapsed[view.node] = elapsed.get(view.node, 0.0) + view.seconds
            if between is None and elapsed[view.node] <= since:
                continue
            interval_tx = sum(c.tx_gbps or 0.0 for c in view.cables)
            interval_rx = sum(c.rx_gbps or 0.0 for c in view.cables)
            node_tx, node_rx = series.setdefault(view.node, ([], []))
            node_tx.append(interval_tx)
            node_rx.append(interval_rx)
            top = peak.get(view.node, (0.0, 0.0, 0.0))
            peak[view.node] = (
                max(top[0], interval_tx),
                max(top[1], interval_rx),
                max(top[2], interval_tx + interval_rx),
            )
            for cable in view.cables:
                for name, half in cable.halves.items():
                    if half.source == "netdev":
                        source = "netdev"
                    if half.tx_gbps is not None:
                        tx.setdefault((view.node, name), []).append(half.tx_gbps)
                    if half.rx_gbps is not None:
                        rx.setdefault((view.node, name), []).append(half.rx_gbps)
                    for counter, grew in half.errors.items():
                        if not is_congestion(counter):
                            bucket = errors.setdefault((view.node, name), {})
                            bucket[counter] = bucket.get(counter, 0) + grew
            core = view.busiest_core
            if core is not None and core[1] > busiest.get(view.node, (0, -1.0))[1]:
                busiest[view.node] = core
            if view.cpu_average is not None:
                average.setdefault(view.node, []).append(view.cpu_average)
        steady_tx = {n: r for n, (t, _) in series.items() if (r := steady_rate(t)) is not None}
        steady_rx = {n: r for n, (_, x) in series.items() if (r := steady_rate(x)) is not None}
        return WireFigures(
            tx_gbps={k: sum(v) / len(v) for k, v in tx.items()},
            rx_gbps={k: sum(v) / len(v) for k, v in rx.items()},
            busiest_core=busiest,
            cpu_average={k: sum(v) / len(v) for k, v in average.items()},
            errors=errors,
            source=source,
            peak_tx_gbps={n: p[0] for n, p in peak.items()},
            peak_rx_gbps={n: p[1] for n, p in peak.items()},
            peak_duplex_gbps={n: p[2] for n, p in peak.items()},
            steady_tx_gbps={n: r[0] for n, r in steady_tx.items()},
            steady_rx_gbps={n: r[0] for n, r in steady_rx.items()},
            steady_intervals={n: r[1] for n, r in steady_tx.items()},
            interval_s=self.interval_s,
        )
