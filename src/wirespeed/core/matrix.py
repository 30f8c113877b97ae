"""The all-pairs bandwidth matrix: which pairs run together, and what the measured flows say about each pair and
each half. Pure.

Every pair of N nodes is measured in N-1 rounds (N rounds when N is odd, one node resting each round) of disjoint
pairs at once: the circle method of a round-robin tournament. In a round each node talks to one partner only, so its
counters at the wire belong to that pair. A bad cable or half hides in a larger cluster; it shows as one node's
half being slow with every partner, which the medians below single out.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.decode import Fields, Figures
from wirespeed.core.results import SCHEMA_VERSION, FlowResult, RungStatus, check_version, choice

OUTLIER_FRACTION = 0.75  # a cell or a half below this share of the median is flagged
EXPECTED_FRACTION = 0.5  # a cell below this share of its line rate is flagged (unless every cell is)


def round_robin(nodes: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Rounds of disjoint pairs covering every pair once: N-1 rounds of N/2 pairs (N even), N rounds (N odd).

    The first node stays put while the others rotate one place per round (circle method)."""
    if len(set(nodes)) != len(nodes):
        raise ValueError("node names must be unique")
    ring: list[str | None] = list(nodes)
    if len(ring) < 2:
        return []
    if len(ring) % 2:
        ring.append(None)  # the node paired with None rests this round
    n = len(ring)
    rounds: list[list[tuple[str, str]]] = []
    for _ in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        rounds.append(pairs)
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


@dataclass(frozen=True)
class MatrixCell:
    """One direction of one pair: `source` sends to `target` on every half they share, at once."""

    source: str
    target: str
    round: int  # 1-based
    tool_gbps: float | None  # the sum over halves of what the receivers counted (iperf3/perftest), Gb/s
    expected_gbps: float | None  # the sum of the halves' limits (link or PCIe), Gb/s per direction
    halves: Mapping[str, float | None] = field(default_factory=dict)  # source half -> Gb/s
    wire_gbps: float | None = None  # the source's TX at the wire on those halves during the round
    error: str | None = None


@dataclass(frozen=True)
class Outlier:
    """A cell or a half that falls short, in words, with the figures that say so."""

    kind: str  # "cell", "half" or "expected"
    node: str
    subject: str  # the target node (cell) or the interface and direction (half)
    gbps: float
    reference_gbps: float  # the median (or the line rate) it is compared with
    text: str


@dataclass(frozen=True)
class HalfFlow:
    """One measured flow on one half, as the half-level medians see it."""

    source: tuple[str, str]
    target: tuple[str, str]
    gbps: float


def cells_from_flows(
    round_number: int,
    pairs: Sequence[tuple[str, str]],
    results: Sequence[FlowResult],
    wire_tx: Mapping[tuple[str, str], float] | None = None,
) -> list[MatrixCell]:
    """Both directions of every pair of a round from its flows (a `reverse` result is already turned around)."""
    cells: list[MatrixCell] = []
    for a, b in pairs:
        for src, dst in ((a, b), (b, a)):
            mine = [r for r in results if r.flow.source[0] == src and r.flow.target[0] == dst]
            if not mine:
                continue
            errors = sorted({r.error for r in mine if r.error})
            measured = [r.tool_gbps for r in mine if r.tool_gbps is not None]
            limits = [r.flow.limit_gbps for r in mine]
            halves = {r.flow.source[1]: r.tool_gbps for r in mine}
            wire = [wire_tx.get((src, iface)) for iface in halves] if wire_tx is not None else []
            cells.append(
                MatrixCell(
                    source=src,
                    target=dst,
                    round=round_number,
                    tool_gbps=sum(measured) if len(measured) == len(mine) else None,
                    expected_gbps=sum(x for x in limits if x is not None)
                    if all(x is not None for x in limits)
                    else None,
                    halves=halves,
                    wire_gbps=sum(w for w in wire if w is not None)
                    if wire and all(w is not None for w in wire)
                    else None,
                    error="; ".join(errors) or None,
                )
            )
    return cells


