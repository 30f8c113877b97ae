"""srun against ssh as the way commands reach the nodes, in one run on one Slurm testbed. Needs root and Slurm.

Brings up an emulated switch cluster with Slurm (slurmctld here, a slurmd in every node), takes an allocation of
every node, and times the same work through both transports: one command on all nodes at once (`true`, and
`sleep 0.3`), and a whole `bench matrix` TCP run (same rounds, same seconds). ssh reuses its connections
(ControlMaster, as wirespeed does); each srun is a new job step.

    sudo .venv/bin/python benchmarks/bench_launcher.py [--nodes 4] [--rounds 10] [--seconds 3] [--json out]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from wirespeed.adapters.slurm import SrunTransport
from wirespeed.core.fabric.units import parse_rate_bps
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.discover import discover_live
from wirespeed.engine.matrix import run_matrix
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.rungs import BenchOptions
from wirespeed.testbed import build
from wirespeed.testbed.slurm import start_slurm

PREFIX = "wbl-"


def median_s(remote: Remote, argv: list[str], rounds: int) -> float:
    remote.run_all(argv)  # warm-up: ssh masters, slurmd caches
    values = []
    for _ in range(rounds):
        started = time.perf_counter()
        results = remote.run_all(argv)
        values.append(time.perf_counter() - started)
        assert all(r.ok for r in results), [r.message for r in results if not r.ok]
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--half-rate", default="300mbit")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    state = build.up(prefix=PREFIX, nodes=args.nodes, topology="switch", half_rate_bps=parse_rate_bps(args.half_rate))
    job_id = None
    try:
        os.environ["SLURM_CONF"] = str(start_slurm(state))
        granted = subprocess.run(
            ["salloc", "--no-shell", "-N", str(args.nodes)], capture_output=True, text=True, check=True, timeout=60
        )
        match = re.search(r"Granted job allocation (\d+)", granted.stderr)
        assert match, granted.stderr
        job_id = match.group(1)
        cluster = load_cluster_file(state.cluster_file)
        srun = SrunTransport(job_id)
        remotes = {"ssh": Remote(cluster), "srun": Remote(cluster, transport_factory=lambda node: srun)}
        figures: dict[str, dict[str, float]] = {}
        for name, remote in remotes.items():
            with remote.owned(), tempfile.TemporaryDirectory() as tmp:
                found = discover_live(remote)
                row = {
                    "true_s": median_s(remote, ["true"], args.rounds),
                    "sleep_s": median_s(remote, ["sleep", "0.3"], args.rounds),
                }
                started = time.monotonic()
                matrix = run_matrix(
                    remote, found, "tcp", BenchOptions(seconds=args.seconds, bidir=True), RunDirectory(Path(tmp))
                )
                row["matrix_s"] = time.monotonic() - started
                row["matrix_median_gbps"] = statistics.median(c.tool_gbps or 0.0 for c in matrix.cells)
                figures[name] = row
    finally:
        if job_id is not None:
            subprocess.run(["scancel", job_id], check=False, timeout=30)
        build.down(PREFIX)
    ssh, srun_row = figures["ssh"], figures["srun"]
    print(f"{args.nodes} nodes, median of {args.rounds} rounds; matrix {args.seconds} s per round")
    print(f"{'':28} {'ssh (reused)':>14} {'srun (new step)':>16} {'srun/ssh':>9}")
    for key, label in (("true_s", "run_all true"), ("sleep_s", "run_all sleep 0.3"), ("matrix_s", "bench matrix tcp")):
        print(f"{label:28} {ssh[key]:>12.3f} s {srun_row[key]:>14.3f} s {srun_row[key] / ssh[key]:>8.2f}x")
    print(
        f"{'matrix median cell':28} {ssh['matrix_median_gbps']:>9.3f} Gb/s {srun_row['matrix_median_gbps']:>11.3f} Gb/s"
    )
    if args.json:
        args.json.write_text(json.dumps({"nodes": args.nodes, "rounds": args.rounds, **figures}, indent=2))


if __name__ == "__main__":
    main()
