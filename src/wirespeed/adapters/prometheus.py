"""Prometheus out of wirespeed: the live samples served over HTTP (`watch --serve`), or written in the node
exporter's textfile format (`watch --textfile`, `bench --textfile`), through `prometheus_client`.

A custom collector on a registry of its own: nothing global is mutated per sample, the sampling path only hands
over references (`WatchMetrics.add`), and the families are built when a scrape or a textfile write asks.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from wirespeed.adapters import files
from wirespeed.core.errors import UsageError, WirespeedError
from wirespeed.core.fabric.meter import NodeLayout, NodeSample, NodeView
from wirespeed.core.metrics import Family, WatchMetrics

TEXTFILE_NAME = "wirespeed.prom"  # the node exporter reads DIR/*.prom
BENCH_TEXTFILE_NAME = "wirespeed_bench.prom"


def to_metric(family: Family) -> Metric:
    metric: CounterMetricFamily | GaugeMetricFamily
    if family.kind == "counter":
        metric = CounterMetricFamily(family.name, family.help, labels=family.labels)
    else:
        metric = GaugeMetricFamily(family.name, family.help, labels=family.labels)
    for values, value in family.samples:
        metric.add_metric(list(values), value)
    return metric


class FamiliesCollector(Collector):
    """Serves whatever `families()` returns at collect time."""

    def __init__(self, families: Callable[[], Sequence[Family]]) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        for family in self._families():
            yield to_metric(family)


class WatchCollector(FamiliesCollector):
    """The watch's latest samples: `add` (`WatchMetrics.add` itself, no wrapper: it runs once per sample) is called
    on the sampling thread, `collect` on the server's, from a snapshot (`WatchMetrics.snapshot`): the sampling
    thread never waits on a scrape."""

    def __init__(self, layouts: Sequence[NodeLayout] = ()) -> None:
        self._metrics = WatchMetrics(layouts)
        self.add: Callable[[NodeSample, NodeView | None], None] = self._metrics.add
        super().__init__(lambda: self._metrics.snapshot().families())

    def set_layouts(self, layouts: Sequence[NodeLayout]) -> None:
        """The nodes' cables, once discovery knows them (the server is up before, so a port in use fails fast)."""
        self._metrics.layouts = tuple(layouts)


def registry_of(collector: Collector) -> CollectorRegistry:
    """A registry of its own (not the library's global one, with its process and GC collectors)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


@dataclass
class MetricsServer:
    """An HTTP server of `/metrics` on a daemon thread; `close` stops it and frees the port."""

    httpd: Any
    thread: threading.Thread
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def serve(collector: Collector, host: str, port: int) -> MetricsServer:
    """Serve `collector` on host:port (port 0: one the kernel picks, read back); a port that cannot be bound is
    one line (UsageError, exit 2) saying why and what to do."""
    from prometheus_client import start_http_server

    where = f"{'[' + host + ']' if ':' in host else host}:{port}"
    try:
        httpd, thread = start_http_server(port, addr=host, registry=registry_of(collector))
    except OSError as exc:
        hints = {
            errno.EADDRINUSE: ("address already in use", "another port, or stop what listens there (ss -ltnp)"),
            errno.EADDRNOTAVAIL: ("not an address of this machine", "127.0.0.1, or an address `ip addr` shows"),
            errno.EACCES: ("permission denied", "a port above 1023"),
        }
        why, hint = hints.get(exc.errno or 0, (exc.strerror or str(exc), "e.g. --serve 127.0.0.1:9810"))
        raise UsageError(f"--serve {where}: {why}", hint=hint) from None
    return MetricsServer(httpd, thread, host, int(httpd.server_port))


class TextfileWriter:
    """`watch --textfile DIR`: DIR/wirespeed.prom rewritten (written aside, then renamed over it: the node
    exporter never reads half a file) at most once per `interval_s`, from the samples that came since."""

    def __init__(self, collector: WatchCollector, directory: Path, interval_s: float) -> None:
        self.path = files.ensure_dir(directory) / TEXTFILE_NAME
        self.registry = registry_of(collector)
        self.collector = collector
        self.interval_s = interval_s
        self._last = float("-inf")
        self.written = 0

    def add(self, sample: NodeSample, view: NodeView | None) -> None:
        self.collector.add(sample, view)
        now = time.monotonic()
        if view is not None and now - self._last >= self.interval_s * 0.9:
            self._last = now
            self.write()

    def write(self) -> None:
        write_textfile(self.path, self.registry)
        self.written += 1


def write_textfile(path: Path, registry: CollectorRegistry) -> Path:
    try:
        write_to_textfile(str(path), registry)
    except OSError as exc:
        raise WirespeedError(f"{path}: cannot write it: {exc.strerror or exc}",
                             hint="a directory you can write (the node exporter's --collector.textfile.directory)"
                             ) from None  # fmt: skip
    return path


def write_families(directory: Path, name: str, families: Sequence[Family]) -> Path:
    """`families` as DIR/NAME in the textfile format, replacing the last one at once."""
    path = files.ensure_dir(directory) / name
    return write_textfile(path, registry_of(FamiliesCollector(lambda: families)))
