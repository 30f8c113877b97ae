"""NIC counter selection and rates (wirespeed.core.fabric.counters), on a real mlx5 `ethtool -S` listing and small
synthetic readings whose increments are known, so every rate below is determined by its inputs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from wirespeed.core.fabric.counters import (
    NEAR_TOP,
    PHY,
    IfaceRate,
    IfaceReading,
    cable_rate,
    cores_json,
    cpu_busy,
    delta,
    gbps,
    iface_rate,
    is_error_counter,
    parse_proc_stat,
    phy_shared,
    select_counters,
    wire_source,
)
from wirespeed.core.parsers.ethtool import parse_stats

REAL = (
    Path(__file__).resolve().parents[1] / "fixtures" / "real" / "ethtool" / "ethtool_S_mlx5_xdp_kernel5.15_nonzero_only"
)
GIB = 1 << 30


def real_stats() -> dict[str, int]:
    return parse_stats(Path(f"{REAL}.txt").read_text())


def selected_real() -> dict[str, int]:
    stats = real_stats()
    return {name: stats[name] for name in select_counters(stats)}


def grown(stats: Mapping[str, int], **increments: int) -> dict[str, int]:
    """`stats` with some counters grown by known amounts."""
    out = dict(stats)
    for name, amount in increments.items():
        out[name] = out.get(name, 0) + amount
    return out


def phy_reading(tx: int, rx: int, **extra: int) -> IfaceReading:
    return IfaceReading(
        stats={"tx_bytes_phy": tx, "rx_bytes_phy": rx, "tx_packets_phy": tx // 1000, "rx_packets_phy": rx // 1000}
        | extra
    )


def rate(tx: float | None, rx: float | None, source: str = "phy") -> IfaceRate:
    return IfaceRate(source, tx, rx)


# ------------------------------------------------------------------------------------------------- selection


def test_fixture_is_the_listing_the_sidecar_describes() -> None:
    stats = real_stats()
    expect = json.loads(Path(f"{REAL}.json").read_text())["expect"]
    assert len(stats) == expect["n_counters"] == 101
    assert stats["tx_bytes_phy"] == expect["tx_bytes_phy"] == 357657403514


def test_selection_on_the_real_mlx5_listing() -> None:
    chosen = select_counters(real_stats())
    assert set(chosen) == {
        # the wire
        "tx_bytes_phy",
        "rx_bytes_phy",
        "tx_packets_phy",
        "rx_packets_phy",
        # the per-function split
        "rx_vport_unicast_bytes",
        "tx_vport_unicast_bytes",
        # trouble
        "rx_out_of_buffer",
        "tx_pause_ctrl_phy",
        "rx_discards_phy",
        "tx_discards_phy",
        "tx_errors_phy",
        "rx_undersize_pkts_phy",
        "rx_fragments_phy",
        "rx_jabbers_phy",
        "rx_prio0_discards",
        "tx_global_pause",
    }
    assert len(chosen) == len(set(chosen)) == 16
    for noise in ("rx_xdp_drop", "rx_cache_reuse", "ch_poll", "ch0_poll", "rx0_xdp_drop", "rx0_cache_reuse"):
        assert noise not in chosen
    # netdev-style and per-priority traffic counters are not the wire either
    for other in ("rx_bytes", "tx_packets", "rx_prio0_bytes", "tx_prio0_bytes", "rx_64_bytes_phy"):
        assert other not in chosen


def test_selection_keeps_the_listing_order() -> None:
    names = list(real_stats())
    chosen = select_counters(names)
    assert chosen == sorted(chosen, key=names.index)


def test_error_counter_names() -> None:
    for name in ("rx_discards_phy", "rx_out_of_buffer", "rx_prio0_discards", "rx_prio7_buf_discard", "tx_prio3_pause"):
        assert is_error_counter(name), name
    for name in ("rx_prio0_bytes", "rx_prio10_discards", "rx_prio0_discards_extra", "tx_bytes_phy", "ch_poll"):
        assert not is_error_counter(name), name


# Every `ethtool -S` name the mlx5 driver can print that wirespeed names, as the driver spells it
# (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c: q_stats, vnic_env, vport, pport 802_3/2863/2819, phy,
# pcie, per-prio and pfc groups; `%d` and `%s` filled in for priorities 0-7 and "global").
MLX5_ETHTOOL = frozenset(
    {
        "rx_out_of_buffer",
        "rx_if_down_packets",
        "rx_steer_missed_packets",
        "dev_internal_queue_oob",
        "tx_packets_phy",
        "rx_packets_phy",
        "rx_crc_errors_phy",
        "tx_bytes_phy",
        "rx_bytes_phy",
        "rx_in_range_len_errors_phy",
        "rx_out_of_range_len_phy",
        "rx_oversize_pkts_phy",
        "rx_symbol_err_phy",
        "rx_pause_ctrl_phy",
        "tx_pause_ctrl_phy",
        "rx_discards_phy",
        "tx_discards_phy",
        "tx_errors_phy",
        "rx_undersize_pkts_phy",
        "rx_fragments_phy",
        "rx_jabbers_phy",
        "link_down_events_phy",
        "rx_pcs_symbol_err_phy",
        "rx_corrected_bits_phy",
        "rx_pci_signal_integrity",
        "tx_pci_signal_integrity",
        "outbound_pci_buffer_overflow",
        "tx_pause_storm_warning_events",
        "tx_pause_storm_error_events",
        "rx_global_pause",
        "tx_global_pause",
        "rx_oversize_pkts_sw_drop",
        *(f"{d}_vport_{k}_bytes" for d in ("rx", "tx") for k in ("unicast", "multicast", "broadcast")),
        *(f"{d}_vport_rdma_{k}_bytes" for d in ("rx", "tx") for k in ("unicast", "multicast")),
        *(f"rx_prio{p}_{k}" for p in range(8) for k in ("discards", "buf_discard", "cong_discard", "pause")),
        *(f"tx_prio{p}_pause" for p in range(8)),
    }
)
# The kernel's own netdev statistics (/sys/class/net/IF/statistics) and the RDMA hw_counters and port counters
# (`rdma statistic show link`), which are no `ethtool -S` names of mlx5.
NOT_ETHTOOL = frozenset(
    {
        "rx_dropped", "tx_dropped", "rx_errors", "tx_errors", "rx_crc_errors", "rx_missed_errors",
        "rx_over_errors", "rx_fifo_errors", "rx_frame_errors", "tx_fifo_errors", "tx_carrier_errors",
        "out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "rnr_nak_retry_err", "out_of_buffer",
        "rx_icrc_encapsulated", "req_cqe_error", "resp_cqe_error", "roce_adp_retrans", "roce_adp_retrans_to",
        "np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "port_xmit_discards", "port_rcv_errors",
        "link_downed", "symbol_error",
    }
)  # fmt: skip


def test_every_mlx5_counter_named_is_one_the_driver_prints() -> None:
    """`dev_out_of_buffer` never was an mlx5 counter: the driver's is `dev_internal_queue_oob`."""
    from wirespeed.core.fabric.counters import ERROR_NAMES, PHY, VPORT_RX, VPORT_TX
    from wirespeed.core.parsers.ethtool import ERROR_COUNTERS

    named = (set(ERROR_NAMES) | set(PHY) | set(VPORT_TX) | set(VPORT_RX) | set(ERROR_COUNTERS)) - NOT_ETHTOOL
    assert named - MLX5_ETHTOOL == set()
    assert is_error_counter("dev_internal_queue_oob") and not is_error_counter("dev_out_of_buffer")
    assert {n for n in MLX5_ETHTOOL if n.startswith(("rx_prio", "tx_prio"))} <= {
        n for n in MLX5_ETHTOOL if is_error_counter(n)
    }


