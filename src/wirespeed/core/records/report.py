"""One run, made readable: what the report of a run directory holds, in the order a person reads it (the takeaway
first, then every rung with its ceiling and evidence, the checks, the discovery and cabling, the environment), and
its JSON. Pure: the engine loads the files, `wirespeed.ui.report` renders Markdown and HTML from this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.checks.model import ChecksRecord
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import Unknown
from wirespeed.core.fabric.timeline import Timeline
from wirespeed.core.records.fixrecord import FixRecord
from wirespeed.core.records.results import RungResult
from wirespeed.core.records.run import ImportedFile, PhaseRow, Run, TakeawayRow, headline, phase_rows, takeaway

REPORT_FORMAT_VERSION = 2


@dataclass(frozen=True)
class EnvironmentRow:
    node: str
    component: str  # "iperf3", "NCCL", "GPU 0", "enp1s0f0np0 driver", ...
    version: str


@dataclass(frozen=True)
class RunReport:
    run: Run  # every record of the run: its status, rungs, matrices, imports and the files not read
    checks: ChecksRecord | None  # checks.json (before/checks.json); None in runs that did not record it
    discovery: Discovery | None  # discovery.json, typed (the nodes that could be read)
    timeline: Timeline
    problems: tuple[str, ...] = field(default_factory=tuple)  # files that could not be read, one line each
    checks_after: ChecksRecord | None = None  # `commission`: the checks again, after the fixes
    fix: FixRecord | None = None  # `commission`: the fixes planned and what each node did (fix.json)

    @property
    def name(self) -> str:
        return self.run.name

    @property
    def nodes(self) -> tuple[str, ...]:
        return self.run.nodes

    @property
    def rungs(self) -> tuple[RungResult, ...]:
        return self.run.rungs

    @property
    def imported(self) -> tuple[ImportedFile, ...]:
        return self.run.imported

    @property
    def takeaway(self) -> list[TakeawayRow]:
        return takeaway(self.run.rungs)

    @property
    def before_after(self) -> list[PhaseRow]:
        """Every rung before and after the fixes; empty unless the run measured both."""
        return phase_rows(self.run) if self.run.in_phase("after") else []

    @property
    def environment(self) -> tuple[EnvironmentRow, ...]:
        return environment(self.discovery) if self.discovery is not None else ()

    def headline(self) -> str:
        return headline(self.run, self.checks.counts() if self.checks is not None else None)

    def to_json(self) -> dict[str, Any]:
        """Everything the report shows, and the series its plots are drawn from."""
        t = self.timeline
        record = self.run.record
        return {
            "report_format_version": REPORT_FORMAT_VERSION,
            "run": self.run.name,
            "status": self.run.status.value,
            "state": self.run.state(),
            "not_reached": list(self.run.not_reached),
            "record": None if record is None else record.to_json(),
            "nodes": list(self.nodes),
            "headline": self.headline(),
            "takeaway": [row.to_json() for row in self.takeaway],
            "before_after": [row.to_json() for row in self.before_after],
            "steps": [step.to_json() for step in (record.steps if record is not None else ())],
            "fix": None if self.fix is None else self.fix.to_json(),
            "checks_after": None if self.checks_after is None else self.checks_after.to_json(),
            "rungs": [r.to_json() for r in self.run.rungs],
            "matrices": [m.to_json() for m in self.run.matrices],
            "tunes": [t.to_json() for t in self.run.tunes],
            "checks": None if self.checks is None else self.checks.to_json(),
            "discovery": None if self.discovery is None else self.discovery.to_json(),
            "environment": [{"node": e.node, "component": e.component, "version": e.version} for e in self.environment],
            "imported": [{"name": i.name, **i.data.to_json()} for i in self.run.imported],
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


def _known(value: object) -> str:
    """A discovery value as text; an unknown one says why."""
    if isinstance(value, Unknown):
        return f"unknown ({value.reason})"
    return "-" if value is None else str(value)


def environment(discovery: Discovery) -> tuple[EnvironmentRow, ...]:
    """Per node: the tools and their versions, NCCL, GPUs and their driver, and the fabric NICs' driver and firmware
    (halves with the same pair folded into one row), as discovery read them."""
    rows: list[EnvironmentRow] = []
    for node, facts in sorted(discovery.facts.items()):
        binaries: list[str] = []
        for tool in facts.tools:
            if tool.path:  # an nccl-tests binary found on disk: listed together below
                binaries.append(tool.name.removesuffix("_perf"))
            else:
                rows.append(EnvironmentRow(node, tool.name, _known(tool.version)))
        if binaries:
            rows.append(EnvironmentRow(node, "nccl-tests", ", ".join(binaries)))
        rows.append(EnvironmentRow(node, "NCCL", _known(facts.nccl_version)))
        if isinstance(facts.gpus, Unknown):
            rows.append(EnvironmentRow(node, "GPUs", _known(facts.gpus)))
        else:
            for index, gpu in enumerate(facts.gpus):
                rows.append(EnvironmentRow(node, f"GPU {index}", f"{gpu.name}, driver {_known(gpu.driver)}"))
        by_pair: dict[str, list[str]] = {}
        for netdev in facts.netdevs:
            if netdev.name in facts.fabric:
                pair = f"driver {_known(netdev.driver)}, firmware {_known(netdev.firmware)}"
                by_pair.setdefault(pair, []).append(netdev.name)
        for pair, names in by_pair.items():
            rows.append(EnvironmentRow(node, ", ".join(sorted(names)), pair))
        for device in facts.rdma:
            rows.append(EnvironmentRow(node, f"{device.name} (RDMA)", f"firmware {_known(device.fw_ver)}"))
    return tuple(rows)


def collectives(rungs: Sequence[RungResult]) -> list[tuple[str, list[tuple[int, float]]]]:
    """Per rung that ran a collective: (rung, [(message size in bytes, busbw in GB/s)]) for the busbw plot."""
    found: list[tuple[str, list[tuple[int, float]]]] = []
    for rung in rungs:
        if rung.collective is not None and rung.collective.rows:
            found.append((rung.label, sorted((r.size_bytes, r.busbw_GBps) for r in rung.collective.rows)))
    return found


@dataclass(frozen=True)
class HalfBar:
    label: str  # "spark-1 enp1s0f0np0 → spark-2 enp1s0f0np0 (reverse)"
    gbps: float | None  # what the receiver counted, Gb/s
    line_rate_gbps: float | None


def halves(rung: RungResult) -> list[HalfBar]:
    """A rung's flows, one bar each: what each half carried against its line rate (the per-half plot)."""
    bars: list[HalfBar] = []
    for flow in rung.flows:
        (a, ai), (b, bi) = flow.flow.source, flow.flow.target
        label = f"{a} {ai} → {b} {bi}" + (" (reverse)" if flow.direction == "reverse" else "")
        bars.append(HalfBar(label, flow.tool_gbps, flow.flow.line_rate_gbps))
    return bars
