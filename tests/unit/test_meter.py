"""The stateful meter (wirespeed.core.fabric.meter): node samples in, per-cable views out, with peaks and the sticky
shared-PHY decision. Every reading is synthetic with known increments, so every rate is exact."""

from __future__ import annotations

import json
from typing import Any

import pytest

from wirespeed.core.fabric.counters import IfaceReading
from wirespeed.core.fabric.meter import (
    NETDEV_WARNING,
    Cable,
    Meter,
    NodeLayout,
    NodeSample,
    NodeView,
    sample_from_json,
    sample_line,
    sample_to_json,
)

A, B = "enp1s0f1np1", "enP2p1s0f1np1"
NODE = "spark-a"
GB = 1_000_000_000  # bytes: 1 GB in 0.5 s is 16 Gb/s
LAYOUT = NodeLayout(NODE, (Cable("port 1", (A, B), 200.0),))


def phy(tx: int, rx: int, **extra: int) -> IfaceReading:
    stats = {"tx_bytes_phy": tx, "rx_bytes_phy": rx, "tx_packets_phy": tx // 4000, "rx_packets_phy": rx // 4000}
    return IfaceReading(stats=stats | extra, pci="0000:01:00.1", speed_mbps=200000)


def netdev(tx: int, rx: int) -> IfaceReading:
    return IfaceReading(netdev={"tx_bytes": tx, "rx_bytes": rx, "tx_packets": 0, "rx_packets": 0})


def halves(t: float, a: IfaceReading | None, b: IfaceReading | None, **kw: Any) -> NodeSample:
    ifaces = {name: r for name, r in ((A, a), (B, b)) if r is not None}
    return NodeSample(NODE, t, ifaces, kw.pop("cpu", []), **kw)


def only(view: NodeView | None) -> NodeView:
    assert view is not None
    return view


# ------------------------------------------------------------------------------------------- rates and peaks


def test_first_sample_has_no_view_second_has_rates() -> None:
    meter = Meter([LAYOUT])
    assert meter.add(halves(100.0, phy(10 * GB, 20 * GB), phy(50 * GB, 1 * GB))) is None
    view = only(meter.add(halves(100.5, phy(15 * GB, 22_500_000_000), phy(51_250_000_000, 1 * GB))))
    assert view.node == NODE
    assert view.seconds == pytest.approx(0.5)
    (cable,) = view.cables
    assert cable.label == "port 1"
    assert cable.line_rate_gbps == 200.0
    assert cable.shared_phy is False  # 10 GB vs 50 GB: two wires
    a, b = cable.halves[A], cable.halves[B]
    assert (a.source, b.source) == ("phy", "phy")
    assert a.tx_gbps == pytest.approx(80.0) and a.rx_gbps == pytest.approx(40.0)
    assert b.tx_gbps == pytest.approx(20.0) and b.rx_gbps == 0.0
    assert cable.tx_gbps == pytest.approx(100.0)
    assert cable.rx_gbps == pytest.approx(40.0)
    assert cable.duplex_gbps == pytest.approx(140.0)
    peak = view.peaks["port 1"]
    assert (peak.tx_gbps, peak.rx_gbps, peak.duplex_gbps) == pytest.approx((100.0, 40.0, 140.0))
    assert view.warnings == ()
    assert view.missing == ()
    assert view.errors() == {}


def test_peaks_are_kept_across_intervals() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(0, 0), phy(100 * GB, 0)))
    meter.add(halves(0.5, phy(5 * GB, 2 * GB), phy(100 * GB, 0)))  # 80 / 32
    view = only(meter.add(halves(1.0, phy(6 * GB, 4_500_000_000), phy(100 * GB, 0))))  # 16 / 40
    (cable,) = view.cables
    assert cable.tx_gbps == pytest.approx(16.0)
    assert cable.rx_gbps == pytest.approx(40.0)
    peak = view.peaks["port 1"]
    assert peak.tx_gbps == pytest.approx(80.0)  # kept from the first interval
    assert peak.rx_gbps == pytest.approx(40.0)  # the newer, higher one
    assert peak.duplex_gbps == pytest.approx(112.0)  # 80 + 32 beat 16 + 40
    assert meter.peaks[NODE]["port 1"] == peak
    # a quiet interval changes nothing
    quiet = only(meter.add(halves(1.5, phy(6 * GB, 4_500_000_000), phy(100 * GB, 0))))
    assert quiet.cables[0].tx_gbps == 0.0
    assert quiet.peaks["port 1"] == peak


