"""The bench lock: the holder and the agent's answers (pure), and `wirespeed agent lock` itself on this machine,
under a config root of its own: busy with the holder named (exit 4), queued with --wait, released when its
controller lets go (stdin closed or TERM), the file naming nobody then."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from wirespeed.core.cluster.benchlock import BUSY, LOCKED, WAITING, Holder, answer, read_answer

ME = Holder("bench ladder", "alice", "spark-1", 4242, "2026-11-24T03:12:01Z")


def test_the_holder_round_trips_and_reads_as_a_person_says_it() -> None:
    assert Holder.from_json(ME.to_json()) == ME
    assert ME.describe() == "bench ladder by alice@spark-1 (pid 4242) since 2026-11-24T03:12:01Z"
    for bad in (None, [], {"what": "x"}, {**ME.to_json(), "pid": "1"}, {**ME.to_json(), "pid": True}):
        assert Holder.from_json(bad) is None
    assert read_answer(answer(BUSY, ME)) == (BUSY, ME)
    assert read_answer(answer(WAITING, None)) == (WAITING, None)
    for bad in ("", "{}", '{"state": "mine"}', "locked"):
        with pytest.raises(ValueError, match="not a lock answer"):
            read_answer(bad)


def agent_lock(root: Path, holder: Holder, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "WIRESPEED_CONFIG_ROOT": str(root)}
    argv = [sys.executable, "-m", "wirespeed", "agent", "lock", "--holder", json.dumps(holder.to_json()), *extra]
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip


def first_answer(process: subprocess.Popen[str]) -> tuple[str, Holder | None]:
    assert process.stdout is not None
    return read_answer(process.stdout.readline())


def test_one_holder_at_a_time_then_the_next(tmp_path: Path) -> None:
    lock = tmp_path / "run" / "lock" / "wirespeed-bench.lock"
    first = agent_lock(tmp_path, ME)
    try:
        assert first_answer(first) == (LOCKED, ME)
        assert Holder.from_json(json.loads(lock.read_text())) == ME
        other = Holder("commission", "bob", "spark-2", 7, "2026-11-24T03:13:00Z")
        refused = agent_lock(tmp_path, other)
        assert first_answer(refused) == (BUSY, ME)  # who is in the way, and since when
        assert refused.wait(timeout=30) == 4
        queued = agent_lock(tmp_path, other, "--wait")
        assert first_answer(queued) == (WAITING, ME)
        assert first.stdin is not None
        first.stdin.close()  # the first controller lets go
        assert first.wait(timeout=30) == 0
        assert first_answer(queued) == (LOCKED, other)
        queued.send_signal(signal.SIGTERM)  # the watchdog's way of letting go
        assert queued.wait(timeout=30) == 0
        assert lock.read_text() == ""  # nobody named once released
    finally:
        for process in (first,):
            if process.poll() is None:
                process.kill()
                process.wait()


def test_a_holder_that_is_not_one_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "WIRESPEED_CONFIG_ROOT": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "wirespeed", "agent", "lock", "--holder", "{}"], env=env,
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 2 and "--holder: not a holder" in result.stderr


def test_a_queue_has_an_end_then_says_busy(tmp_path: Path) -> None:
    first = agent_lock(tmp_path, ME)
    try:
        assert first_answer(first) == (LOCKED, ME)
        other = Holder("commission", "bob", "spark-2", 7, "2026-11-24T03:13:00Z")
        queued = agent_lock(tmp_path, other, "--wait", "--wait-limit", "0.5")
        assert first_answer(queued) == (WAITING, ME)
        assert first_answer(queued) == (BUSY, ME)  # still held when its wait ran out
        assert queued.wait(timeout=30) == 4
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


@pytest.mark.parametrize("limit", ["nan", "inf", "1e309", "0", "-5", "86401"])
def test_a_wait_limit_that_is_no_duration_is_refused(tmp_path: Path, limit: str) -> None:
    env = {**os.environ, "WIRESPEED_CONFIG_ROOT": str(tmp_path)}
    for argv in (["agent", "lock", "--holder", json.dumps(ME.to_json()), "--wait"], ["bench", "--hosts", "nowhere"]):
        result = subprocess.run([sys.executable, "-m", "wirespeed", *argv, "--wait-limit", limit], env=env,
                                capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        assert result.returncode == 2, (argv, result.stderr)
        assert "--wait-limit" in result.stderr and "Traceback" not in result.stderr


def test_an_agent_that_does_not_answer_the_lock_is_named_within_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from wirespeed.core.cluster.inventory import Cluster, Node
    from wirespeed.core.errors import WirespeedError
    from wirespeed.engine import benchlock
    from wirespeed.engine.remote import Remote

    monkeypatch.setattr(benchlock, "ANSWER_S", 0.5)
    nodes = (
        Node("n1", "localhost", agent=("sh", "-c", "exec sleep 30", "sh")),
        Node("n2", "localhost", agent=("sh", "-c", "echo junk; exec sleep 30", "sh")),
    )
    for node, said in zip(nodes, ("the agent did not answer about the bench lock within 0.5 s",
                                  "cannot take the bench lock: not a lock answer: 'junk'"), strict=True):  # fmt: skip
        remote = Remote(Cluster("c", (node,), "t"), control_dir=tmp_path)
        started = time.monotonic()
        with (
            pytest.raises(WirespeedError) as caught,
            remote.owned(),
            benchlock.cluster_lock(remote, "bench", wait=False, say=lambda _: None),
        ):
            pass
        assert caught.value.message == f"{node.name}: {said}"
        assert time.monotonic() - started < 10
        assert remote.stop_all() == []