def test_wire_source_phy_for_mlx5_netdev_for_veth() -> None:
    assert wire_source(real_stats()) == "phy"
    assert wire_source(selected_real()) == "phy"
    veth = {"peer_ifindex": 7, "rx_queue_0_xdp_packets": 0, "tx_bytes": 10, "rx_bytes": 20}
    assert wire_source(veth) == "netdev"
    assert wire_source({}) == "netdev"
    # three of the four PHY counters are not enough
    partial = {name: 1 for name in PHY if name != "rx_packets_phy"}
    assert wire_source(partial) == "netdev"


# ---------------------------------------------------------------------------------------------------- rates


def test_gbps() -> None:
    assert gbps(1_250_000_000, 1.0) == 10.0
    assert gbps(0, 1.0) == 0.0
    assert gbps(None, 1.0) is None
    assert gbps(100, 0.0) is None
    assert gbps(100, -1.0) is None


def test_rate_between_two_real_readings() -> None:
    before = selected_real()
    after = grown(
        before,
        tx_bytes_phy=2_500_000_000,  # 40 Gb/s over 0.5 s
        rx_bytes_phy=12_500_000_000,  # 200 Gb/s over 0.5 s
        tx_packets_phy=1000,
        rx_packets_phy=2000,
    )
    out = iface_rate(IfaceReading(stats=before), IfaceReading(stats=after), 0.5)
    assert out.source == "phy"
    assert out.tx_gbps == pytest.approx(40.0, rel=1e-12)
    assert out.rx_gbps == pytest.approx(200.0, rel=1e-12)
    assert out.errors == {}
    # no RDMA vport counters in this listing, no RDMA port counters in the reading
    assert out.function_tx_gbps is None and out.function_rx_gbps is None
    assert out.rdma_tx_gbps is None and out.rdma_rx_gbps is None


