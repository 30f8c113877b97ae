"""Every figure with its spread (issue 37): taken from the run's own data (iperf3's per-second intervals, sockperf's
quartiles, nccl-tests' neighbouring sizes), and a before/after change claimed only when it exceeds both phases'
spread; `compare` holds its figures to the same rule."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.records.compare import compare_runs
from wirespeed.core.records.options import RunOptions
from wirespeed.core.records.results import (
    Ceiling,
    CollectiveSummary,
    Direction,
    Flow,
    FlowResult,
    Latency,
    RungResult,
    RungStatus,
    SizeFigures,
)
from wirespeed.core.records.run import NodeRef, PhaseRow, Run, RunRecord, RunStatus, phase_rows, takeaway
from wirespeed.core.records.spread import INTERVALS, NOISE, QUARTILES, SIZES, Spread, is_change, rung_spread
from wirespeed.core.tools import iperf3, sockperf
from wirespeed.engine.rundir import RunDirectory
from wirespeed.ui import takeaway as words

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "iperf3"
FLOW = Flow(("n1", "enp1s0f0np0"), ("n2", "enp1s0f0np0"), "198.19.0.1", "198.19.0.2", 1.0)


def tcp(gbps: float, seconds: tuple[float, ...], phase: str, ceiling: str = "wire") -> RungResult:
    flow = FlowResult(FLOW, Direction.FORWARD, gbps, intervals_gbps=seconds)
    return RungResult("tcp-single", RungStatus.RAN, flows=(flow,), ceiling=Ceiling(ceiling, (f"{gbps} Gb/s",)),
                      phase=phase)  # fmt: skip


def lat(p50: float, p25: float, p75: float, phase: str) -> RungResult:
    half = Latency(FLOW, "sockperf", 64, p50, p99_us=p75 * 2, samples=1000, p25_us=p25, p75_us=p75)
    return RungResult("tcp-lat", RungStatus.RAN, latency=(half,), phase=phase)


def pair(before: RungResult, after: RungResult) -> PhaseRow:
    [row] = phase_rows(Run("r", None, rungs=(before, after)))
    return row


def test_a_spread_comes_from_a_real_iperf3_interval_list() -> None:
    text = (REAL / "iperf3_json_tcp_1stream_v3.9_gcp_to_ibm_omit3.txt").read_text()
    [result] = iperf3.flow_results(FLOW, text, None)
    # -O 3: the three warm-up seconds are not the figure's, and not its spread's either
    assert len(result.intervals_gbps) == 10
    assert result.intervals_gbps[0] == pytest.approx(0.147, abs=0.001)
    spread = rung_spread(RungResult("tcp-single", RungStatus.RAN, flows=(result,)))
    assert spread is not None and spread.method == INTERVALS and spread.samples == 10
    assert spread.low == pytest.approx(0.084, abs=0.001) and spread.high == pytest.approx(0.158, abs=0.001)
    assert spread.low <= (result.tool_gbps or 0) <= spread.high  # the receiver's figure, 0.130, lies inside


def test_flows_that_run_at_once_add_up_second_by_second() -> None:
    a = FlowResult(FLOW, Direction.FORWARD, 1.0, intervals_gbps=(1.0, 1.1, 0.9))
    b = FlowResult(FLOW, Direction.FORWARD, 1.0, intervals_gbps=(1.0, 0.8, 1.2, 5.0))  # a longer tail is not summed
    spread = rung_spread(RungResult("tcp-halves", RungStatus.RAN, flows=(a, b)))
    assert spread is not None and (spread.low, spread.high, spread.samples) == pytest.approx((1.9, 2.1, 3))
    b = FlowResult(FLOW, Direction.FORWARD, 1.3, intervals_gbps=(1.0, 0.8, 1.2))
    spread = rung_spread(RungResult("tcp-halves", RungStatus.RAN, flows=(a, b)))
    assert spread is not None and spread.high == pytest.approx(2.3)  # the figure outside: the range holds it
    wide = rung_spread(RungResult("tcp-halves", RungStatus.RAN, flows=(a, FlowResult(FLOW, Direction.FORWARD, 0.1))))
    assert wide is None  # a flow without intervals: no spread rather than half of one


def test_overlapping_spreads_are_within_noise() -> None:
    # the tcp-lat: p50 27.6 -> 16.0 us on a busy machine, nothing changed that could move it
    row = pair(lat(27.6, 14.0, 41.0, "before"), lat(16.0, 11.0, 30.0, "after"))
    assert round(row.change_percent or 0) == -42 and row.changed is False
    assert words.change_text(row) == NOISE
    assert row.to_json()["within_noise"] is True
    assert row.after is not None and row.after.spread is not None and row.after.spread.method == QUARTILES
    tcp_row = pair(tcp(9.0, (8.5, 9.6, 9.2), "before", "cpu"), tcp(9.3, (8.9, 9.8, 9.1), "after"))
    assert words.change_text(tcp_row) == NOISE
    # the ceiling flipped (cpu -> wire) on noise alone: not a change either, and the note says so
    assert not tcp_row.ceiling_moved and words.ceiling_text(tcp_row) == "wire"
    [cells], [note] = words.final_rows([tcp_row])
    assert cells[3] == NOISE and cells[4] == "wire [1]" and f"before: cpu, with the figure {NOISE}" in note


def test_separated_spreads_are_a_change() -> None:
    row = pair(tcp(0.99, (0.95, 1.0, 0.98), "before", "half-port"), tcp(1.97, (1.9, 2.0, 1.96), "after"))
    assert row.changed is True and words.change_text(row) == "+99%"
    assert row.ceiling_moved and words.ceiling_text(row) == "half-port -> wire"
    cells = dict(zip(words.PHASE_COLUMNS, words.phase_cells(row), strict=True))
    assert cells["before"] == "0.99 Gb/s (0.95-1.00)" and cells["after"] == "1.97 Gb/s (1.90-2.00)"
    # apart, but by less than one phase's own spread: still noise
    assert is_change(10.0, 10.5, Spread(9.9, 10.1, INTERVALS, 4), Spread(10.2, 11.0, INTERVALS, 4)) is False
    assert is_change(10.0, 12.0, Spread(9.9, 10.1, INTERVALS, 4), None) is None
    # two steady runs on a shaped link: ranges apart and narrow, but 1% is no change one run of each can show
    assert is_change(0.99, 0.98, Spread(0.985, 0.99, INTERVALS, 4), Spread(0.978, 0.982, INTERVALS, 4)) is False
    assert is_change(0.99, 0.90, Spread(0.985, 0.99, INTERVALS, 4), Spread(0.898, 0.902, INTERVALS, 4)) is True


def test_a_figure_without_spread_shows_its_change_as_measured() -> None:
    before, after = tcp(1.0, (), "before"), tcp(2.0, (), "after")
    row = pair(before, after)
    assert row.changed is None and words.change_text(row) == "+100%"
    assert words.spread_notes([row])[0].startswith("spread: none recorded")


def test_nccl_spread_is_the_peak_and_its_neighbouring_sizes() -> None:
    rows = tuple(SizeFigures(size, 1.0, busbw, 10.0) for size, busbw in ((1 << 20, 0.5), (1 << 21, 1.2),
                                                                        (1 << 22, 1.4), (1 << 23, 1.3)))  # fmt: skip
    summary = CollectiveSummary("all_reduce", 2, rows, 1.0, "NET/Socket", None)
    spread = rung_spread(RungResult("nccl", RungStatus.RAN, collective=summary))
    assert spread is not None and spread.method == SIZES
    assert (spread.low, spread.high) == pytest.approx((1.2 * 8, 1.4 * 8))


def test_records_keep_the_raw_data_and_old_records_still_load() -> None:
    rung = tcp(9.3, (8.9, 9.8, 9.1), "after")
    rung = RungResult(rung.rung, rung.status, flows=rung.flows, latency=lat(16.0, 11.0, 30.0, "after").latency)
    again = RungResult.from_json(json.loads(json.dumps(rung.to_json())), "after/tcp-single.json")
    assert again == rung
    old = rung.to_json()
    for flow in old["flows"]:
        del flow["intervals_gbps"]
    for half in old["latency"]:
        del half["p25_us"], half["p75_us"]
    read = RungResult.from_json(old, "old.json")
    assert read.flows[0].intervals_gbps == () and read.latency[0].p25_us is None and rung_spread(read) is None
    damaged = rung.to_json()
    damaged["flows"][0]["intervals_gbps"] = [1.0, -5.0]
    with pytest.raises(ValueError, match="negative"):
        RungResult.from_json(damaged, "bad.json")
    assert takeaway([read])[0].spread is None


def test_compare_does_not_call_noise_worse() -> None:
    first = Run("a", None, rungs=(tcp(9.3, (8.9, 9.8, 9.1), "after"),))
    noisy = Run("b", None, rungs=(tcp(8.8, (8.6, 9.4, 9.0), "after"),))
    slower = Run("c", None, rungs=(tcp(5.0, (4.9, 5.1, 5.0), "after"),))
    [change] = [c for c in compare_runs(first, noisy) if c.measure == "forward_gbps"]
    assert change.percent is not None and change.percent < -5 and change.within_noise and not change.worse(5.0)
    [change] = [c for c in compare_runs(first, slower) if c.measure == "forward_gbps"]
    assert not change.within_noise and change.worse(5.0)


def test_a_latency_spread_comes_from_real_sockperf_quartiles() -> None:
    """The tcp-lat rung keeps sockperf's p25 and p75 beside the p50 (engine/rungs/tcp_lat.py passes them on)."""
    text = (REAL.parent / "sockperf" / "pingpong_tcp_v3.7_testbed.txt").read_text()
    x = sockperf.parse(text, message_bytes=64)
    half = Latency(FLOW, sockperf.NAME, 64, x.p50_us, x.p99_us, x.p999_us, x.min_us, x.max_us, x.avg_us,
                   x.observations, p25_us=x.p25_us, p75_us=x.p75_us)  # fmt: skip
    spread = rung_spread(RungResult("tcp-lat", RungStatus.RAN, latency=(half,)))
    assert spread == Spread(4.658, 5.059, QUARTILES, 422647)


