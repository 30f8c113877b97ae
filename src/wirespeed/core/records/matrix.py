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

from wirespeed.core.ladder import CPU_SATURATED, WIRE_FRACTION
from wirespeed.core.records.decode import Fields, Figures
from wirespeed.core.records.results import SCHEMA_VERSION, End, FlowResult, RungStatus, check_version, choice

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
    hops: int = 1  # cables crossed: 1 for neighbours, more through a ring's relays
    relays: tuple[str, ...] = ()  # the nodes between, in order
    # Other cells of the round whose flows crossed a directed cable half of this one ("a -> b"): the expected rate
    # is then that half's fair share.
    shared_with: tuple[str, ...] = ()
    ceiling: str | None = None  # a relayed cell's: "wire" (at its expected rate) or "relay" (a relay's core full)
    ceiling_evidence: str | None = None

    @property
    def route(self) -> str:
        """How the pair talks: `2 hops via spark-2`, empty for neighbours."""
        return f"{self.hops} hops via {', '.join(self.relays)}" if self.relays else ""


@dataclass(frozen=True)
class RelayedCable:
    """A sending end of a cable half that carried relayed traffic in a round, and its TX at the wire."""

    round: int
    node: str
    iface: str
    tx_gbps: float | None


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


def _sharing(results: Sequence[FlowResult]) -> dict[End, list[int]]:
    """Per directed cable half, the flows of one round that crossed it. Only a relayed flow shares a half with
    another: in a round each node has one partner, so two flows over one cable never meet on a half (and the
    flows of several rounds read at once are not taken for sharing)."""
    on_half: dict[End, list[int]] = {}
    for index, r in enumerate(results):
        for half in r.flow.halves_crossed:
            on_half.setdefault(half, []).append(index)
    return {h: i if any(results[x].flow.relays for x in i) else [] for h, i in on_half.items()}


def _fair_shares(results: Sequence[FlowResult]) -> tuple[list[float | None], list[set[str]]]:
    """Per flow of one round, its limit divided among the flows on its most shared directed cable half, and the
    other cells ("a -> b") it shared a half with."""
    on_half = _sharing(results)
    shares: list[float | None] = []
    partners: list[set[str]] = []
    for index, r in enumerate(results):
        most = max(1, *(len(on_half[h]) for h in r.flow.halves_crossed))
        limit = r.flow.limit_gbps
        shares.append(None if limit is None else limit / most)
        others = {i for h in r.flow.halves_crossed for i in on_half[h] if i != index}
        names = {f"{results[i].flow.source[0]} -> {results[i].flow.target[0]}" for i in others}
        partners.append(names - {f"{r.flow.source[0]} -> {r.flow.target[0]}"})
    return shares, partners


def relayed_cables(
    round_number: int, results: Sequence[FlowResult], wire_tx: Mapping[End, float] | None = None
) -> list[RelayedCable]:
    """The sending ends of the cable halves that relayed flows of a round crossed, with their TX at the wire."""
    ends = sorted({half for r in results if r.flow.relays for half in r.flow.halves_crossed})
    return [RelayedCable(round_number, n, i, (wire_tx or {}).get((n, i))) for n, i in ends]


def _relay_ceiling(
    source: str, target: str, relays: Sequence[str], gbps: float | None, expected: float | None, shared: bool,
    busiest_core: Mapping[str, tuple[int, float]],
) -> tuple[str | None, str | None]:  # fmt: skip
    """A relayed cell at its expected rate is at the wire (a fair share counts from 0.75 of it: TCP flows on one
    half split it unevenly, one above its share, one below); clearly below it (under 0.75), with a relay's busiest
    core saturated, the relay's CPU is what held it back."""
    if not relays or gbps is None or not expected:
        return None, None
    if gbps >= (OUTLIER_FRACTION if shared else WIRE_FRACTION) * expected:
        return "wire", f"{gbps:.2f} Gb/s of {expected:.2f} expected through {', '.join(relays)}"
    if gbps >= OUTLIER_FRACTION * expected:
        return None, None
    hot = [(node, busiest_core[node]) for node in relays if busiest_core.get(node, (0, 0.0))[1] >= CPU_SATURATED]
    if not hot:
        return None, None
    cores = ", ".join(f"relay {node} core {core} at {busy:.0f}%" for node, (core, busy) in hot)
    return "relay", f"{source} -> {target} at {gbps:.2f} Gb/s of {expected:.2f} expected; {cores}"


