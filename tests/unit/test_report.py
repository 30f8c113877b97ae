"""`wirespeed report`: the timeline replayed from recorded samples (units, rung spans, cut lines), the figures an
imported result offers to `compare`, the environment from a real snapshot's discovery, and the Markdown, HTML and
JSON of a run directory written the way `bench` writes it."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.fabric.meter import Cable, NodeLayout, NodeSample, read_sample
from wirespeed.core.fabric.timeline import build_timeline
from wirespeed.core.imports import imported as imported_module
from wirespeed.core.imports.importer import import_text
from wirespeed.core.imports.record import ImportObject
from wirespeed.core.records.compare import compare_runs, regressions
from wirespeed.core.records.options import BenchOptions, RunOptions
from wirespeed.core.records.report import REPORT_FORMAT_VERSION, environment
from wirespeed.core.records.results import (
    Ceiling,
    CollectiveSummary,
    Direction,
    Flow,
    FlowResult,
    RungResult,
    RungStatus,
    SizeFigures,
    WireFigures,
)
from wirespeed.core.records.run import NodeRef, Run, RunRecord, RunStatus, headline
from wirespeed.engine.discover import discover_snapshots
from wirespeed.engine.report import load_report
from wirespeed.engine.runs import load_run
from wirespeed.ui import report as view
from wirespeed.ui import svg

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = FIXTURES / "real"
SNAPSHOTS = FIXTURES / "snapshots"
HALVES = ("enp1s0f0np0", "enP2p1s0f0np0")
LAYOUT = NodeLayout("n1", (Cable("port 0", HALVES, 2.0),))


def sample(t: float, tx_bytes: int, rx_bytes: int, busy: int, node: str = "n1") -> dict[str, Any]:
    """One recorded line as `bench` writes it: kernel counters per half, CPU jiffies for two cores."""
    netdev = {"tx_bytes": tx_bytes, "rx_bytes": rx_bytes, "tx_packets": 0, "rx_packets": 0}
    idle = int(100 * t) - busy
    return {
        "node": node,
        "t": 5000.0 + t,  # the node's monotonic clock
        "wall": 1_800_000_000.0 + t,
        "ifaces": {
            h: {"stats": {}, "netdev": dict(netdev), "rdma": {}, "pci": None, "speed_mbps": 10000} for h in HALVES
        },
        "cpu": [[busy, 0, 0, idle, 0, 0, 0, 0], [0, 0, 0, int(100 * t), 0, 0, 0, 0]],
        "missing": [],
        "renamed": {},
    }


# ------------------------------------------------------------------------------------------------- timeline


def read(lines: list[Any]) -> list[NodeSample | None]:
    """Sample lines as a run's samples.jsonl gives them to the timeline (`runs.load_samples`)."""
    return [read_sample(line) for line in lines]


def test_the_timeline_turns_byte_counters_into_gbps_per_cable_on_one_clock() -> None:
    # 125 000 000 bytes a second on each half is 1 Gb/s each: the cable carries 2 Gb/s per direction
    first = [sample(0, 0, 0, 0), sample(1, 125_000_000, 62_500_000, 50), sample(2, 250_000_000, 125_000_000, 150)]
    second = [sample(10, 0, 0, 150), sample(11, 0, 125_000_000, 150)]
    timeline = build_timeline([LAYOUT], [("tcp-single", read(first)), ("tcp-halves", read(second))])
    [cable] = timeline.cables
    assert (cable.node, cable.cable, cable.line_rate_gbps) == ("n1", "port 0", 2.0)
    assert [(p.t_s, p.tx_gbps, p.rx_gbps) for p in cable.points] == [
        (1.0, pytest.approx(2.0), pytest.approx(1.0)),
        (2.0, pytest.approx(2.0), pytest.approx(1.0)),
        (11.0, pytest.approx(0.0), pytest.approx(2.0)),  # a new rung starts from its own first sample
    ]
    assert [(s.rung, s.start_s, s.end_s) for s in timeline.spans] == [
        ("tcp-single", 0.0, 2.0),
        ("tcp-halves", 10.0, 11.0),
    ]
    assert timeline.sources == {"netdev"}
    cpu = timeline.cpu["n1"]
    # core 0 went from 50 to 150 busy jiffies of 100: 100% busy; core 1 idle: the average is 50%
    assert cpu[-2].busiest_pct == pytest.approx(100.0) and cpu[-2].average_pct == pytest.approx(50.0)


