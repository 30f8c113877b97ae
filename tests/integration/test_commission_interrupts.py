"""Ctrl-C in the middle of `commission`: whichever step it cuts, the run says `interrupted`, the cut step is in
its record as interrupted, and in the fix step the record matches the nodes: every change a node confirmed is in
fix-record.json (written and synced before any confirmation), and an unconfirmed one says so while the node's own
timer restores it. The fix step's kill points come from the controller's test hook (WIRESPEED_TEST_FIX_PAUSE)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from wirespeed.engine.remote import Remote

from .helpers import running_testbed

if TYPE_CHECKING:
    from wirespeed.testbed.state import TestbedState

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[TestbedState, Remote]]:
    from wirespeed.testbed.login import shell_argv

    with running_testbed("wci-", nodes=2, topology="direct", cables=1) as (state, remote):
        first = remote.cluster.names[0]
        done = subprocess.run(shell_argv(state, first, ["wirespeed", "init", "--yes", "--no-check"], tty=False),
                              capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        yield state, remote


def interrupted_at(cluster: Path, runs: Path, marker: str, pause: str | None = None) -> tuple[int, str, Path]:
    """Commission until `marker` shows on stderr, then SIGINT; its exit status, what it said, its run."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if pause:
        env["WIRESPEED_TEST_FIX_PAUSE"] = pause
    argv = [sys.executable, "-m", "wirespeed", "commission", "--cluster", str(cluster), "--runs", str(runs),
            "--rungs", "tcp-single", "--seconds", "2", "--yes", "--no-live", "--rollback-after", "8"]  # fmt: skip
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)  # fmt: skip
    said: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            said.append(line)
            if marker in line:
                proc.send_signal(signal.SIGINT)
                break
        else:
            pytest.fail(f"{marker!r} never shown: {''.join(said)[-3000:]}")
        rest, more = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    [run] = list(runs.iterdir())
    return proc.returncode, "".join(said) + more + rest, run


def steps(run: Path) -> dict[str, dict[str, object]]:
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "interrupted", record
    return {s["name"]: s for s in record["steps"]}


@pytest.mark.parametrize("marker", ["] checks: every", "] bench before:"])
def test_the_step_that_was_cut_is_recorded(bed: tuple[TestbedState, Remote], tmp_path: Path, marker: str) -> None:
    state, _ = bed
    code, said, run = interrupted_at(state.cluster_file, tmp_path / "runs", marker)
    assert code == 130, said
    name = marker.strip("] ").split(":")[0]
    recorded = steps(run)
    assert recorded[name]["status"] == "interrupted", recorded
    assert "Traceback" not in said


def sysctl(remote: Remote, node: str, key: str) -> str:
    done = remote.run(remote.cluster.node(node), ["sysctl", "-n", key], timeout_s=30)
    return done.stdout.strip()


@pytest.mark.parametrize("pause", ["before-confirm", "after-confirm"])
def test_a_cut_fix_step_leaves_a_record_that_matches_the_nodes(
    bed: tuple[TestbedState, Remote], tmp_path: Path, pause: str
) -> None:
    state, remote = bed
    code, said, run = interrupted_at(state.cluster_file, tmp_path / "runs", f"test pause at {pause}", pause)
    assert code == 130, said
    fix = steps(run)["fix"]
    assert fix["status"] == "interrupted", fix
    kept = json.loads((run / "fix-record.json").read_text())
    plan = json.loads((run / "fix.json").read_text())
    assert set(plan["nodes"]) == set(remote.cluster.names)
    changed = {(node, e["op"]["kind"], e["op"]["target"], str(e["op"]["value"]))
               for node, es in kept["nodes"].items() for e in es}  # fmt: skip
    assert changed, kept
    if pause == "after-confirm":  # both nodes confirmed before the signal: their changes stay, and are recorded
        assert kept["state"] == "done" and "2 node(s) confirmed" in str(fix["detail"]), (kept, fix)
        sysctls = [(n, t, v) for n, kind, t, v in changed if kind == "sysctl"]
        assert sysctls and all(sysctl(remote, n, t).split() == v.split() for n, t, v in sysctls), sysctls
        revert = subprocess.run([sys.executable, "-m", "wirespeed", "fix", "--cluster", str(state.cluster_file),
                                 "--revert", "--yes", "--record", str(run / "fix-record.json")],
                                capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        assert revert.returncode == 0, revert.stdout + revert.stderr  # the next case starts from the defaults
    else:  # none confirmed: the record says so, and each node's timer restores it (the next case starts there)
        assert kept["state"] == "unconfirmed" and "0 node(s) confirmed" in str(fix["detail"]), (kept, fix)
        olds = [(node, e["op"]["target"], str(e["original"])) for node, es in kept["nodes"].items() for e in es
                if e["op"]["kind"] == "sysctl"]  # fmt: skip
        deadline = time.monotonic() + 60
        while not all(sysctl(remote, n, t).split() == v.split() for n, t, v in olds):
            assert time.monotonic() < deadline, f"the nodes' timers did not restore {olds}"
            time.sleep(0.5)
