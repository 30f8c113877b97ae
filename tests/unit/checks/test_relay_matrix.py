"""The all-pairs matrix of a ring of four to eight Sparks (or a chain): the flows of pairs that share no cable, through
the relays between, the shorter way round; ties chosen so a round's flows keep off each other's cable halves; the
fair share where they cannot; the relay ceiling; and the new fields in the matrix file, old files still read."""

from __future__ import annotations

import itertools
import json

import pytest
from test_check_ring import ring

from wirespeed.core.fabric.relay import round_flows, round_label
from wirespeed.core.records.decode import Figures
from wirespeed.core.records.matrix import (
    MatrixCell,
    MatrixResult,
    RelayedCable,
    cells_from_flows,
    find_outliers,
    matrix_from_json,
    relayed_cables,
    relayed_lines,
    round_robin,
    unshared_half_flows,
)
from wirespeed.core.records.results import Direction, End, Flow, FlowResult, RungStatus
from wirespeed.ui.matrix import matrix_view


def distance(order: tuple[str, ...], a: str, b: str, closed: bool) -> int:
    steps = abs(order.index(a) - order.index(b))
    return min(steps, len(order) - steps) if closed else steps


def all_flows(count: int, cut: int | None = None, bidir: bool = True) -> tuple[tuple[str, ...], list[list[Flow]]]:
    data = ring(count, cut=cut)
    order = data.cabling.order
    rounds = round_robin(sorted(order))
    return order, [round_flows(data.facts, data.cabling, pairs, bidir) for pairs in rounds]


@pytest.mark.parametrize("count", [4, 6])
def test_every_pair_of_a_ring_has_a_flow_per_half_the_shorter_way(count: int) -> None:
    data = ring(count)
    order = data.cabling.order
    linked = {frozenset({a, b}) for a, b in data.cabling.links}
    for pairs in round_robin(sorted(order)):
        flows = round_flows(data.facts, data.cabling, pairs, bidir=True)
        for client, server in pairs:
            mine = [f for f in flows if (f.source[0], f.target[0]) == (client, server)]
            assert len(mine) == 2  # half 0 and half 1
            hops = distance(order, client, server, closed=True)
            for flow in mine:
                assert flow.hops == hops and len(flow.relays) == hops - 1
                assert bool(flow.crossed) == (hops > 1)
                netdev = data.facts[client].netdev(flow.source[1])
                assert netdev is not None and netdev.ipv4[0].split("/")[0] == flow.source_address
                target = data.facts[server].netdev(flow.target[1])
                assert target is not None and target.ipv4[0].split("/")[0] == flow.target_address
                if flow.relays:
                    # the path: the client's half, each relay's half onwards, and the last arrives at the server
                    assert [end[0] for end in flow.crossed] == [client, *flow.relays]
                    last = flow.crossed[-1]
                    assert frozenset({last, flow.target}) in linked
                    assert frozenset({flow.source, (flow.relays[0], flow.crossed_back[-1][1])}) in linked
                    assert [end[0] for end in flow.crossed_back] == [server, *reversed(flow.relays)]


def test_hop_counts_of_a_six_ring_and_a_chain() -> None:
    _, rounds = all_flows(6)
    hops = {(f.source[0], f.target[0]): (f.hops, f.relays) for flows in rounds for f in flows}
    assert hops[("spark-1", "spark-2")] == (1, ())
    assert hops[("spark-1", "spark-3")] == (2, ("spark-2",))
    assert hops[("spark-1", "spark-4")][0] == 3  # opposite: either way is three cables
    assert hops[("spark-1", "spark-5")] == (2, ("spark-6",))
    order, rounds = all_flows(5, cut=2)  # the chain spark-4 - spark-5 - spark-1 - spark-2 - spark-3
    hops = {frozenset({f.source[0], f.target[0]}): (f.hops, f.relays) for flows in rounds for f in flows}
    assert len(hops) == 10
    assert hops[frozenset({"spark-3", "spark-4"})][0] == 5 - 1
    assert set(hops[frozenset({"spark-3", "spark-4"})][1]) == {"spark-5", "spark-1", "spark-2"}
    assert all(h == distance(order, *sorted(p), closed=False) for p, (h, _) in hops.items())