def test_a_cut_last_line_is_counted_and_the_rest_plotted() -> None:
    lines: list[Any] = [sample(0, 0, 0, 0), sample(1, 125_000_000, 0, 0), None, {"node": "n1"}]
    timeline = build_timeline([LAYOUT], [("tcp-single", read(lines))])
    assert timeline.unreadable_lines == 2
    assert len(timeline.cables[0].points) == 1


def test_a_long_run_is_thinned_to_the_point_limit_keeping_the_last_point() -> None:
    lines = [sample(t, t * 125_000_000, 0, 0) for t in range(50)]
    timeline = build_timeline([LAYOUT], [("tcp-single", read(lines))], max_points=10)
    points = timeline.cables[0].points
    assert len(points) <= 11 and points[-1].t_s == 49.0


# ----------------------------------------------------------------------------------------- imported figures


def imported(path: Path) -> dict[str, Any]:
    """The import object as its file holds it (what `import --into` writes): the tests read and edit its keys."""
    return import_text(path.read_text(), str(path)).to_json()


def _figures(obj: dict[str, Any]) -> dict[str, float]:
    """The figures `compare` takes from an object as its file holds it (read back typed, as a run reads it)."""
    return imported_module.figures(ImportObject.from_json(obj, "test"))


imports = SimpleNamespace(figures=_figures)


A3 = REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt"


def test_an_imported_nccl_tests_log_offers_its_busbw_per_message_size() -> None:
    figures = imports.figures(imported(A3))
    # the last row of this log: 8 GiB, out-of-place busbw 338.82 GB/s (the peak)
    assert figures[f"busbw_GBps @ {8 * 2**30} B"] == 338.82
    assert max(figures.values()) == 338.82 and max(figures, key=figures.__getitem__) == f"busbw_GBps @ {8 * 2**30} B"
    assert len(figures) == 31  # one figure per row, no per-direction figure invented from busbw
    assert all(name.startswith("busbw_GBps @ ") for name in figures)


def test_imported_perftest_and_iperf3_give_their_figures_in_gbps_and_counters_none() -> None:
    perftest_files = sorted((REAL / "perftest").glob("*.txt"))
    bw = [f for f in perftest_files if "_bw" in f.name and "bidir" not in f.name]
    assert bw, "a perftest bandwidth fixture"
    obj = imported(bw[0])
    largest = max((r for r in obj["rows"] if r["bw_avg_gbps"] is not None), key=lambda r: r["size_bytes"])
    assert not obj["bidirectional"] and imports.figures(obj) == {"forward_gbps": largest["bw_avg_gbps"]}
    iperf = sorted((REAL / "iperf3").glob("*.txt"))  # the .json beside each is what a person reads in it
    objs = [imported(f) for f in iperf]
    got = [imports.figures(obj) for obj in objs]
    assert any(isinstance(r.get("forward_gbps"), float) for r in got)
    for obj, figures in zip(objs, got, strict=True):
        if "forward_gbps" in figures:  # what the receiver counted, in Gb/s
            assert figures["forward_gbps"] == pytest.approx(obj["received_bps"] / 1e9)
    ethtool = next(f for f in sorted((REAL / "ethtool").iterdir()) if f.suffix == ".txt")
    assert imports.figures(imported(ethtool)) == {}


# ------------------------------------------------------------------------------------------------ environment


def test_environment_from_a_real_spark_snapshot_names_tools_firmware_and_drivers() -> None:
    found = discover_snapshots([SNAPSHOTS / "spark-two-cables"])
    rows = environment(found)
    by = {(r.node, r.component): r.version for r in rows}
    nodes = sorted(found.facts)
    assert any(component == "NCCL" for _, component in by)
    firmware = [v for (n, c), v in by.items() if n == nodes[0] and "(RDMA)" in c]
    assert firmware and all(v.startswith("firmware ") for v in firmware)
    assert any("driver mlx5_core" in v for (n, _), v in by.items() if n == nodes[0])


def record(nodes: tuple[str, ...], planned: tuple[str, ...], status: RunStatus = RunStatus.COMPLETE) -> RunRecord:
    """run.json as `bench` writes it when the run ends."""
    return RunRecord(
        wirespeed_version="0.2.0", command=("bench", "ladder"), what="ladder",
        options=RunOptions(BenchOptions(seconds=5)), cluster="test", nodes=tuple(NodeRef(n, n) for n in nodes),
        started_utc="2026-11-22T10:00:00Z", status=status,
        ended_utc="2026-11-22T10:05:00Z", planned=planned,
    )  # fmt: skip


