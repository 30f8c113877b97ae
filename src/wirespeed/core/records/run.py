"""One run of `wirespeed bench`: its record (`run.json`: who ran what, on which cluster, when, and how it ended),
the rungs and matrices it measured, what was imported beside it, and the files that could not be read. Pure.

pyperf's discipline: the run directory is the truth, and `runs`, `compare`, `report` and the takeaway are views
of this one object. A run's status is written when it starts (`running`) and again when it ends (`complete`,
`interrupted` by a signal, or `failed` with its reason); a run whose status still says `running` while its
process is gone was killed without a word (SIGKILL, a power cut), and says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from wirespeed.core.imports.record import ImportObject
from wirespeed.core.records.decode import Damaged, Fields, Figures
from wirespeed.core.records.matrix import MatrixResult
from wirespeed.core.records.options import RunOptions
from wirespeed.core.records.results import SCHEMA_VERSION, RungResult, RungStatus, check_version, choice
from wirespeed.core.records.spread import Spread, is_change, rung_spread
from wirespeed.core.records.tune import TuneResult

RUN_FILE = "run.json"


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETE = "complete"  # every planned rung ended (ran, skipped or failed)
    INTERRUPTED = "interrupted"  # a signal (Ctrl-C, SIGTERM, SIGHUP) stopped it; what it measured is kept
    FAILED = "failed"  # an error stopped it; `reason` says which
    UNKNOWN = "unknown"  # written by wirespeed 0.1, which recorded no status


@dataclass(frozen=True)
class NodeRef:
    name: str
    host: str


class StepStatus(StrEnum):
    DONE = "done"
    SKIPPED = "skipped"  # nothing to do, or not asked for (--no-fix): `detail` says which
    FAILED = "failed"
    STOPPED = "stopped"  # the run stopped here: `detail` says why and what to do by hand
    INTERRUPTED = "interrupted"  # cut by a signal while it ran: `detail` says what it had done


@dataclass(frozen=True)
class Step:
    """One step of a multi-step run (`commission`: discover, preflight, checks, bench before, fix, ...)."""

    name: str
    status: StepStatus
    detail: str = ""  # one line
    duration_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status.value, "detail": self.detail, "duration_s": self.duration_s}

    @staticmethod
    def from_json(data: Fields) -> Step:
        return Step(data.text("name"), choice(data, "status", StepStatus), data.opt_text("detail") or "",
                    Figures(data.data, data.where).opt_num("duration_s"))  # fmt: skip


def _steps(f: Fields, damaged: list[str]) -> tuple[Step, ...]:
    """The steps of a run; one whose duration no step can have (negative, NaN, a month or more) is kept without
    it, and named in `damaged`."""
    steps: list[Step] = []
    for item in f.objects("steps"):
        try:
            steps.append(Step.from_json(item))
        except Damaged as exc:
            damaged.append(str(exc))
            steps.append(Step(item.text("name"), choice(item, "status", StepStatus), item.opt_text("detail") or ""))
    return tuple(steps)


@dataclass(frozen=True)
class RunRecord:
    """`run.json`: written when the run starts, rewritten when it ends."""

    wirespeed_version: str
    command: tuple[str, ...]  # the argv after `wirespeed`
    what: str  # ladder, tcp, matrix, ...
    options: RunOptions  # what the run was asked to do
    cluster: str
    nodes: tuple[NodeRef, ...]
    started_utc: str  # ISO 8601, Z
    status: RunStatus = RunStatus.RUNNING
    ended_utc: str | None = None
    reason: str | None = None  # why interrupted or failed, one line
    planned: tuple[str, ...] = ()  # the rungs the run set out to measure, in order
    host: str = ""  # the controller that ran it, and its process: a `running` run whose process is gone was killed
    pid: int | None = None
    phases: tuple[str, ...] = ()  # folders of rung records measured at different times (`before`, `after`)
    steps: tuple[Step, ...] = ()  # a multi-step run's steps as they ended
    schema_version: int = SCHEMA_VERSION
    damaged: tuple[str, ...] = ()  # read back: one line per figure of run.json no run can have (left out)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "run",
            "schema_version": SCHEMA_VERSION,
            "wirespeed_version": self.wirespeed_version,
            "command": list(self.command),
            "what": self.what,
            "options": self.options.to_json(),
            "cluster": {"name": self.cluster, "nodes": [{"name": n.name, "host": n.host} for n in self.nodes]},
            "started_utc": self.started_utc,
            "ended_utc": self.ended_utc,
            "status": self.status.value,
            "reason": self.reason,
            "planned": list(self.planned),
            "host": self.host,
            "pid": self.pid,
            "phases": list(self.phases),
            "steps": [s.to_json() for s in self.steps],
        }

    @staticmethod
    def from_json(data: Any, where: str) -> RunRecord:
        f = Fields(data, where)
        version = check_version(f)
        cluster = f.obj("cluster")
        options = f.opt_obj("options")
        damaged: list[str] = []
        steps = _steps(f, damaged)
        return RunRecord(
            wirespeed_version=f.text("wirespeed_version"),
            command=f.texts("command"),
            what=f.text("what"),
            options=RunOptions.from_json(options) if options is not None else RunOptions(),
            cluster=cluster.text("name"),
            nodes=tuple(NodeRef(n.text("name"), n.text("host")) for n in cluster.objects("nodes")),
            started_utc=f.text("started_utc"),
            status=choice(f, "status", RunStatus),
            ended_utc=f.opt_text("ended_utc"),
            reason=f.opt_text("reason"),
            planned=f.texts("planned"),
            host=f.opt_text("host") or "",
            pid=f.opt_whole("pid"),
            phases=f.texts("phases"),
            steps=steps,
            schema_version=version,
            damaged=tuple(damaged),
        )


@dataclass(frozen=True)
class ImportedFile:
    """A tool output someone saved and `wirespeed import --into` put beside the run: evidence, never a rung."""

    name: str  # under the run's imported/
    data: ImportObject  # the import object (docs/import-format.md), typed


@dataclass(frozen=True)
class DamagedRecord:
    """A record of a run holding a figure no measurement can have (`decode.Damaged`): never shown or compared as a
    figure, named wherever the rung would be."""

    key: str  # where it lives in its run, as `planned` names it: `tcp-single`, `before/tcp-single`, `matrix-tcp`
    reason: str  # one line: the file, the field and the value

    @property
    def label(self) -> str:
        """The rung as views name it (`RungResult.label`): `tcp-single (before)`."""
        phase, _, rung = self.key.rpartition("/")
        return f"{rung} ({phase})" if phase else rung

    def covers(self, subject: str) -> bool:
        """Whether a figure of `compare` (`tcp-single (before)`, `matrix-tcp a -> b`) comes from this record."""
        return subject == self.label or (self.label.startswith("matrix-") and subject.startswith(self.label + " "))


@dataclass(frozen=True)
class Run:
    """A run directory read back: every record in it that could be read, and one line per file that could not."""

    name: str  # the directory's name: its UTC start time
    record: RunRecord | None  # None: written by wirespeed 0.1 (no run.json), or run.json unreadable
    rungs: tuple[RungResult, ...] = ()
    matrices: tuple[MatrixResult, ...] = ()
    tunes: tuple[TuneResult, ...] = ()  # `tune nccl`'s search (tune-nccl.json)
    imported: tuple[ImportedFile, ...] = ()
    problems: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    process_gone: bool = False  # the record says running, but no such process runs on this host
    damaged: tuple[DamagedRecord, ...] = ()  # records read, but holding a figure no measurement can have

    @property
    def status(self) -> RunStatus:
        return self.record.status if self.record is not None else RunStatus.UNKNOWN

    @property
    def finished(self) -> bool:
        return self.status is RunStatus.COMPLETE

    def state(self) -> str:
        """How the run ended, in words a person reads at once."""
        record = self.record
        if record is None:
            return "unknown (no run.json: written by wirespeed 0.1, or unreadable)"
        if record.status is RunStatus.RUNNING:
            if self.process_gone:
                return f"cut short: its process ({record.host} pid {record.pid}) ended without a word (killed?)"
            return f"running ({record.host} pid {record.pid})"
        if record.status in (RunStatus.INTERRUPTED, RunStatus.FAILED) and record.reason:
            return f"{record.status.value}: {record.reason}"
        return record.status.value

    @property
    def not_reached(self) -> tuple[str, ...]:
        """Rungs the run planned and never wrote: what an interrupted run did not measure."""
        written = {r.key for r in self.rungs} | {f"matrix-{m.layer}" for m in self.matrices}
        written |= {d.key for d in self.damaged}
        return tuple(name for name in (self.record.planned if self.record else ()) if name not in written)

    def rung(self, name: str, phase: str | None = None) -> RungResult | None:
        return next((r for r in self.rungs if r.rung == name and r.phase == phase), None)

    def in_phase(self, phase: str | None) -> tuple[RungResult, ...]:
        return tuple(r for r in self.rungs if r.phase == phase)

    def summary(self) -> dict[str, Any]:
        """Each rung and matrix in a line: its status and headline figures (what `runs --json` lists)."""
        found: dict[str, Any] = {
            r.key: {"status": r.status.value, "forward_gbps": r.forward_gbps, "p50_us": r.p50_us, "p99_us": r.p99_us,
                    "ceiling": r.ceiling.name if r.ceiling else None}
            for r in self.rungs
        }  # fmt: skip
        for m in self.matrices:
            found[f"matrix-{m.layer}"] = {"status": m.status.value, "cells": len(m.cells),
                                          "outliers": [o.text for o in m.outliers]}  # fmt: skip
        for d in self.damaged:  # never a figure: the record holds one no measurement can have
            found[d.key] = {"status": "damaged", "reason": d.reason}
        return found

    def to_json(self) -> dict[str, Any]:
        """The run as `bench --json` and `commission --json` print it: how it ended, each step, every record read,
        the takeaway, before and after (commission), and the files not read."""
        record = self.record
        return {
            "name": self.name, "status": self.status.value, "state": self.state(),
            "not_reached": list(self.not_reached), "nodes": list(self.nodes), "headline": headline(self),
            "steps": [s.to_json() for s in (record.steps if record is not None else ())],
            "rungs": [r.to_json() for r in self.rungs], "takeaway": [row.to_json() for row in takeaway(self.rungs)],
            "before_after": [row.to_json() for row in phase_rows(self)] if self.in_phase("after") else [],
            "matrices": [m.to_json() for m in self.matrices], "tunes": [t.to_json() for t in self.tunes],
            "problems": list(self.problems),
        }  # fmt: skip


# ------------------------------------------------------------------------------------------------ the takeaway


@dataclass(frozen=True)
class TakeawayRow:
    """One line of the seeds' summary table, as numbers: the UI formats them."""

    rung: str
    status: RungStatus
    forward_gbps: float | None  # per direction (busbw x 8 for a collective)
    full_duplex_gbps: float | None  # only where both directions ran at once
    busbw_GBps: float | None
    p50_us: float | None
    p99_us: float | None
    busiest_core_percent: Mapping[str, float]  # node -> the busiest core's busy %
    ceiling: str | None
    why: str
    peak_tx_gbps: float | None = None  # at the wire, the busiest node's one interval: all its halves' TX added
    peak_duplex_gbps: float | None = None  # the same interval's TX and RX added
    spread: Spread | None = None  # of the figure compared (Gb/s per direction, else p50): wirespeed.core.records.spread

    def to_json(self) -> dict[str, Any]:
        return {
            "rung": self.rung, "status": self.status.value, "forward_gbps": self.forward_gbps,
            "full_duplex_gbps": self.full_duplex_gbps, "busbw_GBps": self.busbw_GBps, "p50_us": self.p50_us,
            "p99_us": self.p99_us, "busiest_core_percent": dict(self.busiest_core_percent), "ceiling": self.ceiling,
            "why": self.why, "peak_tx_gbps": self.peak_tx_gbps, "peak_duplex_gbps": self.peak_duplex_gbps,
            "spread": None if self.spread is None else self.spread.to_json(),
        }  # fmt: skip


