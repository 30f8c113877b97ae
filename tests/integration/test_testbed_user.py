"""The emulated cluster as a user meets it: `testbed shell` logs in to a node through its own sshd (its home, its
login PATH); node 1 has wirespeed in ~/.local/bin as pipx would leave it, the others none; `wirespeed init` runs
there as the README says; `fix --yes` twice leaves the host-wide sysctls alone without an error."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed import __version__
from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.engine.remote import Remote
from wirespeed.testbed.state import TestbedState as BedState

from .helpers import running_testbed

pytestmark = pytest.mark.root
PREFIX = "wnu-"


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[BedState, Remote]]:
    with running_testbed(PREFIX, nodes=2, topology="direct") as up:
        yield up


def shell(node: str, *command: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "wirespeed", "testbed", "shell", "--prefix", PREFIX, node]
    return subprocess.run(
        [*argv, "--", *command] if command else argv, input=stdin, capture_output=True, text=True, timeout=300
    )


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def test_node_1_has_wirespeed_on_its_login_path_and_node_2_none(bed: tuple[BedState, Remote]) -> None:
    done = shell(f"{PREFIX}1", "wirespeed", "--version")
    assert (done.returncode, done.stdout) == (0, f"wirespeed {__version__}\n"), done.stderr
    where = shell(f"{PREFIX}1", "command", "-v", "wirespeed")
    assert where.stdout == "/root/.local/bin/wirespeed\n"
    none = shell(f"{PREFIX}2", "command", "-v", "wirespeed")
    assert (none.returncode, none.stdout) == (1, "")


def test_shell_is_the_nodes_own_login(bed: tuple[BedState, Remote]) -> None:
    probe = 'echo "$0 $(hostname) $HOME"; echo "$PATH"; echo node-1-only > "$HOME/wna-mark"; exit 7'
    done = shell(f"{PREFIX}1", "sh", "-c", probe)
    assert done.returncode == 7  # the command's own status
    first, path = done.stdout.splitlines()[:2]
    assert first == f"sh {PREFIX}1 /root"
    assert path.startswith("/root/.local/bin:")  # ~/.profile put it there: a login shell
    # Without a command: an interactive login shell reading stdin (no terminal here, so no -t).
    login = shell(f"{PREFIX}2", stdin='echo "$0"; hostname; test -e "$HOME/wna-mark" || echo no-mark\n')
    assert login.returncode == 0 and login.stdout.split() == ["-bash", f"{PREFIX}2", "no-mark"], login.stderr
    assert not Path("/root/wna-mark").exists()  # the node's own home, not this machine's


def test_fix_twice_skips_host_wide_sysctls_without_an_error(bed: tuple[BedState, Remote], tmp_path: Path) -> None:
    state, remote = bed
    cluster, record = str(state.cluster_file), str(tmp_path / "fix.json")
    node = remote.cluster.node(f"{PREFIX}2")
    before = remote.run(node, ["cat", "/proc/sys/net/ipv4/tcp_rmem"]).stdout
    code, stdout, stderr = cli("fix", "--cluster", cluster, "--yes", "--record", record)
    assert code == 0, stdout + stderr
    assert "Permission denied" not in stdout + stderr and "error" not in stderr, stderr
    assert "sysctl net.ipv4.tcp_rmem -> " in stdout  # the namespace's own settings are set
    note = "note: sysctl net.core.rmem_max, net.core.wmem_max, net.core.netdev_max_backlog skipped: "
    assert stdout.count(note + "not settable in a network namespace: host-wide") == 2, stdout
    code, stdout, stderr = cli("fix", "--cluster", cluster, "--yes", "--record", record)
    assert (code, stdout) == (0, "nothing to change\n"), stdout + stderr
    assert "error" not in stderr and "Permission denied" not in stderr
    # The second run kept the first one's record: --revert still puts back what the first replaced.
    code, _, stderr = cli("fix", "--cluster", cluster, "--revert", "--yes", "--record", record)
    assert code == 0, stderr
    assert remote.run(node, ["cat", "/proc/sys/net/ipv4/tcp_rmem"]).stdout == before


def test_init_on_node_1_as_the_readme_says(bed: tuple[BedState, Remote]) -> None:
    """`wirespeed testbed shell spark-1 -- wirespeed init --yes`: init finds node 2 by the probe, gets in with the
    key the shell's agent carries, sets up the mesh and writes the cluster file in node 1's own home."""
    state, remote = bed
    host_file = Path("/root/.config/wirespeed/cluster.toml")
    host_had = host_file.exists()
    done = shell(f"{PREFIX}1", "wirespeed", "init", "--yes")
    out = done.stdout + done.stderr
    assert "Traceback" not in out
    assert f"init: wrote /root/.config/wirespeed/cluster.toml ({PREFIX}1, {PREFIX}2)" in done.stderr, out
    # Its closing checks read every node through the agent wirespeed ships there: node 2 has no wirespeed, and
    # node 1's is on the login PATH only, not on the PATH of a command over ssh.
    assert done.returncode == 0 and "0 fail" in done.stdout and "PASS   │ ssh.mesh" in done.stdout, out
    written = shell(f"{PREFIX}1", "cat", ".config/wirespeed/cluster.toml").stdout
    assert f'name = "{PREFIX}2"' in written
    assert (state.directory / "nodes" / f"{PREFIX}1" / "home" / "upper" / ".config/wirespeed/cluster.toml").is_file()
    assert shell(f"{PREFIX}2", "test", "-e", ".config/wirespeed/cluster.toml").returncode == 1
    assert host_file.exists() == host_had  # never this machine's own
    node1 = state.plan.node(f"{PREFIX}1").mgmt_address.split("/")[0]
    mesh = ["ssh", "-oBatchMode=yes", "-oConnectTimeout=5", node1, "hostname"]
    reached = remote.run(remote.cluster.node(f"{PREFIX}2"), mesh, timeout_s=30)  # node 2 -> 1 by init's keys
    assert reached.ok and reached.stdout.strip() == f"{PREFIX}1", reached.message