def _total(values: Sequence[float | None]) -> float | None:
    """The sum, or None when any part is unknown (or there are none): a partial sum would read as a low figure."""
    known = [v for v in values if v is not None]
    return sum(known) if values and len(known) == len(values) else None


def find_outliers(cells: Sequence[MatrixCell], flows: Sequence[HalfFlow]) -> list[Outlier]:
    """Cells below 0.75 of the median cell, halves whose flows (sent or received) sit below 0.75 of the median flow,
    and cells below half their line rate, unless every cell is (then the ceiling is elsewhere, not a pair)."""
    found: list[Outlier] = []
    measured = [c for c in cells if c.tool_gbps is not None]
    if len(measured) >= 3:
        median = statistics.median(c.tool_gbps for c in measured if c.tool_gbps is not None)
        for c in measured:
            assert c.tool_gbps is not None
            if median > 0 and c.tool_gbps < OUTLIER_FRACTION * median:
                found.append(Outlier("cell", c.source, c.target, c.tool_gbps, median,
                                     f"{c.source} -> {c.target}: {c.tool_gbps:.2f} Gb/s, "
                                     f"{c.tool_gbps / median:.0%} of the median pair ({median:.2f} Gb/s)"))  # fmt: skip
    short = [c for c in measured if c.expected_gbps and c.tool_gbps is not None
             and c.tool_gbps < EXPECTED_FRACTION * c.expected_gbps]  # fmt: skip
    if short and len(short) < len(measured):
        for c in short:
            assert c.tool_gbps is not None and c.expected_gbps is not None
            found.append(Outlier("expected", c.source, c.target, c.tool_gbps, c.expected_gbps,
                                 f"{c.source} -> {c.target}: {c.tool_gbps:.2f} Gb/s of {c.expected_gbps:.2f} "
                                 "expected from the halves' line rates"))  # fmt: skip
    if len(flows) >= 4:
        median_flow = statistics.median(f.gbps for f in flows)
        by_half: dict[tuple[str, str, str], list[float]] = {}
        for f in flows:
            by_half.setdefault((*f.source, "sends"), []).append(f.gbps)
            by_half.setdefault((*f.target, "receives"), []).append(f.gbps)
        for (node, iface, way), values in sorted(by_half.items()):
            typical = statistics.median(values)
            if len(values) >= 2 and median_flow > 0 and typical < OUTLIER_FRACTION * median_flow:
                found.append(Outlier("half", node, f"{iface} {way}", typical, median_flow,
                                     f"{node} {iface} {way} at {typical:.2f} Gb/s with every partner (median of "
                                     f"{len(values)} flows), {typical / median_flow:.0%} of the median flow "
                                     f"({median_flow:.2f} Gb/s): a degraded half, cable or port"))  # fmt: skip
    return found


def half_flows(results: Sequence[FlowResult]) -> list[HalfFlow]:
    return [HalfFlow(r.flow.source, r.flow.target, r.tool_gbps) for r in results if r.tool_gbps is not None]