def takeaway(rungs: Sequence[RungResult]) -> list[TakeawayRow]:
    """What was measured, per direction, full duplex, latency, CPU, and the ceiling with its first evidence."""
    rows: list[TakeawayRow] = []
    for r in rungs:
        peak = r.collective.peak if r.collective else None
        wire = r.wire.peak
        rows.append(
            TakeawayRow(
                rung=r.label,
                status=r.status,
                forward_gbps=r.forward_gbps,
                full_duplex_gbps=r.duplex_gbps,
                busbw_GBps=None if peak is None else peak.busbw_GBps,
                p50_us=r.p50_us,
                p99_us=r.p99_us,
                busiest_core_percent={n: b for n, (_, b) in sorted(r.wire.busiest_core.items())},
                ceiling=r.ceiling.name if r.ceiling else None,
                why=(r.ceiling.evidence[0] if r.ceiling and r.ceiling.evidence else r.reason) or _latency_why(r),
                peak_tx_gbps=None if wire is None or r.status is RungStatus.SKIPPED else wire[0],
                peak_duplex_gbps=None if wire is None or r.status is RungStatus.SKIPPED else wire[2],
                spread=rung_spread(r) if r.status is not RungStatus.SKIPPED else None,
            )
        )
    return rows


def _latency_why(rung: RungResult) -> str:
    if not rung.latency:
        return ""
    tools = ", ".join(sorted({x.tool for x in rung.latency}))
    return f"one way, {len(rung.latency)} half(s) ({tools}): p50 the median half, p99 the worst"


