"""The ladder's flows from discovery, and the ceiling each rung is given, with its evidence."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from builders import P0H0, P0H1, P1H0, P1H1, cluster, plan_address, spark

from wirespeed.core.ladder import diagnose, first_pair, flows_between
from wirespeed.core.records.results import Direction, Flow, FlowResult, RungResult, RungStatus, WireFigures
from wirespeed.core.records.run import takeaway
from wirespeed.engine.discover import discover_snapshots
from wirespeed.ui.takeaway import COLUMNS, cells


def two(cables: int = 2, **changes: object):  # type: ignore[no-untyped-def]
    return cluster(spark("s1", 10, cables=cables, **changes), spark("s2", 11, cables=cables, **changes))


def flow(iface: str, line: float | None = 1.0) -> Flow:
    return Flow(("s1", iface), ("s2", iface), "a", "b", line)


def ran(*rates: tuple[str, float], wire: WireFigures | None = None) -> RungResult:
    flows = tuple(FlowResult(flow(iface), Direction.FORWARD, rate) for iface, rate in rates)
    return RungResult("tcp-halves", RungStatus.RAN, flows=flows, wire=wire or WireFigures())


def test_flows_follow_the_links_one_per_half_with_addresses_and_line_rates() -> None:
    data = two()
    assert first_pair(data.cabling) == ("s1", "s2")
    flows = flows_between(data.facts, data.cabling, "s1", "s2")
    assert [f.source for f in flows] == [("s1", i) for i in (P0H0, P0H1, P1H0, P1H1)]
    assert flows[2].target == ("s2", P1H0) and flows[2].target_address == plan_address(P1H0, 11).split("/")[0]
    assert {f.line_rate_gbps for f in flows} == {200.0}
    shaped = cluster(*(dataclasses.replace(f, shaped_bps={P1H0: 10**9}) for f in data.facts.values()))
    assert flows_between(shaped.facts, shaped.cabling, "s1", "s2")[2].line_rate_gbps == 1.0


def test_every_half_at_its_line_rate_is_the_wire_and_idle_halves_make_it_half_port() -> None:
    full = diagnose(ran((P0H0, 0.97), (P0H1, 0.96), (P1H0, 0.98), (P1H1, 0.97)), halves_available=4)
    assert full.name == "wire" and "3.88 Gb/s of 4 Gb/s" in full.evidence[0]
    one = diagnose(ran((P1H0, 0.99)), single_flow=True, halves_available=4)
    assert one.name == "half-port" and "1 of 4 cabled halves" in one.evidence[0]


def test_a_saturated_core_below_the_wire_is_the_cpu() -> None:
    busy = WireFigures(busiest_core={"s1": (3, 99.0), "s2": (1, 40.0)})
    ceiling = diagnose(ran((P1H0, 0.6), (P1H1, 0.58), wire=busy), halves_available=2)
    assert ceiling.name == "cpu" and "s1 core 3 at 99%" in ceiling.evidence[0]


def test_a_wire_that_carried_more_than_the_test_is_contention_not_cpu() -> None:
    """Two benches at once: each got half the link, a core ran hot, and the wire was full. Not the CPU's fault."""
    shared = WireFigures(tx_gbps={("s1", P1H0): 0.99, ("s1", P1H1): 0.51}, busiest_core={"s1": (0, 100.0)})
    ceiling = diagnose(ran((P1H0, 0.49), (P1H1, 0.50), wire=shared), halves_available=2)
    assert ceiling.name == "contention"
    assert ceiling.evidence == (
        f"s1 {P1H0}: the test sent 0.49 Gb/s while the wire carried 0.99 Gb/s: 0.50 Gb/s of another flow shares "
        "the link",
    )  # the other half carried what its test sent: not named


def test_a_wire_a_little_above_the_test_is_headers_not_contention() -> None:
    headers = WireFigures(tx_gbps={("s1", P1H0): 0.995}, busiest_core={"s1": (0, 99.0)})
    assert diagnose(ran((P1H0, 0.97), (P1H1, 0.6), wire=headers), halves_available=2).name != "contention"
    idle = WireFigures(tx_gbps={("s1", P1H0): 0.03})  # a nearly idle half: noise, far below the minimum
    assert diagnose(ran((P1H0, 0.01), wire=idle), single_flow=True).name == "single-flow"
    back = RungResult("tcp-single", RungStatus.RAN, flows=(FlowResult(flow(P1H0), Direction.REVERSE, 0.5),),
                      wire=WireFigures(tx_gbps={("s2", P1H0): 0.98}))  # fmt: skip
    assert diagnose(back).name == "contention"  # a reverse flow is sent from the target's half


def test_a_half_far_below_its_twin_is_degraded_and_named() -> None:
    ceiling = diagnose(ran((P1H0, 0.97), (P1H1, 0.3)), halves_available=2)
    assert ceiling.name == "degraded" and f"s1 {P1H1} (0.30 Gb/s)" in ceiling.evidence[0]


def test_growing_error_counters_are_loss() -> None:
    wire = WireFigures(errors={("s2", P1H0): {"rx_discards_phy": 40}})
    ceiling = diagnose(ran((P1H0, 0.97), wire=wire), halves_available=2)
    assert ceiling.name == "loss" and "rx_discards_phy +40" in ceiling.evidence[0]


def test_one_stream_below_the_line_with_idle_cores_is_single_flow() -> None:
    ceiling = diagnose(ran((P1H0, 0.5)), single_flow=True, halves_available=2)
    assert ceiling.name == "single-flow"
    assert diagnose(RungResult("tcp-single", RungStatus.RAN)).name == "unknown"


