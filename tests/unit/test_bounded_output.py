"""Every process's output is read as it comes and within a budget: a flood on stdout or stderr is stopped (its
whole group) with one line naming the node and what it sent, the controller's memory stays bounded, and a silent
process is stopped at its deadline. Real local processes, no ssh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from wirespeed.adapters.process import FLOOD_KEPT, Budget, Flood, MiB, run_process
from wirespeed.core.cluster.inventory import Cluster, Node
from wirespeed.core.outcome import Status
from wirespeed.engine.remote import Remote

KillAfter = Callable[[int], int]
WaitGone = Callable[..., bool]
SMALL = Budget(stdout_bytes=1 * MiB, stderr_bytes=1 * MiB, line_bytes=64 * 1024)


def cluster(*nodes: Node) -> Cluster:
    return Cluster(name="test", nodes=nodes or (Node(name="n1", host="localhost"),), source="test")


# ------------------------------------------------------------------------------------------------ run_process
def test_a_flood_on_stdout_is_stopped_at_its_budget() -> None:
    started = time.monotonic()
    outcome = run_process(["yes"], timeout_s=60, budget=SMALL)
    assert time.monotonic() - started < 10
    assert outcome.flood == Flood("stdout", 1 * MiB)
    assert outcome.flood.describe() == "wrote more than 1 MiB to stdout"
    assert not outcome.timed_out
    assert outcome.returncode is not None and outcome.returncode < 0  # killed, not ended
    assert 0 < len(outcome.stdout) <= FLOOD_KEPT  # its start, not the flood


def test_a_flood_on_stderr_is_stopped_while_stdout_is_read_too(kill_after: KillAfter, wait_gone: WaitGone) -> None:
    # The grandchild floods stderr; stdout says its pid first: both pipes are read at once, the group is killed.
    outcome = run_process(["sh", "-c", "yes >&2 & echo $!; wait"], timeout_s=60, budget=SMALL)
    assert outcome.flood == Flood("stderr", 1 * MiB)
    assert outcome.flood.describe() == "wrote more than 1 MiB to stderr"
    assert wait_gone(kill_after(int(outcome.stdout.split()[0])), 5.0), "the flooding grandchild outlived its budget"


def test_output_within_budget_is_whole() -> None:
    outcome = run_process(["head", "-c", "900000", "/dev/zero"], timeout_s=60, budget=SMALL)
    assert outcome.flood is None and outcome.returncode == 0
    assert len(outcome.stdout) == 900000


def test_a_flood_costs_the_controller_a_bounded_memory(tmp_path: Path) -> None:
    """300 MB written at once: the default budget (64 MiB) stops it, and the reading process's peak stays far
    below what it was sent. The peak is this process's own (VmHWM): ru_maxrss would carry the size of the test
    process that forked it, which a whole suite makes large."""
    probe = (
        "import json, re\n"
        "from wirespeed.adapters.process import run_process\n"
        "def hwm():\n"
        "    return int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "before = hwm()\n"
        "outcome = run_process(['head', '-c', '300000000', '/dev/zero'], timeout_s=120)\n"
        "after = hwm()\n"
        "print(json.dumps({'before_kb': before, 'after_kb': after, 'flood': outcome.flood.describe(),\n"
        "                  'kept': len(outcome.stdout)}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=180, check=True)
    seen = json.loads(done.stdout)
    assert seen["flood"] == "wrote more than 64 MiB to stdout"
    assert seen["kept"] <= FLOOD_KEPT
    assert seen["after_kb"] - seen["before_kb"] < 120 * 1024, seen  # 64 MiB and its growth, not 300 MB
    assert seen["after_kb"] < 200 * 1024, seen


def test_a_silent_process_is_stopped_at_its_deadline() -> None:
    started = time.monotonic()
    outcome = run_process(["sleep", "30"], timeout_s=0.5, budget=SMALL)
    assert outcome.timed_out and outcome.flood is None
    assert time.monotonic() - started < 5


# ------------------------------------------------------------------------------------------------- Remote.run
def test_the_agent_flooding_stdout_is_one_line_naming_the_node() -> None:
    flooder = Node(name="wds-2", host="localhost", agent=("sh", "-c", "exec yes", "sh"))
    remote = Remote(cluster(flooder))
    result = remote.run(flooder, [*flooder.agent, "agent", "facts"], timeout_s=60, budget=SMALL)
    assert result.status is Status.FAILED
    assert result.message == "wds-2: the agent wrote more than 1 MiB to stdout; stopped"
    assert result.hint is not None and "agent = [...]" in result.hint


def test_another_command_flooding_stderr_is_named_by_its_program() -> None:
    remote = Remote(cluster())
    result = remote.run(remote.cluster.nodes[0], ["sh", "-c", "yes >&2"], timeout_s=60, budget=SMALL)
    assert result.message == "n1: sh wrote more than 1 MiB to stderr; stopped"


def test_the_default_budget_stops_an_endless_stdout() -> None:
    remote = Remote(cluster())
    result = remote.run(remote.cluster.nodes[0], ["yes"], timeout_s=120)
    assert result.message == "n1: yes wrote more than 64 MiB to stdout; stopped"


# ----------------------------------------------------------------------------------------------- Remote.start
def test_a_started_process_flooding_stderr_is_stopped_while_nobody_reads_stdout(
    tmp_path: Path, kill_after: KillAfter, wait_gone: WaitGone
) -> None:
    remote = Remote(cluster(), control_dir=tmp_path)
    process = remote.start(remote.cluster.nodes[0], ["sh", "-c", "echo $$; exec yes >&2"], budget=SMALL)
    kill_after(process.popen.pid)
    pid = kill_after(int(process.next_line(30.0) or 0))
    deadline = time.monotonic() + 30
    while process.flood is None and time.monotonic() < deadline:  # the stderr reader stops it by itself
        time.sleep(0.05)
    assert process.flood == Flood("stderr", 1 * MiB)
    result = process.stop(grace_s=1.0)
    assert result.message == "n1: sh wrote more than 1 MiB to stderr; stopped"
    assert wait_gone(pid, 5.0), "the flooding command outlived its budget"
    remote.stop_all()


def test_a_line_without_end_is_stopped_at_the_line_limit(tmp_path: Path) -> None:
    remote = Remote(cluster(), control_dir=tmp_path)
    process = remote.start(remote.cluster.nodes[0], ["sh", "-c", "echo first; exec tr -d '\\n' < /dev/zero"],
                           budget=SMALL)  # fmt: skip
    assert list(process.lines()) == ["first"]
    assert process.flood == Flood("stdout", 64 * 1024, line=True)
    result = process.stop(grace_s=1.0)
    assert result.message == "n1: sh wrote a line longer than 65536 bytes to stdout; stopped"
    remote.stop_all()


def test_a_stream_budget_stops_many_short_lines(tmp_path: Path) -> None:
    remote = Remote(cluster(), control_dir=tmp_path)
    process = remote.start(remote.cluster.nodes[0], ["yes"], budget=SMALL)
    count = sum(1 for _ in process.lines())
    assert 0 < count <= 1 * MiB // 2 + 1
    assert process.stop(grace_s=1.0).message == "n1: yes wrote more than 1 MiB to stdout; stopped"
    remote.stop_all()


def test_next_line_waits_no_longer_than_asked(tmp_path: Path) -> None:
    remote = Remote(cluster(), control_dir=tmp_path)
    process = remote.start(remote.cluster.nodes[0], ["sh", "-c", "echo ready; exec sleep 30"])
    assert process.next_line(10.0) == "ready"
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        process.next_line(0.3)
    assert time.monotonic() - started < 2
    result = process.stop(grace_s=1.0)
    assert result.ok and result.message == "n1: stopped"
    remote.stop_all()


def test_the_watchdog_ends_even_when_nobody_reads_its_full_stderr() -> None:
    """A flood fills the pipe to sshd that nobody drains any more: when the controller lets go, the watchdog must
    still end (dash says "Terminated" on stderr after `wait`: on a full pipe that write would block it for ever)."""
    from wirespeed.adapters.process import watchdog_argv

    proc = subprocess.Popen(watchdog_argv(["sh", "-c", "exec yes >&2"]), stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stderr is not None
        assert proc.stderr.read(1)  # it floods; the pipe is full from here on
        proc.stdin.close()  # the controller lets go
        assert proc.wait(timeout=20) == 143
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