def test_wire_of_a_phy_reading_drops_the_suffix() -> None:
    source, wire = IfaceReading(stats=selected_real(), netdev={"tx_bytes": 1}).wire()
    assert source == "phy"
    assert wire == {
        "tx_bytes": 357657403514,
        "rx_bytes": 6211329423080,
        "tx_packets": 5588396729,
        "rx_packets": 97052087562,
    }


def test_phy_wins_over_netdev_counters() -> None:
    before = IfaceReading(stats=selected_real(), netdev={"tx_bytes": 0, "rx_bytes": 0})
    after = IfaceReading(
        stats=grown(selected_real(), tx_bytes_phy=125_000_000),
        netdev={"tx_bytes": 999_999_999_999, "rx_bytes": 999_999_999_999},
    )
    out = iface_rate(before, after, 1.0)
    assert out.source == "phy"
    assert out.tx_gbps == pytest.approx(1.0, rel=1e-12)
    assert out.rx_gbps == 0.0


def test_netdev_fallback_without_phy_counters() -> None:
    before = IfaceReading(netdev={"tx_bytes": 1_000, "rx_bytes": 5_000, "tx_packets": 1, "rx_packets": 5})
    after = IfaceReading(netdev={"tx_bytes": 1_000 + 250_000_000, "rx_bytes": 5_000, "tx_packets": 9, "rx_packets": 5})
    assert after.wire() == (
        "netdev",
        {"tx_bytes": 250_001_000, "rx_bytes": 5_000, "tx_packets": 9, "rx_packets": 5},
    )
    out = iface_rate(before, after, 0.25)
    assert out.source == "netdev"
    assert out.tx_gbps == pytest.approx(8.0, rel=1e-12)
    assert out.rx_gbps == 0.0


def test_netdev_without_byte_counters_gives_no_rate() -> None:
    out = iface_rate(IfaceReading(netdev={"tx_packets": 1}), IfaceReading(netdev={"tx_packets": 2}), 1.0)
    assert (out.source, out.tx_gbps, out.rx_gbps) == ("netdev", None, None)


# ---------------------------------------------------------------------------------------------------- delta


def test_delta_normal_growth() -> None:
    assert delta(100, 350) == 250
    assert delta(7, 7) == 0
    assert delta(357657403514, 357657403514 + 2_500_000_000) == 2_500_000_000


