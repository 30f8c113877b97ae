"""A node whose agent is broken, on the emulated cluster: it sleeps for ever, floods stdout, floods stderr (after 5 MB
that must be drained, not left to fill the pipe) or prints junk. Every command returns within 60 s, non-zero, with
one line naming the node and what it did, under 200 MB; nothing of ours is left running on the node or here.
(bench and commission meet it at the bench lock, the others at the node's facts; `agent check` at its version.)

The broken agent is a small script on the node (the testbed's nodes share this machine's files), named by that
node's `agent = [...]` in a cluster file of the test's own."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.core.cluster.inventory import Cluster, render_cluster_toml
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.testbed.state import TestbedState as BedState

from .helpers import processes_in, running_testbed

pytestmark = pytest.mark.root
PREFIX = "wag-"
BROKEN = "wag-2"
AGENTS = {
    "sleeps": "exec sleep 100000",
    "floods-stdout": "yes | head -c 200000000",
    "floods-stderr": "head -c 5000000 /dev/zero | tr '\\0' e >&2; exec yes >&2",
    "junk": "echo 'this is not json'",
    # The lock is taken (by the real agent); it is reading the node that hangs: bench and commission stop there.
    "sleeps-past-the-lock": f'[ "$2" = lock ] && exec {sys.executable} -m wirespeed "$@"; exec sleep 100000',
}
# What the one line says, per agent: the same failure, in the words of the step that met it.
SAID = {
    "sleeps": r"timed out after \d+ s running \S+|the agent did not answer about the bench lock within \d+ s",
    "floods-stdout": r"the agent wrote more than \d+ MiB to stdout; stopped|"
    r"cannot take the bench lock: not a lock answer: 'y'",
    "floods-stderr": r"(cannot take the bench lock: )?the agent wrote more than \d+ MiB to stderr; stopped",
    "sleeps-past-the-lock": r"timed out after \d+ s running \S+",
    "junk": r"the agent did not answer in JSON .*'this is not json'|"
    r"cannot take the bench lock: not a lock answer: 'this is not json'|wirespeed of unknown version there",
}
COMMANDS = {
    "discover": ["discover"],
    "watch": ["watch", "--once", "--no-live"],
    "bench": ["bench", "tcp-single", "--seconds", "2", "--no-live"],
    "check": ["check", "--no-active"],
    "fix": ["fix"],
    "agent-check": ["agent", "check"],
    "commission": ["commission", "--yes", "--no-live", "--rungs", "tcp-single", "--seconds", "2"],
}
RETURN_S = 60.0
MAX_RSS_KB = 200 * 1024
# Ours on the node: the watchdog shells, the broken agent and what it runs.
OURS_THERE = r"wirespeed-watchdog|-m wirespeed agent |/agent-|^yes|^head -c|^tr |^sleep 100000"


@pytest.fixture(scope="module")
def bed() -> Iterator[BedState]:
    with running_testbed(PREFIX, nodes=2, topology="direct", cables=1) as (state, _):
        yield state


@pytest.fixture
def broken(bed: BedState, tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A cluster file whose second node runs the broken agent of the test's parameter."""
    kind = request.node.callspec.params["kind"]
    script = tmp_path / f"agent-{kind}"
    script.write_text(f"#!/bin/sh\n{AGENTS[kind]}\n")
    script.chmod(0o755)
    testbed = load_cluster_file(bed.cluster_file)
    nodes = tuple(
        dataclasses.replace(node, agent=(str(script),)) if node.name == BROKEN else node for node in testbed.nodes
    )
    path = tmp_path / "cluster.toml"
    path.write_text(render_cluster_toml(Cluster(testbed.name, nodes, str(path), testbed.ssh_config)))
    return path


def ssh_clients_here() -> list[str]:
    """ssh clients on this machine still running a command on the broken node (the connection master, which
    serves no command, is not one)."""
    found = subprocess.run(["pgrep", "-af", "^ssh "], capture_output=True, text=True, check=False).stdout
    return [line for line in found.splitlines() if f" {BROKEN} " in line and "[mux]" not in line]


def left_behind(deadline_s: float = 30.0) -> tuple[list[str], list[str]]:
    """What of ours still runs on the node and here, once it has had `deadline_s` to go (the watchdog there
    stops what ran within its silence limit when nothing else did): polled, not slept."""
    deadline = time.monotonic() + deadline_s
    while True:
        there = processes_in(BROKEN, OURS_THERE)
        here = ssh_clients_here()
        if (not there and not here) or time.monotonic() > deadline:
            return there, here
        time.sleep(0.2)


