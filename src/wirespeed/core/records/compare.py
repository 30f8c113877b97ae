"""Two runs side by side: every figure either run has, what changed, and whether it got worse by more than a
threshold. Pure: it reads two `Run` records.

What is compared: each rung's figures (Gb/s per direction, busbw per message size, latency p50/p99, where lower
is better), each matrix cell (sender -> receiver) and each half of a matrix (the median of its flows, sending and
receiving: where a degraded cable shows), and the figures of an imported file only when both runs hold the same
file. A figure that was measured before and not now counts as worse. A figure of a damaged record (one holding a
number no measurement can have: `decode.Damaged`) is never compared: its row says `damaged`, with no value.
A figure whose run recorded its spread (wirespeed.core.records.spread: iperf3's seconds, sockperf's quartiles) is held
to the same rule as `commission`'s before and after: a change within either run's spread is noise, never worse.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wirespeed.core.imports import imported
from wirespeed.core.records.figures import MAX_BUS_GBPS
from wirespeed.core.records.matrix import MatrixResult
from wirespeed.core.records.results import RungResult, RungStatus
from wirespeed.core.records.run import Run, imported_names
from wirespeed.core.records.spread import Spread, interval_spread, is_change, latency_spread

ABSENT = "absent"
DAMAGED = "damaged"  # the status of a figure whose record is damaged: neither shown nor compared


@dataclass(frozen=True)
class Figure:
    subject: str  # "tcp-single", "matrix-tcp spark-1 -> spark-2", "imported a3.txt"
    measure: str  # "forward_gbps", "busbw_GBps @ 1048576 B", "p99_us", "sends_gbps"
    value: float | None
    status: str  # the rung's (or cell's) status: ran, failed, skipped, interrupted
    higher_is_better: bool = True
    spread: Spread | None = None  # where the run recorded one (core.spread)


@dataclass(frozen=True)
class Change:
    subject: str
    measure: str
    before: float | None
    after: float | None
    status_before: str
    status_after: str
    higher_is_better: bool = True
    spread_before: Spread | None = None
    spread_after: Spread | None = None

    def to_json(self, worse: bool) -> dict[str, Any]:
        """One row of `compare --json`; `worse`: past the threshold the user gave."""
        return {"subject": self.subject, "measure": self.measure, "before": self.before, "after": self.after,
                "change_percent": self.percent, "higher_is_better": self.higher_is_better,
                "status_before": self.status_before, "status_after": self.status_after, "worse": worse,
                "within_noise": self.within_noise}  # fmt: skip

    @property
    def within_noise(self) -> bool:
        """Both runs recorded the figure's spread, and the change is not more than it (core.spread.is_change)."""
        if self.damaged or self.before is None or self.after is None:
            return False
        return is_change(self.before, self.after, self.spread_before, self.spread_after) is False

    @property
    def damaged(self) -> bool:
        return DAMAGED in (self.status_before, self.status_after)

    @property
    def percent(self) -> float | None:
        if self.damaged:
            return None
        if self.before is None or self.after is None or self.before == 0:
            return None
        return 100.0 * (self.after - self.before) / self.before

    def worse(self, threshold_pct: float) -> bool:
        """Lower by more than the threshold (higher, for a latency), or measured before and not now; never where
        either side is damaged (not a figure to compare: `compare` says so and exits non-zero)."""
        if self.damaged:
            return False
        if self.status_before == RungStatus.RAN and self.status_after != RungStatus.RAN:
            return True
        if self.before is not None and self.after is None:
            return True
        if self.within_noise:
            return False
        change = self.percent
        if change is None:
            return False
        return change < -threshold_pct if self.higher_is_better else change > threshold_pct


def rung_figures(rung: RungResult) -> list[Figure]:
    """A rung's figures with their units in the measure's name; a rung with none (skipped) is its status alone."""
    status, name = rung.status.value, rung.label
    found: list[Figure] = []
    if rung.collective is not None:
        found += [Figure(name, f"busbw_GBps @ {row.size_bytes} B", row.busbw_GBps, status)
                  for row in rung.collective.rows]  # fmt: skip
    if rung.flows:
        found.append(Figure(name, "forward_gbps", rung.forward_gbps, status, spread=interval_spread(rung)))
        if rung.reverse_gbps is not None:
            found.append(Figure(name, "reverse_gbps", rung.reverse_gbps, status))
    if rung.latency:
        found.append(Figure(name, "p50_us", rung.p50_us, status, higher_is_better=False,
                            spread=latency_spread(rung)))  # fmt: skip
        found.append(Figure(name, "p99_us", rung.p99_us, status, higher_is_better=False))
    return found or [Figure(name, "status", None, status)]