def test_delta_64_bit_wrap_near_the_top() -> None:
    assert delta((1 << 64) - 100, 50) == 150
    assert delta((1 << 64) - 1, 0) == 1
    # the edge of "near the top"
    assert delta((1 << 64) - NEAR_TOP, 0) == NEAR_TOP
    assert delta((1 << 64) - NEAR_TOP - 1, 0) is None


def test_delta_reset_is_no_rate_never_a_spike() -> None:
    assert delta(6211329423080, 1_024) is None
    assert delta(6211329423080, 0) is None
    assert delta(101, 100) is None
    before = IfaceReading(stats=selected_real())
    after = IfaceReading(stats=phy_reading(4096, 8192).stats)  # driver reloaded: counting from zero again
    out = iface_rate(before, after, 0.1)
    assert out.source == "phy"
    assert out.tx_gbps is None and out.rx_gbps is None
    assert out.errors == {}  # error counters that went back to 0 did not "grow"


def test_delta_32_bit_wrap() -> None:
    assert delta((1 << 32) - 10, 5, width=32) == 15
    assert delta(3_000_000_000, 1_000, width=32) == (1 << 32) - 3_000_000_000 + 1_000
    # going back from the lower half of a 32-bit counter is a reset, not a wrap
    assert delta(1_000_000, 10, width=32) is None
    # and the same wrap seen with the default 64-bit width is a reset
    assert delta((1 << 32) - 10, 5) is None


# ------------------------------------------------------------------------------------ a changing string set


def test_pfc_counters_appearing_do_not_crash_or_invent() -> None:
    before = selected_real()
    # PFC enabled on priority 3: new per-priority counters, already non-zero when first seen
    after = grown(before, tx_bytes_phy=125_000_000, rx_bytes_phy=250_000_000)
    after |= {"rx_prio3_pause": 5_000, "tx_prio3_pause": 7_000, "rx_prio3_discards": 12}
    out = iface_rate(IfaceReading(stats=before), IfaceReading(stats=after), 1.0)
    assert out.tx_gbps == pytest.approx(1.0, rel=1e-12)
    assert out.rx_gbps == pytest.approx(2.0, rel=1e-12)
    assert out.errors == {}  # first seen is not growth


def test_counters_vanishing_give_no_rate_and_no_error() -> None:
    before = selected_real()
    after = grown(before, tx_bytes_phy=125_000_000)
    del after["rx_discards_phy"]
    del after["rx_vport_unicast_bytes"]
    out = iface_rate(IfaceReading(stats=before), IfaceReading(stats=after), 1.0)
    assert out.tx_gbps == pytest.approx(1.0, rel=1e-12)
    assert out.errors == {}


def test_phy_counters_vanish_and_come_back() -> None:
    netdev1 = {"tx_bytes": 1_000, "rx_bytes": 1_000}
    netdev2 = {"tx_bytes": 2_000, "rx_bytes": 2_000}
    netdev3 = {"tx_bytes": 3_000, "rx_bytes": 3_000}
    first = IfaceReading(stats=selected_real(), netdev=netdev1)
    without_phy = {k: v for k, v in selected_real().items() if k not in PHY}
    second = IfaceReading(stats=without_phy, netdev=netdev2)
    third = IfaceReading(stats=grown(selected_real(), tx_bytes_phy=1_000_000_000), netdev=netdev3)

    gone = iface_rate(first, second, 1.0)  # phy -> netdev: the sources do not compare
    assert (gone.source, gone.tx_gbps, gone.rx_gbps) == ("netdev", None, None)
    back = iface_rate(second, third, 1.0)  # netdev -> phy: neither
    assert (back.source, back.tx_gbps, back.rx_gbps) == ("phy", None, None)
    # the interval after that is a rate again
    fourth = IfaceReading(stats=grown(third.stats, tx_bytes_phy=125_000_000), netdev=netdev3)
    again = iface_rate(third, fourth, 1.0)
    assert again.tx_gbps == pytest.approx(1.0, rel=1e-12)
    assert again.rx_gbps == 0.0