LAYER_NAMES = {"tcp": "TCP", "rdma": "RDMA", "nccl": "NCCL"}


def layer(rung: str) -> str:
    """The ladder's layer a rung measures (`tcp-halves` -> TCP); a rung of no layer is named as it is."""
    return LAYER_NAMES.get(rung.split("-", 1)[0], rung)


def headline(run: Run, check_counts: Mapping[str, int] | None = None) -> str:
    """One sentence for the top of a report or a line of `runs`, leading with the story: the highest figure, the
    layer it reached and what limits it, then what the fixes moved (beyond noise) and what stayed within it; the
    lowest latency, the matrices' medians and outliers, what did not run, how the run ended, the checks."""
    parts: list[str] = []
    final = run.in_phase("after") or run.in_phase(None) or run.in_phase("before")
    ran = [r for r in final if r.status is RungStatus.RAN and r.forward_gbps is not None]
    if ran:
        best = max(ran, key=lambda r: r.forward_gbps or 0.0)
        limit = f", ceiling: {best.ceiling.name}" if best.ceiling else ""
        earlier = run.rung(best.rung, "before") if best.phase == "after" else None
        was = f" (before the fixes: {earlier.forward_gbps:.2f})" if earlier and earlier.forward_gbps is not None else ""
        parts.append(f"highest: {best.forward_gbps:.2f} Gb/s per direction on {best.label}, the {layer(best.rung)} "
                     f"layer{limit}{was}")  # fmt: skip
    if run.in_phase("before") and run.in_phase("after"):
        parts += moved(phase_rows(run))
    for r in final:
        if r.status is RungStatus.RAN and r.p50_us is not None:
            tail = f", p99 {r.p99_us:.1f} us" if r.p99_us is not None else ""
            parts.append(f"{r.label}: p50 {r.p50_us:.1f} us{tail}")
    for m in run.matrices:
        parts.append(matrix_headline(m))
    if not parts:
        parts.append("no rung measured a figure")
    counts: dict[str, int] = {}
    for rung in run.rungs:
        counts[rung.status.value] = counts.get(rung.status.value, 0) + 1
    if run.damaged:
        counts["damaged"] = len(run.damaged)
    if counts:
        parts.append(", ".join(f"{n} {status}" for status, n in counts.items()))
    if not run.finished:
        parts.append(f"run {run.state()}")
    if check_counts:
        shown = ", ".join(f"{n} {s}" for s, n in check_counts.items() if n)
        parts.append(f"checks: {shown or 'none ran'}")
    return "; ".join(parts)


