"""Which cables the meter shows for a node (wirespeed.core.fabric.meter.layout_from_facts), on the synthetic Spark facts
of builders.py. Lives beside builders.py so it imports the way the check tests do."""

from __future__ import annotations

import dataclasses

from builders import P0H0, P0H1, P1H0, P1H1, SPARK, Half, spark, without_rdma

from wirespeed.core.fabric.facts import Unknown
from wirespeed.core.fabric.meter import Cable, Meter, NodeLayout, layout_from_facts


def test_spark_cabled_on_port_1() -> None:
    layout = layout_from_facts(spark("s1", 10))
    assert layout == NodeLayout("s1", (Cable("port 1", (P1H0, P1H1), 200.0),))
    assert layout.interfaces == [P1H0, P1H1]


def test_spark_cabled_on_both_ports() -> None:
    layout = layout_from_facts(spark("s1", 10, cables=2))
    assert layout.cables == (Cable("port 0", (P0H0, P0H1), 200.0), Cable("port 1", (P1H0, P1H1), 200.0))
    assert layout.interfaces == [P0H0, P0H1, P1H0, P1H1]


def test_emulated_spark_without_rdma_keeps_its_ports() -> None:
    # No PCI function behind its halves: each is a link of its own, shares no PHY, and the cable carries both.
    layout = layout_from_facts(without_rdma(spark("s1", 10)))
    assert layout == NodeLayout("s1", (Cable("port 1", (P1H0, P1H1), 400.0),))


def test_emulated_halves_that_report_the_shaped_rate_add_up_for_every_reader() -> None:
    """The testbed's halves report their shaped rate as their link speed: root (who also reads the qdisc) and a
    user who cannot run `tc` see the same cable."""
    rated = {P1H0: Half(speed=1000), P1H1: Half(speed=1000)}
    user = without_rdma(spark("s1", 10, half=rated))
    root = dataclasses.replace(user, shaped_bps={P1H0: 10**9, P1H1: 10**9})
    for facts in (user, root):
        assert facts.line_rate_gbps(P1H0) == 1.0
        assert layout_from_facts(facts).cables == (Cable("port 1", (P1H0, P1H1), 2.0),)


def test_one_half_up_still_shows_the_whole_port() -> None:
    layout = layout_from_facts(spark("s1", 10, half={P1H1: Half(up=False)}))
    assert layout.cables == (Cable("port 1", (P1H0, P1H1), 200.0),)


def test_line_rate_from_the_fastest_known_half() -> None:
    facts = spark("s1", 10, half={P1H0: Half(speed=100000), P1H1: Half(speed=Unknown("no speed"))})
    assert layout_from_facts(facts).cables == (Cable("port 1", (P1H0, P1H1), 100.0),)
    unknown = spark("s1", 10, half={P1H0: Half(speed=Unknown("a")), P1H1: Half(speed=Unknown("b"))})
    assert layout_from_facts(unknown).cables == (Cable("port 1", (P1H0, P1H1), None),)


def test_no_ports_grouped_shows_each_fabric_interface_that_is_up() -> None:
    facts = dataclasses.replace(without_rdma(spark("s1", 10)), ports=())
    layout = layout_from_facts(facts)
    # fabric is sorted by name: the upper-case domain-2 half first
    assert layout.cables == (Cable(P1H1, (P1H1,), 200.0), Cable(P1H0, (P1H0,), 200.0))


def test_node_with_no_cabled_port_shows_nothing() -> None:
    facts = spark("s1", 10, half={name: Half(up=False) for name, _, _ in SPARK})
    assert layout_from_facts(facts) == NodeLayout("s1", ())
    # not even the management interface, which is up
    management = facts.netdev("enP7s7")
    assert management is not None and management.carrier is True


def test_node_without_fabric_shows_every_interface_that_is_up() -> None:
    facts = dataclasses.replace(spark("s1", 10), ports=(), fabric=())
    layout = layout_from_facts(facts)
    assert layout.cables == (
        Cable("enP7s7", ("enP7s7",), 10.0),
        Cable(P1H0, (P1H0,), 200.0),
        Cable(P1H1, (P1H1,), 200.0),
    )
    nothing_up = spark("s1", 10, half={name: Half(up=False) for name, _, _ in SPARK})
    nothing_up = dataclasses.replace(
        nothing_up, ports=(), fabric=(), netdevs=tuple(n for n in nothing_up.netdevs if n.name != "enP7s7")
    )
    assert layout_from_facts(nothing_up) == NodeLayout("s1", ())


def test_meter_takes_the_layouts() -> None:
    meter = Meter([layout_from_facts(spark("s1", 10)), layout_from_facts(spark("s2", 11, cables=2))])
    assert set(meter.layouts) == {"s1", "s2"}
    assert meter.peaks == {"s1": {}, "s2": {}}
    assert [c.label for c in meter.layouts["s2"].cables] == ["port 0", "port 1"]


def test_a_shaping_qdisc_below_the_link_speed_is_the_line_rate() -> None:
    import dataclasses

    from builders import P1H0, P1H1, spark

    from wirespeed.core.fabric.meter import layout_from_facts

    shaped = dataclasses.replace(spark("s1", 10), shaped_bps={P1H0: 10**9, P1H1: 10**9})
    assert shaped.line_rate_gbps(P1H0) == 1.0
    assert layout_from_facts(shaped).cables[0].line_rate_gbps == 2.0  # each half shaped on its own: 1 + 1
    assert layout_from_facts(spark("s1", 10)).cables[0].line_rate_gbps == 200.0  # one PHY, not 200 + 200
    faster = dataclasses.replace(spark("s1", 10), shaped_bps={P1H0: 10**12})
    assert faster.line_rate_gbps(P1H0) == 200.0  # a qdisc above the link speed changes nothing