def test_a_half_missing_is_gone_and_the_cable_has_no_total() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(0, 0), phy(100 * GB, 0)))
    first = only(meter.add(halves(0.5, phy(5 * GB, 0), phy(100 * GB, 0))))
    view = only(meter.add(halves(1.0, phy(10 * GB, GB), None, missing=(B,))))
    (cable,) = view.cables
    gone = cable.halves[B]
    assert gone.source == "gone"
    assert (gone.tx_gbps, gone.rx_gbps) == (None, None)
    assert cable.halves[A].tx_gbps == pytest.approx(80.0)
    assert (cable.tx_gbps, cable.rx_gbps, cable.duplex_gbps) == (None, None, None)
    assert view.missing == (B,)
    assert view.peaks["port 1"] == first.peaks["port 1"]
    # the interval after it came back is still "gone": the previous sample did not have it
    back = only(meter.add(halves(1.5, phy(15 * GB, GB), phy(100 * GB, 0))))
    assert back.cables[0].halves[B].source == "gone"
    assert back.cables[0].tx_gbps is None
    again = only(meter.add(halves(2.0, phy(20 * GB, GB), phy(100 * GB, 0))))
    assert again.cables[0].tx_gbps == pytest.approx(80.0)


def test_reappearing_with_reset_counters_gives_no_spike() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(900 * GB, 900 * GB), phy(100 * GB, 0)))
    meter.add(halves(0.5, phy(905 * GB, 900 * GB), phy(100 * GB, 0)))
    peak = meter.peaks[NODE]["port 1"]
    # driver reloaded between two samples: the counters start again from (nearly) zero
    reset = only(meter.add(halves(1.0, phy(4096, 8192), phy(100 * GB, 0))))
    a = reset.cables[0].halves[A]
    assert (a.source, a.tx_gbps, a.rx_gbps) == ("phy", None, None)
    assert reset.cables[0].tx_gbps is None
    assert reset.peaks["port 1"] == peak
    # gone for one sample, back with reset counters
    meter.add(halves(1.5, None, phy(100 * GB, 0)))
    meter.add(halves(2.0, phy(1000, 1000), phy(100 * GB, 0)))
    after = only(meter.add(halves(2.5, phy(1000 + GB, 1000), phy(100 * GB, 0))))
    assert after.cables[0].tx_gbps == pytest.approx(16.0)
    assert after.peaks["port 1"] == peak
    assert peak.tx_gbps == pytest.approx(80.0)


def test_a_node_not_in_the_layout_is_ignored() -> None:
    meter = Meter([LAYOUT])
    stranger = NodeSample("elsewhere", 0.0, {A: phy(0, 0)}, [])
    assert meter.add(stranger) is None
    assert meter.add(NodeSample("elsewhere", 1.0, {A: phy(GB, GB)}, [])) is None
    assert set(meter.peaks) == {NODE}
    # and it does not disturb the node that is
    meter.add(halves(0.0, phy(0, 0), phy(100 * GB, 0)))
    view = only(meter.add(halves(0.5, phy(GB, 0), phy(100 * GB, 0))))
    assert view.cables[0].tx_gbps == pytest.approx(16.0)


def test_a_sample_not_after_the_previous_one_has_no_view() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(10.0, phy(0, 0), phy(100 * GB, 0)))
    assert meter.add(halves(10.0, phy(GB, 0), phy(100 * GB, 0))) is None  # same instant
    assert meter.add(halves(9.0, phy(2 * GB, 0), phy(100 * GB, 0))) is None  # the clock went back (reboot)
    # the next interval is measured from the last sample taken
    view = only(meter.add(halves(9.5, phy(3 * GB, 0), phy(100 * GB, 0))))
    assert view.seconds == pytest.approx(0.5)
    assert view.cables[0].tx_gbps == pytest.approx(16.0)