@dataclass(frozen=True)
class PhaseRow:
    """One rung of a `commission` run: as it was before the fixes, and after them (None where not measured)."""

    rung: str
    before: TakeawayRow | None
    after: TakeawayRow | None

    def _figures(self) -> tuple[float, float] | None:
        """The two figures compared: per direction, or p50 latency for a latency rung (lower is better there)."""
        a, b = self.before, self.after
        if a is None or b is None:
            return None
        for x, y in ((a.forward_gbps, b.forward_gbps), (a.p50_us, b.p50_us)):
            if x is not None and y is not None and x > 0:
                return x, y
        return None

    @property
    def change_percent(self) -> float | None:
        """The compared figure's change as measured, noise or not (`changed` says which)."""
        figures = self._figures()
        return None if figures is None else 100.0 * (figures[1] - figures[0]) / figures[0]

    @property
    def changed(self) -> bool | None:
        """Whether the change is more than either phase's spread (False: within noise); None where a phase has no
        spread to judge it by (a perftest figure, a record written before spreads were kept)."""
        figures = self._figures()
        if figures is None or self.before is None or self.after is None:
            return None
        return is_change(*figures, self.before.spread, self.after.spread)

    @property
    def ceiling_moved(self) -> bool:
        """The ceiling named differs between the phases, and the figure moved by more than noise: a ceiling that
        flips while the figure stays within its spread is not a change."""
        a, b = self.before, self.after
        if a is None or b is None or a.ceiling == b.ceiling:
            return False
        return self.changed is not False

    def to_json(self) -> dict[str, Any]:
        return {
            "rung": self.rung,
            "before": None if self.before is None else self.before.to_json(),
            "after": None if self.after is None else self.after.to_json(),
            "change_percent": self.change_percent,
            "within_noise": self.changed is False,
        }