# Runs wirespeed as `python -m wirespeed` does, and writes its own peak memory (kB) to the file named first: VmHWM,
# the high-water mark of the memory this program mapped since exec. (getrusage's ru_maxrss would not do: Linux keeps
# in it the peak of the image the process replaced, so a test runner of 290 MB would be counted as wirespeed's.)
MEASURED = (
    "import atexit, sys\n"
    "peak = sys.argv.pop(1)\n"
    "def hwm():\n"
    "    line = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
    "    open(peak, 'w').write(line.split()[1])\n"
    "atexit.register(hwm)\n"
    "from wirespeed.cli.main import main\n"
    "raise SystemExit(main())\n"
)


def run_cli(argv: list[str], workdir: Path) -> tuple[int, str, str, float, int]:
    """wirespeed in a process of its own: exit status, stdout, stderr, seconds, and its peak memory in kB."""
    peak = workdir / "peak-rss-kb"
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", MEASURED, str(peak), *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=workdir,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=RETURN_S * 3)
    except subprocess.TimeoutExpired:  # a hang: stopped (the assertions say so), never left behind
        os.killpg(process.pid, 9)
        stdout, stderr = process.communicate()
    seconds = time.monotonic() - started
    return process.returncode, stdout, stderr, seconds, int(peak.read_text()) if peak.exists() else 0


# A silent agent costs each command its whole deadline (30-40 s): `check` and `fix` read the nodes through the
# same call as `discover`, so the silent case runs for the others only, and those that take no lock side by side
# (with bench, the one of them that does); every command meets the fast faults one by one.
CASES = [(kind, command) for kind in ("floods-stdout", "floods-stderr", "junk") for command in COMMANDS]
SILENT_WAVES = (("discover", "watch", "agent-check", "bench"), ("commission",))


@pytest.mark.parametrize(("kind", "command"), CASES)
def test_a_broken_agent_makes_every_command_return_with_one_line(
    kind: str, command: str, broken: Path, tmp_path: Path
) -> None:
    returns_with_one_line(kind, command, broken, tmp_path)


@pytest.mark.parametrize("wave", SILENT_WAVES, ids=["+".join(wave) for wave in SILENT_WAVES])
@pytest.mark.parametrize("kind", ["sleeps"])
def test_a_silent_agent_makes_every_command_return_with_one_line(
    kind: str, wave: tuple[str, ...], broken: Path, tmp_path: Path
) -> None:
    """The commands of a wave at once, each in a process of its own, each held to the same rules as alone."""
    from concurrent.futures import ThreadPoolExecutor

    def one(command: str) -> tuple[int, str, str, float, int]:
        workdir = tmp_path / command
        workdir.mkdir()
        return run_cli([*COMMANDS[command], "--cluster", str(broken)], workdir)

    with ThreadPoolExecutor(max_workers=len(wave)) as pool:
        results = dict(zip(wave, pool.map(one, wave), strict=True))
    there, here = left_behind()
    for command, result in results.items():
        said_once(kind, command, *result)
    assert there == [], f"left on {BROKEN}: {there}"
    assert here == [], f"ssh clients left here: {here}"


@pytest.mark.parametrize("command", ["bench"])  # commission takes the same lock, then reads the nodes the same way
@pytest.mark.parametrize("kind", ["sleeps-past-the-lock"])
def test_a_node_that_cannot_be_read_past_the_lock_stops_a_measurement(
    kind: str, command: str, broken: Path, tmp_path: Path
) -> None:
    returns_with_one_line(kind, command, broken, tmp_path)


def returns_with_one_line(kind: str, command: str, broken: Path, tmp_path: Path) -> None:
    result = run_cli([*COMMANDS[command], "--cluster", str(broken)], tmp_path)
    there, here = left_behind()
    said_once(kind, command, *result)
    assert there == [], f"left on {BROKEN}: {there}"
    assert here == [], f"ssh clients left here: {here}"


def said_once(kind: str, command: str, code: int, stdout: str, stderr: str, seconds: float, peak_kb: int) -> None:
    """It ended non-zero within RETURN_S, under MAX_RSS_KB, naming the node in one line that carries no flood."""
    print(f"\n{kind:14} {command:9} exit {code}  {seconds:5.1f} s  {peak_kb / 1024:6.1f} MB")
    assert code not in (0, None) and code != -9, (command, code, stderr[-2000:])
    assert seconds < RETURN_S, f"{command} took {seconds:.1f} s with an agent that {kind}"
    assert 0 < peak_kb < MAX_RSS_KB, f"{command} peaked at {peak_kb / 1024:.0f} MB"
    said = re.compile(rf"\b{BROKEN}: (?:{SAID[kind]})")
    assert any(said.search(line) for line in (stdout + stderr).splitlines()), (command, stdout[-2000:], stderr[-2000:])
    naming = [line for line in stderr.splitlines() if f"{BROKEN}: " in line]
    assert len(naming) <= 1, (command, naming)  # one line, not a line per step that met it
    assert all(len(line) < 400 for line in (stdout + stderr).splitlines()), f"{command}: a line carries the flood"