def shared_halves(flows: list[Flow]) -> list[End]:
    count: dict[End, int] = {}
    for flow in flows:
        for half in flow.halves_crossed:
            count[half] = count.get(half, 0) + 1
    return [h for h, n in count.items() if n > 1]


@pytest.mark.parametrize("bidir", [True, False])
def test_no_two_flows_of_a_four_ring_round_send_on_one_cable_half(bidir: bool) -> None:
    _, rounds = all_flows(4, bidir=bidir)
    for flows in rounds:
        assert shared_halves(flows) == [], flows
    relayed = next(flows for flows in rounds if any(f.relays for f in flows))
    ways = {(f.source[0], f.target[0]): f.relays for f in relayed}
    assert ways == {("spark-1", "spark-3"): ("spark-2",), ("spark-4", "spark-2"): ("spark-3",)}
    if bidir:  # both directions at once: an answer must share a half with the other pair's request
        answers = [f.reversed() for f in relayed]
        assert shared_halves([*relayed, *answers])


def results_of(flows: list[Flow], gbps: float, bidir: bool = True) -> list[FlowResult]:
    found = [FlowResult(f, Direction.FORWARD, gbps) for f in flows]
    return found + ([FlowResult(f.reversed(), Direction.REVERSE, gbps) for f in flows] if bidir else [])


def relayed_round() -> tuple[list[tuple[str, str]], list[Flow]]:
    data = ring(4)
    pairs = round_robin(sorted(data.cabling.order))[1]
    return pairs, round_flows(data.facts, data.cabling, pairs, bidir=True)


def test_flows_sharing_a_directed_half_expect_its_fair_share_and_name_the_other_pair() -> None:
    pairs, flows = relayed_round()
    limit = flows[0].limit_gbps
    assert limit is not None
    cells = cells_from_flows(2, pairs, results_of(flows, 40.0))
    assert len(cells) == 4 and all(c.hops == 2 for c in cells)
    for cell in cells:
        assert cell.expected_gbps == pytest.approx(2 * limit / 2)  # two halves, each shared by two flows
        assert cell.shared_with and all(f"{cell.source} -> {cell.target}" != s for s in cell.shared_with)
        assert all({cell.source, cell.target} != set(s.split(" -> ")) for s in cell.shared_with)
    assert unshared_half_flows(results_of(flows, 40.0)) == []
    alone = cells_from_flows(2, pairs, results_of(flows, 40.0, bidir=False))
    assert all(c.shared_with == () and c.expected_gbps == pytest.approx(2 * limit) for c in alone)
    assert all(c.route.startswith("2 hops via spark-") for c in alone)


def test_relay_ceiling_named_only_when_the_relay_core_is_saturated() -> None:
    pairs, flows = relayed_round()
    results = results_of(flows, 10.0, bidir=False)  # 20 Gb/s of about 217 expected
    relay = flows[0].relays[0]
    hot = cells_from_flows(2, pairs, results, busiest_core={relay: (3, 97.0)})
    cell = next(c for c in hot if c.relays == (relay,))
    assert cell.ceiling == "relay"
    assert cell.ceiling_evidence is not None and f"relay {relay} core 3 at 97%" in cell.ceiling_evidence
    assert "20.00 Gb/s" in cell.ceiling_evidence
    outliers = [o for o in find_outliers(hot, []) if o.kind == "relay"]
    assert [(o.node, o.subject) for o in outliers] == [(cell.source, cell.target)]
    assert f"2 hops via {relay}" in outliers[0].text
    cool = cells_from_flows(2, pairs, results, busiest_core={relay: (3, 60.0)})
    assert all(c.ceiling is None for c in cool)
    assert not [o for o in find_outliers(cool, []) if o.kind == "relay"]
    limit = flows[0].limit_gbps
    assert limit is not None
    uneven = results_of(flows, limit / 2 * 0.86)  # both directions at once: each half shared, TCP splits it unevenly
    assert all(c.ceiling == "wire" for c in cells_from_flows(2, pairs, uneven, busiest_core={relay: (3, 99.0)}))
    slower = [FlowResult(r.flow, r.direction, limit * 0.8) for r in results]  # 0.8 of the line rate, alone
    assert all(c.ceiling is None for c in cells_from_flows(2, pairs, slower, busiest_core={relay: (3, 99.0)}))
    full = cells_from_flows(2, pairs, results_of(flows, limit * 0.95, bidir=False), busiest_core={relay: (3, 99.0)})
    assert all(c.ceiling == "wire" for c in full)


