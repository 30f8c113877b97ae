"""nccl-tests output as the bench reads it: seven real logs (several versions, clusters and launchers), then the
layouts and accidents the real logs do not show, written the way nccl-tests `src/util.cu` prints them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.tools.nccl_tests import (
    Measurement,
    NcclTestsResult,
    busbw_factor,
    looks_like,
    parse_json,
    parse_text,
)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "nccl_tests"
CASES = sorted(REAL.glob("*.txt"))
# Every key a sidecar's `expect` may hold is checked below; a new key fails here instead of being skipped.
CHECKED_KEYS = {
    "collective",
    "n_rows",
    "has_root_column",
    "avg_bus_bandwidth_GBps",
    "out_of_bounds",
    "rows",
    "nranks",
    "network",
    "using_network_line",
    "transport_examples",
    "gdrdma",
    "nccl_tests_version",
    "nccl_headers",
    "nccl_library",
}


def _expect(path: Path) -> dict[str, Any]:
    expect: dict[str, Any] = json.loads(path.with_suffix(".json").read_text())["expect"]
    return expect


def _decoded(code: int) -> str:
    """NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch."""
    return f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def _placements(result: NcclTestsResult) -> list[Measurement]:
    return [m for row in result.rows for m in (row.out_of_place, row.in_place) if m is not None]


def _busbw_matches(m: Measurement, factor: float) -> bool:
    """busbw = algbw x factor, both printed with two decimals (values under 1000 GB/s)."""
    return abs(m.busbw_GBps - m.algbw_GBps * factor) <= 0.005 * (1 + factor) + 1e-9


# --- the real logs ----------------------------------------------------------------------------------------------------


def test_all_seven_real_logs_and_their_sidecars_are_covered() -> None:
    assert len(CASES) == 7
    assert all(path.with_suffix(".json").is_file() for path in CASES)
    assert all(set(_expect(path)) <= CHECKED_KEYS for path in CASES)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_real_logs_give_what_a_person_reads(path: Path) -> None:
    expect = _expect(path)
    text = path.read_text()
    result = parse_text(text)
    assert looks_like(text)
    assert result.collective == expect["collective"]
    assert len(result.rows) == expect["n_rows"] == len(expect["rows"])
    assert all((row.root is not None) == expect["has_root_column"] for row in result.rows)
    assert result.avg_busbw_GBps == pytest.approx(expect["avg_bus_bandwidth_GBps"])
    assert result.complete is True
    count, verdict = expect["out_of_bounds"].split()
    assert (result.out_of_bounds, verdict) == (int(count), "OK")
    for row, want in zip(result.rows, expect["rows"], strict=True):
        assert row.in_place is not None
        assert row.size_bytes == want["size"]
        assert row.out_of_place.time_us == pytest.approx(want["oop_time_us"])
        assert row.in_place.time_us == pytest.approx(want["ip_time_us"])
        assert row.out_of_place.algbw_GBps == pytest.approx(want["oop_algbw"])
        assert row.in_place.algbw_GBps == pytest.approx(want["ip_algbw"])
        assert row.out_of_place.busbw_GBps == pytest.approx(want["oop_busbw"])
        assert row.in_place.busbw_GBps == pytest.approx(want["ip_busbw"])
        if expect["has_root_column"]:  # `#wrong`: a count of wrong elements
            assert (row.out_of_place.wrong, row.in_place.wrong) == (want["oop_wrong"], want["ip_wrong"])
            assert row.out_of_place.max_error is None
        else:  # the old `error` column: the largest error, a float
            assert (row.out_of_place.wrong, row.in_place.wrong) == (None, None)
            assert row.out_of_place.max_error == pytest.approx(want["oop_wrong"])
            assert row.in_place.max_error == pytest.approx(want["ip_wrong"])
    if "nranks" in expect:
        assert result.ranks == expect["nranks"]
    if "nccl_tests_version" in expect:
        assert result.version == expect["nccl_tests_version"]
        # The header's two codes agree here; only the library's (what ran) is kept.
        assert expect["nccl_headers"] == expect["nccl_library"]
        assert result.nccl_version == _decoded(expect["nccl_library"])
    if "network" in expect:
        assert result.transport == "NET/" + expect["network"].split(" (")[0]
        assert result.gdr is expect["gdrdma"]
        assert expect["using_network_line"] in text
        assert all(example in text for example in expect["transport_examples"])
        assert f"via {result.transport}/" in expect["transport_examples"][0]
    else:
        assert (result.transport, result.gdr) == (None, None)  # no NCCL INFO lines in these logs


def test_what_each_real_log_says_beyond_its_sidecar() -> None:
    by_name = {path.stem: parse_text(path.read_text()) for path in CASES}
    p4d = by_name["all_reduce_2node_16gpu_p4d_efa_debug_info_mpi_tagged"]
    assert (p4d.version, p4d.nccl_version) == ("2.9.9+cuda11.2", "2.9.9+cuda11.2")
    assert p4d.rows[0].redop == "sum" and p4d.rows[0].type == "float" and p4d.rows[0].count == 2
    a3mega = by_name["all_reduce_2node_16gpu_h100_a3mega"]
    assert (a3mega.version, a3mega.nccl_version) == (None, None)
    assert a3mega.rows[-1].out_of_place.time_us == 47535.0  # >= 10000 us printed as an integer
    # The GB200 excerpt keeps only the last device line: rank 1439 of 0..1439.
    assert by_name["all_reduce_gb200_20racks_1440gpu_coreweave_partial_header"].ranks == 1440
    gb200 = by_name["all_reduce_gb200_20racks_1440gpu_coreweave_partial_header"].rows[-1]
    assert gb200.size_bytes == 17179869184 and gb200.count == 4294967296
    # The SHARP excerpt has no device lines, so no rank count (see the busbw test for what its numbers imply).
    assert by_name["all_reduce_h100_64gpu_sharp_k8s_coreweave_partial_header"].ranks is None
    assert by_name["all_reduce_2node_gh200_sarus_v2.18.2"].rows[0].out_of_place.time_us == 339.61


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_real_rows_agree_with_the_busbw_and_algbw_definitions(path: Path) -> None:
    result = parse_text(path.read_text())
    assert result.collective == "all_reduce" and result.avg_busbw_GBps is not None
    placements = _placements(result)
    assert len(placements) == 2 * len(result.rows) > 0
    # all_reduce algbw = size / time (GB/s from bytes and us); time has 1 decimal under 10000 us, 0 above at worst.
    for row in result.rows:
        for m in (row.out_of_place, row.in_place):
            assert m is not None
            expected = row.size_bytes / (m.time_us * 1e3)
            time_rounding = 0.5 if m.time_us >= 10000 else 0.05
            assert abs(m.algbw_GBps - expected) <= 0.005 + expected * time_rounding / m.time_us
    # The footer is the mean busbw over every size and both placements.
    mean = sum(m.busbw_GBps for m in placements) / len(placements)
    assert abs(mean - result.avg_busbw_GBps) <= 0.005
    if result.ranks is not None:
        factor = busbw_factor("all_reduce", result.ranks)
        assert all(_busbw_matches(m, factor) for m in placements)
    else:
        # Only the SHARP excerpt: its busbw/algbw fits one rank count, 96 (12 nodes of 8), not the 64 in its name.
        fits = [n for n in range(2, 4097) if all(_busbw_matches(m, busbw_factor("all_reduce", n)) for m in placements)]
        assert fits == [96]


# --- busbw factors ----------------------------------------------------------------------------------------------------


def test_busbw_factor_follows_nccl_tests() -> None:
    assert busbw_factor("all_reduce", 16) == 2 * 15 / 16
    assert busbw_factor("all_reduce", 2) == 1.0
    assert busbw_factor("all_reduce", 1) == 0.0
    for name in ("all_gather", "reduce_scatter", "alltoall", "alltoallv", "gather", "scatter"):
        assert busbw_factor(name, 8) == 7 / 8
    for name in ("broadcast", "reduce", "sendrecv", "hypercube"):
        assert busbw_factor(name, 8) == 1.0
    assert busbw_factor("all_reduce_perf", 4) == 1.5  # the binary name works too
    with pytest.raises(ValueError, match="unknown nccl-tests collective"):
        busbw_factor("allreduce_ring", 4)
    with pytest.raises(ValueError, match="at least one rank"):
        busbw_factor("all_reduce", 0)


# --- layouts and accidents the real logs do not show ------------------------------------------------------------------

HEADER = """\
# nccl-tests version 2.17.6 nccl-headers=22809 nccl-library=22809
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 \
validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4242 on    spark-1 device  0 [000f:01:00] NVIDIA GB10
#  Rank  1 Group  0 Pid   4343 on    spark-2 device  0 [000f:01:00] NVIDIA GB10
"""


def _c_header(per_iter: bool = False, timestamps: bool = False) -> str:
    """writeResultHeader() of nccl-tests 2.19 (src/util.cu), trailing blanks and all."""
    pad, label, fmt = (19, "timestamp", "%Y-%m-%d %H:%M:%S") if timestamps else (0, "", "")
    lead = "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}"
    if per_iter:
        names = ["time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%"] * 2
        units = ["(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)"] * 2
        shape = lead + "  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7}" * 2 + " {:>{}}\n"
        title = "              out-of-place (+ per-iteration)                                in-place (+ per-iteration)"
    else:
        names = ["time", "algbw", "busbw", "#wrong"] * 2
        units = ["(us)", "(GB/s)", "(GB/s)", ""] * 2
        shape = lead + "  {:>7}  {:>6}  {:>6}  {:>6}" * 2 + " {:>{}}\n"
        title = "           out-of-place                       in-place          "
    return (
        "#\n"
        + lead.format("", "", "", "", "")
        + title
        + "\n"
        + shape.format("size", "count", "type", "redop", "root", *names, label, pad)
        + shape.format("(B)", "(elements)", "", "", "", *units, fmt, pad)
    )


def _c_row(size: int, count: int, kind: str, redop: str, root: int, *halves: tuple[str, ...]) -> str:
    """writeBenchmarkLinePreamble() then writeBenchmarkLineBody() per placement (src/util.cu)."""
    line = f"{size:12d}  {count:12d}  {kind:>8}  {redop:>6}  {root:6d}"
    for time, algbw, busbw, wrong, *per_iter in halves:
        line += f"  {time:>7}  {algbw:>6}  {busbw:>6}  {wrong:>6}"
        line += "".join(f"  {value:>7}" for value in per_iter)
    return line


COLUMNS = _c_header()
ROW_1M = _c_row(
    1048576, 131072, "float", "none", -1, ("100.00", "10.49", "5.24", "0"), ("100.00", "10.49", "5.24", "0")
)
ROW_2M = _c_row(
    2097152, 262144, "float", "none", -1, ("190.00", "11.04", "5.52", "0"), ("190.00", "11.04", "5.52", "0")
)
FOOTER = (
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 5.38 \n"
    "#\n"
    "# Collective test concluded: all_gather_perf\n"
    "#\n"
)
INFO_INIT = """\
spark-1:4242:4242 [0] NCCL INFO NCCL version 2.28.9+cuda13.0
spark-1:4242:4260 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [RO]; OOB enp1s0f1np1:192.168.100.1<0>
spark-1:4242:4260 [0] NCCL INFO Using network IB
spark-1:4242:4260 [0] NCCL INFO ncclCommInitRankConfig comm 0x55d0c0 rank 0 nranks 2 cudaDev 0 busId f01000 - Init START
spark-2:4343:4361 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0/GDRDMA
spark-1:4242:4261 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0(1)/GDRDMA
"""
INFO_LATE = "spark-1:4242:4242 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n"
PLAIN = HEADER + COLUMNS + ROW_1M + "\n" + ROW_2M + "\n" + FOOTER


def test_a_plain_all_gather_run() -> None:
    result = parse_text(PLAIN)
    assert (result.collective, result.ranks, result.complete) == ("all_gather", 2, True)
    assert (result.version, result.nccl_version) == ("2.17.6", "2.28.9")
    assert (result.transport, result.gdr, result.out_of_bounds) == (None, None, 0)
    first = result.rows[0]
    assert (first.size_bytes, first.count, first.type) == (1048576, 131072, "float")
    assert (first.redop, first.root) == ("none", -1)
    assert first.out_of_place == Measurement(100.0, 10.49, 5.24, 0) == first.in_place
    factor = busbw_factor("all_gather", 2)
    assert all(_busbw_matches(m, factor) for m in _placements(result))
    assert result.avg_busbw_GBps == 5.38


def test_info_lines_mixed_in_give_the_transport_and_gdr() -> None:
    text = HEADER + INFO_INIT + COLUMNS + INFO_LATE + ROW_1M + "\n" + INFO_LATE + ROW_2M + "\n" + FOOTER
    result = parse_text(text)
    assert result.rows == parse_text(PLAIN).rows
    assert (result.transport, result.gdr) == ("NET/IB", True)
    assert (result.version, result.nccl_version) == ("2.17.6", "2.28.9+cuda13.0")


def _mpirun_tagged(text: str) -> str:
    """OpenMPI --tag-output: rank 0 prints the table, every rank its own NCCL lines."""
    lines = []
    for line in text.splitlines():
        rank = 1 if line.startswith("spark-2") else 0
        lines.append(f"[1,{rank}]<stdout>:{line}")
    return "\n".join(lines) + "\n"


def test_info_lines_with_mpirun_tags_and_a_socket_fallback() -> None:
    socket_init = INFO_INIT.replace("Using network IB", "Using network Socket")
    socket_init = socket_init.replace("NET/IB/0/GDRDMA", "NET/Socket/0").replace("NET/IB/0(1)/GDRDMA", "NET/Socket/1")
    text = _mpirun_tagged(HEADER + socket_init + COLUMNS + INFO_LATE + ROW_1M + "\n" + ROW_2M + "\n" + FOOTER)
    assert text.startswith("[1,0]<stdout>:# nccl-tests version")
    result = parse_text(text)
    assert result.rows == parse_text(PLAIN).rows and result.ranks == 2 and result.complete
    assert (result.transport, result.gdr) == ("NET/Socket", False)


def test_a_network_plugin_keeps_its_name_and_intra_node_runs_name_p2p() -> None:
    plugin = INFO_INIT.replace("NET/IB/0/GDRDMA", "NET/IBext_v8/0/GDRDMA").replace("NET/IB/0(1)", "NET/IBext_v8/1")
    assert parse_text(HEADER + plugin + COLUMNS + ROW_1M + "\n").transport == "NET/IBext_v8"
    one_node = (
        "host:1:2 [0] NCCL INFO Using network IB\n"
        "host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
        "host:1:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read\n"
    )
    result = parse_text(HEADER + one_node + COLUMNS + ROW_1M + "\n")
    assert (result.transport, result.gdr) == ("P2P/CUMEM", None)  # no network channel: GDR does not apply
    only_init = "host:1:2 [0] NCCL INFO Using network Socket\n"
    assert (parse_text(HEADER + only_init).transport, parse_text(HEADER + only_init).gdr) == ("NET/Socket", None)


def test_the_old_format_has_no_root_and_prints_the_largest_error() -> None:
    old = (
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 \n"
        "#\n"
        "# Using devices\n"
        "#   Rank  0 Pid  12345 on      dgx-1 device  0 [0x07] Tesla V100-SXM2-32GB\n"
        "#   Rank  1 Pid  12345 on      dgx-1 device  1 [0x0a] Tesla V100-SXM2-32GB\n"
        "#\n"
        "#                                                     out-of-place                       in-place          \n"
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"
        "           8             2   float     sum    13.37    0.00    0.00  0e+00    13.21    0.00    0.00  0e+00\n"
        "    16777216       4194304   float     sum    13233   1.27    1.27  5e-07    13430   1.25    1.25    N/A\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 0.63 \n"
    )
    result = parse_text(old)
    assert result.ranks == 2 and result.collective is None  # 2 ranks: all_reduce and sendrecv print alike
    small, large = result.rows
    assert (small.redop, small.root) == ("sum", None)
    assert small.out_of_place == Measurement(13.37, 0.0, 0.0, None, 0.0)
    assert large.out_of_place == Measurement(13233.0, 1.27, 1.27, None, 5e-07)
    assert large.in_place == Measurement(13430.0, 1.25, 1.25, None, None)  # N/A: not checked


def test_the_old_broadcast_printed_root_where_redop_is_now() -> None:
    old = (
        "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "     1048576        262144   float       0    55.02   19.06   19.06  0e+00    54.87   19.11   19.11  0e+00\n"
    )
    row = parse_text(old).rows[0]
    assert (row.redop, row.root, row.out_of_place.busbw_GBps) == (None, 0, 19.06)
    assert parse_text(old).collective == "broadcast"  # no op, a root, one element per count


def test_wrong_as_na_and_as_a_large_count() -> None:
    text = (
        COLUMNS
        + _c_row(
            1048576, 262144, "float", "sum", -1, ("20.35", "51.53", "90.17", "N/A"), ("20.32", "51.60", "90.30", "N/A")
        )
        + "\n"
        + _c_row(
            2097152,
            524288,
            "float",
            "sum",
            -1,
            ("22.07", "95.02", "166.29", "1.23457e+06"),
            ("21.72", "96.55", "168.97", "0"),
        )
        + "\n"
    )
    na, many = parse_text(text).rows
    assert na.out_of_place.wrong is None and na.in_place is not None and na.in_place.wrong is None
    assert na.out_of_place.busbw_GBps == 90.17
    assert many.out_of_place.wrong == 1234570 and many.in_place is not None and many.in_place.wrong == 0
    assert parse_text(text).collective == "all_reduce"  # busbw > algbw: only all_reduce does that


def test_a_header_only_file_is_incomplete_with_no_rows() -> None:
    for text in (HEADER, HEADER + INFO_INIT + COLUMNS):
        result = parse_text(text)
        assert result.rows == () and result.complete is False and result.avg_busbw_GBps is None
        assert (result.collective, result.ranks) == ("all_gather", 2)


def test_a_table_cut_mid_line() -> None:
    # Cut inside the out-of-place half: the row is dropped, the rows before it stay.
    inside_out_of_place = HEADER + COLUMNS + ROW_1M + "\n" + ROW_2M[:68]
    assert inside_out_of_place.endswith("   190.00   11.0")
    result = parse_text(inside_out_of_place)
    assert [row.size_bytes for row in result.rows] == [1048576] and result.complete is False
    # Cut inside the in-place half: the out-of-place half is whole, the in-place one is None.
    inside_in_place = HEADER + COLUMNS + ROW_1M + "\n" + ROW_2M[:-12]
    last = parse_text(inside_in_place).rows[-1]
    assert last.out_of_place == Measurement(190.0, 11.04, 5.52, 0) and last.in_place is None
    # The last value of an unterminated last line may have lost digits (5.52 -> 5.5): it is not trusted.
    assert parse_text(HEADER + COLUMNS + ROW_2M[:-9]).rows[-1].in_place is None
    # A line that stops and is followed by something else.
    stopped = HEADER + COLUMNS + ROW_2M[:-33] + "\n" + "srun: error: spark-2: task 1: Killed\n"
    assert parse_text(stopped).rows[-1].in_place is None
    # A cut footer: the average may have lost digits, so it is not taken and the run is incomplete.
    cut_footer = PLAIN[: PLAIN.index("5.38") + 3]
    assert parse_text(cut_footer).avg_busbw_GBps is None and parse_text(cut_footer).complete is False
    assert len(parse_text(cut_footer).rows) == 2


def test_garbage_is_refused_with_its_line_number() -> None:
    with pytest.raises(ValueError, match=r"^not nccl-tests output: line 1 \('Connecting to host 10.0.0.2"):
        parse_text("Connecting to host 10.0.0.2, port 5201\n[  5] local 10.0.0.1 port 40000\n")
    with pytest.raises(ValueError, match=r"line 3 \('garbage'\)"):
        parse_text("\n   \ngarbage\n")
    with pytest.raises(ValueError, match="line 1: the text is empty"):
        parse_text("")
    with pytest.raises(ValueError, match="line 1"):  # NCCL's own lines are not nccl-tests output
        parse_text(INFO_INIT)
    assert not looks_like("hello\nworld\n") and not looks_like("") and looks_like(PLAIN)
    with pytest.raises(ValueError) as refused:
        parse_text("x\ny\n")
    assert "\n" not in str(refused.value)  # one line


def test_sendrecv_hypercube_and_reduce_rows() -> None:
    half = ("686.50", "48.88", "48.88", "0")
    sendrecv = (
        "# Collective test starting: sendrecv_perf\n"
        + COLUMNS
        + _c_row(33554432, 8388608, "float", "none", -1, half, half)
        + "\n"
    )
    row = parse_text(sendrecv).rows[0]
    assert parse_text(sendrecv).collective == "sendrecv" and (row.redop, row.root) == ("none", -1)
    assert _busbw_matches(row.out_of_place, busbw_factor("sendrecv", 8))
    # hypercube prints an empty redop: one token fewer than the header.
    hypercube = _c_row(
        1048576, 262144, "float", "", -1, ("60.00", "52.43", "52.43", "0"), ("60.00", "52.43", "52.43", "0")
    )
    assert len(hypercube.split()) == 12
    cube = parse_text("# Collective test starting: hypercube_perf\n" + COLUMNS + hypercube + "\n").rows[0]
    assert (cube.redop, cube.root, cube.in_place) == (None, -1, Measurement(60.0, 52.43, 52.43, 0))
    reduce_row = _c_row(
        1048576, 262144, "float", "sum", 0, ("30.00", "34.95", "34.95", "0"), ("30.00", "34.95", "34.95", "0")
    )
    assert parse_text(COLUMNS + reduce_row).collective == "reduce"


def test_per_iteration_columns_and_timestamps_are_skipped_over() -> None:
    half = ("344.50", "24.35", "42.61", "0")
    with_per_iter = (*half, "340.10", "351.00", "350.90", "0.84")
    stamp = f"{'2026-07-09 10:00:00':>21}"  # writeTimestamp() after the in-place half
    for header, row in (
        (_c_header(per_iter=True), _c_row(8388608, 2097152, "float", "sum", -1, with_per_iter, with_per_iter)),
        (_c_header(timestamps=True), _c_row(8388608, 2097152, "float", "sum", -1, half, half) + stamp),
    ):
        assert "i_cv%" in header or "timestamp" in header
        parsed = parse_text(header + row + "\n").rows[0]
        assert parsed.out_of_place == parsed.in_place == Measurement(344.5, 24.35, 42.61, 0)


def test_split_groups_slurm_labels_and_the_first_nccl_tests() -> None:
    split = (
        "#  Rank  0 Group  0 Pid   1000 on     node-1 device  0 [0000:01:00] NVIDIA H100\n"
        "#  Rank  1 Group  1 Pid   1001 on     node-1 device  1 [0000:02:00] NVIDIA H100\n"
        "#  Rank  2 Group  0 Pid   2000 on     node-2 device  0 [0000:01:00] NVIDIA H100\n"
        "#  Rank  3 Group  1 Pid   2001 on     node-2 device  1 [0000:02:00] NVIDIA H100\n"
    )
    assert parse_text(split).ranks == 2  # NCCL_TESTS_SPLIT: each group is its own communicator
    labelled = "".join(f"0: {line}\n" for line in PLAIN.splitlines())
    assert parse_text(labelled).rows == parse_text(PLAIN).rows
    # nccl-tests 1.x: `bytes N type op`, time in milliseconds, no units line.
    v1 = (
        "#        bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"
        "     1048576        262144   float     sum    0.100  10.49  15.73    0e+00    0.101  10.38  15.57    0e+00\n"
    )
    row = parse_text(v1).rows[0]
    assert row.out_of_place == Measurement(100.0, 10.49, 15.73, None, 0.0) and row.redop == "sum"


# --- the -J JSON file: no real one was found, so this one is written as src/util.cu writes it -------------------------

JSON_RUN = (
    '{"version":3,"start_time":"2026-07-09 10:00:00","args":["/opt/nccl-tests/build/all_reduce_perf","-b","1M",'
    '"-e","2M","-f","2","-g","2","-J","run.json"],"env":["NCCL_DEBUG=WARN"],"nccl_version":22809,'
    '"config":{"nthreads":1,"ngpus":2,"minimum_bytes":1048576,"maximum_bytes":2097152,"step_factor":2,'
    '"warmup_iters":1,"iterations":20,"aggregated_iterations":1,"validation":1,"graph":0,'
    '"blocking_collectives":"false","per_iter_timing":"false","per_iter_skip":0,"parallel_init":"false",'
    '"devices":[{"rank":0,"group":0,"pid":4242,"hostname":"spark-1","device":0,"device_hex":"000f:01:00",'
    '"device_info":"NVIDIA GB10"},{"rank":2,"group":0,"pid":4343,"hostname":"spark-2","device":0,'
    '"device_hex":"000f:01:00","device_info":"NVIDIA GB10"}]},'
    '"results":[{"size":1048576,"count":262144,"type":"float","redop":"sum","root":"    -1",'
    '"out_of_place":{"time":100.000000,"alg_bw":10.485760,"bus_bw":15.728640,"nwrong":0.000000},'
    '"in_place":{"time":101.000000,"alg_bw":10.381941,"bus_bw":15.572911,"nwrong":null},'
    '"actual_iterations":20,"experiment_name":""}],'
    '"out_of_bounds":{"count":0,"okay":"true"},"average_bus_bandwidth":{"bandwidth":15.650776,"okay":"unchecked"},'
    '"errors":[],"end_time":"2026-07-09 10:00:05"}'
)


def test_the_json_file() -> None:
    result = parse_json(JSON_RUN)
    assert (result.collective, result.ranks, result.complete, result.out_of_bounds) == ("all_reduce", 4, True, 0)
    assert (result.version, result.nccl_version, result.transport, result.gdr) == ("2.28.9", "2.28.9", None, None)
    assert result.avg_busbw_GBps == pytest.approx(15.650776)
    row = result.rows[0]
    assert (row.size_bytes, row.count, row.type, row.redop, row.root) == (1048576, 262144, "float", "sum", -1)
    assert row.out_of_place == Measurement(100.0, 10.48576, 15.72864, 0)
    assert row.in_place == Measurement(101.0, 10.381941, 15.572911, None)
    assert _busbw_matches(row.out_of_place, busbw_factor("all_reduce", result.ranks or 0))
    # nccl-tests 2.17 spelled the footer `average_bus_bandwidith` / `bandwidith`.
    typo = JSON_RUN.replace('"average_bus_bandwidth":{"bandwidth"', '"average_bus_bandwidith":{"bandwidith"')
    assert parse_json(typo).avg_busbw_GBps == pytest.approx(15.650776)
    with pytest.raises(ValueError, match="not nccl-tests JSON"):
        parse_json(JSON_RUN[:500])  # a killed run leaves the file unfinished
    with pytest.raises(ValueError, match="not nccl-tests JSON"):
        parse_json('{"start": {}, "end": {}}')
    assert not looks_like(JSON_RUN)  # looks_like speaks for parse_text, the stdout reader


@pytest.mark.parametrize(
    "doc",
    [
        {"nccl_version": 22809, "results": True},
        {"nccl_version": 22809, "results": {"size": 8}},
        {"config": {"devices": 3}, "results": []},
        {"config": {}, "args": {"0": "all_reduce_perf"}},
    ],
)
def test_json_of_another_layout_is_a_value_error_not_a_crash(doc: dict[str, Any]) -> None:
    """Valid JSON that is not the -J layout must fail the way every other bad input does."""
    try:
        result = parse_json(json.dumps(doc))
    except ValueError as exc:
        assert "nccl-tests JSON" in str(exc)
    else:
        assert result.rows == ()


DEVICE = REAL.parent / "nccl_tests_device"
ONE_GPU_ALLTOALL = DEVICE / "alltoall_1gpu_h100_v2.19.6.txt"


def test_a_one_gpu_alltoall_keeps_its_sound_rows_and_names_the_in_place_figures_no_link_carries() -> None:
    """A real run on one H100 (fixture README): the in-place case moves nothing, so nccl-tests divides up to 1 GiB
    by half a microsecond and prints 20253 GB/s up to `2e+06`. The table stands; those figures are named."""
    result = parse_text(ONE_GPU_ALLTOALL.read_text())
    assert (result.collective, result.ranks, len(result.rows), result.complete) == ("alltoall", 1, 28, True)
    assert result.avg_busbw_GBps == 0.0
    kept = {row.size_bytes: row for row in result.rows}
    assert kept[2097152].in_place == Measurement(0.43, 4881.1, 0.0, None)  # below every ceiling: kept as printed
    assert kept[1073741824].out_of_place == Measurement(708.03, 1516.5, 0.0, 0)
    assert [row.size_bytes for row in result.rows if row.in_place is None] == [4194304 << i for i in range(9)]
    assert len(result.implausible) == 9
    assert result.implausible[0] == (
        "line 30: in-place algbw 20253 GB/s is above 12500 GB/s: 4194304 B in 0.21 us, too short for anything to "
        "cross a link; on one rank the in-place case moves no data; its in-place figures are left out"
    )
    assert result.implausible[-1].startswith("line 38: in-place algbw 2e+06 GB/s is above 12500 GB/s: 1073741824 B")
    from_json = parse_json((DEVICE / "alltoall_1gpu_h100_v2.19.6.nccl-tests.json").read_text())
    assert (from_json.ranks, len(from_json.rows), from_json.avg_busbw_GBps) == (1, 28, 0.0)
    assert from_json.implausible[0].startswith("nccl-tests JSON results[20]: in-place algbw 29820.9 GB/s is above")


def test_a_figure_out_of_step_with_its_own_size_and_time_still_refuses_the_whole_output() -> None:
    """43046 GB/s where the row's 4194304 B took 6.07 us is no division nccl-tests made: damage, not a fast case."""
    damaged = ONE_GPU_ALLTOALL.read_text().replace("    0.21   20253    0.00", "    6.07   43046    0.00", 1)
    with pytest.raises(ValueError, match=r"^line 30: in-place algbw is 43046 GB/s, above 12500 GB/s: untrustworthy"):
        parse_text(damaged)
    lone = next(line for line in ONE_GPU_ALLTOALL.read_text().splitlines() if line.split()[0] == "4194304")
    with pytest.raises(ValueError, match=r"^line 1: out-of-place algbw 20253 GB/s .*; no row is left: untrustworthy"):
        parse_text(lone.replace("6.07  691.22", "0.21   20253") + "\n")  # no placement stands: nothing to show
