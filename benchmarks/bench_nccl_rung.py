"""What does `wirespeed bench nccl` cost against running nccl-tests by hand? The same mpirun argv that the rung
builds, run directly (the obvious alternative) and through wirespeed (discovery, memory query, the wire sampled
on every node, output streamed to disk, nccl-tests' JSON fetched back), alternated in one run on the GPU machine.

Two ratios: busbw through wirespeed / busbw by hand (does sampling disturb the measurement? want ~1.00) and wall
time through wirespeed / wall time by hand (what discovery and set-up add).

    NCCL_TESTS_DIR=... python3 benchmarks/bench_nccl_rung.py [--collective all_reduce] [--max-size 256M]
        [--rounds 3] [--env NCCL_P2P_DISABLE=1 ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.cluster.inventory import local_cluster
from wirespeed.core.fabric.units import parse_size_bytes
from wirespeed.core.nccl import NcclOptions, NcclPlan, mpirun_argv
from wirespeed.core.tools.nccl_tests import parse_json
from wirespeed.engine import discover
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.rungs import BenchOptions
from wirespeed.engine.rungs.base import RungContext
from wirespeed.engine.rungs.nccl import NcclRung, nccl_options


def by_hand(plan: NcclPlan, options: NcclOptions, workdir: Path, index: int) -> tuple[float, float]:
    """Peak out-of-place busbw (GB/s) from nccl-tests' own JSON, and the wall time of mpirun."""
    target = workdir / f"hand-{index}.json"
    argv = mpirun_argv(plan, options, str(target), as_root=True)
    started = time.monotonic()
    subprocess.run(argv, check=True, capture_output=True, text=True, timeout=options.timeout_s)
    elapsed = time.monotonic() - started
    parsed = parse_json(target.read_text())
    return max(r.out_of_place.busbw_GBps for r in parsed.rows), elapsed


def through_wirespeed(collective: str, argv: list[str], runs: Path) -> tuple[float, float]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=160)
    started = time.monotonic()
    code = main(["bench", "nccl", "--hosts", "localhost", "--json", "--runs", str(runs), *argv], env)
    elapsed = time.monotonic() - started
    data = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    if code != 0:
        raise SystemExit(f"wirespeed bench nccl failed: {data['rungs'][0].get('reason')}")
    peak = data["rungs"][0]["collective"]["peak_busbw_GBps"]
    return float(peak), elapsed


def run(collective: str, max_size: str, rounds: int, env: list[str]) -> dict[str, Any]:
    pairs = tuple((e.partition("=")[0], e.partition("=")[2] if "=" in e else None) for e in env)
    bench_options = BenchOptions(collectives=(collective,), max_bytes=parse_size_bytes(max_size), env=pairs)
    options = nccl_options(bench_options)
    remote = Remote(local_cluster())
    found = discover.discover_live(remote, probe=False)
    plan = NcclRung(collective).plan(RungContext(remote, found, bench_options, RunDirectory(Path(tempfile.mkdtemp()))))
    if not isinstance(plan, NcclPlan):
        raise SystemExit(f"cannot run: {plan.reason} ({plan.fix})")
    cli_argv = ["--collectives", collective, "--max-size", max_size, *[x for e in env for x in ("--env", e)]]
    hand: list[tuple[float, float]] = []
    tool: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(rounds):  # alternate, so drift in the machine hits both alike
            hand.append(by_hand(plan, options, Path(tmp), i))
            tool.append(through_wirespeed(collective, cli_argv, Path(tmp) / "runs"))
    busbw_ratio = statistics.median(t[0] for t in tool) / statistics.median(h[0] for h in hand)
    time_ratio = statistics.median(t[1] for t in tool) / statistics.median(h[1] for h in hand)
    return {
        "collective": collective,
        "max_size": max_size,
        "env": env,
        "rounds": rounds,
        "by_hand": [{"peak_busbw_GBps": b, "wall_s": w} for b, w in hand],
        "wirespeed": [{"peak_busbw_GBps": b, "wall_s": w} for b, w in tool],
        "busbw_ratio_wirespeed_over_hand": busbw_ratio,
        "wall_time_ratio_wirespeed_over_hand": time_ratio,
    }


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collective", default="all_reduce")
    parser.add_argument("--max-size", default="256M")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.collective, args.max_size, args.rounds, args.env)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main_cli()