# ------------------------------------------------------------------------------------------------ shared PHY


def test_phy_shared_identical_halves() -> None:
    a = phy_reading(10 * GIB, 20 * GIB)
    assert phy_shared(a, phy_reading(10 * GIB, 20 * GIB)) is True
    # read a few microseconds apart: a few KiB more on one of them
    assert phy_shared(a, phy_reading(10 * GIB + 4096, 20 * GIB + 8192)) is True
    # just above the floor of 1 MiB, within the 64 KiB slack
    assert phy_shared(phy_reading(2 << 20, 0), phy_reading((2 << 20) + 60 * 1024, 0)) is True


def test_phy_shared_distinct_halves() -> None:
    assert phy_shared(phy_reading(10 * GIB, 20 * GIB), phy_reading(3 * GIB, 20 * GIB)) is False
    assert phy_shared(phy_reading(10 * GIB, 20 * GIB), phy_reading(10 * GIB, 5 * GIB)) is False
    # 1 MiB apart on a 2 MiB counter is not "the same counter"
    assert phy_shared(phy_reading(2 << 20, 0), phy_reading(3 << 20, 0)) is False


def test_phy_shared_cannot_tell_while_tiny() -> None:
    assert phy_shared(phy_reading(1000, 2000), phy_reading(500_000, 3)) is None
    assert phy_shared(phy_reading(0, 0), phy_reading(0, 0)) is None
    assert phy_shared(phy_reading((1 << 20) - 1, 0), phy_reading(0, (1 << 20) - 1)) is None


# ---------------------------------------------------------------------------------------------------- cable


def test_cable_rate_shared_phy_counts_the_wire_once() -> None:
    halves = {"a": rate(80.0, 30.0), "b": rate(80.0, 30.0)}
    cable = cable_rate("port 1", halves, True, 200.0)
    assert (cable.tx_gbps, cable.rx_gbps, cable.duplex_gbps) == (80.0, 30.0, 110.0)
    assert cable.shared_phy is True
    assert cable.line_rate_gbps == 200.0
    assert cable.label == "port 1"
    assert dict(cable.halves) == halves
    # two reads of one wire a little apart: the larger
    uneven = cable_rate("port 1", {"a": rate(80.0, 30.0), "b": rate(79.0, 31.0)}, True, 200.0)
    assert (uneven.tx_gbps, uneven.rx_gbps) == (80.0, 31.0)


def test_cable_rate_distinct_halves_add_up() -> None:
    cable = cable_rate("port 1", {"a": rate(80.0, 30.0), "b": rate(20.0, 12.5)}, False, 200.0)
    assert (cable.tx_gbps, cable.rx_gbps, cable.duplex_gbps) == (100.0, 42.5, 142.5)
    assert cable.shared_phy is False


def test_cable_rate_with_a_half_unknown() -> None:
    halves = {"a": rate(80.0, 30.0), "b": rate(None, None, "gone")}
    split = cable_rate("port 1", halves, False, 200.0)
    assert (split.tx_gbps, split.rx_gbps, split.duplex_gbps) == (None, None, None)  # never a half-sized total
    shared = cable_rate("port 1", halves, True, 200.0)  # either half is the whole wire
    assert (shared.tx_gbps, shared.rx_gbps, shared.duplex_gbps) == (80.0, 30.0, 110.0)
    one_way = cable_rate("port 1", {"a": rate(80.0, None)}, False, None)
    assert (one_way.tx_gbps, one_way.rx_gbps, one_way.duplex_gbps) == (80.0, None, None)
    assert cable_rate("x", {}, False, None).tx_gbps is None


# ------------------------------------------------------------------------------------- per function and RDMA


