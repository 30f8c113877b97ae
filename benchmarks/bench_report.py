"""What the HTML report of a long run costs: `wirespeed report` (read the run directory, replay every counter
sample through the meter, render the page with its inline SVG plots) against the obvious alternative for the
plots alone, matplotlib drawing the same throughput and CPU series as SVG, in one run.

The run is synthetic but shaped like a real one: 2 nodes, 2 cables of 2 halves each, a sample every 0.5 s,
8 rungs of `--seconds` each. matplotlib is optional (the GPU machine has it); without it only wirespeed is timed.

    .venv/bin/python benchmarks/bench_report.py [--seconds 225] [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from wirespeed.engine.report import load_report
from wirespeed.ui import report as view

NODES = ("spark-1", "spark-2")
HALVES = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")
RUNGS = (
    "tcp-single",
    "tcp-multi",
    "tcp-halves",
    "rdma-bw",
    "rdma-lat",
    "nccl-sendrecv",
    "nccl-all_gather",
    "nccl-all_reduce",
)


def facts(node: str) -> dict[str, Any]:
    netdevs = [
        {"name": h, "operstate": "up", "carrier": True, "speed_mbps": 200000, "mtu": 9000, "mac": "02:00:00:00:00:01",
         "ipv4": [f"198.19.{i}.{NODES.index(node) + 1}/24"], "ipv6": [], "kind": "pci", "link_type": 1, "pci": None,
         "rdma_devices": [], "driver": "mlx5_core", "firmware": "28.45.1200"}
        for i, h in enumerate(HALVES)
    ]  # fmt: skip
    ports = [{"key": "01:00.0", "label": "port 0", "halves": list(HALVES[:2])},
             {"key": "01:00.1", "label": "port 1", "halves": list(HALVES[2:])}]  # fmt: skip
    return {"node": node, "hostname": node, "netdevs": netdevs, "rdma": [], "rdma_absent_reason": None, "pci": [],
            "ports": ports, "management": "enP7s7", "fabric": list(HALVES), "gpus": [], "nccl_version": "2.28.9",
            "tools": [], "emulated": False, "source": "live", "sysctls": {}, "memlock_bytes": None,
            "kernel_messages": [], "environment": {}, "in_container": False, "dev_infiniband": [], "offloads": {},
            "nic_counters": {}, "firewall": None, "shaped_bps": {}, "config_files": {}, "netplan": None,
            "nccl_archs": []}  # fmt: skip


def write_run(root: Path, seconds: int) -> tuple[Path, int]:
    run = root / "20261122T000000Z"
    run.mkdir(parents=True)
    from wirespeed.core.fabric.facts import facts_from_json

    nodes = {n: facts_from_json(facts(n)).to_json() for n in NODES}
    (run / "discovery.json").write_text(json.dumps({"nodes": nodes, "cabling": {}, "errors": {}, "probe_errors": {}}))
    lines = 0
    wall = 1_800_000_000.0
    for rung in RUNGS:
        (run / f"{rung}.json").write_text(json.dumps({"rung": rung, "status": "ran", "forward_gbps": 170.0,
                                                      "flows": [], "wire": None, "ceiling": None}))  # fmt: skip
        with (run / f"{rung}.samples.jsonl").open("w") as out:
            for step in range(seconds * 2):
                for node in NODES:
                    count = int(step * 0.5 * 21e9)  # ~170 Gb/s
                    iface = {"stats": {"tx_bytes_phy": count, "rx_bytes_phy": count}, "netdev": {}, "rdma": {},
                             "pci": None, "speed_mbps": 200000}  # fmt: skip
                    cpu = [[step * 30, 0, step * 10, step * 10, 0, 0, 0, 0] for _ in range(20)]
                    out.write(json.dumps({"node": node, "t": wall + step * 0.5, "wall": wall + step * 0.5,
                                          "ifaces": {h: iface for h in HALVES}, "cpu": cpu}) + "\n")  # fmt: skip
                    lines += 1
        wall += seconds + 5
    return run, lines


def matplotlib_svg(report: Any) -> str:
    """The same plots (throughput per node with rung bands, CPU per node) drawn by matplotlib, as SVG."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    out = []
    by_node: dict[str, list[Any]] = {}
    for series in report.timeline.cables:
        by_node.setdefault(series.node, []).append(series)
    for node, cables in by_node.items():
        fig, ax = plt.subplots(figsize=(8.6, 3))
        for span in report.timeline.spans:
            ax.axvspan(span.start_s, span.end_s, alpha=0.1)
        for cable in cables:
            ax.plot([p.t_s for p in cable.points], [p.tx_gbps for p in cable.points], label=f"{cable.cable} TX")
            ax.plot([p.t_s for p in cable.points], [p.rx_gbps for p in cable.points], "--", label=f"{cable.cable} RX")
        ax.set_title(f"{node}: throughput per cable at the wire")
        ax.set_xlabel("seconds since the run started")
        ax.set_ylabel("Gb/s")
        ax.legend()
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg")
        plt.close(fig)
        out.append(buffer.getvalue())
    fig, ax = plt.subplots(figsize=(8.6, 3))
    for node, points in report.timeline.cpu.items():
        ax.plot([p.t_s for p in points], [p.average_pct for p in points], label=f"{node} all cores")
        ax.plot([p.t_s for p in points], [p.busiest_pct for p in points], "--", label=f"{node} busiest core")
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    out.append(buffer.getvalue())
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=225, help="per rung (8 rungs: 225 s each is a 30 min run)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run, lines = write_run(Path(tmp), args.seconds)
        ours: list[float] = []
        plots_ours: list[float] = []
        theirs: list[float] = []
        page = ""
        report = None
        for _ in range(args.rounds):
            start = time.perf_counter()
            report = load_report(run)
            loaded = time.perf_counter()
            page = view.html(report)
            done = time.perf_counter()
            ours.append(done - start)
            plots_ours.append(done - loaded)
        svg_theirs = ""
        try:
            for _ in range(args.rounds):
                start = time.perf_counter()
                svg_theirs = matplotlib_svg(report)
                theirs.append(time.perf_counter() - start)
        except ImportError:
            theirs = []
    result = {
        "sample_lines": lines,
        "report_s": min(ours),
        "render_s": min(plots_ours),
        "html_bytes": len(page.encode()),
        "matplotlib_plots_s": min(theirs) if theirs else None,
        "matplotlib_svg_bytes": len(svg_theirs.encode()) if theirs else None,
    }
    if theirs:
        result["render_speedup_vs_matplotlib"] = min(theirs) / min(plots_ours)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
