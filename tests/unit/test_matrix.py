"""The all-pairs matrix: the round-robin schedule (every pair once, disjoint pairs per round, N-1 rounds), cells per
direction from flows in Gb/s, and outliers against the median (cells and halves) and the line rate."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wirespeed.core.records.matrix import (
    HalfFlow,
    MatrixCell,
    MatrixResult,
    cells_from_flows,
    find_outliers,
    half_flows,
    matrix_from_json,
    round_robin,
)
from wirespeed.core.records.results import Direction, Flow, FlowResult, RungStatus

HALVES = ("enp1s0f1np1", "enP2p1s0f1np1")


@given(st.integers(min_value=2, max_value=40))
def test_every_pair_exactly_once_in_disjoint_rounds(n: int) -> None:
    nodes = [f"n{i}" for i in range(n)]
    rounds = round_robin(nodes)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = [frozenset(p) for r in rounds for p in r]
    assert sorted(map(sorted, seen)) == sorted(map(sorted, map(frozenset, itertools.combinations(nodes, 2))))
    for pairs in rounds:
        busy = [node for pair in pairs for node in pair]
        assert len(busy) == len(set(busy))  # no node in two pairs of one round
        assert len(pairs) == n // 2


def test_six_nodes_fifteen_pairs_in_five_rounds() -> None:
    rounds = round_robin(["a", "b", "c", "d", "e", "f"])
    assert [len(r) for r in rounds] == [3, 3, 3, 3, 3]
    assert rounds[0] == [("a", "f"), ("b", "e"), ("c", "d")]


def test_fewer_than_two_nodes_and_duplicates() -> None:
    assert round_robin([]) == [] and round_robin(["a"]) == []
    with pytest.raises(ValueError, match="unique"):
        round_robin(["a", "a"])


def flow(src: str, dst: str, half: str, limit: float = 1.0) -> Flow:
    return Flow((src, half), (dst, half), "198.19.0.1", "198.19.0.2", limit, cable="p1")


def result(src: str, dst: str, half: str, gbps: float | None, direction: Direction = Direction.FORWARD) -> FlowResult:
    return FlowResult(flow(src, dst, half), direction, gbps, None if gbps is not None else "iperf3: refused")


def full_mesh(nodes: list[str], slow: tuple[str, str] | None = None, rate: float = 0.95) -> list[FlowResult]:
    """Both directions of every pair on both halves; `slow` (node, half) sends at a fifth of the rate."""
    out = []
    for a, b in itertools.permutations(nodes, 2):
        for half in HALVES:
            out.append(result(a, b, half, rate / 5 if slow == (a, half) else rate))
    return out


def test_cells_sum_the_halves_per_direction_with_wire_and_expected() -> None:
    back = Direction.REVERSE
    flows = [result("a", "b", HALVES[0], 0.9), result("a", "b", HALVES[1], 0.8),
             result("b", "a", HALVES[0], 0.7, back), result("b", "a", HALVES[1], 0.6, back)]  # fmt: skip
    wire = {("a", HALVES[0]): 0.95, ("a", HALVES[1]): 0.85, ("b", HALVES[0]): 0.75}
    cells = {(c.source, c.target): c for c in cells_from_flows(2, [("a", "b")], flows, wire)}
    ab, ba = cells[("a", "b")], cells[("b", "a")]
    assert ab.round == 2 and ab.tool_gbps == pytest.approx(1.7) and ab.expected_gbps == 2.0
    assert ab.wire_gbps == pytest.approx(1.8) and ab.halves == {HALVES[0]: 0.9, HALVES[1]: 0.8}
    assert ba.tool_gbps == pytest.approx(1.3) and ba.wire_gbps is None  # one half's wire figure is missing


def test_a_failed_half_leaves_the_cell_without_a_figure_and_says_why() -> None:
    flows = [result("a", "b", HALVES[0], 0.9), result("a", "b", HALVES[1], None)]
    [cell] = cells_from_flows(1, [("a", "b")], flows)
    assert cell.tool_gbps is None and cell.error == "iperf3: refused"


def cells_and_flows(nodes: list[str], slow: tuple[str, str] | None) -> tuple[list[MatrixCell], list[HalfFlow]]:
    flows = full_mesh(nodes, slow)
    pairs = list(itertools.combinations(nodes, 2))
    return cells_from_flows(1, pairs, flows), half_flows(flows)


def test_a_healthy_mesh_has_no_outlier() -> None:
    assert find_outliers(*cells_and_flows(list("abcdef"), None)) == []


def test_a_degraded_half_is_flagged_by_node_and_interface() -> None:
    outliers = find_outliers(*cells_and_flows(list("abcdef"), ("c", HALVES[1])))
    halves = [o for o in outliers if o.kind == "half"]
    assert [(o.node, o.subject) for o in halves] == [("c", f"{HALVES[1]} sends")]
    assert halves[0].gbps == pytest.approx(0.19) and halves[0].reference_gbps == pytest.approx(0.95)
    assert "a degraded half, cable or port" in halves[0].text
    cells = {(o.node, o.subject) for o in outliers if o.kind == "cell"}
    assert cells == {("c", t) for t in "abdef"}  # every pair c sends in: 0.95 + 0.19 of 1.9


def test_cells_below_half_the_line_rate_are_flagged_unless_all_are() -> None:
    nodes = list("abcd")
    flows = full_mesh(nodes, rate=0.3)  # every flow at 0.3 of a 1 Gb/s half: the ceiling is not a pair
    pairs = list(itertools.combinations(nodes, 2))
    assert [o for o in find_outliers(cells_from_flows(1, pairs, flows), []) if o.kind == "expected"] == []
    flows = [r if r.flow.source[0] != "a" or r.flow.target[0] != "b" else result("a", "b", r.flow.source[1], 0.3)
             for r in full_mesh(nodes)]  # fmt: skip
    found = [o for o in find_outliers(cells_from_flows(1, pairs, flows), []) if o.kind == "expected"]
    assert [(o.node, o.subject, o.reference_gbps) for o in found] == [("a", "b", 2.0)]


def test_json_round_trip_keeps_units_and_outliers() -> None:
    nodes = list("abcd")
    cells, flows = cells_and_flows(nodes, ("b", HALVES[0]))
    made = MatrixResult("tcp", RungStatus.RAN, tuple(nodes), tuple(tuple(r) for r in round_robin(nodes)),
                        tuple(cells), tuple(find_outliers(cells, flows)), (5.5, 5.4, 5.6), 5.0,
                        flows=tuple(flows))  # fmt: skip
    data = json.loads(json.dumps(made.to_json()))
    assert data["units"] == "Gb/s (10^9 bit/s) per direction" and data["pairs"] == 6
    assert data["wall_seconds"] == pytest.approx(16.5)
    assert data["kind"] == "matrix" and data["schema_version"] == 2 and data["status"] == "ran"
    assert len(data["flows"]) == len(flows) == 24
    assert matrix_from_json(data) == made


def test_a_matrix_file_of_the_wrong_shape_is_one_line_naming_the_field() -> None:
    nodes = list("ab")
    cells, flows = cells_and_flows(nodes, None)
    made = MatrixResult("tcp", RungStatus.RAN, tuple(nodes), tuple(tuple(r) for r in round_robin(nodes)),
                        tuple(cells), flows=tuple(flows))  # fmt: skip
    data = made.to_json()
    for key, value, said in (("status", "great", "status: 'great' is not one of"),
                             ("cells", 3, "cells: expected a list"),
                             ("round_seconds", [float("nan")], "not a finite number")):  # fmt: skip
        with pytest.raises(ValueError, match=r"^matrix-tcp\.json: ") as caught:
            matrix_from_json({**data, key: value}, "matrix-tcp.json")
        assert said in str(caught.value) and "\n" not in str(caught.value)