def test_cpu_busy_per_core() -> None:
    meter = Meter([LAYOUT])
    cpu1 = [(100, 0, 50, 800, 50, 0, 0, 0), (200, 0, 100, 700, 0, 0, 0, 0)]
    cpu2 = [(200, 0, 100, 1100, 100, 0, 0, 0), (600, 0, 200, 700, 0, 50, 50, 0)]
    meter.add(halves(0.0, phy(0, 0), phy(100 * GB, 0), cpu=cpu1))
    view = only(meter.add(halves(0.5, phy(0, 0), phy(100 * GB, 0), cpu=cpu2)))
    assert view.cpu == pytest.approx((30.0, 100.0))
    assert view.cpu_average == pytest.approx(65.0)
    assert view.busiest_core is not None
    core, busy = view.busiest_core
    assert core == 1
    assert busy == pytest.approx(100.0)
    # a sample without a CPU reading keeps the last figures
    kept = only(meter.add(halves(1.0, phy(0, 0), phy(100 * GB, 0))))
    assert kept.cpu == view.cpu
    no_cpu = NodeView(NODE, 1.0, (), {}, ())
    assert no_cpu.cpu_average is None and no_cpu.busiest_core is None


def test_errors_that_grew_leave_congestion_out() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(0, 0, rx_discards_phy=5, tx_pause_ctrl_phy=10), phy(100 * GB, 0)))
    view = only(meter.add(halves(0.5, phy(0, 0, rx_discards_phy=17, tx_pause_ctrl_phy=30), phy(100 * GB, 0))))
    assert view.cables[0].halves[A].errors == {"rx_discards_phy": 12, "tx_pause_ctrl_phy": 20}
    assert view.errors() == {A: {"rx_discards_phy": 12}}


def test_pfc_pause_is_congestion_not_an_error() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(0, 0, tx_prio3_pause=10), phy(100 * GB, 0)))
    view = only(meter.add(halves(0.5, phy(0, 0, tx_prio3_pause=30), phy(100 * GB, 0))))
    assert view.cables[0].halves[A].errors == {"tx_prio3_pause": 20}
    assert view.errors() == {}


# ---------------------------------------------------------------------------------------------- shared PHY


def test_shared_phy_counts_the_wire_once_with_the_split_per_function() -> None:
    def both(t: float, wire_tx: int, a_tx: int, b_tx: int) -> NodeSample:
        def half(own: int) -> IfaceReading:
            vport = {
                "tx_vport_unicast_bytes": 0,
                "rx_vport_unicast_bytes": 0,
                "tx_vport_rdma_unicast_bytes": own,
                "rx_vport_rdma_unicast_bytes": 0,
            }
            return phy(wire_tx, 10 * GB, **vport)

        return halves(t, half(a_tx), half(b_tx))

    meter = Meter([LAYOUT])
    meter.add(both(0.0, 40 * GB, 10 * GB, 30 * GB))
    view = only(meter.add(both(0.5, 45 * GB, 13 * GB, 32 * GB)))
    (cable,) = view.cables
    assert cable.shared_phy is True
    assert cable.tx_gbps == pytest.approx(80.0)  # not 160: one wire
    assert cable.rx_gbps == 0.0
    assert cable.halves[A].function_tx_gbps == pytest.approx(48.0)
    assert cable.halves[B].function_tx_gbps == pytest.approx(32.0)


def test_shared_phy_decision_is_sticky() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(10 * GB, 10 * GB), phy(10 * GB, 10 * GB)))
    first = only(meter.add(halves(0.5, phy(15 * GB, 10 * GB), phy(15 * GB, 10 * GB))))
    assert first.cables[0].shared_phy is True
    assert first.cables[0].tx_gbps == pytest.approx(80.0)
    # later the two reads drift apart (one half read much later than the other): still one wire
    later = only(meter.add(halves(1.0, phy(20 * GB, 10 * GB), phy(15 * GB, 10 * GB))))
    assert later.cables[0].shared_phy is True
    assert later.cables[0].tx_gbps == pytest.approx(80.0)  # the larger of 80 and 0, not the sum


def test_distinct_decision_is_sticky_too() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(10 * GB, 0), phy(50 * GB, 0)))
    assert only(meter.add(halves(0.5, phy(10 * GB, 0), phy(50 * GB, 0)))).cables[0].shared_phy is False
    # B's counters now happen to read what A's do: the decision stands, the halves add up
    view = only(meter.add(halves(1.0, phy(15 * GB, 0), phy(15 * GB, 0))))
    assert view.cables[0].shared_phy is False


def test_shared_phy_waits_for_enough_bytes() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(1000, 1000), phy(1000, 1000)))
    tiny = only(meter.add(halves(0.5, phy(2000, 2000), phy(2000, 2000))))
    assert tiny.cables[0].shared_phy is False  # undecided reads as not shared
    assert tiny.cables[0].tx_gbps == pytest.approx(2 * 1000 * 8 / 0.5 / 1e9)
    decided = only(meter.add(halves(1.0, phy(GB, GB), phy(GB, GB))))
    assert decided.cables[0].shared_phy is True
    assert decided.cables[0].tx_gbps == pytest.approx((GB - 2000) * 8 / 0.5 / 1e9)


