"""`make demo`: the user's journey on the emulated cluster, as a Spark owner makes it on real nodes.

Two Spark nodes, two cables, come up; wirespeed is installed once, on the first node only (as pipx leaves it);
the user logs in there, runs `wirespeed init` (finds the other node, sets up ssh between them, writes the cluster
file) and `wirespeed commission --yes` (ships itself to the other node, checks, measures, fixes, measures again,
writes the report). The report is kept in `demo-out/` (it would vanish with the node's home), and everything
else is torn down. Nothing here runs on the emulated cluster that a user could not type.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from wirespeed.cli.main import main as cli
from wirespeed.testbed.state import load_state

OUT = Path("demo-out")


def step(title: str, *argv: str) -> int:
    print(f"\n=== {title}\n$ wirespeed {' '.join(argv)}", flush=True)
    code = cli(list(argv))
    sys.stdout.flush()
    return code


def run() -> int:
    prefix = "spark-" if load_state("spark-") is None else "demo-"  # never touch a testbed the user has up
    first = f"{prefix}1"
    runs = OUT.resolve() / "runs"  # the nodes share this machine's files, apart from their homes
    shutil.rmtree(runs, ignore_errors=True)
    failures = 0
    try:
        if step("two Spark nodes, two cables, wirespeed on the first", "testbed", "up", "--prefix", prefix,
                "--cables", "2") != 0:  # fmt: skip
            return 1
        on_first = ("testbed", "shell", "--prefix", prefix, first, "--")
        failures += step(f"on {first}: find the other node, set up ssh between them", *on_first, "wirespeed", "init",
                         "--yes") != 0  # fmt: skip
        failures += step(f"on {first}: commission the cluster, fixes applied", *on_first, "wirespeed", "commission",
                         "--yes", "--seconds", "3", "--runs", str(runs)) != 0  # fmt: skip
        reports = sorted(runs.glob("*/report.html"))
        if reports:
            print(f"\n=== the report\n{reports[-1]}  (open it in a browser; `wirespeed report --runs {runs}` again)")
        else:
            failures += 1
            print("\n=== the report\nno report was written")
    finally:
        failures += step("tear everything down", "testbed", "down", "--prefix", prefix) != 0
    print(f"\ndemo: {'ok' if not failures else f'{failures} step(s) failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(run())
