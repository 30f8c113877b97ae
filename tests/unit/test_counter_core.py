"""Which counters count the wire, and rates from two readings: on a real mlx5 `ethtool -S` listing."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirespeed.core.counters import (
    IfaceReading,
    cable_rate,
    cpu_busy,
    delta,
    gbps,
    iface_rate,
    parse_proc_stat,
    phy_shared,
    select_counters,
    wire_source,
)
from wirespeed.core.parsers.ethtool import parse_stats

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "ethtool"
MLX5 = parse_stats((REAL / "ethtool_S_mlx5_xdp_kernel5.15_nonzero_only.txt").read_text())
VETH = {"peer_ifindex": 2, "rx_queue_0_xdp_packets": 0, "rx_queue_0_drops": 0}


def selected(stats: dict[str, int]) -> dict[str, int]:
    return {name: stats[name] for name in select_counters(stats)}


def grown(stats: dict[str, int], **increments: int) -> dict[str, int]:
    return {name: value + increments.get(name, 0) for name, value in stats.items()}


def test_the_wire_the_vport_split_and_the_error_counters_are_chosen_and_the_rest_left() -> None:
    chosen = set(select_counters(MLX5))
    assert {"tx_bytes_phy", "rx_bytes_phy", "tx_packets_phy", "rx_packets_phy"} <= chosen
    assert {"rx_vport_unicast_bytes", "tx_vport_unicast_bytes"} <= chosen
    assert {"rx_discards_phy", "rx_out_of_buffer", "tx_pause_ctrl_phy", "rx_prio0_discards"} <= chosen
    assert not chosen & {"rx_xdp_drop", "rx_cache_reuse", "ch_poll", "rx_prio0_bytes", "rx_64_bytes_phy"}
    assert wire_source(MLX5) == "phy" and wire_source(VETH) == "netdev"
    assert select_counters(VETH) == []


def test_rates_from_the_phy_counters_in_gbps_per_direction() -> None:
    before = IfaceReading(stats=selected(MLX5))
    # 25 GB in one second out, 12.5 GB in: 200 and 100 Gb/s (10^9 bit/s).
    after = IfaceReading(stats=selected(grown(MLX5, tx_bytes_phy=25 * 10**9, rx_bytes_phy=125 * 10**8)))
    rate = iface_rate(before, after, 1.0)
    assert rate.source == "phy"
    assert rate.tx_gbps == pytest.approx(200.0) and rate.rx_gbps == pytest.approx(100.0)
    assert iface_rate(before, after, 2.0).tx_gbps == pytest.approx(100.0)


def test_without_phy_counters_the_kernels_counters_are_used_and_said_so() -> None:
    before = IfaceReading(netdev={"tx_bytes": 0, "rx_bytes": 0})
    after = IfaceReading(netdev={"tx_bytes": 125_000_000, "rx_bytes": 0})
    rate = iface_rate(before, after, 1.0)
    assert (rate.source, rate.tx_gbps, rate.rx_gbps) == ("netdev", 1.0, 0.0)


def test_delta_grows_wraps_near_the_top_and_calls_a_reset_a_reset() -> None:
    assert delta(10, 25) == 15
    assert delta(2**64 - 100, 50) == 150  # a 64-bit counter wrapped
    assert delta(10**12, 5) is None  # reset (driver reload, interface re-created): no spike
    assert delta(2**32 - 10, 20, width=32) == 30
    assert delta(100, 20, width=32) is None
    assert gbps(None, 1.0) is None and gbps(10, 0) is None


def test_a_reset_gives_no_rate_rather_than_a_spike() -> None:
    before = IfaceReading(stats=selected(MLX5))
    after = IfaceReading(stats={**selected(MLX5), "tx_bytes_phy": 1000, "rx_bytes_phy": 1000})
    rate = iface_rate(before, after, 1.0)
    assert rate.tx_gbps is None and rate.rx_gbps is None


def test_a_string_set_that_changes_between_readings_invents_nothing() -> None:
    before = IfaceReading(stats=selected(MLX5))
    with_pfc = {**selected(MLX5), "rx_prio3_pause": 7, "tx_prio3_pause": 2}
    after = IfaceReading(stats=grown(with_pfc, tx_bytes_phy=1000))
    rate = iface_rate(before, after, 1.0)
    assert rate.tx_gbps == pytest.approx(8e-6)
    assert "rx_prio3_pause" not in rate.errors  # new counters have no previous value: no growth claimed
    no_phy = IfaceReading(stats={k: v for k, v in selected(MLX5).items() if not k.endswith("_phy")})
    switched = iface_rate(before, no_phy, 1.0)
    assert switched.tx_gbps is None and switched.rx_gbps is None
    back = iface_rate(no_phy, before, 1.0)
    assert back.tx_gbps is None


def test_error_counters_that_grew_are_reported_with_their_increase() -> None:
    before = IfaceReading(stats=selected(MLX5), netdev={"rx_dropped": 3}, rdma={"out_of_sequence": 10})
    after = IfaceReading(
        stats=selected(grown(MLX5, rx_discards_phy=12)), netdev={"rx_dropped": 3}, rdma={"out_of_sequence": 14}
    )
    assert dict(iface_rate(before, after, 1.0).errors) == {"rx_discards_phy": 12, "rdma:out_of_sequence": 4}


def test_shared_phy_is_recognised_and_counted_once() -> None:
    a = IfaceReading(stats=selected(MLX5))
    b = IfaceReading(stats=selected(grown(MLX5, tx_bytes_phy=4096)))  # read a few microseconds later
    assert phy_shared(a, b) is True
    other = IfaceReading(stats=selected(grown(MLX5, tx_bytes_phy=10**10)))
    assert phy_shared(a, other) is False
    tiny = {"tx_bytes_phy": 100, "rx_bytes_phy": 0, "tx_packets_phy": 1, "rx_packets_phy": 0}
    assert phy_shared(IfaceReading(stats=tiny), IfaceReading(stats=tiny)) is None
    assert phy_shared(IfaceReading(netdev={"tx_bytes": 1}), a) is False
    h0 = iface_rate(a, IfaceReading(stats=selected(grown(MLX5, tx_bytes_phy=10**10))), 1.0)
    h1 = iface_rate(a, IfaceReading(stats=selected(grown(MLX5, tx_bytes_phy=10**10))), 1.0)
    once = cable_rate("port 1", {"h0": h0, "h1": h1}, True, 200.0)
    twice = cable_rate("port 1", {"h0": h0, "h1": h1}, False, 200.0)
    assert once.tx_gbps == pytest.approx(80.0) and twice.tx_gbps == pytest.approx(160.0)
    assert twice.duplex_gbps == pytest.approx(160.0)


def test_a_half_without_a_rate_leaves_the_cable_without_one() -> None:
    h0 = iface_rate(
        IfaceReading(netdev={"tx_bytes": 0, "rx_bytes": 0}), IfaceReading(netdev={"tx_bytes": 8, "rx_bytes": 8}), 1.0
    )
    gone = iface_rate(IfaceReading(), IfaceReading(), 1.0)
    cable = cable_rate("port 0", {"a": h0, "b": gone}, False, None)
    assert cable.tx_gbps is None and cable.duplex_gbps is None  # never a half-sized total


def test_per_function_and_rdma_rates() -> None:
    base = {
        **selected(MLX5),
        "tx_vport_rdma_unicast_bytes": 0,
        "rx_vport_rdma_unicast_bytes": 0,
    }
    before = IfaceReading(stats=base, rdma={"port_xmit_data": 0, "port_rcv_data": 0})
    after = IfaceReading(
        stats=grown(base, tx_vport_rdma_unicast_bytes=10**9, tx_vport_unicast_bytes=25 * 10**7),
        rdma={"port_xmit_data": 25 * 10**7, "port_rcv_data": 0},  # 4-byte words: 10^9 bytes
    )
    rate = iface_rate(before, after, 1.0)
    assert rate.function_tx_gbps == pytest.approx(10.0)  # (10^9 + 2.5 * 10^8) bytes * 8
    assert rate.rdma_tx_gbps == pytest.approx(8.0) and rate.rdma_rx_gbps == 0.0


PROC_STAT_1 = """cpu  200 0 100 700 0 0 0 0 0 0
cpu0 100 0 50 350 0 0 0 0 0 0
cpu1 100 0 50 350 0 0 0 0 0 0
intr 12345 0 0
ctxt 999
"""
PROC_STAT_2 = """cpu  300 0 200 1000 0 0 0 0 0 0
cpu0 190 0 50 360 0 0 0 0 0 0
cpu1 110 0 150 640 0 0 0 0 0 0
intr 12399 0 0
"""


def test_cpu_busy_per_core_from_proc_stat() -> None:
    first, second = parse_proc_stat(PROC_STAT_1), parse_proc_stat(PROC_STAT_2)
    assert len(first) == 2 and first[0][:4] == (100, 0, 50, 350)
    busy = cpu_busy(first, second)
    assert busy[0] == pytest.approx(90.0)  # 90 busy of 100 jiffies
    assert busy[1] == pytest.approx(100 * 110 / 400)
    assert cpu_busy(first, first) == [None, None]