def test_the_compare_command_says_within_noise(tmp_path: Path) -> None:
    """`wirespeed compare` over two stored runs: a drop inside both runs' iperf3 seconds is no regression (exit 0),
    and its row and JSON say so."""

    def cli(*argv: str) -> tuple[int, str]:
        env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
        return main(list(argv), env), env.stdout.getvalue()  # type: ignore[attr-defined]

    paths: list[str] = []
    for rung in (tcp(9.3, (8.9, 9.8, 9.1), "x"), tcp(8.8, (8.6, 9.4, 9.0), "x")):
        run_dir = RunDirectory(tmp_path)  # two in one second: the second gets a suffix
        paths.append(str(run_dir.path))
        run_dir.start(RunRecord("0.1.0", ("bench", "tcp-single"), "tcp-single", RunOptions(), "lab",
                                (NodeRef("n1", "a"),), "2026-11-01T00:00:00Z", planned=("tcp-single",)))  # fmt: skip
        run_dir.rung(replace(rung, phase=None))
        run_dir.finish(RunStatus.COMPLETE)
    a, b = paths
    code, out = cli("compare", a, b, "--runs", str(tmp_path), "--json")
    [change] = [c for c in json.loads(out)["changes"] if c["measure"] == "forward_gbps"]
    assert code == 0 and change["within_noise"] is True and change["worse"] is False and change["change_percent"] < -5
    code, out = cli("compare", a, b, "--runs", str(tmp_path))
    assert code == 0 and f"({NOISE})" in out