def test_function_split_from_vport_counters() -> None:
    base = {
        "tx_vport_unicast_bytes": 1_000,
        "rx_vport_unicast_bytes": 2_000,
        "tx_vport_rdma_unicast_bytes": 10_000,
        "rx_vport_rdma_unicast_bytes": 20_000,
        "tx_vport_multicast_bytes": 5,
    }
    before = IfaceReading(stats=selected_real() | base)
    assert before.derived().function == (11_005, 22_000)
    after = IfaceReading(
        stats=grown(
            before.stats,
            tx_vport_unicast_bytes=125_000_000,  # 1 Gb/s of TCP
            tx_vport_rdma_unicast_bytes=2_375_000_000,  # 19 Gb/s of RoCE
            rx_vport_rdma_unicast_bytes=625_000_000,  # 5 Gb/s of RoCE
            tx_bytes_phy=5_000_000_000,  # the shared wire: 40 Gb/s (both halves)
        )
    )
    out = iface_rate(before, after, 1.0)
    assert out.function_tx_gbps == pytest.approx(20.0, rel=1e-12)
    assert out.function_rx_gbps == pytest.approx(5.0, rel=1e-12)
    assert out.tx_gbps == pytest.approx(40.0, rel=1e-12)


def test_function_split_needs_the_rdma_vport_counters() -> None:
    # the real listing has vport unicast but no RDMA vport counters: no split rather than one without RDMA
    assert IfaceReading(stats=selected_real()).derived().function is None
    only_tx_rdma = selected_real() | {"tx_vport_rdma_unicast_bytes": 1}
    assert IfaceReading(stats=only_tx_rdma).derived().function is None


def test_rdma_port_counters_are_words() -> None:
    before = IfaceReading(rdma={"port_xmit_data": 1_000, "port_rcv_data": 2_000, "port_xmit_packets": 1})
    assert before.rdma_words() == (1_000, 2_000)
    after = IfaceReading(
        rdma={"port_xmit_data": 1_000 + 312_500_000, "port_rcv_data": 2_000 + 62_500_000, "port_xmit_packets": 9}
    )
    out = iface_rate(before, after, 1.0)
    assert out.rdma_tx_gbps == pytest.approx(10.0, rel=1e-12)  # 312.5 M words = 1.25 GB
    assert out.rdma_rx_gbps == pytest.approx(2.0, rel=1e-12)
    assert IfaceReading(rdma={"port_xmit_data": 1}).rdma_words() is None


# --------------------------------------------------------------------------------------------------- errors


def test_errors_that_grew_are_reported_with_their_increase() -> None:
    before = selected_real()
    after = grown(before, rx_discards_phy=1234, rx_prio0_discards=1200, tx_pause_ctrl_phy=7, tx_bytes_phy=1)
    out = iface_rate(IfaceReading(stats=before), IfaceReading(stats=after), 1.0)
    assert out.errors == {"rx_discards_phy": 1234, "rx_prio0_discards": 1200, "tx_pause_ctrl_phy": 7}


def test_errors_from_netdev_and_rdma_are_prefixed() -> None:
    before = IfaceReading(
        stats={"rx_out_of_buffer": 10},
        netdev={"rx_dropped": 3, "tx_bytes": 0, "rx_errors": 0},
        rdma={"out_of_sequence": 100, "port_xmit_data": 1, "local_ack_timeout_err": 0},
    )
    assert before.errors() == {
        "rx_out_of_buffer": 10,
        "netdev:rx_dropped": 3,
        "netdev:rx_errors": 0,
        "rdma:out_of_sequence": 100,
        "rdma:local_ack_timeout_err": 0,
    }
    after = IfaceReading(
        stats={"rx_out_of_buffer": 10},
        netdev={"rx_dropped": 5, "tx_bytes": 99, "rx_errors": 0},
        rdma={"out_of_sequence": 142, "port_xmit_data": 1000, "local_ack_timeout_err": 0},
    )
    assert iface_rate(before, after, 1.0).errors == {"netdev:rx_dropped": 2, "rdma:out_of_sequence": 42}


