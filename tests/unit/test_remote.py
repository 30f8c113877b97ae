"""The execution layer on local nodes (no ssh, no network): concurrency, order, isolation, ownership, agents."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from wirespeed import __version__
from wirespeed.adapters.process import SILENCE_S, WATCHDOG_SCRIPT
from wirespeed.adapters.ssh import LocalTransport, SshTransport
from wirespeed.core.cluster.inventory import Cluster, Node
from wirespeed.core.outcome import Status, worst_exit_status
from wirespeed.engine.remote import Remote, check_agents

KillAfter = Callable[[int], int]
WaitGone = Callable[..., bool]


def local_cluster(count: int) -> Cluster:
    nodes = tuple(Node(name=f"n{i}", host="localhost") for i in range(1, count + 1))
    return Cluster(name="test", nodes=nodes, source="test")


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(local_cluster(4), control_dir=tmp_path / "cm")


@dataclass
class FakeSsh:
    """Pretends to be ssh (so Remote watches and classifies as it would over ssh) but runs locally."""

    program: Sequence[str] = ()
    via_ssh: bool = True
    via_srun: bool = False
    wrapped: list[list[str]] = field(default_factory=list)

    def wrap(self, node: Node, argv: Sequence[str]) -> list[str]:
        self.wrapped.append(list(argv))
        return [*self.program, *argv]

    def destination(self, node: Node) -> str:
        return f"alice@{node.host}:2222"


# ----------------------------------------------------------------------------------------------------- run_all
def test_run_all_is_concurrent(remote: Remote) -> None:
    started = time.monotonic()
    results = remote.run_all(["sleep", "0.5"], timeout_s=10)
    elapsed = time.monotonic() - started
    assert [r.status for r in results] == [Status.OK] * 4
    assert elapsed < 1.5, f"4 x sleep 0.5 took {elapsed:.2f} s: not run at once"


def test_run_all_results_come_in_node_order(remote: Remote) -> None:
    # The first node finishes last; results still follow the cluster's order.
    delays = {"n1": 0.4, "n2": 0.25, "n3": 0.1, "n4": 0}

    def argv(node: Node) -> list[str]:
        return ["sh", "-c", f'sleep {delays[node.name]}; echo "$0"', node.name]

    results = remote.run_all(argv)
    assert [r.node for r in results] == ["n1", "n2", "n3", "n4"]
    assert [r.stdout for r in results] == ["n1\n", "n2\n", "n3\n", "n4\n"]
    assert [r.argv for r in results] == [tuple(argv(n)) for n in remote.cluster.nodes]


def test_one_nodes_failure_does_not_abort_the_others(remote: Remote) -> None:
    commands = {
        "n1": ["sh", "-c", "echo fine"],
        "n2": ["sh", "-c", "echo broken >&2; exit 4"],
        "n3": ["no-such-wirespeed-program-xyz"],
        "n4": ["sleep", "10"],
    }
    started = time.monotonic()
    results = remote.run_all(lambda node: commands[node.name], timeout_s=0.5)
    assert time.monotonic() - started < 4
    assert [r.status for r in results] == [Status.OK, Status.FAILED, Status.NOT_FOUND, Status.TIMED_OUT]
    assert results[0].stdout == "fine\n"
    assert results[1].message == "n2: sh exited with status 4: broken"
    assert results[2].message == "n3: command not found: no-such-wirespeed-program-xyz"
    assert results[3].message == "n4: timed out after 0.5 s running sleep"
    assert worst_exit_status(results) == 4


def test_run_all_on_chosen_nodes(remote: Remote) -> None:
    chosen = [remote.cluster.node("n3"), remote.cluster.node("n1")]
    results = remote.run_all(["true"], nodes=chosen)
    assert [r.node for r in results] == ["n3", "n1"]
    assert remote.run_all(["true"], nodes=[]) == []


def test_max_parallel_limits_concurrency(tmp_path: Path) -> None:
    remote = Remote(local_cluster(3), control_dir=tmp_path, max_parallel=1)
    started = time.monotonic()
    results = remote.run_all(["sleep", "0.2"])
    assert all(r.ok for r in results)
    assert time.monotonic() - started >= 0.55


def test_run_with_input_text(remote: Remote) -> None:
    result = remote.run(remote.cluster.nodes[0], ["cat"], input_text="payload\n")
    assert result.ok
    assert result.stdout == "payload\n"


def test_local_nodes_run_without_ssh_or_watchdog(tmp_path: Path) -> None:
    remote = Remote(local_cluster(1), control_dir=tmp_path / "cm")
    node = remote.cluster.nodes[0]
    assert isinstance(remote.transport(node), LocalTransport)
    result = remote.run(node, ["sh", "-c", "cat /proc/$$/cmdline | tr '\\0' ' '"])
    assert result.stdout.strip() == "sh -c cat /proc/$$/cmdline | tr '\\0' ' '"
    assert not (tmp_path / "cm").exists()


def test_default_transports(tmp_path: Path) -> None:
    cluster = Cluster(
        name="c",
        source="c.toml",
        ssh_config="/etc/ws/ssh_config",
        nodes=(Node("local", "localhost"), Node("far", "spark-1", user="alice")),
    )
    remote = Remote(cluster, control_dir=tmp_path)
    assert isinstance(remote.transport(cluster.nodes[0]), LocalTransport)
    far = remote.transport(cluster.nodes[1])
    assert isinstance(far, SshTransport)
    assert far.ssh_config == "/etc/ws/ssh_config"
    assert far.control_dir == tmp_path


# ----------------------------------------------------------------------------------- through a swapped transport
def test_ssh_commands_are_watched_and_classified_as_ssh(tmp_path: Path) -> None:
    fake = FakeSsh()
    remote = Remote(local_cluster(1), transport_factory=lambda node: fake)
    node = remote.cluster.nodes[0]
    result = remote.run(node, ["sh", "-c", "echo out; exit 5"])
    assert fake.wrapped[0][:5] == ["sh", "-c", WATCHDOG_SCRIPT, "wirespeed-watchdog", str(SILENCE_S)]
    assert fake.wrapped[0][5:] == ["sh", "-c", "echo out; exit 5"]
    assert result.argv == ("sh", "-c", "echo out; exit 5")
    assert result.status is Status.FAILED
    assert result.returncode == 5
    assert result.stdout == "out\n"


def test_ssh_failures_are_classified_with_the_destination() -> None:
    remote = Remote(local_cluster(1), transport_factory=lambda node: FakeSsh())
    node = remote.cluster.nodes[0]
    result = remote.run(node, ["sh", "-c", "echo 'alice@localhost: Permission denied (publickey).' >&2; exit 255"])
    assert result.status is Status.AUTH_FAILED
    assert result.message == (
        "n1: authentication failed (alice@localhost:2222): alice@localhost: Permission denied (publickey)."
    )
    refused = remote.run(node, ["sh", "-c", "echo 'ssh: connect to host x port 22: Connection refused' >&2; exit 255"])
    assert refused.status is Status.UNREACHABLE


def test_srun_steps_are_watched_and_their_launch_failures_classified() -> None:
    fake = FakeSsh(via_ssh=False, via_srun=True)
    remote = Remote(local_cluster(1), transport_factory=lambda node: fake)
    node = remote.cluster.nodes[0]
    failed = remote.run(node, ["sh", "-c", "echo 'srun: error: Unable to create step for job 7: Invalid' >&2; exit 1"])
    assert fake.wrapped[0][:5] == ["sh", "-c", WATCHDOG_SCRIPT, "wirespeed-watchdog", str(SILENCE_S)]
    assert failed.status is Status.UNREACHABLE
    assert failed.message == (
        "n1: srun could not start a step (alice@localhost:2222): Unable to create step for job 7: Invalid"
    )
    process = remote.start(node, ["sleep", "30"])
    stopped = process.stop(grace_s=5)
    assert stopped.ok and process.via_srun  # closing stdin stopped it, as over ssh


def test_input_text_is_not_watched() -> None:
    fake = FakeSsh()
    remote = Remote(local_cluster(1), transport_factory=lambda node: fake)
    result = remote.run(remote.cluster.nodes[0], ["cat"], input_text="x")
    assert fake.wrapped == [["cat"]]
    assert result.stdout == "x"


def test_missing_ssh_client_is_reported_as_such() -> None:
    remote = Remote(local_cluster(2), transport_factory=lambda node: FakeSsh(program=["no-such-ssh-client-xyz"]))
    results = remote.run_all(["true"])
    assert [r.status for r in results] == [Status.NOT_FOUND, Status.NOT_FOUND]
    assert results[1].message == "n2: cannot start ssh: No such file or directory"


def test_timeout_over_ssh_stops_the_remote_command(kill_after: KillAfter, wait_gone: WaitGone) -> None:
    remote = Remote(local_cluster(1), transport_factory=lambda node: FakeSsh())
    result = remote.run(remote.cluster.nodes[0], ["sh", "-c", "echo $$; exec sleep 30"], timeout_s=0.4)
    assert result.status is Status.TIMED_OUT
    assert wait_gone(kill_after(int(result.stdout.split()[0])), 2.0)


# -------------------------------------------------------------------------------------------- start / stop_all
def test_start_and_stop_all_leave_nothing_running(remote: Remote, kill_after: KillAfter, wait_gone: WaitGone) -> None:
    processes = [remote.start(node, ["sh", "-c", "echo $$; exec sleep 30"]) for node in remote.cluster.nodes]
    pids = [kill_after(int(next(p.lines()))) for p in processes]
    for process in processes:
        kill_after(process.popen.pid)
    assert all(p.running() for p in processes)
    started = time.monotonic()
    results = remote.stop_all()
    assert time.monotonic() - started < 4
    assert [r.node for r in results] == ["n1", "n2", "n3", "n4"]
    assert not any(p.running() for p in processes)
    for pid in pids:
        assert wait_gone(pid, 2.0), f"process {pid} outlived stop_all"
    assert remote.stop_all() == []


def test_started_process_streams_lines_and_ends_ok(remote: Remote) -> None:
    process = remote.start(remote.cluster.nodes[1], ["printf", "a\\nb\\nc\\n"])
    assert list(process.lines()) == ["a", "b", "c"]
    result = process.stop()
    assert result.ok
    assert result.node == "n2"
    assert result.argv == ("printf", "a\\nb\\nc\\n")
    assert remote.stop_all()[0].ok  # stopping again is harmless


def test_stop_reports_a_failed_server(remote: Remote) -> None:
    process = remote.start(remote.cluster.nodes[0], ["sh", "-c", "echo bind failed >&2; exit 1"])
    process.popen.wait(timeout=5)  # it fails by itself; stop() only collects the outcome
    assert not process.running()
    result = process.stop()
    assert result.status is Status.FAILED
    assert result.message == "n1: sh exited with status 1: bind failed"
    remote.stop_all()


def test_owned_stops_processes_even_on_error(remote: Remote, kill_after: KillAfter, wait_gone: WaitGone) -> None:
    pid = 0
    with pytest.raises(RuntimeError, match="boom"), remote.owned():
        process = remote.start(remote.cluster.nodes[0], ["sh", "-c", "echo $$; exec sleep 30"])
        kill_after(process.popen.pid)
        pid = kill_after(int(next(process.lines())))
        raise RuntimeError("boom")
    assert pid
    assert wait_gone(pid, 2.0)
    assert not process.running()


def test_stop_with_short_grace_kills_a_command_that_ignores_sigterm(
    remote: Remote, kill_after: KillAfter, wait_gone: WaitGone
) -> None:
    process = remote.start(remote.cluster.nodes[0], ["sh", "-c", "trap '' TERM; echo $$; exec sleep 3"])
    kill_after(process.popen.pid)
    pid = kill_after(int(next(process.lines())))
    started = time.monotonic()
    remote.stop_all(grace_s=0.3)
    assert time.monotonic() - started < 2.5
    assert wait_gone(pid, 0.5)


# ------------------------------------------------------------------------------------------------ check_agents
def test_check_agents(tmp_path: Path) -> None:
    nodes = (
        Node("good", "localhost", agent=(sys.executable, "-m", "wirespeed")),
        Node("missing", "localhost", agent=("no-such-wirespeed-binary",)),
        Node("old", "localhost", agent=("sh", "-c", 'echo "wirespeed 0.0.1"', "sh")),
        Node("mute", "localhost", agent=("true",)),
        Node("broken", "localhost", agent=("sh", "-c", "echo crashed >&2; exit 3", "sh")),
    )
    remote = Remote(Cluster(name="c", nodes=nodes, source="t"), control_dir=tmp_path)
    good, missing, old, mute, broken = check_agents(remote, timeout_s=30)

    assert good.node == "good"
    assert good.ok
    assert good.version == __version__
    assert good.message == f"good: wirespeed {__version__} (configured: {sys.executable} -m wirespeed)"
    assert good.agent == "configured"

    assert not missing.ok
    assert missing.version is None
    assert missing.message.startswith("missing: its agent no-such-wirespeed-binary is not there (")
    assert "pip install" not in missing.message
    assert "agent = [...]" in missing.message

    assert not old.ok
    assert old.version == "0.0.1"
    assert old.message.startswith(f"old: wirespeed 0.0.1 there, {__version__} here (")
    assert f"install {__version__} where agent = [...] points" in old.message

    assert not mute.ok
    assert mute.version is None
    assert "of unknown version" in mute.message

    assert not broken.ok
    assert broken.message == "broken: sh exited with status 3: crashed"