def rung(name: str, gbps: float | None, status: RungStatus = RungStatus.RAN, line_rate: float = 1.0) -> RungResult:
    """A rung as `bench` records it: two halves, each carrying half of `gbps`, with the wire and its ceiling."""
    flows = ()
    if gbps is not None:
        flows = tuple(
            FlowResult(Flow(("n1", h), ("n2", h), "198.19.0.1", "198.19.0.2", line_rate), Direction.FORWARD, gbps / 2)
            for h in HALVES
        )
    return RungResult(
        rung=name, status=status, reason=None if status is RungStatus.RAN else "no RDMA devices", fix="x",
        flows=flows, duration_s=4.0,
        wire=WireFigures(tx_gbps={("n1", HALVES[0]): 0.99}, busiest_core={"n1": (0, 61.0)}, cpu_average={"n1": 30.0},
                         source="netdev"),
        ceiling=None if gbps is None else Ceiling("wire", ("1.98 Gb/s of 2 Gb/s <line rate>",)),
    )  # fmt: skip


def collective_rung(obj: dict[str, Any]) -> RungResult:
    """An NCCL rung with the figures of an nccl-tests log (out-of-place, as the rung keeps them)."""
    rows = tuple(
        SizeFigures(r["size_bytes"], r["out_of_place"]["algbw_GBps"], r["out_of_place"]["busbw_GBps"],
                    r["out_of_place"]["time_us"])
        for r in obj["rows"]
    )  # fmt: skip
    summary = CollectiveSummary(obj["collective"], obj["ranks"], rows, obj["avg_busbw_GBps"], "NET/IB", True)
    return RungResult(f"nccl-{obj['collective']}", RungStatus.RAN, collective=summary, duration_s=30.0)


def test_headline_names_the_highest_figure_its_ceiling_and_the_counts() -> None:
    single = replace(rung("tcp-single", 1.0), ceiling=Ceiling("cpu", ()))
    rungs = (single, rung("tcp-halves", 3.9), rung("rdma-bw", None, RungStatus.SKIPPED))
    run = Run("r", record(("n1", "n2"), ("tcp-single", "tcp-halves", "rdma-bw")), rungs)
    checks = {"pass": 3, "warn": 0, "fail": 1}
    assert headline(run, checks) == (
        "highest: 3.90 Gb/s per direction on tcp-halves, the TCP layer, ceiling: wire; 2 ran, 1 skipped; "
        "checks: 3 pass, 1 fail"
    )
    assert headline(Run("r", record((), ())), None).startswith("no rung measured a figure")


# ---------------------------------------------------------------------------------------------- a run directory