@dataclass(frozen=True)
class MatrixResult:
    layer: str  # "tcp" or "rdma"
    status: RungStatus  # failed: some cells have no figure; interrupted: the rounds measured until a signal
    nodes: tuple[str, ...]
    rounds: tuple[tuple[tuple[str, str], ...], ...]
    cells: tuple[MatrixCell, ...] = ()
    outliers: tuple[Outlier, ...] = ()
    round_seconds: tuple[float, ...] = ()  # wall time of each round
    seconds_per_test: float = 0.0  # what one measurement runs for (-t)
    bidir: bool = True
    reason: str | None = None
    fix: str | None = None
    flows: tuple[HalfFlow, ...] = ()  # every measured flow, each half with its partner half (schema 2)

    @property
    def pairs(self) -> int:
        return sum(len(r) for r in self.rounds)

    def cell(self, source: str, target: str) -> MatrixCell | None:
        return next((c for c in self.cells if c.source == source and c.target == target), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "matrix",
            "schema_version": SCHEMA_VERSION,
            "layer": self.layer,
            "status": self.status.value,
            "nodes": list(self.nodes),
            "rounds": [[list(p) for p in r] for r in self.rounds],
            "pairs": self.pairs,
            "bidir": self.bidir,
            "seconds_per_test": self.seconds_per_test,
            "round_seconds": list(self.round_seconds),
            "wall_seconds": sum(self.round_seconds),
            "units": "Gb/s (10^9 bit/s) per direction",
            "cells": [
                {
                    "source": c.source, "target": c.target, "round": c.round, "tool_gbps": c.tool_gbps,
                    "expected_gbps": c.expected_gbps, "wire_gbps": c.wire_gbps, "halves": dict(c.halves),
                    "error": c.error,
                }
                for c in self.cells
            ],
            "outliers": [
                {"kind": o.kind, "node": o.node, "subject": o.subject, "gbps": o.gbps,
                 "reference_gbps": o.reference_gbps, "text": o.text}
                for o in self.outliers
            ],
            "flows": [
                {"client": list(f.source), "server": list(f.target), "receiver_gbps": f.gbps} for f in self.flows
            ],
            "reason": self.reason,
            "fix": self.fix,
        }  # fmt: skip


def matrix_from_json(data: Any, where: str = "matrix") -> MatrixResult:
    """Read back `to_json` (what `matrix-<layer>.json` holds, schema 1 or 2); ValueError names the field."""
    f = Figures(data, where)
    check_version(f)
    return MatrixResult(
        layer=f.text("layer"),
        status=choice(f, "status", RungStatus),
        nodes=f.texts("nodes"),
        rounds=tuple(tuple(_pair(p, f.where) for p in _rows(r, f.where)) for r in _rows(f.raw("rounds"), f.where)),
        cells=tuple(
            MatrixCell(
                source=c.text("source"), target=c.text("target"), round=c.whole("round"),
                tool_gbps=c.opt_num("tool_gbps"), expected_gbps=c.opt_num("expected_gbps"),
                halves=_halves(c), wire_gbps=c.opt_num("wire_gbps"), error=c.opt_text("error"),
            )
            for c in f.objects("cells")
        ),
        outliers=tuple(
            Outlier(o.text("kind"), o.text("node"), o.text("subject"), o.num("gbps"), o.num("reference_gbps"),
                    o.text("text"))
            for o in f.objects("outliers")
        ),
        round_seconds=_seconds(f),
        seconds_per_test=f.opt_num("seconds_per_test") or 0.0,
        bidir=f.flag("bidir", True),
        reason=f.opt_text("reason"),
        fix=f.opt_text("fix"),
        flows=tuple(
            HalfFlow(_two(x.texts("client"), x.where), _two(x.texts("server"), x.where), x.num("receiver_gbps"))
            for x in f.objects("flows")
        ),
    )  # fmt: skip


def _rows(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{where}: rounds: expected a list of rounds of pairs")
    return value


def _pair(value: Any, where: str) -> tuple[str, str]:
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise ValueError(f"{where}: rounds: expected pairs of node names")
    return value[0], value[1]


def _two(parts: tuple[str, ...], where: str) -> tuple[str, str]:
    if len(parts) != 2:
        raise ValueError(f"{where}: expected [node, interface]")
    return parts[0], parts[1]


def _halves(cell: Fields) -> dict[str, float | None]:
    halves = cell.opt_obj("halves")
    return {} if halves is None else {str(k): halves.opt_num(str(k), unit="gbps") for k in halves.data}


def _seconds(f: Fields) -> tuple[float, ...]:
    values = f.raw("round_seconds") or []
    if not isinstance(values, list):
        raise ValueError(f"{f.where}: round_seconds: expected a list of numbers")
    return f.number_list("round_seconds")
