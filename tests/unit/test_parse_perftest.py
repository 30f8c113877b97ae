"""perftest text as the bench reads it: the two real `--report_gbits --run_infinitely` runs from a DGX Spark pair,
then the layouts the real files do not show (MB/sec and MiB/sec tables, latency tables old and new, `-b
--report-both`, `--cpu_util`, CPU-frequency warnings between rows), written the way perftest's printf formats
(`src/perftest_parameters.h`) print them, and the accidents (cut rows, header only, garbage)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.tools import iperf3
from wirespeed.core.tools.perftest import BwRow, LatRow, PerftestResult, looks_like, parse_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real"
REAL = FIXTURES / "perftest"
CASES = sorted(REAL.glob("*.txt"))
MIB = 2**20 * 8 / 1e9  # one MB/sec (perftest's MiB/s) in Gb/s


def _expect(path: Path) -> dict[str, Any]:
    expect: dict[str, Any] = json.loads(path.with_suffix(".json").read_text())["expect"]
    return expect


def _bw_rows(result: PerftestResult) -> list[BwRow]:
    rows = [row for row in result.rows if isinstance(row, BwRow)]
    assert len(rows) == len(result.rows)
    return rows


def _lat_rows(result: PerftestResult) -> list[LatRow]:
    rows = [row for row in result.rows if isinstance(row, LatRow)]
    assert len(rows) == len(result.rows)
    return rows


# ----------------------------------------------------------------------------------------------- real outputs


def test_every_real_output_is_covered() -> None:
    assert [p.name for p in CASES] == [
        "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt",
        "ib_write_bw_spark_report_gbits_run_infinitely_client2.txt",
    ]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_real_outputs_give_what_a_person_reads(path: Path) -> None:
    expect = _expect(path)
    result = parse_text(path.read_text())
    assert expect["test"] == "RDMA_Write BW Test" and result.test == "ib_write_bw" and result.kind == "bw"
    assert result.device == expect["device"]
    assert result.link_type == expect["link_type"]
    assert result.mtu == expect["mtu"]
    assert result.gid_index == expect["gid_index"]
    assert result.units == expect["bw_units"] == "Gb/sec"
    assert result.qps == 1 and result.bidirectional is False
    rows = _bw_rows(result)
    assert len(rows) == len(expect["rows"]) > 0
    for row, want in zip(rows, expect["rows"], strict=True):
        assert row.size_bytes == want["bytes"]
        assert row.iterations == want["iterations"]
        assert row.bw_avg_gbps == pytest.approx(want["bw_avg"])  # Gb/sec is already 10^9 bit/s
        assert row.msg_rate_mpps == pytest.approx(want["msg_rate_mpps"])
        # Printed 0.00 because --run_infinitely does not measure the peak: not a rate, so None.
        assert want["bw_peak"] == 0.0 and row.bw_peak_gbps is None
    assert result.warnings == ("WARNING: BW peak won't be measured in this run.",)


def test_client1_values_one_by_one() -> None:
    result = parse_text((REAL / "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt").read_text())
    assert [row.bw_avg_gbps for row in _bw_rows(result)] == [92.57, 92.57, 92.57, 92.56, 92.57]
    assert [row.iterations for row in _bw_rows(result)] == [882805, 882802, 882791, 882791, 882821]


def test_the_two_spark_twins_add_up_as_the_playbook_says() -> None:
    first = parse_text((REAL / "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt").read_text())
    second = parse_text((REAL / "ib_write_bw_spark_report_gbits_run_infinitely_client2.txt").read_text())
    assert _bw_rows(first)[0].bw_avg_gbps + _bw_rows(second)[0].bw_avg_gbps == pytest.approx(189.85)
    assert (first.device, second.device) == ("rocep1s0f0", "roceP2p1s0f0")


# ------------------------------------------------------------------------------------ layouts in the sources

HEADER_BLOCK = (
    "---------------------------------------------------------------------------------------\n"
    "                    {title}\n"
    " Dual-port       : OFF\t\tDevice         : mlx5_0\n"
    " Number of qps   : {qps}\t\tTransport type : IB\n"
    " Connection type : RC\t\tUsing SRQ      : OFF\n"
    " PCIe relax order: ON\n"
    " ibv_wr* API     : ON\n"
    " TX depth        : 128\n"
    " CQ Moderation   : 1\n"
    " Mtu             : 4096[B]\n"
    " Link type       : IB\n"
    " Max inline data : 0[B]\n"
    " rdma_cm QPs\t : OFF\n"
    " Data ex. method : Ethernet\n"
    "---------------------------------------------------------------------------------------\n"
    " local address: LID 0x05 QPN 0x0108 PSN 0x63ad7d RKey 0x17eedf VAddr 0x007f760c947000\n"
    " remote address: LID 0x04 QPN 0x0076 PSN 0xf3810c RKey 0x201600 VAddr 0x007fbb4c981000\n"
    "---------------------------------------------------------------------------------------\n"
)
DASHES = "---------------------------------------------------------------------------------------\n"
BW_HEADER_MB = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
BW_HEADER_MIB = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
LAT_HEADER = (
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
    "   99% percentile[usec]   99.9% percentile[usec] \n"
)

SERVER_MB = (
    "\n************************************\n"
    "* Waiting for client to connect... *\n"
    "************************************\n"
    + HEADER_BLOCK.format(title="RDMA_Write BW Test", qps=1)
    + BW_HEADER_MB
    + " 65536      664644           0.00               11200.50\t\t     0.179208\n"
    + DASHES
)


def test_mb_per_sec_is_mebibytes_converted_exactly() -> None:
    result = parse_text(SERVER_MB)
    assert result.units == "MB/sec" and result.test == "ib_write_bw" and result.link_type == "IB"
    assert (result.device, result.qps, result.mtu, result.gid_index) == ("mlx5_0", 1, 4096, None)
    (row,) = _bw_rows(result)
    assert row.bw_avg_gbps == pytest.approx(11200.50 * 2**20 * 8 / 1e9)  # 93.96 Gb/s, not 89.6
    assert row.bw_peak_gbps is None  # 0.00 printed by a side that did not measure it
    assert (row.size_bytes, row.iterations, row.msg_rate_mpps) == (65536, 664644, 0.179208)


SWEEP_MIB_WITH_CPU_WARNINGS = (
    HEADER_BLOCK.format(title="Send BW Test", qps=4)
    + BW_HEADER_MIB
    + "Conflicting CPU frequency values detected: 1200.000000 != 3400.000000. CPU Frequency is not max.\n"
    + " 2          5000             9.12               8.95   \t\t     4.692561\n"
    + "Conflicting CPU frequency values detected: 1200.000000 != 3400.000000. CPU Frequency is not max.\n"
    + " 4          5000             18.43              18.02  \t\t     4.723370\n"
    + "Conflicting CPU frequency values detected: 1200.000000 != 3400.000000. CPU Frequency is not max.\n"
    + " 8          5000             37.10              36.55  \t\t     4.790843\n"
    + DASHES
)


def test_a_sweep_with_cpu_frequency_warnings_between_rows() -> None:
    result = parse_text(SWEEP_MIB_WITH_CPU_WARNINGS)
    assert (result.test, result.units, result.qps) == ("ib_send_bw", "MiB/sec", 4)
    rows = _bw_rows(result)
    assert [row.size_bytes for row in rows] == [2, 4, 8]
    assert [row.bw_peak_gbps for row in rows] == pytest.approx([9.12 * MIB, 18.43 * MIB, 37.10 * MIB])
    assert [row.bw_avg_gbps for row in rows] == pytest.approx([8.95 * MIB, 18.02 * MIB, 36.55 * MIB])
    assert result.warnings == (
        "Conflicting CPU frequency values detected: 1200.000000 != 3400.000000. CPU Frequency is not max.",
    )


def test_small_rates_in_gbits_use_six_decimals() -> None:
    text = (
        HEADER_BLOCK.format(title="RDMA_Read BW Test", qps=1)
        + " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        + " 2          5000           0.071234            0.070011            4.375688\n"
    )
    (row,) = _bw_rows(parse_text(text))
    assert (row.bw_peak_gbps, row.bw_avg_gbps, row.msg_rate_mpps) == (0.071234, 0.070011, 4.375688)
    assert parse_text(text).test == "ib_read_bw"


def test_bidirectional_report_both_keeps_the_summed_table() -> None:
    table = (
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        " 65536      5000             {peak:<7.2f}            {avg:<7.2f}\t\t     {rate:<7.6f}\n"
    )
    text = (
        HEADER_BLOCK.format(title="RDMA_Write Bidirectional BW Test", qps=2)
        + table.format(peak=190.11, avg=189.50, rate=0.361443)
        + DASHES
        + "\n Local results: \n"
        + DASHES
        + table.format(peak=95.10, avg=94.80, rate=0.180817)
        + DASHES
        + "\n Remote results: \n"
        + DASHES
        + table.format(peak=95.01, avg=94.70, rate=0.180626)
    )
    result = parse_text(text)
    assert result.bidirectional is True and result.test == "ib_write_bw" and result.qps == 2
    (row,) = _bw_rows(result)
    assert (row.bw_peak_gbps, row.bw_avg_gbps) == (190.11, 189.50)


def test_cpu_util_column_is_read_past() -> None:
    text = (
        HEADER_BLOCK.format(title="RDMA_Write BW Test", qps=1)
        + BW_HEADER_MB.rstrip("\n")
        + "    CPU_Util[%]\n"
        + " 65536      5000             11050.12            11010.33\t\t     0.176165\t    3.54\n"
    )
    (row,) = _bw_rows(parse_text(text))
    assert row.bw_avg_gbps == pytest.approx(11010.33 * MIB)
    assert row.bw_peak_gbps == pytest.approx(11050.12 * MIB)


# REPORT_FMT_LAT: " %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f..."
LAT_ROW_2 = (
    " 2       1000          1.05           4.50         1.08     \t       1.09        "
    "\t0.05   \t\t1.20    \t\t4.50   \n"
)
LAT_ROW_4096 = (
    " 4096    1000          2.31           6.02         2.36     \t       2.37        "
    "\t0.04   \t\t2.52    \t\t6.02   \n"
)
LAT = HEADER_BLOCK.format(title="RDMA_Write Latency Test", qps=1) + LAT_HEADER + LAT_ROW_2 + LAT_ROW_4096 + DASHES


def test_latency_table_in_microseconds() -> None:
    result = parse_text(LAT)
    assert (result.test, result.kind, result.units) == ("ib_write_lat", "lat", "usec")
    rows = _lat_rows(result)
    assert rows == [
        LatRow(2, 1000, 1.05, 4.50, 1.08, 1.09, 0.05, 1.20, 4.50),
        LatRow(4096, 1000, 2.31, 6.02, 2.36, 2.37, 0.04, 2.52, 6.02),
    ]


def test_histogram_lines_and_the_repeated_header_of_dash_h_are_skipped() -> None:
    text = (
        HEADER_BLOCK.format(title="Send Latency Test", qps=1)
        + LAT_HEADER
        + "#, usec\n1, 1.0815\n2, 1.0790\n3, 1.1023\n"
        + DASHES
        + LAT_HEADER
        + LAT_ROW_2
    )
    result = parse_text(text)
    assert result.test == "ib_send_lat"
    assert [row.t_typical_us for row in _lat_rows(result)] == [1.08]


def test_old_latency_table_has_no_average_or_percentiles() -> None:
    text = (
        HEADER_BLOCK.format(title="Send Latency Test", qps=1)
        + " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
        + " 2       1000          0.98           3.67         1.01   \n"
    )
    (row,) = _lat_rows(parse_text(text))
    assert (row.t_min_us, row.t_max_us, row.t_typical_us) == (0.98, 3.67, 1.01)
    assert (row.t_avg_us, row.t_stdev_us, row.p99_us, row.p999_us) == (None, None, None, None)


def test_a_table_without_the_header_block_still_parses() -> None:
    result = parse_text(BW_HEADER_MB + " 65536      664644           11300.00            11200.50\t\t     0.179208\n")
    assert (result.test, result.device, result.mtu, result.warnings) == (None, None, None, ())
    assert _bw_rows(result)[0].bw_peak_gbps == pytest.approx(11300.00 * MIB)


# ----------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no '#bytes #iterations' result table"),
        ("garbage\nmore garbage 12 34\n", "no '#bytes #iterations' result table"),
        (HEADER_BLOCK.format(title="RDMA_Write BW Test", qps=1), "no '#bytes #iterations' result table"),
        (HEADER_BLOCK.format(title="RDMA_Write BW Test", qps=1) + BW_HEADER_MB, "header but no result rows"),
        (HEADER_BLOCK.format(title="RDMA_Write BW Test", qps=1) + BW_HEADER_MB + DASHES, "header but no result rows"),
        # cut inside the last column: 4 of 5 columns left
        (BW_HEADER_MB + " 65536      664644           0.00               11200.50\t\t", r"4 columns, the header 5"),
        # cut inside a number: %.6f left with 3 digits
        (BW_HEADER_MB + " 65536      664644           0.00               11200.50\t\t     0.179", "MsgRate '0.179'"),
        (LAT[: LAT.index(LAT_ROW_4096)] + LAT_ROW_4096[:40], "has 4 columns, the header 9"),
        (BW_HEADER_MB + " 65536      664644           0.00               -11200.50\t\t     0.179208\n", "negative"),
        (BW_HEADER_MB + " 65536      664644           0.00               inf\t\t     0.179208\n", "'inf'"),
        (LAT_HEADER.replace("usec", "cycles") + " 2 1000 1.05 4.50 1.08 1.09 0.05 1.20 4.50\n", "CPU cycles"),
        (" #bytes        #iterations       t_avg[usec]    tps average\n 2  4512345  1.11  450123.45\n", "-D run"),
        (" #bytes     #iterations    BW peak[furlongs]    BW average[furlongs]\n 2 5 1.00 1.00\n", "unknown perftest"),
        (" #bytes     #iterations    Speed[MB/sec]\n", "unknown perftest column"),
    ],
)
def test_bad_input_raises_value_error_saying_what(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_text(text)


def test_other_tools_output_is_refused() -> None:
    nccl = (FIXTURES / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt").read_text()
    iperf_text = (FIXTURES / "iperf3" / "iperf3_tcp_P3_client_loopback_sum.txt").read_text()
    for text in (nccl, iperf_text):
        with pytest.raises(ValueError, match="not perftest output"):
            parse_text(text)


# ----------------------------------------------------------------------------------------------- recognition


def test_looks_like_tells_perftest_from_other_tools() -> None:
    assert all(looks_like(p.read_text()) for p in CASES) and len(CASES) == 2
    assert looks_like(SERVER_MB) and looks_like(LAT)
    # The header block alone (a run that failed before its table) is still perftest's.
    assert looks_like(HEADER_BLOCK.format(title="RDMA_Write BW Test", qps=1))
    others = [
        FIXTURES / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt",
        *sorted((FIXTURES / "iperf3").glob("*.txt")),
    ]
    assert len(others) == 6
    for path in others:
        assert not looks_like(path.read_text()), path.name
    assert not looks_like("") and not looks_like("hello\nworld\n")
    # and iperf3's recogniser does not claim perftest output
    assert all(iperf3.looks_like(p.read_text()) is None for p in CASES)
