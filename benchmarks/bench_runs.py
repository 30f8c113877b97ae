"""What typed, validated run records cost `wirespeed runs`: every run of a runs folder read through `list_runs` (each
file's every field checked, NaN refused, records built, headlines made) against the obvious alternative, what 0.1
did: `json.loads` of every file into dicts, nothing checked, in one run.

The runs are synthetic but shaped like real ones: 2 nodes, 4 halves, `bench ladder` records (3 TCP rungs with 4
flows both ways and wire figures, tcp-lat with 4 halves of latency, 2 skipped RDMA rungs, 3 NCCL rungs with 11
message sizes), plus the discovery.json of two real Spark snapshots (tests/fixtures/snapshots/spark-two-cables).

    .venv/bin/python benchmarks/bench_runs.py [--runs 200] [--rounds 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from wirespeed.core.records.results import (
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
from wirespeed.core.records.run import NodeRef, RunRecord, RunStatus, headline
from wirespeed.engine.discover import discover_snapshots
from wirespeed.engine.runs import list_runs

NODES = ("spark-1", "spark-2")
HALVES = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")


def flows() -> list[Flow]:
    return [Flow(("spark-1", h), ("spark-2", h), f"198.19.{i}.1", f"198.19.{i}.2", 100.0, 100.0, f"port {i // 2}",
                 200.0) for i, h in enumerate(HALVES)]  # fmt: skip


def rungs() -> list[RungResult]:
    wire = WireFigures(
        tx_gbps={(n, h): 97.5 for n in NODES for h in HALVES}, rx_gbps={(n, h): 97.4 for n in NODES for h in HALVES},
        busiest_core={n: (3, 88.0) for n in NODES}, cpu_average={n: 12.5 for n in NODES},
    )  # fmt: skip
    both = [FlowResult(f, Direction.FORWARD, 42.1) for f in flows()]
    both += [FlowResult(f.reversed(), Direction.REVERSE, 41.9) for f in flows()]
    found = [RungResult(name, RungStatus.RAN, flows=tuple(both), wire=wire, duration_s=5.2)
             for name in ("tcp-single", "tcp-multi", "tcp-halves")]  # fmt: skip
    found.append(RungResult("tcp-lat", RungStatus.RAN, wire=wire, duration_s=28.0, latency=tuple(
        Latency(f, "sockperf", 64, 52.1, 88.3, 140.2, 40.0, 900.0, 55.0, 90000) for f in flows())))  # fmt: skip
    found += [RungResult(n, RungStatus.SKIPPED, "no RDMA devices", "install") for n in ("rdma-bw", "rdma-lat")]
    rows = tuple(SizeFigures(1 << s, 20.0 + s, 40.0 + s, 100.0 * s) for s in range(20, 31))
    for c in ("sendrecv", "all_gather", "all_reduce"):
        summary = CollectiveSummary(c, 2, rows, 41.2, "NET/IB", True, ib_devices=("rocep1s0f0:1",))
        found.append(RungResult(f"nccl-{c}", RungStatus.RAN, wire=wire, duration_s=40.0, collective=summary))
    return found


def write_runs(root: Path, count: int) -> int:
    records = rungs()
    snapshots = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "snapshots" / "spark-two-cables"
    discovery = discover_snapshots([snapshots / n for n in NODES]).to_json()
    files = 0
    for i in range(count):
        run = root / f"202611{(i // 86400) + 1:02d}T{(i // 3600) % 24:02d}{(i // 60) % 60:02d}{i % 60:02d}Z"
        run.mkdir()
        nodes = tuple(NodeRef(n, n) for n in NODES)
        planned = tuple(r.rung for r in records)
        record = RunRecord("0.1.0", ("bench", "ladder"), "ladder", {}, "lab", nodes, "2026-11-23T00:00:00Z",
                           RunStatus.COMPLETE, planned=planned)  # fmt: skip
        (run / "run.json").write_text(json.dumps(record.to_json()))
        (run / "discovery.json").write_text(json.dumps(discovery))
        for r in records:
            (run / f"{r.rung}.json").write_text(json.dumps(r.to_json(), indent=2))
        files += 2 + len(records)
    return files


def as_dicts(root: Path) -> list[dict[str, Any]]:
    """The alternative: every JSON file of every run into a dict, nothing checked (wirespeed 0.1's load_run)."""
    found = []
    for run in sorted(p for p in root.iterdir() if p.is_dir()):
        found.append({p.name: json.loads(p.read_text()) for p in run.glob("*.json")})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = write_runs(root, args.runs)
        discovery_bytes = next(root.glob("*/discovery.json")).stat().st_size
        typed: list[float] = []
        plain: list[float] = []
        for _ in range(args.rounds):  # alternate, so drift in the machine hits both alike
            start = time.perf_counter()
            runs = list_runs(root)
            lines = [headline(run) for run in runs]
            typed.append(time.perf_counter() - start)
            start = time.perf_counter()
            as_dicts(root)
            plain.append(time.perf_counter() - start)
        assert len(runs) == args.runs and all(not run.problems for run in runs) and lines
    result = {
        "runs": args.runs,
        "files": files,
        "discovery_json_bytes": discovery_bytes,
        "rounds": args.rounds,
        "typed_list_runs_s": {"min": min(typed), "median": statistics.median(typed), "max": max(typed)},
        "json_loads_dicts_s": {"min": min(plain), "median": statistics.median(plain), "max": max(plain)},
        "typed_per_run_ms": 1000 * statistics.median(typed) / args.runs,
        "ratio_typed_over_dicts": statistics.median(typed) / statistics.median(plain),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