# ------------------------------------------------------------------------------------------------------ cpu

PROC_STAT_1 = """\
cpu  600 0 300 3300 200 0 0 0 0 0
cpu0 100 0 50 800 50 0 0 0 0 0
cpu1 200 0 100 700 0 0 0 0 0 0
cpu2 300 0 150 1800 150 0 0 0 0 0
intr 123456 0 0 0
ctxt 987654
btime 1700000000
processes 4242
procs_running 2
procs_blocked 0
softirq 1 2 3 4 5 6 7 8 9 10 11
"""
PROC_STAT_2 = """\
cpu  1100 0 500 3800 250 50 50 0 0 0
cpu0 200 0 100 1100 100 0 0 0 0 0
cpu1 600 0 200 700 0 50 50 0 0 0
cpu2 300 0 200 2000 150 0 0 0 0 0
intr 123999 0 0 0
ctxt 987999
"""


def test_parse_proc_stat_per_core() -> None:
    cores = parse_proc_stat(PROC_STAT_1)
    assert cores == [
        (100, 0, 50, 800, 50, 0, 0, 0),
        (200, 0, 100, 700, 0, 0, 0, 0),
        (300, 0, 150, 1800, 150, 0, 0, 0),
    ]
    assert parse_proc_stat("") == []


def test_cores_json_is_the_parsed_cores_as_json() -> None:
    """The steady line's CPU, made from the digits as they stand, is what parsing and dumping give."""
    texts = [PROC_STAT_1, PROC_STAT_2, Path("/proc/stat").read_text()]  # the last: this machine's, a real one
    texts.append(PROC_STAT_1.replace(" 0 0 0\n", "\n"))  # an old kernel's 7 fields
    for text in texts:
        made = cores_json(text)
        assert made is not None and made == json.dumps(parse_proc_stat(text), separators=(",", ":"))
    assert cores_json("cpu  1 2\nintr 1\n") == "[]"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "cpu0 1 2 3\nintr 1\n",  # no total first
        "cpu  1 2\ncpu0 1 2\nctxt 3\n",  # no intr line
        "cpu  1 2\ncpu0 1 2\nbtime 3\nintr 1\n",  # something else among the cores
        "cpu  1 2\ncpu0 1 -2\nintr 1\n",  # not a JSON number
        "cpu  1 2\ncpu0 1 2.5\nintr 1\n",
    ],
)
def test_cores_json_leaves_odd_layouts_to_the_parser(text: str) -> None:
    assert cores_json(text) is None


def test_cpu_busy_known_percentages() -> None:
    busy = cpu_busy(parse_proc_stat(PROC_STAT_1), parse_proc_stat(PROC_STAT_2))
    # cpu0: +100 user +50 sys +300 idle +50 iowait -> 150 of 500
    # cpu1: +400 user +100 sys +50 irq +50 softirq -> 600 of 600
    # cpu2: +50 sys +200 idle -> 50 of 250
    assert busy == [pytest.approx(30.0), pytest.approx(100.0), pytest.approx(20.0)]


def test_cpu_busy_without_time_passing() -> None:
    same = parse_proc_stat(PROC_STAT_1)
    assert cpu_busy(same, same) == [None, None, None]
    assert cpu_busy([], same) == []


# ---------------------------------------------------------------------------------------------- /proc/net/dev

# The kernel pads the columns; a byte count too wide for its column runs into the colon (the second line).


def test_a_64_bit_rdma_word_counter_wraps_in_words_not_bytes() -> None:
    before = IfaceReading(rdma={"port_xmit_data": 2**64 - 1000, "port_rcv_data": 0})
    after = IfaceReading(rdma={"port_xmit_data": 250, "port_rcv_data": 0})
    assert iface_rate(before, after, 1.0).rdma_tx_gbps == pytest.approx(1250 * 4 * 8 / 1e9)


