"""`commission`'s closing table fits a terminal (issue 37): rung, before, after, change and ceiling at 80 and at 120
columns, no row taller than three lines and nothing cut; each ceiling's why a numbered note wrapped at the width,
interface lists folded (`enp1s0f0np0 +3`); piped output keeps every line whole. Built from a real commission
record, written and read back the way test_commission_record.py does it."""

from __future__ import annotations

import io
import re
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

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
    WireFigures,
)
from wirespeed.core.records.run import NodeRef, Run, RunRecord, RunStatus, Step, StepStatus, headline, phase_rows
from wirespeed.core.records.run import takeaway as takeaway_rows
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.runs import load_run
from wirespeed.ui import render, takeaway

HALVES = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")
NCCL_WHY = (
    f"NCCL used NET/Socket on {', '.join(HALVES)}: TCP through the CPU, peak busbw 1.38 GB/s (11.0 Gb/s per "
    "direction) at 1073741824 B"
)


def flow(i: int) -> Flow:
    return Flow(("spark-1", HALVES[i]), ("spark-2", HALVES[i]), f"169.254.{i}.1", f"169.254.{i}.2", 1.0,
                cable=f"port{i // 2}", cable_rate_gbps=2.0)  # fmt: skip


def tcp(name: str, halves: int, each: float, seconds: tuple[float, ...], ceiling: Ceiling) -> RungResult:
    flows = tuple(FlowResult(flow(i), Direction.FORWARD, each, intervals_gbps=seconds) for i in range(halves))
    peak = each * halves
    wire = WireFigures(peak_tx_gbps={"spark-1": peak}, peak_rx_gbps={"spark-1": 0.05},
                       peak_duplex_gbps={"spark-1": peak + 0.05}, busiest_core={"spark-1": (3, 97.0)})  # fmt: skip
    return RungResult(name, RungStatus.RAN, flows=flows, wire=wire, ceiling=ceiling, duration_s=5.0)


def phase(after: bool) -> list[RungResult]:
    defaults = (
        "net.core.rmem_max 212992 and net.ipv4.tcp_rmem 4096 131072 6291456 on spark-1, spark-2: TCP's window "
        "cannot open past 6 MiB at 200 Gb/s (wirespeed fix raises them)",
    )
    halves = 4 if after else 2
    each = 0.98 if after else 0.97
    spread = (0.97, 0.99, 0.98) if after else (0.95, 0.99, 0.97)
    share = f"{each * halves:.2f} Gb/s of {halves:g} Gb/s line rate (98%)"
    halves_ceiling = (
        Ceiling("wire", (f"{share} on every cabled half ({halves})",)) if after
        else Ceiling("half-port", (f"{share} on {halves} of 4 cabled halves: the rest idle: "
                                   f"{', '.join(HALVES[2:])} carried nothing",))
    )  # fmt: skip
    latency = tuple(
        Latency(flow(i), "sockperf", 64, p50, p99_us=p50 * 3, samples=20000, p25_us=p50 * 0.7, p75_us=p50 * 1.4)
        for i, p50 in enumerate((16.0, 18.0) if after else (27.6, 25.0))
    )
    sizes = (1 << 28, 1 << 29, 1 << 30)
    busbw = (1.30, 1.36, 1.38) if after else (1.29, 1.35, 1.37)
    rows = tuple(SizeFigures(s, b, b, 9000.0) for s, b in zip(sizes, busbw, strict=True))
    nccl = CollectiveSummary("all_reduce", 2, rows, 1.3, "NET/Socket", None, socket_interfaces=HALVES)
    single = Ceiling("single-flow", ("one TCP stream: 0.98 Gb/s; more streams or halves go further",))
    no_rdma = ("no RDMA device on spark-1, spark-2 (mlx5_ib not loaded?)", "modprobe mlx5_ib, or the NIC's driver")
    fallback = Ceiling("fallback", (NCCL_WHY, "no RDMA device on the linked halves"))
    return [
        tcp("tcp-single", 1, each, spread, single),
        tcp("tcp-multi", 1, each, spread, Ceiling("wire" if after else "defaults", defaults)),
        tcp("tcp-halves", halves, each, spread, halves_ceiling),
        RungResult("tcp-lat", RungStatus.RAN, latency=latency, duration_s=10.0),
        RungResult("rdma-bw", RungStatus.SKIPPED, *no_rdma),
        RungResult("rdma-lat", RungStatus.SKIPPED, *no_rdma),
        RungResult("nccl-all_reduce", RungStatus.RAN, collective=nccl, duration_s=30.0, ceiling=fallback),
    ]