def write(run: Path, name: str, data: Any) -> None:
    (run / name).write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run as `bench` leaves it, with a real snapshot's discovery, plus an imported nccl-tests log."""
    run = tmp_path / "runs" / "20261122T100000Z"
    run.mkdir(parents=True)
    found = discover_snapshots([SNAPSHOTS / "spark-two-cables"])
    planned = ("tcp-halves", "rdma-bw", "nccl-all_reduce")
    write(run, "run.json", record(tuple(sorted(found.facts)), planned).to_json())
    write(run, "discovery.json", found.to_json())
    write(run, "checks.json", {
        "results": [{"id": "mtu.host", "title": "t", "status": "fail", "summary": "MTU 1500 <x>",
                     "evidence": [{"node": "n1", "subject": "enp1s0f0np0", "what": "mtu", "value": 1500}],
                     "fixes": []}],
        "counts": {"pass": 0, "warn": 0, "fail": 1, "skip": 0}, "errors": [], "exit_status": 1, "active": False,
    })  # fmt: skip
    obj = imported(A3)
    for result in (rung("tcp-halves", 1.98), rung("rdma-bw", None, RungStatus.SKIPPED), collective_rung(obj)):
        write(run, f"{result.rung}.json", result.to_json())
    node = sorted(found.facts)[0]
    lines = [sample(t, t * 125_000_000, 0, 10 * t, node) for t in range(4)]
    (run / "tcp-halves.samples.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"node": "cut')
    (run / "imported").mkdir()
    write(run / "imported", "a3.nccl-tests.json", obj)
    return run


def test_a_run_directory_reads_back_with_its_imports_and_a_cut_sample_line(run_dir: Path) -> None:
    report = load_report(run_dir)
    assert [r.rung for r in report.rungs] == ["tcp-halves", "rdma-bw", "nccl-all_reduce"]
    assert [i.name for i in report.imported] == ["a3.nccl-tests"]  # evidence beside the run, never a rung
    assert report.problems == () and report.run.state() == "complete" and report.run.not_reached == ()
    assert report.timeline.unreadable_lines == 1
    assert [s.rung for s in report.timeline.spans] == ["tcp-halves"]
    assert report.checks is not None and [row.rung for row in report.takeaway] == [r.rung for r in report.rungs]
    data = json.loads(json.dumps(report.to_json()))
    assert data["report_format_version"] == REPORT_FORMAT_VERSION == 2 and data["imported"][0]["tool"] == "nccl-tests"
    assert data["status"] == "complete" and data["record"]["planned"] == ["tcp-halves", "rdma-bw", "nccl-all_reduce"]
    assert data["takeaway"][0] == {
        "rung": "tcp-halves", "status": "ran", "forward_gbps": 1.98, "full_duplex_gbps": None, "busbw_GBps": None,
        "p50_us": None, "p99_us": None, "busiest_core_percent": {"n1": 61.0}, "ceiling": "wire",
        "why": "1.98 Gb/s of 2 Gb/s <line rate>", "peak_tx_gbps": None, "peak_duplex_gbps": None, "spread": None,
    }  # fmt: skip
    assert data["takeaway"][2]["busbw_GBps"] == 338.82
    assert data["timeline"]["cables"] and data["timeline"]["cables"][0]["point_columns"] == [
        "t_s",
        "tx_gbps",
        "rx_gbps",
    ]


def test_html_is_self_contained_in_reading_order_with_plots_and_escaped_text(run_dir: Path) -> None:
    page = view.html(load_report(run_dir))
    assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page)
    order = [
        page.index(f'id="{section}"')
        for section in ("takeaway", "over-time", "rungs", "checks", "discovery", "environment", "imported")
    ]
    assert order == sorted(order)
    assert page.count('<svg class="chart"') >= 4  # throughput, CPU, busbw of nccl-all_reduce, tcp-halves' halves
    assert "NCCL bus bandwidth against message size" in page
    assert "&lt;line rate&gt;" in page and "<line rate>" not in page  # evidence is text, never markup
    assert "MTU 1500 &lt;x&gt;" in page
    assert "ceiling: wire" in page and "no RDMA devices" in page


def test_markdown_has_the_takeaway_first_and_a_table_per_section(run_dir: Path) -> None:
    text = view.markdown(load_report(run_dir))
    assert text.startswith("# wirespeed report: run 20261122T100000Z")
    assert text.index("## Takeaway") < text.index("## Rungs") < text.index("## Checks") < text.index("## Environment")
    assert "| tcp-halves | 1.98 Gb/s |" in text
    assert "| 8 GiB |" in text  # nccl-all_reduce's collective table
    assert "| peak busbw | 338.82 GB/s at 8 GiB (out-of-place) |" in text  # the imported log's summary
    assert "| mtu.host | fail | MTU 1500 <x> |" in text


def test_compare_flags_an_imported_log_that_got_worse(run_dir: Path, tmp_path: Path) -> None:
    later = tmp_path / "runs" / "20261123T100000Z"
    (later / "imported").mkdir(parents=True)
    write(later, "run.json", record(("spark-1", "spark-2"), ("nccl-all_reduce",)).to_json())
    write(later, "nccl-all_reduce.json", json.loads((run_dir / "nccl-all_reduce.json").read_text()))  # unchanged
    obj = imported(A3)
    for row in obj["rows"]:
        if row["size_bytes"] == 8 * 2**30:
            row["out_of_place"]["busbw_GBps"] = 300.0  # 11% less at 8 GiB
    write(later / "imported", "a3.nccl-tests.json", obj)
    worse = regressions(compare_runs(load_run(run_dir), load_run(later)), 5.0)
    assert [(c.subject, c.measure) for c in worse] == [
        ("tcp-halves", "forward_gbps"),  # measured before, not at all in the later run: worse too
        ("imported a3.nccl-tests", f"busbw_GBps @ {8 * 2**30} B"),
    ]
    assert worse[1].before == 338.82 and worse[1].after == 300.0  # only that size: the other sizes held