def test_shared_phy_is_not_decided_while_a_half_lacks_phy_counters() -> None:
    meter = Meter([LAYOUT])
    glitch = IfaceReading(stats={"rx_discards_phy": 0}, netdev={"tx_bytes": 0, "rx_bytes": 0})
    meter.add(halves(0.0, phy(10 * GB, 10 * GB), phy(10 * GB, 10 * GB)))
    meter.add(halves(0.5, phy(15 * GB, 10 * GB), glitch))  # B's string set changed under the sampler
    meter.add(halves(1.0, phy(20 * GB, 10 * GB), phy(20 * GB, 10 * GB)))
    view = only(meter.add(halves(1.5, phy(25 * GB, 10 * GB), phy(25 * GB, 10 * GB))))
    assert view.cables[0].shared_phy is True
    assert view.cables[0].tx_gbps == pytest.approx(80.0)


# ----------------------------------------------------------------------------------------------- warnings


def test_netdev_warning_names_the_interface() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(0, 0), netdev(0, 0)))
    view = only(meter.add(halves(0.5, phy(GB, 0), netdev(GB, 0))))
    assert view.warnings == (NETDEV_WARNING.format(names=B),)
    assert view.warnings == (f"no PHY counters on {B}: kernel netdev counters used, RDMA traffic is not in them",)
    assert view.cables[0].halves[B].source == "netdev"
    assert view.cables[0].halves[B].tx_gbps == pytest.approx(16.0)
    assert view.cables[0].tx_gbps == pytest.approx(32.0)


def test_netdev_warning_names_every_such_interface_and_renames_are_noted() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, netdev(0, 0), netdev(0, 0)))
    view = only(meter.add(halves(0.5, netdev(0, 0), netdev(0, 0), renamed={"enp1s0f1np1": "eth7"})))
    assert view.warnings == (
        f"no PHY counters on {A}, {B}: kernel netdev counters used, RDMA traffic is not in them",
        "enp1s0f1np1 is now eth7",
    )


def test_no_warning_with_phy_counters() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(0, 0), phy(100 * GB, 0)))
    assert only(meter.add(halves(0.5, phy(0, 0), phy(100 * GB, 0)))).warnings == ()


# ------------------------------------------------------------------------------------------------------ json


def test_sample_json_round_trip() -> None:
    original = NodeSample(
        NODE,
        1234.5,
        {
            A: IfaceReading(
                stats={"tx_bytes_phy": 1 << 62, "rx_discards_phy": 3},
                netdev={"tx_bytes": 5},
                rdma={"port_xmit_data": 7},
                pci="0000:01:00.1",
                speed_mbps=200000,
            ),
            B: IfaceReading(),
        },
        [(1, 2, 3, 4, 5, 6, 7, 8), (9, 10, 11, 12, 13, 14, 15, 16)],
        wall=1_700_000_000.25,
        missing=("enp1s0f0np0",),
        renamed={"enp1s0f0np0": "eth9"},
    )
    data = sample_to_json(original)
    line = json.dumps(data)
    assert sample_from_json(json.loads(line)) == original
    assert sample_from_json(data) == original
    assert data["ifaces"][A]["stats"]["tx_bytes_phy"] == 1 << 62
    assert data["cpu"][1] == [9, 10, 11, 12, 13, 14, 15, 16]
    # the record keeps the node's own line (extra keys from a newer agent included); a sample made here is encoded
    newer = json.dumps({**data, "from_a_newer_agent": 1}, separators=(",", ":"))
    received = sample_from_json(json.loads(newer), newer)
    assert received == original and sample_line(received) == newer
    assert sample_from_json(json.loads(sample_line(original))) == original


def test_sample_from_json_minimal_and_bad() -> None:
    got = sample_from_json({"node": "n", "t": 1, "ifaces": {A: {}}})
    assert got == NodeSample("n", 1.0, {A: IfaceReading()}, [], None, (), {})
    assert isinstance(got.t, float)
    with pytest.raises(KeyError):
        sample_from_json({"node": "n", "t": 1})
    with pytest.raises(ValueError):
        sample_from_json({"node": "n", "t": "soon", "ifaces": {}})