def cells_from_flows(
    round_number: int,
    pairs: Sequence[tuple[str, str]],
    results: Sequence[FlowResult],
    wire_tx: Mapping[tuple[str, str], float] | None = None,
    busiest_core: Mapping[str, tuple[int, float]] | None = None,
) -> list[MatrixCell]:
    """Both directions of every pair of a round from its flows (a `reverse` result is already turned around); a
    cell whose flows shared a directed cable half with another cell's expects that half's fair share."""
    cells: list[MatrixCell] = []
    shares, partners = _fair_shares(results)
    for a, b in pairs:
        for src, dst in ((a, b), (b, a)):
            indices = [i for i, r in enumerate(results) if r.flow.source[0] == src and r.flow.target[0] == dst]
            mine = [results[i] for i in indices]
            if not mine:
                continue
            errors = sorted({r.error for r in mine if r.error})
            measured = [r.tool_gbps for r in mine if r.tool_gbps is not None]
            limits = [shares[i] for i in indices]
            tool = sum(measured) if len(measured) == len(mine) else None
            expected = sum(x for x in limits if x is not None) if all(x is not None for x in limits) else None
            relays = mine[0].flow.relays
            shared = tuple(sorted(set().union(*(partners[i] for i in indices))))
            ceiling, evidence = _relay_ceiling(src, dst, relays, tool, expected, bool(shared), busiest_core or {})
            halves = {r.flow.source[1]: r.tool_gbps for r in mine}
            wire = [wire_tx.get((src, iface)) for iface in halves] if wire_tx is not None else []
            cells.append(
                MatrixCell(
                    source=src,
                    target=dst,
                    round=round_number,
                    tool_gbps=tool,
                    expected_gbps=expected,
                    halves=halves,
                    wire_gbps=sum(w for w in wire if w is not None)
                    if wire and all(w is not None for w in wire)
                    else None,
                    error="; ".join(errors) or None,
                    hops=mine[0].flow.hops,
                    relays=relays,
                    shared_with=shared,
                    ceiling=ceiling,
                    ceiling_evidence=evidence,
                )
            )
    return cells


def find_outliers(cells: Sequence[MatrixCell], flows: Sequence[HalfFlow]) -> list[Outlier]:
    """Cells below 0.75 of the median cell, halves whose flows (sent or received) sit below 0.75 of the median flow,
    cells below half their line rate (or fair share), unless every cell is (then the ceiling is elsewhere, not a
    pair), and relayed cells held back by a relay's CPU. A cell that shared a cable half is held against its fair
    share only, not the median: half the rate is what sharing gives."""
    found: list[Outlier] = []
    measured = [c for c in cells if c.tool_gbps is not None]
    alone = [c for c in measured if not c.shared_with]
    if len(alone) >= 3:
        median = statistics.median(c.tool_gbps for c in alone if c.tool_gbps is not None)
        for c in alone:
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
                                 "expected from the halves' line rates" + _shared(c)))  # fmt: skip
    for c in measured:
        if c.ceiling == "relay" and c.tool_gbps is not None and c.expected_gbps is not None:
            found.append(Outlier("relay", c.source, c.target, c.tool_gbps, c.expected_gbps,
                                 f"{c.route}: {c.ceiling_evidence}: the relay's CPU forwards no faster"))  # fmt: skip
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


def _shared(cell: MatrixCell) -> str:
    return f" (a cable half shared with {', '.join(cell.shared_with)})" if cell.shared_with else ""


def half_flows(results: Sequence[FlowResult]) -> list[HalfFlow]:
    return [HalfFlow(r.flow.source, r.flow.target, r.tool_gbps) for r in results if r.tool_gbps is not None]


def unshared_half_flows(results: Sequence[FlowResult]) -> list[HalfFlow]:
    """The flows of one round that had every cable half they crossed to themselves: what the half-level medians
    compare (a flow that shared one runs at its fair share, and would read as a degraded half)."""
    on_half = _sharing(results)
    return half_flows([r for r in results if all(len(on_half[h]) <= 1 for h in r.flow.halves_crossed)])


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
    relayed_cables: tuple[RelayedCable, ...] = ()  # per round, the cable halves that carried relayed traffic

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
                    "error": c.error, "hops": c.hops, "relays": list(c.relays), "shared_with": list(c.shared_with),
                    "ceiling": c.ceiling, "ceiling_evidence": c.ceiling_evidence,
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
            "relayed_cables": [
                {"round": x.round, "node": x.node, "iface": x.iface, "tx_gbps": x.tx_gbps} for x in self.relayed_cables
            ],
            "reason": self.reason,
            "fix": self.fix,
        }  # fmt: skip


def relayed_lines(result: MatrixResult) -> list[str]:
    """One line per relayed cell, and per cell that expected a fair share: its way through the ring, its figure
    against what it could carry, and the ceiling with its evidence."""
    lines: list[str] = []
    for c in result.cells:
        if not c.relays and not c.shared_with:
            continue
        figure = "failed" if c.tool_gbps is None else f"{c.tool_gbps:.2f} Gb/s"
        expected = f" of {c.expected_gbps:.2f} expected" if c.expected_gbps is not None else ""
        line = f"{c.source} -> {c.target}: {c.route or 'neighbours'}, {figure}{expected}"
        if c.shared_with:
            line += f" (fair share: a cable half shared with {', '.join(c.shared_with)})"
        if c.ceiling == "relay":
            line += f"; ceiling relay: {c.ceiling_evidence}"
        elif c.ceiling:
            line += f"; ceiling {c.ceiling}"
        lines.append(line)
    return lines


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
                hops=c.opt_whole("hops") or 1, relays=c.texts("relays"), shared_with=c.texts("shared_with"),
                ceiling=c.opt_text("ceiling"), ceiling_evidence=c.opt_text("ceiling_evidence"),
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
        relayed_cables=tuple(
            RelayedCable(x.whole("round"), x.text("node"), x.text("iface"), x.opt_num("tx_gbps"))
            for x in f.objects("relayed_cables")
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
