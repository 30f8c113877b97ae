"""Does wirespeed's observer lower a CPU-bound NCCL measurement between nodes? On the GPU machine (after
scripts/device/prepare): two emulated nodes, one rank each on the one GPU, NCCL's socket transport over the fabric
halves. Alternated in one run, on node 1 as a user types them:

- `wirespeed bench nccl` (the wire sampled on both nodes every --interval, output streamed, JSON fetched back);
- the same mpirun argv by hand (the rung's own `command.txt`, with its -J pointed elsewhere).

Unshaped halves (`--half-rate none`, the default here) make NCCL's socket threads the ceiling, where an observer
would show; `--half-rate 2gbit` makes the wire the ceiling. Figure: peak out-of-place busbw from nccl-tests' own
JSON, per round and as the median of the per-round ratios (wirespeed / by hand).

To find what lowers it, one suspect at a time: `--cores-per-node 4` gives each node 4 cores of its own (where a
lowering showed); `--controller host` takes wirespeed's controller off node 1; `--controller node1-nice` leaves
it there at nice 10 (the ranks, started by sshd, keep nice 0); `--interval 10` all but stops the agents' sampling.

    python3 benchmarks/bench_nccl_nodes.py [--rounds 5] [--collective all_reduce] [--size 256M] [--iters 20]
        [--cores-per-node 0] [--controller node1|node1-nice|host]
        [--half-rate none] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from procs import netns_pids

from wirespeed.core.tools.nccl_tests import parse_json
from wirespeed.testbed.login import shell_argv
from wirespeed.testbed.state import load_state

PREFIX = "wbn-"


def wirespeed(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "wirespeed", *argv], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise SystemExit(f"wirespeed {' '.join(argv[:3])}: {done.stderr.strip()[-500:]}")
    return done


def on_node1(*argv: str) -> subprocess.CompletedProcess[str]:
    state = load_state(PREFIX)
    assert state is not None
    return subprocess.run(shell_argv(state, f"{PREFIX}1", list(argv), tty=False), capture_output=True, text=True,
                          timeout=900, check=False)  # fmt: skip


def through_wirespeed(runs: Path, args: argparse.Namespace) -> tuple[float, float, list[str]]:
    bench = ["bench", "nccl", "--json", "--no-live", "--runs", str(runs), "--collectives", args.collective,
             "--min-size", args.size, "--max-size", args.size, "--iters", str(args.iters), "--interval",
             str(args.interval), "--env", "NCCL_NVLS_ENABLE=0"]  # fmt: skip
    started = time.monotonic()
    if args.controller == "node1":  # as a user runs it: on the first node, sharing its CPUs with the rank there
        done = on_node1("wirespeed", *bench)
    elif args.controller == "node1-nice":  # the same, wirespeed's side (controller, its ssh clients) at nice 10
        done = on_node1("nice", "-n", "10", "wirespeed", *bench)
    else:  # from outside the nodes: only the agents and the rung's own processes run on them
        state = load_state(PREFIX)
        assert state is not None
        done = wirespeed(*bench, "--cluster", str(state.cluster_file), check=False)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"bench nccl failed: {done.stderr.strip()[-800:]}")
    data = json.loads(done.stdout)
    rung = data["rungs"][0]
    argv = shlex.split((Path(data["run"]) / rung["rung"] / "command.txt").read_text())
    return float(rung["collective"]["peak_busbw_GBps"]), elapsed, argv


def by_hand(argv: list[str], target: Path) -> tuple[float, float]:
    argv = [*argv]
    argv[argv.index("-J") + 1] = str(target)
    started = time.monotonic()
    done = on_node1(*argv)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"mpirun by hand failed: {done.stdout.strip()[-800:]}")
    parsed = parse_json(target.read_text())
    return max(r.out_of_place.busbw_GBps for r in parsed.rows), elapsed


def pin_node(netns: str, cores: set[int]) -> int:
    """Every thread in `netns` (the node's sshd, and so all it starts later) on `cores`: a node of its own CPUs, as a
    real node has, where NCCL's socket threads and wirespeed's agent meet. Returns the threads pinned."""
    pinned = 0
    for pid in netns_pids(netns):
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                os.sched_setaffinity(int(tid), cores)
                pinned += 1
        except OSError:  # gone meanwhile
            continue
    return pinned


def bootstrap_median_ci(values: list[float], draws: int = 10000, seed: int = 1) -> list[float]:
    """The 95% interval of the median of `values` by resampling them (percentile bootstrap, seeded)."""
    import random

    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(draws))
    return [medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]]


def summarize(args: argparse.Namespace, rounds: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "collective": args.collective,
        "size": args.size,
        "iters": args.iters,
        "half_rate": args.half_rate,
        "interval_s": args.interval,
        "cores_per_node": args.cores_per_node,
        "controller": args.controller,
        "rounds": rounds,
        "median_hand_busbw_GBps": statistics.median(r["hand_busbw_GBps"] for r in rounds),
        "median_wirespeed_busbw_GBps": statistics.median(r["wirespeed_busbw_GBps"] for r in rounds),
        "median_ratio": statistics.median(r["ratio"] for r in rounds),
        "ratio_range": [min(r["ratio"] for r in rounds), max(r["ratio"] for r in rounds)],
        "ratio_median_ci95": bootstrap_median_ci([r["ratio"] for r in rounds]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--collective", default="all_reduce")
    parser.add_argument("--size", default="256M")
    parser.add_argument("--iters", type=int, default=20, help="nccl-tests -n: longer runs, less spread per round")
    parser.add_argument("--half-rate", default="none")
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--cores-per-node", type=int, default=0,
                        help="pin node i to cores i*N .. i*N+N-1: less spread from where threads land")  # fmt: skip
    parser.add_argument(
        "--controller",
        choices=("node1", "node1-nice", "host"),
        default="node1",
        help="where `wirespeed bench` runs: on node 1 (as a user runs it; node1-nice: at nice 10) or outside the nodes",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    wirespeed("testbed", "up", "--prefix", PREFIX, "--cables", "2", "--half-rate", args.half_rate)
    rounds: list[dict[str, Any]] = []
    try:
        for i in range(2 if args.cores_per_node else 0):
            cores = set(range(i * args.cores_per_node, (i + 1) * args.cores_per_node))
            pinned = pin_node(f"{PREFIX}{i + 1}", cores)
            print(f"{PREFIX}{i + 1}: {pinned} threads on cores {min(cores)}-{max(cores)}", flush=True)
        done = on_node1("wirespeed", "init", "--yes")
        if done.returncode != 0:
            raise SystemExit(f"init failed: {done.stderr.strip()[-500:]}")
        with tempfile.TemporaryDirectory(prefix="wirespeed-bench-") as tmp:
            work = Path(tmp)
            argv: list[str] = []
            for index in range(args.rounds):
                # alternate which goes first, so that a drift of the machine falls on both alike
                order = ("wirespeed", "hand") if index % 2 == 0 else ("hand", "wirespeed")
                row: dict[str, Any] = {"round": index + 1, "first": order[0]}
                for arm in order:
                    if arm == "wirespeed" or not argv:
                        busbw, elapsed, argv = through_wirespeed(work / "runs", args)
                        row["wirespeed_busbw_GBps"], row["wirespeed_wall_s"] = busbw, elapsed
                    if arm == "hand":
                        busbw, elapsed = by_hand(argv, work / f"hand-{index}.json")
                        row["hand_busbw_GBps"], row["hand_wall_s"] = busbw, elapsed
                row["ratio"] = row["wirespeed_busbw_GBps"] / row["hand_busbw_GBps"]
                rounds.append(row)
                print(json.dumps(row), flush=True)
                if args.json:  # after every round: a run cut by a time limit keeps what it measured
                    args.json.write_text(json.dumps(summarize(args, rounds), indent=1) + "\n")
    finally:
        wirespeed("testbed", "down", "--prefix", PREFIX, check=False)
    summary = summarize(args, rounds)
    print(json.dumps({k: v for k, v in summary.items() if k != "rounds"}))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