def test_counters_from_a_line_are_checked_without_copying() -> None:
    netdev_counters = {"tx_bytes": 1, "rx_bytes": 2}
    got = sample_from_json({"node": "n", "t": 1, "ifaces": {A: {"netdev": netdev_counters}}})
    assert got.ifaces[A].netdev is netdev_counters  # all ints, as the agent writes them: kept as decoded
    converted = sample_from_json({"node": "n", "t": 1, "ifaces": {A: {"netdev": {"tx_bytes": "7", "rx_bytes": 2.0}}}})
    assert converted.ifaces[A].netdev == {"tx_bytes": 7, "rx_bytes": 2}
    assert all(type(v) is int for v in converted.ifaces[A].netdev.values())
    for bad in ({"tx_bytes": "many"}, {"tx_bytes": None}, [1, 2], "tx_bytes"):
        with pytest.raises((ValueError, TypeError)):
            sample_from_json({"node": "n", "t": 1, "ifaces": {A: {"netdev": bad}}})
    for shape in ({"node": "n", "t": 1, "ifaces": [A]}, {"node": "n", "t": 1, "ifaces": {A: [1]}}, [1]):
        with pytest.raises(TypeError):
            sample_from_json(shape)  # type: ignore[arg-type]


def test_view_to_json_numbers_with_units_in_the_keys() -> None:
    meter = Meter([LAYOUT])
    cpu1 = [(100, 0, 50, 800, 50, 0, 0, 0)]
    cpu2 = [(200, 0, 100, 1100, 100, 0, 0, 0)]
    meter.add(halves(0.0, phy(0, 0, rx_discards_phy=1), phy(100 * GB, 0), cpu=cpu1))
    view = only(meter.add(halves(0.5, phy(5 * GB, GB, rx_discards_phy=4), None, cpu=cpu2, missing=(B,))))
    data = view.to_json()
    assert json.loads(json.dumps(data)) == data
    assert data["node"] == NODE
    assert data["seconds"] == 0.5
    assert data["cpu_busy_percent"] == [30.0]
    assert data["missing"] == [B]
    assert data["warnings"] == []
    (cable,) = data["cables"]
    assert cable["label"] == "port 1"
    assert cable["line_rate_gbps"] == 200.0
    assert cable["shared_phy"] is False
    assert (cable["tx_gbps"], cable["rx_gbps"], cable["duplex_gbps"]) == (None, None, None)
    assert cable["peak"] == {"tx_gbps": 0.0, "rx_gbps": 0.0, "duplex_gbps": 0.0}
    a = cable["halves"][A]
    assert a["source"] == "phy"
    assert a["tx_gbps"] == 80.0 and isinstance(a["tx_gbps"], float)
    assert a["rx_gbps"] == 16.0
    assert a["errors"] == {"rx_discards_phy": 3}
    assert cable["halves"][B] == {
        "source": "gone",
        "tx_gbps": None,
        "rx_gbps": None,
        "function_tx_gbps": None,
        "function_rx_gbps": None,
        "rdma_tx_gbps": None,
        "rdma_rx_gbps": None,
        "errors": {},
    }

    def walk(node: object, key: str = "") -> None:
        """Every number is a number (not a string), and every rate or time says its unit in its key."""
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str):
            assert key in {"node", "label", "source", "warnings", "missing"}, (key, node)
        elif isinstance(node, float):
            assert key.endswith(("_gbps", "_percent", "seconds")), key

    walk(data)


def test_view_to_json_rounds_rates() -> None:
    meter = Meter([LAYOUT])
    meter.add(halves(0.0, phy(0, 0), phy(100 * GB, 0)))
    view = only(meter.add(halves(0.3, phy(1, 0), phy(100 * GB, 0))))
    half = view.to_json()["cables"][0]["halves"][A]
    assert half["tx_gbps"] == round(8 / 0.3 / 1e9, 6) == 0.0
    assert isinstance(half["tx_gbps"], float)


def test_a_peak_is_kept_as_is_when_the_interval_is_below_it() -> None:
    from wirespeed.core.fabric.counters import CableRate
    from wirespeed.core.fabric.meter import Peak

    peak = Peak(5.0, 5.0, 10.0)
    assert peak.update(CableRate("p", {}, False, None, 1.0, None)) is peak
    assert peak.update(CableRate("p", {}, False, None, 6.0, 1.0)) == Peak(6.0, 5.0, 10.0)