# --------------------------------------------------------------------------------------------------- the command


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def test_report_writes_html_beside_the_newest_run_and_md_json_to_stdout(run_dir: Path) -> None:
    runs = str(run_dir.parent)
    code, _, err = cli("report", "--runs", runs)
    assert code == 0, err
    assert (run_dir / "report.html").read_text().startswith("<!DOCTYPE html>")
    code, out, _ = cli("report", str(run_dir), "--format", "json")
    assert code == 0 and json.loads(out)["run"] == run_dir.name
    code, out, _ = cli("report", run_dir.name, "--runs", runs, "--format", "md", "-o", "-")
    assert code == 0 and out.startswith("# wirespeed report")


def test_report_of_something_that_is_not_a_run_is_one_line(tmp_path: Path) -> None:
    code, out, err = cli("report", str(tmp_path / "nope"))
    assert code == 2 and out == ""
    assert err.count("\n") <= 2 and "nope" in err and "Traceback" not in err
    code, _, err = cli("report", "--runs", str(tmp_path))
    assert code == 2 and "no runs" in err


# -------------------------------------------------------------------------------------------------------- svg


def test_nice_ticks_cover_the_range_in_round_steps() -> None:
    assert svg.nice_ticks(0, 3.97) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert svg.nice_ticks(0, 338.82) == [0.0, 100.0, 200.0, 300.0, 400.0]
    ticks = svg.nice_ticks(0, 0.0)
    assert ticks[0] == 0.0 and ticks[-1] > 0


def test_charts_escape_labels_and_say_when_they_have_no_data() -> None:
    line = svg.Line("<b>x</b>", [[(1.0, 2.0), (2.0, 3.0)]], svg.color(0))
    chart = svg.line_chart("a & b", [line], svg.Axes("s", "Gb/s"))
    assert "<b>" not in chart and "&lt;b&gt;" in chart and "a &amp; b" in chart and "<polyline" in chart
    assert "no data" in svg.line_chart("empty", [], svg.Axes("s", "Gb/s"))
    assert "no data" in svg.bar_chart("empty", [], "Gb/s")


def test_rdma_bandwidth_per_half_is_a_bar_per_half_against_its_line_rate() -> None:
    result = rung("rdma-bw", 180.0, line_rate=100.0)  # a Spark half: about 100 Gb/s of the 200G port
    chart = view.halves_chart(result)
    assert chart is not None and "rdma-bw: each half, as its receiver counted it" in chart
    assert chart.count("90.00 Gb/s") == 2  # 180 Gb/s over two halves
    assert "n1 enp1s0f0np0 → n2 enp1s0f0np0" in chart
    assert view.halves_chart(rung("rdma-bw", None, RungStatus.SKIPPED)) is None


def test_lines_on_top_of_each_other_stay_distinguishable() -> None:
    """Two cables carrying the same traffic: the second is drawn with its own dash pattern, a few pixels higher,
    and says so in its title; a line apart from the others is drawn as it is."""
    same = [[(0.0, 1.0), (1.0, 2.0), (2.0, 2.0), (3.0, 1.0)]]
    apart = [[(0.0, 0.0), (1.0, 0.1), (2.0, 0.1), (3.0, 0.0)]]
    lines = [svg.Line("cable 0 TX", same, svg.color(0)), svg.Line("cable 1 TX", same, svg.color(1)),
             svg.Line("cable 1 RX", apart, svg.color(1), dashed=True)]  # fmt: skip
    chart = svg.line_chart("throughput", lines, svg.Axes("s", "Gb/s"))
    polylines = re.findall(r'<polyline points="([^"]+)"[^>]*?(?: stroke-dasharray="([^"]+)")?><title>([^<]+)', chart)
    [(first, dash0, title0), (second, dash1, title1), (_, dash2, title2)] = polylines
    assert dash0 == "" and dash1 == svg.OVERLAP_DASHES[0] and dash2 == "6 3"  # the RX line lies apart: as it was
    assert title0 == "cable 0 TX" and title2 == "cable 1 RX"
    assert title1 == f"cable 1 TX (on top of cable 0 TX: drawn {svg.OVERLAP_LIFT_PX:g} px higher)"
    below = [float(p.split(",")[1]) for p in first.split()]
    above = [float(p.split(",")[1]) for p in second.split()]
    assert [round(b - a, 1) for a, b in zip(above, below, strict=True)] == [svg.OVERLAP_LIFT_PX] * 4
    assert f'stroke-dasharray="{svg.OVERLAP_DASHES[0]}"/>' in chart  # the legend shows the same pattern