def test_the_takeaway_table_has_a_line_per_rung() -> None:
    result = dataclasses.replace(ran((P1H0, 0.99)), ceiling=diagnose(ran((P1H0, 0.99)), halves_available=1))
    skipped = RungResult("rdma-bw", RungStatus.SKIPPED, "no RDMA devices on the nodes")
    rows = takeaway([result, skipped])
    assert rows[0].forward_gbps == 0.99 and rows[0].full_duplex_gbps is None and rows[0].ceiling == "wire"
    text = [dict(zip(COLUMNS, cells(row), strict=True)) for row in rows]
    assert text[0]["result"] == "0.99 Gb/s" and text[0]["ceiling"] == "wire"
    assert rows[1].status is RungStatus.SKIPPED and rows[1].forward_gbps is None and rows[1].ceiling is None
    assert text[1] == {
        "rung": "rdma-bw",
        "result": "-",
        "full duplex": "-",
        "wire peak TX / TX+RX": "-",
        "busiest core": "-",
        "ceiling": "skipped",
        "why": "no RDMA devices on the nodes",
    }
    assert result.to_json()["forward_gbps"] == 0.99


# --- Spark halves: each fed by PCIe Gen5 x4 (126 Gb/s encoded, ~108 for payload) behind a 200G port -------------
SPARKS = Path(__file__).parent.parent.parent / "fixtures" / "snapshots" / "spark-two-cables"


def spark_flows() -> list[Flow]:
    found = discover_snapshots([SPARKS])
    return flows_between(found.facts, found.cabling, "spark-1", "spark-2")


def spark_ran(flows: list[Flow], rate: float) -> RungResult:
    return RungResult("rdma-bw", RungStatus.RAN, flows=tuple(FlowResult(f, Direction.FORWARD, rate) for f in flows))


def test_spark_halves_know_their_pcie_cap_and_share_the_ports_cable() -> None:
    flows = spark_flows()
    assert len(flows) == 4
    assert {f.line_rate_gbps for f in flows} == {200.0}
    assert {round(f.pcie_gbps or 0, 1) for f in flows} == {round(32 * 4 * 128 / 130 * 0.86, 1)}  # 108.4
    assert all(f.pcie_bound and f.limit_gbps == f.pcie_gbps for f in flows)
    assert {f.cable_rate_gbps for f in flows} == {200.0}
    assert len({f.cable for f in flows}) == 2


def test_spark_every_half_at_its_pcie_cap_fills_both_cables_the_wire() -> None:
    ceiling = diagnose(spark_ran(spark_flows(), 99.0), halves_available=4)
    assert ceiling.name == "wire"
    assert "396.00 Gb/s of 400 Gb/s on 2 cable(s)" in ceiling.evidence[0] and "PCIe cap" in ceiling.evidence[0]


def test_spark_one_half_at_its_pcie_cap_is_half_port_not_wire() -> None:
    ceiling = diagnose(spark_ran(spark_flows()[:1], 100.0), single_flow=True, halves_available=4)
    assert ceiling.name == "half-port"
    assert "100.00 Gb/s of 200 Gb/s on 1 cable(s)" in ceiling.evidence[0]
    assert "a port needs both halves" in ceiling.evidence[0]


def test_spark_one_full_cable_of_two_leaves_halves_idle() -> None:
    ceiling = diagnose(spark_ran(spark_flows()[:2], 99.0), halves_available=4)
    assert ceiling.name == "half-port" and "on 2 of 4 cabled halves: the rest idle" in ceiling.evidence[0]


def test_spark_tcp_below_the_pcie_cap_with_a_hot_core_is_the_cpu() -> None:
    busy = WireFigures(busiest_core={"spark-1": (5, 100.0)})
    result = dataclasses.replace(spark_ran(spark_flows(), 44.0), wire=busy)
    assert diagnose(result, halves_available=4).name == "cpu"


def test_checks_at_defaults_name_the_defaults_ceiling_with_the_cpu_as_corroboration() -> None:
    busy = WireFigures(busiest_core={"s1": (3, 97.0)})
    evidence = ["mtu.host: s1 enp1s0f0np0 MTU 1500 (fabric wants 9000)"]
    ceiling = diagnose(ran((P1H0, 0.4), (P1H1, 0.41), wire=busy), halves_available=2, defaults=evidence)
    assert ceiling.name == "defaults"
    assert ceiling.evidence == (evidence[0], "and the CPU ran hot: s1 core 3 at 97%")
    at_wire = diagnose(ran((P1H0, 0.97), (P1H1, 0.96)), halves_available=2, defaults=evidence)
    assert at_wire.name == "wire"  # defaults that did not hold the rung back are not its ceiling


def test_small_buffers_are_the_ceiling_only_while_no_core_is_saturated() -> None:
    buffers = ["sysctl.tcp: TCP buffers or backlog below the 200G tuning on s1"]
    cool = diagnose(ran((P1H0, 0.4), (P1H1, 0.41)), halves_available=2, defaults=buffers)
    assert cool.name == "defaults" and cool.evidence == tuple(buffers)
    busy = WireFigures(busiest_core={"s2": (0, 100.0)})
    hot = diagnose(ran((P1H0, 0.4), (P1H1, 0.41), wire=busy), halves_available=2, defaults=buffers)
    assert hot.name == "cpu" and "s2 core 0 at 100%" in hot.evidence[0]
