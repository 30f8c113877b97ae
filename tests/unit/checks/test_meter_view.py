"""The meter: samples of every node into per-cable views with peaks; the layout from discovery's facts."""

from __future__ import annotations

import io
import json

import pytest
from builders import P0H0, P1H0, P1H1, Half, spark, without_rdma
from rich.console import Console

from wirespeed.core.fabric.board import Board
from wirespeed.core.fabric.counters import IfaceReading
from wirespeed.core.fabric.meter import (
    Cable,
    Meter,
    NodeLayout,
    NodeSample,
    layout_from_facts,
    sample_from_json,
    sample_to_json,
)
from wirespeed.ui.dashboard import final_lines, render

LAYOUT = NodeLayout("s1", (Cable("port 1", (P1H0, P1H1), 200.0),))
GB = 125_000_000  # bytes in one second at 1 Gb/s


def phy(tx: int, rx: int) -> IfaceReading:
    return IfaceReading(stats={"tx_bytes_phy": tx, "rx_bytes_phy": rx, "tx_packets_phy": 0, "rx_packets_phy": 0})


def sample(
    t: float, h0: IfaceReading | None, h1: IfaceReading | None, cpu: list[tuple[int, ...]] | None = None
) -> NodeSample:
    ifaces = {name: r for name, r in ((P1H0, h0), (P1H1, h1)) if r is not None}
    return NodeSample("s1", t, ifaces, cpu or [])


def test_a_cable_view_with_its_halves_and_peaks() -> None:
    meter = Meter([LAYOUT])
    base = 10**12
    assert meter.add(sample(0.0, phy(0, 0), phy(base, 0), [(0, 0, 0, 100, 0, 0, 0, 0)])) is None
    view = meter.add(sample(1.0, phy(80 * GB, 10 * GB), phy(base + 90 * GB, 0), [(50, 0, 0, 150, 0, 0, 0, 0)]))
    assert view is not None and view.seconds == 1.0
    [cable] = view.cables
    assert cable.tx_gbps == pytest.approx(170.0) and cable.rx_gbps == pytest.approx(10.0)
    assert cable.duplex_gbps == pytest.approx(180.0) and not cable.shared_phy
    assert cable.halves[P1H0].tx_gbps == pytest.approx(80.0)
    assert view.cpu == (50.0,) and view.busiest_core == (0, 50.0)
    later = meter.add(sample(2.0, phy(90 * GB, 10 * GB), phy(base + 100 * GB, 0)))
    assert later is not None and later.cables[0].tx_gbps == pytest.approx(20.0)
    assert later.peaks["port 1"].tx_gbps == pytest.approx(170.0)  # the peak stays
    assert later.cpu == (50.0,)  # no CPU reading in this sample: the last figures stay
    data = json.loads(json.dumps(later.to_json()))
    assert data["cables"][0]["peak"]["tx_gbps"] == pytest.approx(170.0)
    assert data["cables"][0]["halves"][P1H1]["tx_gbps"] == pytest.approx(10.0)


def test_a_missing_half_shows_as_gone_and_a_reset_makes_no_spike() -> None:
    meter = Meter([LAYOUT])
    meter.add(sample(0.0, phy(0, 0), phy(10**12, 10**12)))
    view = meter.add(sample(1.0, phy(GB, 0), None))
    assert view is not None
    assert view.cables[0].halves[P1H1].source == "gone" and view.cables[0].tx_gbps is None
    again = meter.add(sample(2.0, phy(2 * GB, 0), phy(5, 5)))  # back, with counters reset
    assert again is not None and again.cables[0].halves[P1H1].source == "gone"  # no previous reading yet
    settled = meter.add(sample(3.0, phy(3 * GB, 0), phy(5 + GB, 5)))
    assert settled is not None and settled.cables[0].tx_gbps == pytest.approx(2.0)
    assert max(p.tx_gbps for p in settled.peaks.values()) == pytest.approx(2.0)


def test_shared_phy_is_decided_once_and_counts_the_wire_once() -> None:
    meter = Meter([LAYOUT])
    meter.add(sample(0.0, phy(10**12, 10**12), phy(10**12, 10**12)))
    view = meter.add(sample(1.0, phy(10**12 + 100 * GB, 10**12), phy(10**12 + 100 * GB, 10**12)))
    assert view is not None and view.cables[0].shared_phy and view.cables[0].tx_gbps == pytest.approx(100.0)
    diverged = meter.add(sample(2.0, phy(10**12 + 200 * GB, 10**12), phy(10**12 + 150 * GB, 10**12)))
    assert diverged is not None and diverged.cables[0].shared_phy  # sticky