def test_matrix_of_a_ring_round_trips_and_old_files_still_load() -> None:
    pairs, flows = relayed_round()
    results = results_of(flows, 40.0)
    cells = cells_from_flows(2, pairs, results, busiest_core={"spark-2": (1, 95.0)})
    cables = relayed_cables(2, results, {("spark-1", "enp1s0f0np0"): 39.5})
    assert cables and all(isinstance(c, RelayedCable) and c.round == 2 for c in cables)
    assert any(c.tx_gbps == 39.5 for c in cables)
    result = MatrixResult("tcp", RungStatus.RAN, ("spark-1", "spark-2", "spark-3", "spark-4"), (tuple(pairs),),
                          tuple(cells), relayed_cables=tuple(cables))  # fmt: skip
    back = matrix_from_json(json.loads(json.dumps(result.to_json())))
    assert back.cells == result.cells and back.relayed_cables == result.relayed_cables
    old = result.to_json()
    del old["relayed_cables"]
    for cell in old["cells"]:
        for key in ("hops", "relays", "shared_with", "ceiling", "ceiling_evidence"):
            del cell[key]
    loaded = matrix_from_json(old)
    assert all(c.hops == 1 and c.relays == () and c.shared_with == () and c.ceiling is None for c in loaded.cells)
    assert loaded.relayed_cables == ()


def test_a_relayed_flow_round_trips_and_an_old_flow_record_loads() -> None:
    _, flows = relayed_round()
    flow = flows[0]
    record = flow.to_json()
    assert record["relays"] == list(flow.relays)
    assert Flow.from_json(Figures(json.loads(json.dumps(record)), "flow")) == flow
    assert flow.reversed().reversed() == flow and flow.reversed().relays == flow.relays[::-1]
    direct = Flow(("a", "x"), ("b", "y"), "10.0.0.1", "10.0.0.2", 100.0)
    assert "relays" not in direct.to_json()  # records of flows over one cable stay as they were
    assert Flow.from_json(Figures(direct.to_json(), "flow")) == direct


def test_the_view_marks_relayed_cells_with_hops_within_120_columns() -> None:
    from rich.console import Console

    data = ring(8)
    cells: list[MatrixCell] = []
    rounds = round_robin(sorted(data.cabling.order))
    for number, pairs in enumerate(rounds, start=1):
        flows = round_flows(data.facts, data.cabling, pairs, bidir=True)
        cells += cells_from_flows(number, pairs, results_of(flows, 30.0), busiest_core={"spark-2": (4, 99.0)})
    result = MatrixResult("tcp", RungStatus.RAN, tuple(sorted(data.cabling.order)),
                          tuple(tuple(r) for r in rounds), tuple(cells))  # fmt: skip
    assert len(cells) == 2 * len(list(itertools.combinations(range(8), 2)))
    lines = relayed_lines(result)
    assert any("4 hops via" in line for line in lines) and any("2 hops via" in line for line in lines)
    console = Console(file=__import__("io").StringIO(), width=120)
    console.print(matrix_view(result))
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "(4)" in shown and "2 hops via spark-" in shown
    assert all(len(line) <= 120 for line in shown.splitlines()), max(shown.splitlines(), key=len)


def test_the_live_view_names_each_relayed_pair_with_its_relays() -> None:
    pairs, flows = relayed_round()
    assert round_label(pairs, flows) == "spark-1<->spark-3 via spark-2, spark-4<->spark-2 via spark-3"
    neighbours = round_robin(sorted(ring(4).cabling.order))[0]
    assert " via " not in round_label(neighbours, round_flows(ring(4).facts, ring(4).cabling, neighbours, True))
