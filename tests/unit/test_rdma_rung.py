"""The RDMA rungs' plan (a perftest pair per half, each side's own device and RoCE v2 GID index) and the reading
of perftest's output, on the Spark snapshot fixtures and real ib_write_bw output from a Spark pair."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from wirespeed.core.facts import Tool, Unknown
from wirespeed.core.nccl import NotRunnable
from wirespeed.core.rdma import RdmaOptions, RdmaPair, bw_argv, bw_flow_results, lat_argv, latency, plan_rdma
from wirespeed.engine.discover import Discovery, discover_snapshots

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"
PERFTEST = Path(__file__).parent.parent / "fixtures" / "real" / "perftest"


def load(case: str) -> Discovery:
    return discover_snapshots([SNAPSHOTS / case])


def pairs(case: str) -> list[RdmaPair]:
    found = load(case)
    planned = plan_rdma(found.facts, found.cabling, "spark-1", "spark-2")
    assert not isinstance(planned, NotRunnable), planned
    return planned


def test_two_sparks_a_pair_per_half_with_each_devices_gid_index() -> None:
    planned = pairs("spark-two-cables")
    assert [(p.client.device, p.server.device) for p in planned] == [
        ("rocep1s0f0", "rocep1s0f0"),
        ("roceP2p1s0f0", "roceP2p1s0f0"),
        ("rocep1s0f1", "rocep1s0f1"),
        ("roceP2p1s0f1", "roceP2p1s0f1"),
    ]
    assert {(p.client.gid_index, p.server.gid_index) for p in planned} == {(3, 3)}
    assert [p.flow.target_address for p in planned] == [
        "192.168.102.11",
        "192.168.103.11",
        "192.168.100.11",
        "192.168.101.11",
    ]


def test_ipv6_shifted_gid_table_gives_each_side_its_own_index() -> None:
    planned = pairs("spark-gid-ipv6")
    shifted = next(p for p in planned if p.client.device == "rocep1s0f1")
    assert (shifted.client.gid_index, shifted.server.gid_index) == (3, 7)
    client = bw_argv(shifted, RdmaOptions(), 20000, server=False)
    server = bw_argv(shifted, RdmaOptions(), 20000, server=True)
    assert server[server.index("-x") + 1] == "7" and client[client.index("-x") + 1] == "3"


def test_both_sides_get_identical_test_parameters_and_the_client_adds_the_address() -> None:
    pair = pairs("spark-two-cables")[2]
    options = RdmaOptions(qps=8, seconds=5, size_bytes=65536, bidir=True)
    server = bw_argv(pair, options, 23456, server=True)
    client = bw_argv(pair, options, 23456, server=False)
    assert server == [
        "ib_write_bw", "-d", "rocep1s0f1", "-i", "1", "-x", "3", "-p", "23456", "-F",
        "-q", "8", "-s", "65536", "-D", "5", "--report_gbits", "-b",
    ]  # fmt: skip
    assert client == [*server, "192.168.100.11"]
    lat = lat_argv(pair, RdmaOptions(test="send"), 23457, server=False)
    assert lat[0] == "ib_send_lat" and lat[-5:] == ["-s", "2", "-n", "1000", "192.168.100.11"]


def test_why_the_rdma_rungs_cannot_run() -> None:
    found = load("spark-two-cables")
    no_rdma = dict(found.facts)
    no_rdma["spark-2"] = replace(no_rdma["spark-2"], rdma=(), rdma_absent_reason="no RDMA devices: none found")
    reason = plan_rdma(no_rdma, found.cabling, "spark-1", "spark-2")
    assert isinstance(reason, NotRunnable) and reason.reason == "spark-2: no RDMA devices: none found"
    no_perftest = dict(found.facts)
    tools = tuple(Tool("perftest", Unknown("ib_write_bw is not installed")) if t.name == "perftest" else t
                  for t in no_perftest["spark-1"].tools)  # fmt: skip
    no_perftest["spark-1"] = replace(no_perftest["spark-1"], tools=tools)
    missing = plan_rdma(no_perftest, found.cabling, "spark-1", "spark-2")
    assert isinstance(missing, NotRunnable) and "perftest not found" in missing.reason and "apt" in missing.fix
    no_gid = dict(found.facts)
    device = no_gid["spark-2"].rdma[0]
    port = replace(device.ports[0], rocev2_ipv4_index=Unknown("no IPv4-mapped RoCE v2 GID"))
    devices = (replace(device, ports=(port,)), *no_gid["spark-2"].rdma[1:])
    no_gid["spark-2"] = replace(no_gid["spark-2"], rdma=devices)
    gid = plan_rdma(no_gid, found.cabling, "spark-1", "spark-2")
    assert isinstance(gid, NotRunnable) and f"({device.name}): no RoCE v2 IPv4 GID" in gid.reason
    assert gid.fix == "wirespeed check --only gid.rocev2"


def test_real_spark_ib_write_bw_is_read_in_gbps() -> None:
    pair = pairs("spark-two-cables")[0]
    stdout = (PERFTEST / "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt").read_text()
    [result] = bw_flow_results(pair, stdout, None)
    assert result.direction == "forward" and result.tool_gbps == pytest.approx(92.56, abs=0.02)


def test_mib_per_second_tables_convert_as_mebibytes() -> None:
    pair = pairs("spark-two-cables")[0]
    table = (
        "                    RDMA_Write BW Test\n"
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
        " 65536      100000           11000.00            11000.00              0.176000\n"
    )
    [result] = bw_flow_results(pair, table, None)
    assert result.tool_gbps == pytest.approx(11000 * 2**20 * 8 / 1e9)  # 92.27 Gb/s, not 88.0


def test_bidirectional_sum_is_split_into_both_directions() -> None:
    pair = pairs("spark-two-cables")[0]
    table = (
        "                    RDMA_Write Bidirectional BW Test\n"
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        " 65536      100000           0.00               180.00               0.343000\n"
    )
    forward, reverse = bw_flow_results(pair, table, None)
    assert (forward.direction, reverse.direction) == ("forward", "reverse")
    assert forward.tool_gbps == reverse.tool_gbps == pytest.approx(90.0)
    assert reverse.flow.source == pair.flow.target


def test_unreadable_output_keeps_the_error() -> None:
    pair = pairs("spark-two-cables")[0]
    [result] = bw_flow_results(pair, "Couldn't connect to 192.168.102.11:20000\n", "spark-1: exit status 1")
    assert result.tool_gbps is None and result.error == "spark-1: exit status 1"


def test_latency_row_is_read_in_microseconds() -> None:
    table = (
        "                    RDMA_Write Latency Test\n"
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
        "   99% percentile[usec]   99.9% percentile[usec] \n"
        " 2       1000          1.61           5.36         1.66               1.68             0.08"
        "            2.07                    5.36   \n"
    )
    figures = latency(table)
    assert not isinstance(figures, str)
    assert (figures.t_typical_us, figures.p99_us) == (1.66, 2.07)
    assert figures.line() == "2 B: typical 1.66 us, avg 1.68 us, p99 2.07 us, p99.9 5.36 us"
    assert isinstance(latency("no table here\n"), str)
