"""How fast the execution layer reaches many nodes, against the obvious alternatives, in one run.

Alternatives: one fresh `ssh` connection per command, one node after another (what a shell loop does);
the same with connection reuse (ControlMaster); and wirespeed's layer (reuse + all nodes at once).
Needs root (it brings up a 4-node switch testbed and removes it). Prints a table and writes JSON.

    sudo .venv/bin/python benchmarks/bench_exec.py [--rounds 10] [--nodes 4] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from wirespeed.adapters.ssh import SshTransport
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build

PREFIX = "wsb-"


def timed(fn: object, rounds: int) -> list[float]:
    values = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        values.append(time.perf_counter() - started)
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    state = build.up(prefix=PREFIX, nodes=args.nodes, topology="switch")
    try:
        cluster = load_cluster_file(state.cluster_file)
        with tempfile.TemporaryDirectory(prefix="wsb-cm-") as cm:
            fresh = Remote(cluster, transport_factory=lambda n: SshTransport(ssh_config=cluster.ssh_config))
            reused = Remote(
                cluster, transport_factory=lambda n: SshTransport(ssh_config=cluster.ssh_config, control_dir=Path(cm))
            )
            summary: dict[str, dict[str, dict[str, float]]] = {}
            # `true` is pure overhead; `sleep 0.3` stands for a command that waits on its node (a counter
            # interval, a ping), which is where running all nodes at once pays.
            for workload in (["true"], ["sleep", "0.3"]):

                def sequential(remote: Remote, argv: list[str] = workload) -> None:
                    for node in cluster.nodes:
                        assert remote.run(node, argv).ok

                def concurrent(argv: list[str] = workload) -> None:
                    assert all(r.ok for r in reused.run_all(argv))

                sequential(fresh)  # warm-up: page cache, sshd start-up
                sequential(reused)  # warm-up: opens the control masters
                results = {
                    "sequential, new connection each": timed(lambda: sequential(fresh), args.rounds),
                    "sequential, reused connection": timed(lambda: sequential(reused), args.rounds),
                    "wirespeed run_all (reuse + concurrent)": timed(concurrent, args.rounds),
                }
                summary[" ".join(workload)] = report(" ".join(workload), results, args)
    finally:
        build.down(PREFIX)
    if args.json:
        args.json.write_text(json.dumps({"nodes": args.nodes, "rounds": args.rounds, "results": summary}, indent=2))
    return 0


def report(workload: str, results: dict[str, list[float]], args: argparse.Namespace) -> dict[str, dict[str, float]]:
    baseline = statistics.median(results["sequential, new connection each"])
    print(f"\n`{workload}` on {args.nodes} nodes, median of {args.rounds} rounds (after one warm-up round)")
    print(f"{'method':42} {'median s':>9} {'stdev s':>8} {'speed-up':>9}")
    summary = {}
    for name, values in results.items():
        median = statistics.median(values)
        summary[name] = {"median_s": median, "stdev_s": statistics.stdev(values), "speedup": baseline / median}
        print(f"{name:42} {median:9.3f} {statistics.stdev(values):8.3f} {baseline / median:8.1f}x")
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