def phase_rows(run: Run) -> list[PhaseRow]:
    """The seeds' table for a `commission` run: every rung before and after the fixes, in ladder order."""
    before = {row.rung.removesuffix(" (before)"): row for row in takeaway(run.in_phase("before"))}
    after = {row.rung.removesuffix(" (after)"): row for row in takeaway(run.in_phase("after"))}
    names = [*before, *(n for n in after if n not in before)]
    return [PhaseRow(name, before.get(name), after.get(name)) for name in names]


def moved(rows: Sequence[PhaseRow]) -> list[str]:
    """What the fixes moved beyond noise (figure, change, ceiling), and which rungs stayed within their spread."""
    changed: list[str] = []
    noise: list[str] = []
    for row in rows:
        a, b, change = row.before, row.after, row.change_percent
        if a is None or b is None or change is None:
            continue
        if row.changed is False:
            noise.append(row.rung)
            continue
        if abs(change) < 0.5:
            continue
        if a.forward_gbps is not None and b.forward_gbps is not None:
            figures = f"{a.forward_gbps:.2f} -> {b.forward_gbps:.2f} Gb/s"
        else:
            figures = f"p50 {a.p50_us or 0.0:.1f} -> {b.p50_us or 0.0:.1f} us"
        ceiling = f", {a.ceiling} -> {b.ceiling}" if row.ceiling_moved and a.ceiling and b.ceiling else ""
        changed.append(f"{row.rung} {figures} ({change:+.0f}%{ceiling})")
    found = [f"the fixes moved {', '.join(changed)}" if changed else "the fixes moved no figure beyond its noise"]
    return found + ([f"within noise: {', '.join(noise)}"] if noise else [])


def matrix_headline(m: MatrixResult) -> str:
    name = f"matrix-{m.layer}"
    measured = [c.tool_gbps for c in m.cells if c.tool_gbps is not None]
    if m.status is RungStatus.SKIPPED or not measured:
        return f"{name} {m.status.value}"
    median = statistics.median(measured)
    flagged = [o for o in m.outliers if o.kind in ("cell", "half")]
    outliers = f", {len(flagged)} outlier(s)" if flagged else ", no outlier"
    return f"{name}: median pair {median:.2f} Gb/s per direction over {len(measured)} cells{outliers}"


def imported_names(runs: Sequence[Run]) -> list[str]:
    """The imported files every given run has: the only ones `compare` may set side by side."""
    if not runs:
        return []
    common = set.intersection(*({i.name for i in run.imported} for run in runs))
    return sorted(common)