def test_unknown_nodes_and_old_samples_are_ignored() -> None:
    meter = Meter([LAYOUT])
    assert meter.add(NodeSample("other", 1.0, {}, [])) is None
    meter.add(sample(5.0, phy(0, 0), phy(0, 0)))
    assert meter.add(sample(5.0, phy(1, 1), phy(1, 1))) is None


def test_samples_round_trip_through_json() -> None:
    original = NodeSample(
        "s1", 12.5, {P1H0: IfaceReading({"tx_bytes_phy": 1}, {"rx_dropped": 2}, {"port_xmit_data": 3}, "01:00.0", 1)},
        [(1, 2, 3, 4, 5, 6, 7, 8)], wall=1.7e9, missing=(P1H1,), renamed={"enp1": "enp2"},
    )  # fmt: skip
    assert sample_from_json(json.loads(json.dumps(sample_to_json(original)))) == original
    with pytest.raises(KeyError):
        sample_from_json({"node": "s1"})


def test_layout_from_discovery() -> None:
    layout = layout_from_facts(spark("s1", 10))
    assert layout.cables == (Cable("port 1", (P1H0, P1H1), 200.0),)
    lone = spark("s1", 10, half={P1H0: Half(up=False), P1H1: Half(up=False)})
    assert layout_from_facts(lone).cables == ()
    two = layout_from_facts(spark("s1", 10, cables=2))
    assert [c.label for c in two.cables] == ["port 0", "port 1"] and P0H0 in two.interfaces


def test_the_netdev_fallback_is_named() -> None:
    meter = Meter([layout_from_facts(without_rdma(spark("s1", 10)))])
    veth = IfaceReading(netdev={"tx_bytes": 0, "rx_bytes": 0})
    meter.add(NodeSample("s1", 0.0, {P1H0: veth, P1H1: veth}, []))
    view = meter.add(NodeSample("s1", 1.0, {P1H0: veth, P1H1: veth}, []))
    assert view is not None and view.warnings and P1H0 in view.warnings[0] and "RDMA" in view.warnings[0]


def test_the_dashboard_fits_80_columns_and_shows_everything() -> None:
    """From counters to the screen: the meter's view of a real-shaped sample, drawn by the live view."""
    meter = Meter([LAYOUT])
    meter.add(sample(0.0, phy(0, 0), phy(0, 0), [(0, 0, 0, 100, 0, 0, 0, 0), (0, 0, 0, 100, 0, 0, 0, 0)]))
    errors = IfaceReading(stats={**phy(88 * GB, 85 * GB).stats, "rx_discards_phy": 0})
    meter.add(sample(0.5, IfaceReading(stats={**phy(0, 0).stats, "rx_discards_phy": 0}), phy(0, 0)))
    view = meter.add(sample(1.5, IfaceReading(stats={**errors.stats, "rx_discards_phy": 7}), phy(80 * GB, 80 * GB),
                            [(10, 0, 0, 110, 0, 0, 0, 0), (90, 0, 0, 110, 0, 0, 0, 0)]))  # fmt: skip
    assert view is not None
    board = Board("watch: all_reduce_perf", 0.5, nodes=["s1", "s2"])
    board.add(view)
    board.tail = ("# Avg bus bandwidth : 21.5",)
    board.show_halves = True
    for width, height in ((80, 24), (120, 40)):
        console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
        console.print(render(board.frame(0.0), width, height))
        text = console.export_text()
        for part in ("s1", "port 1", "TX", "RX", "█", "168.0 Gb/s", "PEAK", P1H0, P1H1, "rx_discards_phy +7",
                     "core 1  90%", "s2: waiting", "Avg bus bandwidth", "PHY counters: RDMA included"):  # fmt: skip
            assert part in text, (part, text)
        assert max(len(line) for line in text.splitlines()) <= width
    assert final_lines(board.frame(0.0)) == ["s1: peak TX 168.00 Gb/s  RX 165.00 Gb/s  full duplex 333.00 Gb/s"]
