"""All pairs on the emulated switch cluster: `bench matrix`'s round-robin rounds (disjoint pairs at once) against
the obvious alternative, every pair one after another, in one run on one testbed. Needs root.

Both measure every pair on every half, both directions at once (iperf3 --bidir), for --seconds each. Reported: wall
time of each, the ratio, seconds per round against one pair alone, and whether the figures agree (median cell).

    sudo .venv/bin/python benchmarks/bench_matrix.py [--nodes 6] [--seconds 3] [--half-rate 300mbit] [--json out]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from wirespeed.core.fabric.units import parse_rate_bps
from wirespeed.core.ladder import flows_between
from wirespeed.core.records.matrix import cells_from_flows, round_robin
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.discover import discover_live
from wirespeed.engine.matrix import run_matrix
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.rungs import BenchOptions
from wirespeed.engine.rungs.tcp import measure_flows
from wirespeed.testbed import build

PREFIX = "wbm-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=6)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--half-rate", default="300mbit")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    state = build.up(prefix=PREFIX, nodes=args.nodes, topology="switch", half_rate_bps=parse_rate_bps(args.half_rate))
    try:
        remote = Remote(load_cluster_file(state.cluster_file))
        options = BenchOptions(seconds=args.seconds, bidir=True)
        with remote.owned(), tempfile.TemporaryDirectory() as tmp:
            found = discover_live(remote)
            started = time.monotonic()
            matrix = run_matrix(remote, found, "tcp", options, RunDirectory(Path(tmp) / "rr"))
            round_robin_s = time.monotonic() - started
            sequential_cells = []
            pair_seconds = []
            run_dir = RunDirectory(Path(tmp) / "seq")
            for number, (a, b) in enumerate([p for r in round_robin(matrix.nodes) for p in r], start=1):
                t0 = time.monotonic()
                flows = flows_between(found.facts, found.cabling, a, b)
                results = measure_flows(
                    remote, run_dir, flows, seconds=options.seconds, bidir=True, folder=f"pair-{number}"
                )
                pair_seconds.append(time.monotonic() - t0)
                sequential_cells += cells_from_flows(number, [(a, b)], results)
            sequential_s = time.monotonic() - started - round_robin_s
    finally:
        build.down(PREFIX)
    rr = [c.tool_gbps for c in matrix.cells if c.tool_gbps is not None]
    seq = [c.tool_gbps for c in sequential_cells if c.tool_gbps is not None]
    report = {
        "nodes": args.nodes,
        "pairs": matrix.pairs,
        "rounds": len(matrix.rounds),
        "seconds_per_test": args.seconds,
        "half_rate": args.half_rate,
        "round_robin_wall_s": round(round_robin_s, 2),
        "round_seconds": [round(s, 2) for s in matrix.round_seconds],
        "sequential_wall_s": round(sequential_s, 2),
        "one_pair_alone_s": round(statistics.median(pair_seconds), 2),
        "speedup": round(sequential_s / round_robin_s, 2),
        "round_over_one_pair": round(statistics.median(matrix.round_seconds) / statistics.median(pair_seconds), 2),
        "median_cell_gbps_round_robin": round(statistics.median(rr), 3),
        "median_cell_gbps_sequential": round(statistics.median(seq), 3),
        "cells": [len(rr), len(seq)],
        "outliers": [o.text for o in matrix.outliers],
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
