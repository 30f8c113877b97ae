"""dashboards/wirespeed.json: valid Grafana dashboard JSON, and every metric its PromQL asks for is one that a live
exporter serves (the names are scraped from a running one, never listed here by hand)."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from wirespeed.adapters import prometheus
from wirespeed.core.fabric.counters import IfaceReading
from wirespeed.core.fabric.meter import Cable, Meter, NodeLayout, NodeSample
from wirespeed.core.metrics import bench_families
from wirespeed.core.records.results import Ceiling, CollectiveSummary, RungResult, RungStatus, SizeFigures

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboards" / "wirespeed.json"
METRIC = re.compile(r"\bwirespeed_[a-zA-Z0-9_]+")
HALVES = ("enp1s0f1np1", "enP2p1s0f1np1")


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for panel in dashboard["panels"]:
        found.append(panel)
        found += panel.get("panels", [])  # a collapsed row holds its own
    return found


def queries(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL text: the panels' targets and the template variables' queries."""
    texts = [t["expr"] for p in panels(dashboard) for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            texts.append(query["query"])
        elif variable["type"] == "query":
            texts.append(str(query))
    return texts


def served_names(tmp_path: Path) -> set[str]:
    """The sample names a live `watch --serve` exporter answers with (scraped over HTTP), and those a bench's
    textfile holds."""
    layout = NodeLayout("spark-1", (Cable("port 1", HALVES, 200.0),))
    collector = prometheus.WatchCollector([layout])
    meter = Meter([layout])
    for step in range(3):
        stats = {"tx_bytes_phy": step * 10**9, "rx_bytes_phy": step, "tx_packets_phy": 1, "rx_packets_phy": 1,
                 "rx_crc_errors_phy": step, "rx_pause_ctrl_phy": step}  # fmt: skip
        reading = IfaceReading(stats=stats, pci="0000:01:00.1", speed_mbps=200000)
        cpu = [(step * 10, 0, 0, step * 90, 0, 0, 0, 0)]
        sample = NodeSample("spark-1", step * 0.5, dict.fromkeys(HALVES, reading), cpu, wall=1.7e9 + step)
        collector.add(sample, meter.add(sample))
    server = prometheus.serve(collector, "127.0.0.1", 0)
    try:
        with urllib.request.urlopen(server.url, timeout=10) as response:
            text = response.read().decode()
    finally:
        server.close()
    rungs = [
        RungResult("tcp-halves", RungStatus.RAN, ceiling=Ceiling("wire", ("x",))),
        RungResult("nccl-all_reduce", RungStatus.RAN,
                   collective=CollectiveSummary("all_reduce", 2, (SizeFigures(1 << 30, 1, 2, 3),), 2, None, None)),
    ]  # fmt: skip
    path = prometheus.write_families(tmp_path, prometheus.BENCH_TEXTFILE_NAME,
                                     bench_families(rungs, run="r", nodes=["a", "b"], finished_s=1.0))  # fmt: skip
    names: set[str] = set()
    for source in (text, path.read_text()):
        for family in text_string_to_metric_families(source):
            names |= {family.name} | {s.name for s in family.samples}
    return names


def test_the_dashboard_is_grafana_dashboard_json() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["title"] and dashboard["uid"]
    assert isinstance(dashboard["panels"], list) and dashboard["panels"]
    every = panels(dashboard)
    ids = [p["id"] for p in every]
    assert len(ids) == len(set(ids))  # Grafana keys panels by id
    for panel in every:
        assert {"type", "title", "gridPos"} <= set(panel), panel.get("title")
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"} and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip() and target["datasource"]["type"] == "prometheus"
    kinds = {p["type"] for p in every}
    assert {"timeseries", "stat"} <= kinds
    titles = " ".join(p["title"] for p in every)
    for shown in ("TX per cable", "RX per cable", "NOW", "PEAK", "CPU"):  # the seeds' picture
        assert shown in titles


def test_every_metric_the_dashboard_queries_is_served(tmp_path: Path) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    used = {name for text in queries(dashboard) for name in METRIC.findall(text)}
    served = served_names(tmp_path)
    assert used, "no wirespeed_ metric in the dashboard"
    assert sorted(used - served) == []
    assert "wirespeed_cable_line_rate_bits_per_second" in used  # against the line rate
    rates = [t for t in queries(dashboard) if "rate(wirespeed_" in t and "_bytes_total" in t]
    assert rates and all("* 8" in t for t in rates if "increase(" not in t)  # bytes shown as bits per second
