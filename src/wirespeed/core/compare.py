"""Two runs side by side: per rung and per collective and message size, what changed and whether it got worse by
more than a threshold. Pure: it reads the rung JSON objects `wirespeed bench` writes, already loaded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Change:
    rung: str
    measure: str  # "forward_gbps", "reverse_gbps", "busbw_GBps @ 1048576 B", ...
    before: float | None
    after: float | None
    status_before: str
    status_after: str

    @property
    def percent(self) -> float | None:
        if self.before is None or self.after is None or self.before == 0:
            return None
        return 100.0 * (self.after - self.before) / self.before

    def worse(self, threshold_pct: float) -> bool:
        """Lower by more than the threshold, or measured before and not now."""
        if self.status_before == "ran" and self.status_after != "ran":
            return True
        change = self.percent
        return change is not None and change < -threshold_pct


def _figures(rung: Mapping[str, Any]) -> dict[str, float]:
    found: dict[str, float] = {}
    for key in ("forward_gbps", "reverse_gbps"):
        value = rung.get(key)
        if isinstance(value, int | float):
            found[key] = float(value)
    collective = rung.get("collective")
    if isinstance(collective, Mapping):
        for row in collective.get("rows") or []:
            if isinstance(row, Mapping) and isinstance(row.get("busbw_GBps"), int | float):
                found[f"busbw_GBps @ {row['size_bytes']} B"] = float(row["busbw_GBps"])
    return found


def compare_runs(before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]) -> list[Change]:
    """Every figure of every rung either run has, in rung order of the earlier run then the later's new ones."""
    changes: list[Change] = []
    for rung in [*before, *(r for r in after if r not in before)]:
        a, b = before.get(rung, {}), after.get(rung, {})
        fa, fb = _figures(a), _figures(b)
        status_a, status_b = str(a.get("status", "absent")), str(b.get("status", "absent"))
        measures = [*fa, *(m for m in fb if m not in fa)]
        if not measures:
            changes.append(Change(rung, "status", None, None, status_a, status_b))
        for measure in measures:
            changes.append(Change(rung, measure, fa.get(measure), fb.get(measure), status_a, status_b))
    return changes


def regressions(changes: Sequence[Change], threshold_pct: float) -> list[Change]:
    return [c for c in changes if c.worse(threshold_pct)]