@pytest.fixture
def record(tmp_path: Path) -> Path:
    run_dir = RunDirectory(tmp_path)
    rungs = {p: phase(p == "after") for p in ("before", "after")}
    planned = tuple(f"{p}/{r.rung}" for p, found in rungs.items() for r in found)
    run_dir.start(RunRecord("0.1.0", ("commission", "--yes"), "commission", RunOptions(), "spark",
                            (NodeRef("spark-1", "spark-1"), NodeRef("spark-2", "spark-2")), "2026-11-26T10:00:00Z",
                            planned=planned, phases=("before", "after")))  # fmt: skip
    for name, found in rungs.items():
        folder = run_dir.phase_dir(name)
        for rung in found:
            folder.rung(rung)
    run_dir.step(Step("fix", StepStatus.DONE, "6 change(s)", 2.0))
    run_dir.finish(RunStatus.COMPLETE)
    return run_dir.path


def printed(path: Path, width: int, *, terminal: bool = True) -> str:
    run = load_run(path)
    assert run.problems == () and not run.damaged
    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, soft_wrap=False, markup=False, emoji=False)
    console.print(render.phase_table(phase_rows(run), fold=terminal), soft_wrap=not terminal)
    return out.getvalue()


def table_rows(text: str) -> list[list[str]]:
    """The table's rows, each as its cells (a cell's lines joined by spaces) and, last, how many lines the row
    takes: columns start where the header's last line has a word (headers sit at the bottom, left-aligned, three
    spaces apart), a row starts where the rung column (never wrapped) is not blank, and the notes follow."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", lines[rule - 1])]
    rows: list[list[list[str]]] = []
    for line in lines[rule + 1 :]:
        if line.startswith("[") or (line[:1] != " " and not any(line.startswith(r) for r in RUNGS)):
            break
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1], strict=True)]
        if line[:1] != " ":
            rows.append([[c] for c in cells])
        else:
            for column, cell in zip(rows[-1], cells, strict=True):
                column.append(cell)
    return [[" ".join(x for x in column if x) for column in row] + [str(len(row[0]))] for row in rows]


RUNGS = ("tcp-single", "tcp-multi", "tcp-halves", "tcp-lat", "nccl-all_reduce")


@pytest.mark.parametrize("width", [80, 120])
def test_the_final_table_fits_the_terminal(record: Path, width: int) -> None:
    text = printed(record, width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), text
    rows = table_rows(text)
    assert [row[0] for row in rows] == list(RUNGS)
    assert all(int(row[-1]) <= 3 for row in rows), text  # no row taller than three lines
    assert lines[0].split() == list(takeaway.FINAL_COLUMNS)
    flat = " ".join(" ".join(line.split()) for line in lines)
    # nothing cut: every cell whole, as the record says it
    by_rung = {row[0]: row[1:-1] for row in rows}
    assert by_rung["tcp-halves"] == ["1.94 Gb/s (1.90-1.98)", "3.92 Gb/s (3.88-3.96)", "+102%", "half-port -> wire [3]"]
    assert by_rung["tcp-single"] == ["0.97 Gb/s (0.95-0.99)", "0.98 Gb/s (0.97-0.99)", "within noise",
                                     "single-flow [1]"]  # fmt: skip
    assert by_rung["tcp-multi"][2:] == ["within noise", "wire [2]"]  # defaults -> wire on noise alone: no change
    assert by_rung["tcp-lat"][:3] == ["p50 26.3 us (18.4-36.8)", "p50 17.0 us (11.9-23.8)", "within noise"]
    assert by_rung["nccl-all_reduce"] == ["10.96 Gb/s (10.80-10.96)", "11.04 Gb/s (10.88-11.04)", "within noise",
                                          "fallback [5]"]  # fmt: skip
    assert "…" not in text and "..." not in text
    # the notes: numbered, wrapped at the width, the NCCL interface list folded
    assert "[5] nccl-all_reduce: NCCL used NET/Socket on enp1s0f0np0 +3: TCP through the CPU" in flat
    assert "enP2p1s0f1np1" not in text
    assert (
        "[2] tcp-multi: net.core.rmem_max 212992 and net.ipv4.tcp_rmem 4096 131072 6291456 on spark-1, spark-2: "
        "TCP's window cannot open past 6 MiB at 200 Gb/s (wirespeed fix raises them)" in flat
    )  # wrapped, whole
    assert "(before: defaults, with the figure within noise)" in flat
    assert "spread: a change is shown only where it exceeds both phases' spread and 2%, their ranges apart" in flat
    assert "TCP: the per-second rates iperf3 reported" in flat
    assert "not measured here: rdma-bw, rdma-lat: no RDMA device on spark-1, spark-2" in flat


def test_piped_output_keeps_every_line_whole(record: Path) -> None:
    text = printed(record, 80, terminal=False)
    note = next(line for line in text.splitlines() if line.startswith("[5]"))
    assert NCCL_WHY in note and len(note) > 80  # one line, every interface named


def test_the_takeaway_leads_with_the_story(record: Path) -> None:
    """The highest figure, the layer it reached, then what the fixes moved and what stayed within noise."""
    said = headline(load_run(record))
    assert said.startswith(
        "highest: 11.04 Gb/s per direction on nccl-all_reduce (after), the NCCL layer, ceiling: fallback (before the "
        "fixes: 10.96); the fixes moved tcp-halves 1.94 -> 3.92 Gb/s (+102%, half-port -> wire); within noise: "
        "tcp-single, tcp-multi, tcp-lat, nccl-all_reduce; "
    ), said


@pytest.mark.parametrize("width", [80, 120])
def test_one_phase_alone_fits_too(record: Path, width: int) -> None:
    """`commission --no-fix` (and `bench`) end with the one-phase table: the why is a numbered note there too, the
    rungs skipped one line below, and no row taller than three lines with nothing cut."""
    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, soft_wrap=False, markup=False, emoji=False)
    console.print(render.takeaway_table(takeaway_rows(load_run(record).in_phase("after"))))
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == "measured after the fixes" and all(len(line) <= width for line in lines), text
    rows = table_rows(text)
    assert [row[0] for row in rows] == list(RUNGS) and all(int(row[-1]) <= 3 for row in rows), text
    single = dict(zip(("rung", "result", "duplex", "peak", "core", "ceiling"), rows[0], strict=False))
    assert single == {"rung": "tcp-single", "result": "0.98 Gb/s (0.97-0.99)", "duplex": "-",
                      "peak": "0.98 / 1.03 Gb/s", "core": "spark-1 97%", "ceiling": "single-flow [1]"}  # fmt: skip
    assert rows[-1][1:-1] == ["11.04 Gb/s (10.88-11.04)", "22.08 Gb/s", "-", "-", "fallback [5]"]
    flat = " ".join(" ".join(line.split()) for line in lines)
    assert "[5] nccl-all_reduce: NCCL used NET/Socket on enp1s0f0np0 +3:" in flat
    assert "not measured here: rdma-bw (after), rdma-lat (after): no RDMA device" in flat


def test_a_table_with_nothing_measured_still_prints(tmp_path: Path) -> None:
    """Every rung skipped in both phases: no row, the header and the one line saying why."""
    skipped = RungResult("rdma-bw", RungStatus.SKIPPED, "no RDMA device", "modprobe mlx5_ib")
    rows = phase_rows(Run("r", None, rungs=(replace(skipped, phase="before"), replace(skipped, phase="after"))))
    out = io.StringIO()
    Console(file=out, width=80).print(render.phase_table(rows))
    assert out.getvalue().splitlines()[0].split() == list(takeaway.FINAL_COLUMNS)
    assert "not measured here: rdma-bw: no RDMA device" in out.getvalue()
