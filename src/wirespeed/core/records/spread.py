"""How far a rung's figure could move on noise alone, from the run's own data, and whether a change between two
figures is more than that. Pure.

pyperf's discipline: a figure without its spread cannot say whether a later one differs. Each rung runs once, so
the spread comes from what the run itself recorded, where that is sound:
- TCP (iperf3): the per-second intervals (the ramp's `-O 1` second left out), all flows of the rung added interval
  by interval (they run at once): the lowest to the highest second.
- latency (sockperf): each half's quartiles of its round trips, p25 to p75, the halves' median (as the figure is);
  without quartiles (perftest, older records), the halves' medians lowest to highest, where there are several.
- NCCL (nccl-tests): the busbw of the peak's message size and of its neighbouring sizes, which reach the same
  plateau: the peak is the highest of them, so the lowest says how much of it is luck.
A rung with none of these (one perftest bandwidth figure) has no spread, and says so.

A change is a change only when the two phases' ranges do not overlap, it exceeds each phase's own spread, and it
is more than `FLOOR_PERCENT` (two steady runs on a shaped link can each have a range narrower than what separates
one run from the next); otherwise it is within noise.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wirespeed.core.records.results import BITS_PER_BYTE, Direction, RungResult

NOISE = "within noise"
FLOOR_PERCENT = 2.0  # below this, no single run of each phase tells a change from the next run's wobble
INTERVALS = "iperf3's per-second intervals, lowest to highest"
QUARTILES = "sockperf's p25 to p75 of each half's round trips, the halves' median"
HALVES = "the halves' medians, lowest to highest"
SIZES = "nccl-tests' busbw at the peak's message size and its neighbours"
# What each method means, in the words the report prints once under its table.
HOW = {
    INTERVALS: "TCP: the per-second rates iperf3 reported (the first second, TCP's ramp, left out), every flow of "
    "the rung added second by second; the figure could be anywhere from the lowest second to the highest",
    QUARTILES: "latency: the middle half (p25 to p75) of every half's round trips as sockperf counted them",
    HALVES: "latency without quartiles: the lowest to the highest of the halves' medians",
    SIZES: "NCCL: the bus bandwidth of the peak's message size and the sizes next to it, which reach the same plateau",
}


@dataclass(frozen=True)
class Spread:
    """The range a figure's own run supports, in the figure's unit (Gb/s, or us for a latency), the figure inside
    it; `method` is one of this module's names, `samples` how many values it was taken from."""

    low: float
    high: float
    method: str
    samples: int

    @property
    def width(self) -> float:
        return self.high - self.low

    def to_json(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "method": self.method, "samples": self.samples}


def _around(values: Sequence[float], figure: float, method: str) -> Spread:
    return Spread(min(*values, figure), max(*values, figure), method, len(values))


def interval_spread(rung: RungResult) -> Spread | None:
    """The forward direction's per-second rates, all flows added second by second, or None when a flow has none."""
    forward = [f for f in rung.flows if f.direction == Direction.FORWARD]
    figure = rung.forward_gbps
    if not forward or figure is None or any(not f.intervals_gbps for f in forward):
        return None
    seconds = min(len(f.intervals_gbps) for f in forward)
    totals = [sum(f.intervals_gbps[i] for f in forward) for i in range(seconds)]
    return _around(totals, figure, INTERVALS) if len(totals) >= 2 else None


def latency_spread(rung: RungResult) -> Spread | None:
    figure = rung.p50_us
    if figure is None:
        return None
    quartiles = [(x.p25_us, x.p75_us) for x in rung.latency if x.p25_us is not None and x.p75_us is not None]
    if quartiles and len(quartiles) == len(rung.latency):
        low = statistics.median(q[0] for q in quartiles if q[0] is not None)
        high = statistics.median(q[1] for q in quartiles if q[1] is not None)
        return Spread(min(low, figure), max(high, figure), QUARTILES, sum(x.samples or 0 for x in rung.latency))
    medians = [x.p50_us for x in rung.latency]
    return _around(medians, figure, HALVES) if len(medians) >= 2 else None


def size_spread(rung: RungResult) -> Spread | None:
    if rung.collective is None or rung.collective.peak is None:
        return None
    rows = sorted(rung.collective.rows, key=lambda r: r.size_bytes)
    at = rows.index(rung.collective.peak)
    near = [r.busbw_GBps * BITS_PER_BYTE for r in rows[max(0, at - 1) : at + 2]]
    figure = rung.collective.peak.busbw_GBps * BITS_PER_BYTE
    return _around(near, figure, SIZES) if len(near) >= 2 else None


def rung_spread(rung: RungResult) -> Spread | None:
    """The spread of the figure a before/after row compares: Gb/s per direction, else the p50 latency."""
    if rung.collective is not None:
        return size_spread(rung)
    if rung.forward_gbps is not None:
        return interval_spread(rung)
    return latency_spread(rung)


def is_change(before: float, after: float, spread_before: Spread | None, spread_after: Spread | None) -> bool | None:
    """Whether `after` differs from `before` by more than noise: their ranges apart, the difference larger than
    each phase's spread and than `FLOOR_PERCENT` of the larger figure. None when either phase has no spread (the
    change cannot be judged)."""
    if spread_before is None or spread_after is None:
        return None
    apart = spread_after.low > spread_before.high or spread_after.high < spread_before.low
    step = abs(after - before)
    floor = FLOOR_PERCENT / 100 * max(abs(before), abs(after))
    return apart and step > spread_before.width and step > spread_after.width and step > floor


def methods(spreads: Sequence[Spread | None]) -> list[str]:
    """How the given spreads were taken, once each, in the words the report prints."""
    seen = dict.fromkeys(s.method for s in spreads if s is not None)
    return [HOW[m] for m in seen if m in HOW]
