"""`make demo`: the main job end to end on the emulated cluster, with what exists so far.

Today: bring a two-node, two-cable Spark testbed up, show every node and interface, reach every node through
the cluster file over ssh (host names, the agent's version), discover every node and the cabling with the
active probe, run the checks, fix what can be fixed, check again, climb the bandwidth ladder (the takeaway table;
results in runs/), write the run's HTML report, and tear it all down.
Each later capability adds its step here until this is the full commissioning run with its report.
"""

from __future__ import annotations

import sys

from wirespeed.cli.main import main as cli
from wirespeed.core.errors import ExitStatus
from wirespeed.testbed.state import load_state, testbed_dir

NOT_MEASURED = ExitStatus.NOT_MEASURED


def step(title: str, *argv: str) -> int:
    print(f"\n=== {title}\n$ wirespeed {' '.join(argv)}", flush=True)
    code = cli(list(argv))
    sys.stdout.flush()
    return code


def run() -> int:
    prefix = "spark-" if load_state("spark-") is None else "demo-"  # never touch a testbed the user has up
    cluster_file = str(testbed_dir(prefix) / "cluster.toml")
    failures = 0
    try:
        if step("bring the emulated cluster up", "testbed", "up", "--prefix", prefix, "--cables", "2") != 0:
            return 1
        cluster = ["--cluster", cluster_file]
        failures += step("every node, over ssh through the cluster file", "exec", *cluster, "--", "hostname") != 0
        failures += step("wirespeed on every node", "agent", "check", *cluster) != 0
        failures += step("discovery: every node's halves, ports and the cabling map", "discover", *cluster) != 0
        # Findings are the point of a check run, so a failing check is reported, not a failed demo; only a
        # check that could not run at all (not measured) is.
        failures += step("checks: every known pitfall, with evidence and fixes", "check", *cluster) == NOT_MEASURED
        # Inside a network namespace some sysctls are the host's and cannot be set: fix says so per node.
        record = str(testbed_dir(prefix) / "last-fix.json")
        failures += step("fix what can be fixed (kept for --revert)", "fix", *cluster, "--yes", "--record", record) >= 2
        failures += step("the checks again", "check", *cluster, "--skip", "ssh.mesh") == NOT_MEASURED
        # The ladder: TCP rungs measured at the wire; RDMA and NCCL say why they cannot run here (no RDMA
        # devices, no GPU) rather than inventing a figure. Results stay in runs/<timestamp>/.
        failures += step("the bandwidth ladder, each rung's ceiling with evidence", "bench", "ladder", *cluster,
                         "--seconds", "3") != 0  # fmt: skip
        # The report of that run: one self-contained HTML file beside its results.
        failures += step("the report: takeaway, rungs with evidence, plots, checks, cabling", "report") != 0
    finally:
        failures += step("tear everything down", "testbed", "down", "--prefix", prefix) != 0
    print(f"\ndemo: {'ok' if not failures else f'{failures} step(s) failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(run())
