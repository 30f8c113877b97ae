"""One run, made readable: what the report of a run directory holds, in the order a person reads it (the takeaway
first, then every rung with its ceiling and evidence, the checks, the discovery and cabling, the environment), and
its JSON. Pure: the engine loads the files, `wirespeed.ui.report` renders Markdown and HTML from this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.imported import IMPORTED_PREFIX
from wirespeed.core.matrix import MatrixResult
from wirespeed.core.timeline import Timeline

REPORT_FORMAT_VERSION = 1


@dataclass(frozen=True)
class EnvironmentRow:
    node: str
    component: str  # "iperf3", "NCCL", "GPU 0", "enp1s0f0np0 driver", ...
    version: str


@dataclass(frozen=True)
class ImportedFile:
    name: str  # under the run's imported/
    data: Mapping[str, Any]  # the import object (docs/import-format.md)


@dataclass(frozen=True)
class RunReport:
    run: str  # the run directory's name: its UTC start time
    rungs: tuple[Mapping[str, Any], ...]  # `<rung>.json` objects in run order, then what imports stand for
    takeaway: tuple[Mapping[str, str], ...] | None  # None: the run was cut short before it wrote takeaway.json
    checks: Mapping[str, Any] | None  # what `wirespeed check --json` gives; None in runs that did not record it
    discovery: Mapping[str, Any] | None
    timeline: Timeline
    imported: tuple[ImportedFile, ...] = ()
    problems: tuple[str, ...] = field(default_factory=tuple)  # files that could not be read, one line each
    matrices: tuple[MatrixResult, ...] = ()  # `bench matrix`: all pairs, per layer

    @property
    def nodes(self) -> tuple[str, ...]:
        nodes = (self.discovery or {}).get("nodes")
        return tuple(sorted(nodes)) if isinstance(nodes, Mapping) else ()

    @property
    def measured(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(r for r in self.rungs if not str(r.get("rung", "")).startswith(IMPORTED_PREFIX))

    @property
    def environment(self) -> tuple[EnvironmentRow, ...]:
        return environment(self.discovery or {})

    def headline(self) -> str:
        return headline(self.rungs, self.checks)

    def to_json(self) -> dict[str, Any]:
        """Everything the report shows, and the series its plots are drawn from."""
        t = self.timeline
        return {
            "report_format_version": REPORT_FORMAT_VERSION,
            "run": self.run,
            "nodes": list(self.nodes),
            "headline": self.headline(),
            "takeaway": None if self.takeaway is None else [dict(row) for row in self.takeaway],
            "rungs": [dict(r) for r in self.rungs],
            "checks": None if self.checks is None else dict(self.checks),
            "discovery": None if self.discovery is None else dict(self.discovery),
            "environment": [{"node": e.node, "component": e.component, "version": e.version} for e in self.environment],
            "imported": [{"name": i.name, **i.data} for i in self.imported],
            "matrices": [m.to_json() for m in self.matrices],
            "timeline": {
                "spans": [{"rung": s.rung, "start_s": s.start_s, "end_s": s.end_s} for s in t.spans],
                "counter_sources": sorted(t.sources),
                "cables": [
                    {
                        "node": c.node,
                        "cable": c.cable,
                        "line_rate_gbps": c.line_rate_gbps,
                        "points": [[p.t_s, p.tx_gbps, p.rx_gbps] for p in c.points],
                        "point_columns": ["t_s", "tx_gbps", "rx_gbps"],
                    }
                    for c in t.cables
                ],
                "cpu": {
                    node: {
                        "points": [[p.t_s, p.average_pct, p.busiest_pct] for p in points],
                        "point_columns": ["t_s", "average_pct", "busiest_core_pct"],
                    }
                    for node, points in t.cpu.items()
                },
                "unreadable_sample_lines": t.unreadable_lines,
            },
            "problems": list(self.problems),
        }


def _known(value: Any) -> str:
    """A discovery value as text; an unknown one says why (`{"unknown": reason}` in discovery.json)."""
    if isinstance(value, Mapping) and "unknown" in value:
        return f"unknown ({value['unknown']})"
    return "-" if value is None else str(value)


def environment(discovery: Mapping[str, Any]) -> tuple[EnvironmentRow, ...]:
    """Per node: the tools and their versions, NCCL, GPUs and their driver, and the fabric NICs' driver and firmware
    (halves with the same pair folded into one row), as discovery read them."""
    rows: list[EnvironmentRow] = []
    nodes = discovery.get("nodes")
    for node, facts in sorted(nodes.items()) if isinstance(nodes, Mapping) else ():
        if not isinstance(facts, Mapping):
            continue
        binaries: list[str] = []
        for tool in facts.get("tools") or []:
            if not isinstance(tool, Mapping):
                continue
            if tool.get("path"):  # an nccl-tests binary found on disk: listed together below
                binaries.append(str(tool.get("name")).removesuffix("_perf"))
            else:
                rows.append(EnvironmentRow(node, str(tool.get("name")), _known(tool.get("version"))))
        if binaries:
            rows.append(EnvironmentRow(node, "nccl-tests", ", ".join(binaries)))
        rows.append(EnvironmentRow(node, "NCCL", _known(facts.get("nccl_version"))))
        gpus = facts.get("gpus")
        if isinstance(gpus, list):
            for index, gpu in enumerate(gpus):
                if isinstance(gpu, Mapping):
                    text = f"{gpu.get('name')}, driver {_known(gpu.get('driver'))}"
                    rows.append(EnvironmentRow(node, f"GPU {index}", text))
        else:
            rows.append(EnvironmentRow(node, "GPUs", _known(gpus)))
        fabric = set(facts.get("fabric") or [])
        by_pair: dict[str, list[str]] = {}
        for netdev in facts.get("netdevs") or []:
            if isinstance(netdev, Mapping) and netdev.get("name") in fabric:
                pair = f"driver {_known(netdev.get('driver'))}, firmware {_known(netdev.get('firmware'))}"
                by_pair.setdefault(pair, []).append(str(netdev["name"]))
        for pair, names in by_pair.items():
            rows.append(EnvironmentRow(node, ", ".join(sorted(names)), pair))
        for device in facts.get("rdma") or []:
            if isinstance(device, Mapping):
                rows.append(
                    EnvironmentRow(node, f"{device.get('name')} (RDMA)", f"firmware {_known(device.get('fw_ver'))}")
                )
    return tuple(rows)


def headline(rungs: Sequence[Mapping[str, Any]], checks: Mapping[str, Any] | None) -> str:
    """One sentence for the top of the report: the highest figure reached and what limits it, what did not run,
    and how the checks went."""
    ran = [r for r in rungs if r.get("status") == "ran" and isinstance(r.get("forward_gbps"), int | float)]
    parts: list[str] = []
    if ran:
        best = max(ran, key=lambda r: float(r["forward_gbps"]))
        ceiling = best.get("ceiling")
        limit = f", ceiling: {ceiling['name']}" if isinstance(ceiling, Mapping) else ""
        parts.append(f"highest: {best['forward_gbps']:.2f} Gb/s per direction on {best['rung']}{limit}")
    else:
        parts.append("no rung measured a figure")
    counts: dict[str, int] = {}
    for rung in rungs:
        status = str(rung.get("status"))
        counts[status] = counts.get(status, 0) + 1
    parts.append(", ".join(f"{n} {status}" for status, n in counts.items()) or "no rungs")
    if checks is not None and isinstance(checks.get("counts"), Mapping):
        shown = ", ".join(f"{n} {s}" for s, n in checks["counts"].items() if n)
        parts.append(f"checks: {shown or 'none ran'}")
    return "; ".join(parts)


def collectives(rungs: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[tuple[int, float]]]]:
    """Per rung that ran a collective: (rung, [(message size in bytes, busbw in GB/s)]) for the busbw plot."""
    found: list[tuple[str, list[tuple[int, float]]]] = []
    for rung in rungs:
        collective = rung.get("collective")
        if not isinstance(collective, Mapping):
            continue
        points = [
            (int(row["size_bytes"]), float(row["busbw_GBps"]))
            for row in collective.get("rows") or []
            if isinstance(row, Mapping) and isinstance(row.get("busbw_GBps"), int | float) and row.get("size_bytes")
        ]
        if points:
            found.append((str(rung.get("rung")), sorted(points)))
    return found


@dataclass(frozen=True)
class HalfBar:
    label: str  # "spark-1 enp1s0f0np0 → spark-2 enp1s0f0np0 (forward)"
    gbps: float | None  # what the receiver counted, Gb/s
    line_rate_gbps: float | None


def halves(rung: Mapping[str, Any]) -> list[HalfBar]:
    """A rung's flows, one bar each: what each half carried against its line rate (the per-half plot)."""
    bars: list[HalfBar] = []
    for flow in rung.get("flows") or []:
        if not isinstance(flow, Mapping):
            continue
        client, server = flow.get("client") or ["?", "?"], flow.get("server") or ["?", "?"]
        label = f"{client[0]} {client[1]} → {server[0]} {server[1]}"
        if flow.get("direction") == "reverse":
            label += " (reverse)"
        value = flow.get("receiver_gbps")
        rate = flow.get("line_rate_gbps")
        bars.append(
            HalfBar(
                label,
                float(value) if isinstance(value, int | float) else None,
                float(rate) if isinstance(rate, int | float) else None,
            )
        )
    return bars