def test_what_a_reading_derives_is_kept_and_callers_get_copies() -> None:
    reading = IfaceReading(
        stats={"tx_bytes_phy": 10, "rx_bytes_phy": 20, "tx_packets_phy": 1, "rx_packets_phy": 2, "rx_discards_phy": 3},
        netdev={"rx_dropped": 4, "rx_bytes": 5},
        rdma={"port_rcv_errors": 6, "port_xmit_data": 7, "port_rcv_data": 8},
    )
    errors = reading.errors()
    assert errors == {"rx_discards_phy": 3, "netdev:rx_dropped": 4, "rdma:port_rcv_errors": 6}
    errors["rx_discards_phy"] = 999
    _, wire = reading.wire()
    wire["tx_bytes"] = 999
    assert reading.errors()["rx_discards_phy"] == 3 and reading.wire() == (
        "phy", {"tx_bytes": 10, "rx_bytes": 20, "tx_packets": 1, "rx_packets": 2}
    )  # fmt: skip
    assert reading == IfaceReading(reading.stats, reading.netdev, reading.rdma)  # the memo is not compared
    later = IfaceReading(
        stats={**reading.stats, "rx_discards_phy": 5, "tx_bytes_phy": 1_000_010},
        netdev={"rx_dropped": 4, "rx_bytes": 5},
        rdma={"port_rcv_errors": 6, "port_xmit_data": 7, "port_rcv_data": 8},
    )
    rate = iface_rate(reading, later, 1.0)
    assert rate.errors == {"rx_discards_phy": 2}  # unchanged counters are not "grew by 0"
    assert rate.tx_gbps == pytest.approx(0.008) and rate.rdma_tx_gbps == 0.0


def test_readings_with_the_same_names_share_one_plan() -> None:
    before = IfaceReading(stats=selected_real(), netdev={"tx_bytes": 1, "rx_dropped": 0})
    after = IfaceReading(stats=grown(selected_real(), rx_discards_phy=3), netdev={"tx_bytes": 2, "rx_dropped": 0})
    assert before.derived().plan is after.derived().plan
    assert after.derived() is after.derived()  # taken once
    assert iface_rate(before, after, 1.0).errors == {"rx_discards_phy": 3}


def test_error_growth_across_a_change_of_names() -> None:
    """A counter appears and another grows in the same interval: two plans, compared name by name."""
    before = IfaceReading(netdev={"tx_bytes": 0, "rx_bytes": 0, "rx_dropped": 5})
    after = IfaceReading(netdev={"tx_bytes": 125, "rx_bytes": 0, "rx_dropped": 9, "tx_dropped": 7})
    assert before.derived().plan is not after.derived().plan
    rate = iface_rate(before, after, 1.0)
    assert rate.errors == {"netdev:rx_dropped": 4}  # tx_dropped is first seen, not growth
    assert rate.source == "netdev" and rate.tx_gbps == pytest.approx(1e-6) and rate.rx_gbps == 0.0


def test_one_direction_without_its_counter_has_no_rate() -> None:
    before = IfaceReading(netdev={"tx_bytes": 0})
    after = IfaceReading(netdev={"tx_bytes": 1_250_000_000})
    rate = iface_rate(before, after, 1.0)
    assert rate.tx_gbps == pytest.approx(10.0) and rate.rx_gbps is None


def test_no_rate_over_no_time() -> None:
    before = IfaceReading(stats=selected_real())
    after = IfaceReading(stats=grown(selected_real(), tx_bytes_phy=1))
    rate = iface_rate(before, after, 0.0)
    assert (rate.tx_gbps, rate.rx_gbps, rate.function_tx_gbps) == (None, None, None)


def test_an_interval_with_no_error_growth_shares_one_empty_mapping() -> None:
    a = IfaceReading(netdev={"tx_bytes": 0, "rx_dropped": 1})
    b = IfaceReading(netdev={"tx_bytes": 9, "rx_dropped": 1})
    errors = iface_rate(a, b, 1.0).errors
    assert errors == {}
    with pytest.raises(TypeError):
        errors["x"] = 1  # type: ignore[index]
