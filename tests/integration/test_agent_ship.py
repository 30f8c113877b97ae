"""The controller installs itself on the nodes, once: a cluster file that names no agent, nodes without wirespeed.

The emulated nodes share this machine's filesystem, but each has its own home (an overlay on root's home, in its
sshd's mount namespace): what lands in a node's ~/.cache is in that node's upper layer, under the testbed's
directory. The controller's own cache is moved to the test's tmp directory, so that the nodes cannot find the
agent it builds through their overlay's lower layer (this machine's /root).
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed import __version__
from wirespeed.adapters import agentzip
from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.cluster.inventory import DEFAULT_AGENT, Cluster, render_cluster_toml
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.remote import Remote
from wirespeed.testbed.state import TestbedState as BedState

from .helpers import running_testbed

pytestmark = pytest.mark.root
PREFIX = "wsh-"
NODES = ("wsh-1", "wsh-2")
SHIPPED = re.compile(r"^wirespeed: shipped (agent-\S+\.pyz) to (\S+) \(\d+\.\d MB, \d+\.\d s\)$", re.M)


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[BedState, Remote]]:
    with running_testbed(PREFIX, nodes=2, topology="direct") as bed:
        yield bed


@pytest.fixture
def fresh(bed: tuple[BedState, Remote], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BedState:
    """Nodes with homes of their own, no wirespeed on their PATH, nothing in their ~/.cache/wirespeed; this
    controller's cache in tmp."""
    state, remote = bed
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "controller-cache"))
    for node in remote.cluster.nodes:
        mounts = remote.run(node, ["cat", "/proc/self/mounts"])
        upper = state.directory / "nodes" / node.name / "home" / "upper"
        if f"upperdir={upper}" not in mounts.stdout:
            pytest.skip(f"{node.name} shares this machine's home (no overlayfs): shipping cannot be seen apart")
        found = remote.run(node, ["sh", "-c", "command -v wirespeed"])
        assert not found.ok, f"{node.name} has wirespeed on its PATH: {found.stdout.strip()}"
        cleared = remote.run(node, ["sh", "-c", 'rm -rf "$HOME/.cache/wirespeed"'])
        assert cleared.ok, cleared.message
    return state


def cluster_file(state: BedState, path: Path, configured: tuple[str, ...] = ()) -> Path:
    """The testbed's nodes and ssh options, with no agent = [...] but for the nodes named in `configured`."""
    testbed = load_cluster_file(state.cluster_file)
    nodes = tuple(
        node if node.name in configured else dataclasses.replace(node, agent=DEFAULT_AGENT) for node in testbed.nodes
    )
    cluster = Cluster(testbed.name, nodes, str(path), testbed.ssh_config)
    path.write_text(render_cluster_toml(cluster))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The CLI in-process; stderr is the command's and whatever the engine said on the process's stderr."""
    capsys.readouterr()
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue() + capsys.readouterr().err  # type: ignore[attr-defined]


def agent_on(state: BedState, node: str) -> Path:
    """Where a node's ~/.cache/wirespeed/<agent> lands on this machine: that node's own home layer."""
    return state.directory / "nodes" / node / "home" / "upper" / ".cache" / "wirespeed" / agentzip.agent_content().name


def test_fresh_nodes_get_the_agent_once(
    fresh: BedState, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = cluster_file(fresh, tmp_path / "cluster.toml")
    assert "agent" not in path.read_text()

    code, out, err = run_cli(capsys, "discover", "--cluster", str(path), "--json")
    assert code == 0, err
    assert sorted(SHIPPED.findall(err)) == [(agentzip.agent_content().name, node) for node in NODES], err
    found = json.loads(out)
    assert sorted(found["nodes"]) == list(NODES) and found["errors"] == {} and found["probe_errors"] == {}
    files = {node: agent_on(fresh, node) for node in NODES}
    assert all(f.is_file() for f in files.values()), files
    assert (tmp_path / "controller-cache" / "wirespeed" / agentzip.agent_content().name).is_file()
    mtimes = {node: f.stat().st_mtime_ns for node, f in files.items()}

    code, _, err = run_cli(capsys, "discover", "--cluster", str(path))
    assert code == 0, err
    assert "shipped" not in err, err  # a second command finds the file and copies nothing
    assert {node: f.stat().st_mtime_ns for node, f in files.items()} == mtimes

    code, _, err = run_cli(capsys, "check", "--cluster", str(path), "--json")
    assert code in (0, 1), err  # 1: a check fails on the emulated cluster (no nccl-tests); no node unreadable
    assert "shipped" not in err and "command not found" not in err, err

    code, out, err = run_cli(capsys, "agent", "check", "--cluster", str(path))
    assert code == 0, out + err
    lines = out.splitlines()
    assert len(lines) == 2, out
    for node, line in zip(NODES, lines, strict=True):
        assert line.startswith(f"ok    {node}: wirespeed {__version__} (already there: /root/.cache/wirespeed/agent-")
        assert ", python 3." in line

    # A command that starts the agent without discovering first (`fix --revert --yes`): settled on first use.
    later = Remote(load_cluster_file(path))
    for node in later.cluster.nodes:
        answer = later.run(node, [*later.agent_argv(node), "--version"])
        assert answer.ok and answer.stdout == f"wirespeed {__version__}\n", answer.message
        assert answer.argv[1] == f"/root/.cache/wirespeed/{agentzip.agent_content().name}"
    assert "shipped" not in capsys.readouterr().err
    assert {node: f.stat().st_mtime_ns for node, f in files.items()} == mtimes


def test_a_node_with_its_own_agent_is_left_alone(
    fresh: BedState, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = cluster_file(fresh, tmp_path / "cluster.toml", configured=("wsh-2",))
    assert path.read_text().count("agent = ") == 1

    code, out, err = run_cli(capsys, "agent", "check", "--cluster", str(path), "--json")
    assert code == 0, out + err
    assert SHIPPED.findall(err) == [(agentzip.agent_content().name, "wsh-1")], err
    first, second = json.loads(out)
    assert (first["node"], first["ok"], first["agent"]) == ("wsh-1", True, "shipped")
    assert first["file"] == f"/root/.cache/wirespeed/{agentzip.agent_content().name}"
    assert (second["node"], second["ok"], second["agent"], second["file"]) == ("wsh-2", True, "configured", None)
    assert agent_on(fresh, "wsh-1").is_file()
    layer = fresh.directory / "nodes" / "wsh-2" / "home" / "upper" / ".cache" / "wirespeed"
    # nothing shipped into wsh-2's own home layer (a removed directory may stay there as an overlay whiteout)
    assert not (layer.is_dir() and any(p.is_file() for p in layer.iterdir()))

    code, _, err = run_cli(capsys, "discover", "--cluster", str(path), "--no-probe")
    assert code == 0 and "shipped" not in err, err
