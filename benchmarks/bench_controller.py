"""What the controller spends on each sampler line, against what 32, 128 and 1024 nodes send, in one run.

Every node's `wirespeed agent sample` sends a JSON line per interval; the controller parses it, meters it and
appends it to `<rung>.samples.jsonl` (`engine.wire.WireRecorder`). The lines here are Spark-shaped: 4 halves,
each with the driver counters `select_counters` keeps from the real mlx5 `ethtool -S` fixture, netdev and RDMA
counters, and 20 cores. Also timed: the matrix's per-round wire figures (`WireRecorder.figures(between=...)`),
which scan every view kept so far, after 1 and after many rounds; and `watch --serve`'s exporter: the same work per
line with its collector fed (`WatchCollector.add`), alternated with the plain one, and what one scrape of every node
costs (`generate_latest`), and one `--textfile` write. Pure CPU; no root.

    .venv/bin/python benchmarks/bench_controller.py [--nodes 1024] [--seconds 10] [--interval 0.5] [--json out]
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
from pathlib import Path

from prometheus_client import generate_latest

from wirespeed.adapters.prometheus import TextfileWriter, WatchCollector, registry_of
from wirespeed.core.fabric.counters import select_counters
from wirespeed.core.fabric.meter import (
    Cable,
    Meter,
    NodeLayout,
    NodeView,
    sample_from_json,
    sample_line,
    sample_to_json,
)
from wirespeed.core.parsers.ethtool import parse_stats
from wirespeed.engine.sampling import decode_line
from wirespeed.engine.wire import WireRecorder

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real" / "ethtool"  # travels with the repo
HALVES = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")


def spark_stats() -> dict[str, int]:
    text = (FIXTURE / "ethtool_S_mlx5_xdp_kernel5.15_nonzero_only.txt").read_text()
    stats = parse_stats(text)
    kept = {name: stats[name] for name in select_counters(stats)}
    for name in ("tx_bytes_phy", "rx_bytes_phy", "tx_packets_phy", "rx_packets_phy"):
        kept.setdefault(name, 0)
    return kept


def line(node: str, step: int, interval: float, stats: dict[str, int]) -> str:
    grow = step * 12_500_000_000  # 100 Gb/s per half per direction, per second of samples
    ifaces = {
        half: {
            "stats": {k: v + (grow if k.endswith("bytes_phy") else 0) for k, v in stats.items()},
            "netdev": {"tx_bytes": step, "rx_bytes": step, "tx_packets": step, "rx_packets": step},
            "rdma": {"port_xmit_data": step * 1000, "port_rcv_data": step * 1000},
            "pci": "0000:01:00.0",
            "speed_mbps": 200000,
        }
        for half in HALVES
    }
    cpu = [[100 * step, 0, 50 * step, 1000 * step, 0, 0, 0, 0] for _ in range(20)]
    data = {"node": node, "t": step * interval, "wall": 1.7e9 + step * interval, "ifaces": ifaces, "cpu": cpu}
    return json.dumps(data, separators=(",", ":"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds (one matrix round)")
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=20, help="rounds kept before timing a late round's figures")
    parser.add_argument("--repeats", type=int, default=3, help="alternated passes with and without the exporter")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    stats = spark_stats()
    steps = int(args.seconds / args.interval)
    nodes = [f"spark-{i}" for i in range(1, args.nodes + 1)]
    layouts = [NodeLayout(n, (Cable("port 0", HALVES[:2], 200.0), Cable("port 1", HALVES[2:], 200.0))) for n in nodes]
    lines = [line(n, s, args.interval, stats) for s in range(steps + 1) for n in nodes]  # time order, as they come

    def controller(reencode: bool, collector: WatchCollector | None = None) -> tuple[float, list[NodeView]]:
        """WireRecorder._run's work per line, plus the parsing ClusterSampler does; seconds per line. With
        `collector`: what `watch --serve` adds per line."""
        meter = Meter(layouts)
        record = io.StringIO()
        views: list[NodeView] = []
        started = time.perf_counter()
        for text in lines:
            sample = sample_from_json(decode_line(text), text)  # as `ClusterSampler` decodes it
            if reencode:  # what the recorder did before it kept the node's own line
                record.write(json.dumps(sample_to_json(sample), separators=(",", ":")) + "\n")
            else:
                record.write(sample_line(sample) + "\n")
            view = meter.add(sample)
            if collector is not None:
                collector.add(sample, view)
            if view is not None:
                views.append(view)
        return (time.perf_counter() - started) / len(lines), views

    plain_runs, exporter_runs = [], []
    for repeat in range(args.repeats):  # alternated, and which goes first too: drift and GC hit both alike
        for exporter in (repeat % 2 == 1, repeat % 2 == 0):
            if exporter:
                exporter_runs.append(controller(reencode=False, collector=WatchCollector(layouts))[0])
            else:
                plain_runs.append(controller(reencode=False)[0])
    plain_s, exporter_s = min(plain_runs), min(exporter_runs)
    fed = WatchCollector(layouts)
    controller(reencode=False, collector=fed)
    registry = registry_of(fed)
    scrapes = []
    for _ in range(5):
        t0 = time.perf_counter()
        exposition = generate_latest(registry)
        scrapes.append(time.perf_counter() - t0)
    scrape_s = min(scrapes)
    with tempfile.TemporaryDirectory() as directory:
        writer = TextfileWriter(fed, Path(directory), args.interval)
        t0 = time.perf_counter()
        writer.write()
        textfile_s = time.perf_counter() - t0

    reencode_s, _ = controller(reencode=True)
    per_line_s, views = controller(reencode=False)
    line_bytes = sum(len(t) + 1 for t in lines) / len(lines)

    recorder = WireRecorder.__new__(WireRecorder)  # its figures() alone, over views made above
    recorder.views, recorder.arrived = list(views), [float(i) for i in range(len(views))]
    recorder.interval_s = args.interval
    t0 = time.perf_counter()
    recorder.figures(between=(0.0, float(len(views))))
    one_round_s = time.perf_counter() - t0
    recorder.views = views * args.rounds  # as many rounds kept as a long matrix has behind it
    recorder.arrived = [float(i) for i in range(len(recorder.views))]
    last = float(len(recorder.views))
    t0 = time.perf_counter()
    recorder.figures(between=(last - len(views), last))
    late_round_s = time.perf_counter() - t0

    capacity = 1 / per_line_s
    print(f"Spark-shaped line: {line_bytes:.0f} bytes; {len(lines):,} lines")
    print(f"controller work per line: {per_line_s * 1e3:.3f} ms keeping the node's line, "
          f"{reencode_s * 1e3:.3f} ms encoding it again ({reencode_s / per_line_s:.2f}x)")  # fmt: skip
    print(f"one core handles {capacity:,.0f} lines/s")
    for count in (32, 128, 1024):
        needed = count / args.interval
        headroom = capacity / needed
        print(f"  {count:>5} nodes at {args.interval:g} s: {needed:>7,.0f} lines/s  -> {headroom:6.1f}x headroom")
    print(f"with watch --serve's collector fed: {exporter_s * 1e3:.4f} ms a line against {plain_s * 1e3:.4f} ms "
          f"({exporter_s / plain_s:.3f}x; best of {args.repeats} alternated)")  # fmt: skip
    print(f"one scrape of {args.nodes} nodes: {scrape_s * 1e3:.1f} ms, {len(exposition):,} bytes "
          f"({scrape_s / (args.nodes / args.interval * plain_s):.2f}x one interval's line work); "
          f"one --textfile write: {textfile_s * 1e3:.1f} ms")  # fmt: skip
    print(f"round figures over {len(views):,} views: {one_round_s:.3f} s after 1 round, "
          f"{late_round_s:.3f} s after {args.rounds} rounds ({late_round_s / one_round_s:.1f}x)")  # fmt: skip
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "nodes": args.nodes,
                    "line_bytes": line_bytes,
                    "per_line_s": per_line_s,
                    "per_line_reencoding_s": reencode_s,
                    "lines_per_s": capacity,
                    "round_figures_s": one_round_s,
                    "late_round_figures_s": late_round_s,
                    "rounds": args.rounds,
                    "per_line_plain_s": plain_s,
                    "per_line_exporter_s": exporter_s,
                    "exporter_ratio": exporter_s / plain_s,
                    "scrape_s": scrape_s,
                    "scrape_bytes": len(exposition),
                    "textfile_write_s": textfile_s,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
