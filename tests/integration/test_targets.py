"""Clusters are named on purpose: with an emulated cluster up (which could be someone else's) and no cluster named
(no --cluster or --hosts, no $WIRESPEED_CLUSTER, no Slurm, an empty XDG_CONFIG_HOME), the commands that act on
nodes stop with one line and touch nothing: no ssh login on any node, no run directory, no fix record."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.engine.remote import Remote
from wirespeed.testbed.state import TestbedState as BedState

from .helpers import running_testbed

pytestmark = pytest.mark.root
PREFIX = "wna-"
NO_CLUSTER = "wirespeed: error: no cluster: run `wirespeed init` on a node, or pass --cluster/--hosts\n"
UNSET = ("WIRESPEED_CLUSTER", "SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NODELIST", "SLURM_NODELIST")


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[BedState, Remote]]:
    with running_testbed(PREFIX, nodes=2, topology="direct") as up:
        yield up


def logins(state: BedState) -> int:
    """ssh logins every node's sshd has accepted so far."""
    logs = (state.directory / "nodes" / node.name / "sshd.log" for node in state.plan.nodes)
    return sum(log.read_text().count("Accepted publickey") for log in logs)


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def test_with_a_testbed_up_and_no_cluster_named_nothing_runs(
    bed: tuple[BedState, Remote], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, _ = bed
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    runs, record = tmp_path / "runs", tmp_path / "fix.json"
    before = logins(state)
    commands = [
        ["bench", "tcp", "--seconds", "2", "--runs", str(runs)],
        ["check"],
        ["fix", "--yes", "--record", str(record)],
        ["watch", "--once"],
    ]
    for argv in commands:
        code, stdout, stderr = cli(*argv)
        assert (code, stdout, stderr) == (2, "", NO_CLUSTER), argv
    assert not runs.exists() and not record.exists()
    assert list(config.iterdir()) == []
    assert logins(state) == before  # no command reached any node


def test_testbed_up_and_status_say_how_to_name_it(bed: tuple[BedState, Remote]) -> None:
    state, _ = bed
    path = state.cluster_file
    for argv in (["testbed", "up", "--prefix", PREFIX, "--nodes", "2"], ["testbed", "status", "--prefix", PREFIX]):
        code, stdout, stderr = cli(*argv)
        assert code == 0 and PREFIX + "1" in stdout, stderr
        lines = stderr.splitlines()
        assert f"testbed: name it with --cluster {path}, or for every command of this shell:" in lines
        assert lines[-1] == f"export WIRESPEED_CLUSTER={path}"


def test_the_line_to_paste_names_the_testbed(bed: tuple[BedState, Remote], monkeypatch: pytest.MonkeyPatch) -> None:
    state, _ = bed
    monkeypatch.setenv("WIRESPEED_CLUSTER", str(state.cluster_file))
    code, stdout, stderr = cli("exec", "--", "hostname")
    assert code == 0 and "wna-1" in stdout and "wna-2" in stdout
    assert stderr == f"wirespeed: using $WIRESPEED_CLUSTER={state.cluster_file}\n"