def matrix_figures(matrix: MatrixResult) -> list[Figure]:
    """Every cell, then every half's median flow (sending and receiving) of one layer's matrix."""
    name = f"matrix-{matrix.layer}"
    found = [
        Figure(f"{name} {c.source} -> {c.target}", "gbps", c.tool_gbps,
               RungStatus.RAN.value if c.tool_gbps is not None else RungStatus.FAILED.value)
        for c in matrix.cells
    ]  # fmt: skip
    by_half: dict[tuple[str, str, str], list[float]] = {}
    if matrix.flows:
        for flow in matrix.flows:
            by_half.setdefault((*flow.source, "sends"), []).append(flow.gbps)
            by_half.setdefault((*flow.target, "receives"), []).append(flow.gbps)
    else:  # schema 1 kept each cell's source halves only
        for c in matrix.cells:
            for iface, gbps in c.halves.items():
                if gbps is not None:
                    by_half.setdefault((c.source, iface, "sends"), []).append(gbps)
    for (node, iface, way), values in sorted(by_half.items()):
        found.append(Figure(f"{name} {node} {iface} {way}", "median_gbps", statistics.median(values),
                            RungStatus.RAN.value))  # fmt: skip
    return found


def run_figures(run: Run, imports: Sequence[str]) -> list[Figure]:
    found = [f for rung in run.rungs for f in rung_figures(rung)]
    found += [f for matrix in run.matrices for f in matrix_figures(matrix)]
    for item in run.imported:
        if item.name in imports:
            for measure, value in imported.figures(item.data).items():
                ok = math.isfinite(value) and 0 <= value <= MAX_BUS_GBPS  # Gb/s or GB/s: beyond it is damage
                found.append(Figure(f"imported {item.name}", measure, value if ok else None,
                                    RungStatus.RAN.value if ok else DAMAGED))  # fmt: skip
    return found


def compare_runs(before: Run, after: Run) -> list[Change]:
    """Every figure either run has: the earlier run's order first, then what only the later one has."""
    imports = imported_names([before, after])
    first = {(f.subject, f.measure): f for f in run_figures(before, imports)}
    second = {(f.subject, f.measure): f for f in run_figures(after, imports)}
    statuses_a = _statuses(before)
    statuses_b = _statuses(after)
    changes: list[Change] = []
    for key in [*first, *(k for k in second if k not in first)]:
        a, b = first.get(key), second.get(key)
        subject, measure = key
        known = a if a is not None else b
        status_a = a.status if a else statuses_a.get(subject, ABSENT)
        status_b = b.status if b else statuses_b.get(subject, ABSENT)
        damaged_a, damaged_b = damaged_subject(before, subject), damaged_subject(after, subject)
        if damaged_a or damaged_b:  # never set beside the other run's figure
            changes.append(Change(subject, measure, None, None, DAMAGED if damaged_a else status_a,
                                  DAMAGED if damaged_b else status_b))  # fmt: skip
            continue
        changes.append(
            Change(
                subject, measure, a.value if a else None, b.value if b else None, status_a, status_b,
                known.higher_is_better if known is not None else True,
                a.spread if a else None, b.spread if b else None,
            )
        )  # fmt: skip
    # A record damaged in either run, with no figure of the other run to set beside it: one row that says so.
    shown = {c.subject for c in changes}
    for record in [*before.damaged, *(d for d in after.damaged if d.label not in {x.label for x in before.damaged})]:
        if not any(record.covers(subject) for subject in shown):
            changes.append(Change(record.label, "record", None, None,
                                  DAMAGED if damaged_subject(before, record.label) else ABSENT,
                                  DAMAGED if damaged_subject(after, record.label) else ABSENT))  # fmt: skip
    return changes


def damaged_subject(run: Run, subject: str) -> bool:
    """Whether a figure of `subject` in `run` comes from a damaged record."""
    return any(record.covers(subject) for record in run.damaged)


def _statuses(run: Run) -> dict[str, str]:
    found = {r.label: r.status.value for r in run.rungs}
    found.update({f"matrix-{m.layer}": m.status.value for m in run.matrices})
    return found


def regressions(changes: Sequence[Change], threshold_pct: float) -> list[Change]:
    return [c for c in changes if c.worse(threshold_pct)]
