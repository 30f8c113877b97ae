"""A four-node ring on the emulated cluster, commissioned as an owner would: `init` on node 1, then with `--peers`,
then `commission --yes`, which fixes the ring's routes and forwarding itself. (`discover`, `check`, `fix` and
`fix --revert` on a ring, hop by hop: test_ring_faults.py's six-node ring.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import junitparser
import pytest

from .helpers import running_testbed

pytestmark = pytest.mark.root

COUNT = 4


def test_a_four_node_ring_commissioned_as_an_owner_would(tmp_path: Path) -> None:
    """init on node 1 reaches the far node through the management network; commission does not stop at ssh.mesh
    (the far nodes' fabric addresses wait for the routes its own fix adds) and completes, every check after it
    passing but tools.present (this machine's iperf3 and no nccl-tests)."""
    from wirespeed.testbed.login import shell_argv

    with running_testbed("wrc-", nodes=COUNT, topology="ring") as (state, _):

        def shell(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(shell_argv(state, "wrc-1", list(argv), tty=False), capture_output=True,
                                  text=True, timeout=600, check=False)  # fmt: skip

        done = shell("wirespeed", "init", "--yes", "--no-check")  # finds the neighbours only, and says so
        assert done.returncode == 0, done.stdout + done.stderr
        assert (
            "wrc-2 enp1s0f0np0 (198.19.2.0/24)" in done.stderr and "cabled to a node init did not reach" in done.stderr
        )
        assert "(wrc-1, wrc-2, wrc-4)" in done.stderr
        peers = ",".join(n.mgmt_address.split("/")[0] for n in state.plan.nodes[1:])
        done = shell("wirespeed", "init", "--yes", "--no-check", "--peers", peers)
        assert done.returncode == 0, done.stdout + done.stderr
        done = shell("wirespeed", "commission", "--yes", "--rungs", "tcp-halves", "--seconds", "2", "--no-live",
                     "--runs", str(tmp_path), "--junit", str(tmp_path / "junit.xml"))  # fmt: skip
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    [run_dir] = [p for p in tmp_path.iterdir() if (p / "run.json").exists()]
    before, after = (
        {r["id"]: r for r in json.loads((run_dir / phase / "checks.json").read_text())["results"]}
        for phase in ("before", "after")
    )
    assert before["ssh.mesh"]["status"] == "warn" and "wait for the ring's routes" in before["ssh.mesh"]["summary"]
    assert before["ring.routes"]["status"] == "fail"
    failing = {i: r["summary"] for i, r in after.items() if r["status"] in ("fail", "warn") and i != "tools.present"}
    assert failing == {}, failing
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    # what CI reads: a case per check as the fixes left the cluster, and the rung after them, passed
    [suite] = list(junitparser.JUnitXml.fromfile(str(tmp_path / "junit.xml")))
    cases = {case.name.split(":")[0]: case for case in suite}
    assert set(after) <= set(cases) and cases["tcp-halves (after)"].is_passed
    assert "ceiling wire" in (cases["tcp-halves (after)"].system_out or "") and suite.failures == suite.errors == 0
