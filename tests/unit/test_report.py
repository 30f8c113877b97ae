"""`wirespeed report`: the timeline replayed from recorded samples (units, rung spans, cut lines), what imported
results stand for as rungs, the environment from a real snapshot's discovery, and the Markdown, HTML and JSON of
a run directory written the way `bench` writes it."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from wirespeed.cli.app import main
from wirespeed.cli.output import Environment
from wirespeed.core.compare import compare_runs, regressions
from wirespeed.core.imported import as_rung
from wirespeed.core.importer import import_text
from wirespeed.core.meter import Cable, NodeLayout
from wirespeed.core.report import environment, headline
from wirespeed.core.timeline import build_timeline
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


def test_the_timeline_turns_byte_counters_into_gbps_per_cable_on_one_clock() -> None:
    # 125 000 000 bytes a second on each half is 1 Gb/s each: the cable carries 2 Gb/s per direction
    first = [sample(0, 0, 0, 0), sample(1, 125_000_000, 62_500_000, 50), sample(2, 250_000_000, 125_000_000, 150)]
    second = [sample(10, 0, 0, 150), sample(11, 0, 125_000_000, 150)]
    timeline = build_timeline([LAYOUT], [("tcp-single", first), ("tcp-halves", second)])
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
    timeline = build_timeline([LAYOUT], [("tcp-single", lines)])
    assert timeline.unreadable_lines == 2
    assert len(timeline.cables[0].points) == 1


def test_a_long_run_is_thinned_to_the_point_limit_keeping_the_last_point() -> None:
    lines = [sample(t, t * 125_000_000, 0, 0) for t in range(50)]
    timeline = build_timeline([LAYOUT], [("tcp-single", lines)], max_points=10)
    points = timeline.cables[0].points
    assert len(points) <= 11 and points[-1].t_s == 49.0


# ------------------------------------------------------------------------------------------- imported rungs


def imported(path: Path) -> dict[str, Any]:
    return import_text(path.read_text(), str(path))


def test_an_imported_nccl_tests_log_stands_for_a_collective_rung() -> None:
    obj = imported(REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt")
    rung = as_rung("a3", obj)
    assert rung is not None and rung["rung"] == "imported-a3" and rung["status"] == "ran"
    collective = rung["collective"]
    # the last row of this log: 8 GiB, out-of-place busbw 338.82 GB/s (the peak)
    assert collective["peak_busbw_GBps"] == 338.82 and collective["peak_at_bytes"] == 8 * 2**30
    assert rung["forward_gbps"] == pytest.approx(338.82 * 8)  # GB/s to Gb/s per direction
    assert rung["full_duplex_gbps"] == pytest.approx(2 * 338.82 * 8)
    assert len(collective["rows"]) == 31


def test_imported_perftest_and_iperf3_give_their_figures_in_gbps_and_counters_none() -> None:
    perftest_files = sorted((REAL / "perftest").glob("*.txt"))
    bw = [f for f in perftest_files if "_bw" in f.name and "bidir" not in f.name]
    assert bw, "a perftest bandwidth fixture"
    obj = imported(bw[0])
    rung = as_rung("bw", obj)
    largest = max((r for r in obj["rows"] if r["bw_avg_gbps"] is not None), key=lambda r: r["size_bytes"])
    assert rung is not None and rung["forward_gbps"] == largest["bw_avg_gbps"]
    iperf = sorted((REAL / "iperf3").glob("*.txt"))  # the .json beside each is what a person reads in it
    got = [as_rung("i", imported(f)) for f in iperf]
    assert any(r is not None and isinstance(r["forward_gbps"], float) for r in got)
    ethtool = next(f for f in sorted((REAL / "ethtool").iterdir()) if f.suffix == ".txt")
    assert as_rung("e", imported(ethtool)) is None


# ------------------------------------------------------------------------------------------------ environment


def test_environment_from_a_real_spark_snapshot_names_tools_firmware_and_drivers() -> None:
    found = discover_snapshots([SNAPSHOTS / "spark-two-cables"])
    rows = environment(found.to_json())
    by = {(r.node, r.component): r.version for r in rows}
    nodes = sorted(found.facts)
    assert any(component == "NCCL" for _, component in by)
    firmware = [v for (n, c), v in by.items() if n == nodes[0] and "(RDMA)" in c]
    assert firmware and all(v.startswith("firmware ") for v in firmware)
    assert any("driver mlx5_core" in v for (n, _), v in by.items() if n == nodes[0])


def test_headline_names_the_highest_figure_its_ceiling_and_the_counts() -> None:
    rungs = [
        {"rung": "tcp-single", "status": "ran", "forward_gbps": 1.0, "ceiling": {"name": "cpu"}},
        {"rung": "tcp-halves", "status": "ran", "forward_gbps": 3.9, "ceiling": {"name": "wire"}},
        {"rung": "rdma-bw", "status": "skipped", "forward_gbps": None},
    ]
    checks = {"counts": {"pass": 3, "warn": 0, "fail": 1}}
    assert headline(rungs, checks) == (
        "highest: 3.90 Gb/s per direction on tcp-halves, ceiling: wire; 2 ran, 1 skipped; checks: 3 pass, 1 fail"
    )
    assert headline([], None).startswith("no rung measured a figure")


# ---------------------------------------------------------------------------------------------- a run directory


def rung_json(name: str, gbps: float | None, status: str = "ran") -> dict[str, Any]:
    flows = []
    if gbps is not None:
        flows = [
            {"client": ["n1", h], "server": ["n2", h], "client_address": "198.19.0.1", "server_address": "198.19.0.2",
             "line_rate_gbps": 1.0, "direction": "forward", "receiver_gbps": gbps / 2, "error": None}
            for h in HALVES
        ]  # fmt: skip
    return {
        "rung": name, "status": status, "reason": None if status == "ran" else "no RDMA devices", "fix": "x",
        "seconds": 4.0, "forward_gbps": gbps, "reverse_gbps": None, "full_duplex_gbps": gbps, "flows": flows,
        "wire": {"source": "netdev", "tx_gbps": {f"n1:{HALVES[0]}": 0.99}, "rx_gbps": {},
                 "busiest_core": {"n1": {"core": 0, "busy_percent": 61.0}}, "cpu_average_percent": {"n1": 30.0},
                 "errors": {}},
        "ceiling": None if gbps is None else {"name": "wire", "evidence": ["1.98 Gb/s of 2 Gb/s <line rate>"]},
        "collective": None, "notes": [],
    }  # fmt: skip


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run as `bench` leaves it, with a real snapshot's discovery, plus an imported nccl-tests log."""
    run = tmp_path / "runs" / "20261122T100000Z"
    run.mkdir(parents=True)
    found = discover_snapshots([SNAPSHOTS / "spark-two-cables"])
    (run / "discovery.json").write_text(json.dumps(found.to_json()))
    (run / "checks.json").write_text(
        json.dumps({"results": [{"id": "mtu.host", "title": "t", "status": "fail", "summary": "MTU 1500 <x>",
                                 "evidence": [{"node": "n1", "subject": "enp1s0f0np0", "what": "mtu", "value": 1500}],
                                 "fixes": []}], "counts": {"pass": 0, "warn": 0, "fail": 1, "skip": 0},
                    "errors": [], "exit_status": 1, "active": False})
    )  # fmt: skip
    (run / "tcp-halves.json").write_text(json.dumps(rung_json("tcp-halves", 1.98)))
    (run / "rdma-bw.json").write_text(json.dumps(rung_json("rdma-bw", None, "skipped")))
    row = {"rung": "tcp-halves", "result": "1.98 Gb/s", "full duplex": "-", "busiest core": "n1 61%", "ceiling": "wire"}
    (run / "takeaway.json").write_text(json.dumps([{**row, "why": "x"}]))
    node = sorted(found.facts)[0]
    lines = [sample(t, t * 125_000_000, 0, 10 * t, node) for t in range(4)]
    (run / "tcp-halves.samples.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"node": "cut')
    (run / "imported").mkdir()
    obj = imported(REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt")
    (run / "imported" / "a3.nccl-tests.json").write_text(json.dumps(obj))
    return run


def test_a_run_directory_reads_back_with_its_imports_and_a_cut_sample_line(run_dir: Path) -> None:
    report = load_report(run_dir)
    assert [r["rung"] for r in report.rungs] == ["tcp-halves", "rdma-bw", "imported-a3.nccl-tests"]
    assert report.timeline.unreadable_lines == 1
    assert [s.rung for s in report.timeline.spans] == ["tcp-halves"]
    assert report.checks is not None and report.takeaway is not None
    data = json.loads(json.dumps(report.to_json()))
    assert data["report_format_version"] == 1 and data["imported"][0]["tool"] == "nccl-tests"
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
    assert page.count('<svg class="chart"') >= 4  # throughput, CPU, busbw of the import, the halves of tcp-halves
    assert "NCCL bus bandwidth against message size" in page
    assert "&lt;line rate&gt;" in page and "<line rate>" not in page  # evidence is text, never markup
    assert "MTU 1500 &lt;x&gt;" in page
    assert "ceiling: wire" in page and "no RDMA devices" in page


def test_markdown_has_the_takeaway_first_and_a_table_per_section(run_dir: Path) -> None:
    text = view.markdown(load_report(run_dir))
    assert text.startswith("# wirespeed report: run 20261122T100000Z")
    assert text.index("## Takeaway") < text.index("## Rungs") < text.index("## Checks") < text.index("## Environment")
    assert "| tcp-halves | 1.98 Gb/s |" in text
    assert "| 8 GiB |" in text  # the imported log's collective table
    assert "| mtu.host | fail | MTU 1500 <x> |" in text


def test_compare_flags_an_imported_log_that_got_worse(run_dir: Path, tmp_path: Path) -> None:
    later = tmp_path / "runs" / "20261123T100000Z"
    (later / "imported").mkdir(parents=True)
    obj = imported(REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt")
    for row in obj["rows"]:
        if row["size_bytes"] == 8 * 2**30:
            row["out_of_place"]["busbw_GBps"] = 300.0  # 11% less at 8 GiB
    (later / "imported" / "a3.nccl-tests.json").write_text(json.dumps(obj))
    worse = regressions(compare_runs(load_run(run_dir).rungs, load_run(later).rungs), 5.0)
    assert [(c.rung, c.measure) for c in worse] == [
        ("tcp-halves", "forward_gbps"),  # measured before, not at all in the later run: worse too
        ("imported-a3.nccl-tests", f"busbw_GBps @ {8 * 2**30} B"),
    ]
    assert worse[1].before == 338.82 and worse[1].after == 300.0  # the peak moved to 4 GiB: forward_gbps held


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
    rung = rung_json("rdma-bw", 180.0)
    for flow in rung["flows"]:
        flow["line_rate_gbps"] = 100.0  # a Spark half: about 100 Gb/s of the 200G port
    chart = view.halves_chart(rung)
    assert chart is not None and "rdma-bw: each half, as its receiver counted it" in chart
    assert chart.count("90.00 Gb/s") == 2  # 180 Gb/s over two halves
    assert "n1 enp1s0f0np0 → n2 enp1s0f0np0" in chart
    assert view.halves_chart(rung_json("rdma-bw", None, "skipped")) is None
