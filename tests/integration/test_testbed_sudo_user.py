"""`testbed up --user spark --sudo password|nopasswd`: the nodes are used as a DGX Spark is, through an ordinary
account with sudo; the node's sshd refuses root. The account exists only inside the nodes: this host's passwd,
shadow, group, gshadow and sudoers.d are the same, byte for byte, while the testbed is up and after `down`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from wirespeed import __version__
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build
from wirespeed.testbed.account import PASSWORD_FILE
from wirespeed.testbed.state import TestbedState as BedState

from .helpers import leftovers, running_testbed

pytestmark = pytest.mark.root
USER = "spark"
PREFIXES = {"password": "wus-", "nopasswd": "wun-"}
HOST_PREFIX = "wuh-"


@dataclass
class Bed:
    sudo: str
    prefix: str
    state: BedState
    remote: Remote

    @property
    def password(self) -> str:
        return (self.state.directory / PASSWORD_FILE).read_text().strip()

    def run(self, index: int, argv: list[str], input_text: str | None = None) -> tuple[bool, str, str]:
        result = self.remote.run(self.remote.cluster.node(f"{self.prefix}{index}"), argv, input_text=input_text)
        return result.ok, result.stdout, result.stderr


@pytest.fixture(scope="module", params=["password", "nopasswd"])
def bed(request: pytest.FixtureRequest) -> Iterator[Bed]:
    sudo: str = request.param
    prefix = PREFIXES[sudo]
    with running_testbed(prefix, nodes=2, topology="direct", user=USER, sudo=sudo) as (state, remote):
        yield Bed(sudo, prefix, state, remote)


def shell(prefix: str, node: str, *command: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "wirespeed", "testbed", "shell", "--prefix", prefix, node, "--", *command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def host_accounts() -> dict[str, tuple[int, bytes]]:
    """This host's account files and every sudoers drop-in: mode and bytes of each."""
    paths = [Path("/etc") / name for name in ("passwd", "shadow", "group", "gshadow")]
    paths += sorted(Path("/etc/sudoers.d").iterdir())
    return {str(path): (path.stat().st_mode, path.read_bytes()) for path in paths if path.exists()}


def host_has_user(name: str) -> bool:
    return subprocess.run(["getent", "passwd", name], capture_output=True, text=True).stdout != ""


def test_ssh_logs_in_as_the_account(bed: Bed) -> None:
    for index in (1, 2):
        ok, stdout, stderr = bed.run(index, ["id", "-un"])
        assert ok and stdout == f"{USER}\n", stderr
        ok, stdout, _ = bed.run(index, ["id", "-Gn"])
        assert ok and "sudo" in stdout.split()  # as DGX OS's first user
    assert f'user = "{USER}"' in bed.state.cluster_file.read_text()
    account = build.status(bed.prefix)["account"]
    assert account["user"] == USER and account["sudo"] == bed.sudo and account["root_login"] is False
    assert account["uid"] >= 1000


def test_the_node_refuses_root_even_with_its_key(bed: Bed) -> None:
    """The testbed's key in node 1's own /root/.ssh (written in its sshd's mount namespace): sshd accepts the key
    and still refuses root, as `PermitRootLogin no` does."""
    node_dir = bed.state.directory / "nodes" / f"{bed.prefix}1"
    sshd_pid = (node_dir / "sshd.pid").read_text().strip()
    key = (bed.state.directory / "keys" / "id_ed25519.pub").read_text()
    plant = "mkdir -p /root/.ssh && cat > /root/.ssh/authorized_keys"
    subprocess.run(["nsenter", "-m", "-t", sshd_pid, "sh", "-c", plant], input=key, text=True, check=True)
    ssh = ["ssh", "-F", str(bed.state.ssh_config), "-oBatchMode=yes", "-l", "root", f"{bed.prefix}1", "true"]
    done = subprocess.run(ssh, capture_output=True, text=True, timeout=60)
    assert done.returncode == 255 and "Permission denied" in done.stderr, done.stderr
    assert "ROOT LOGIN REFUSED" in (node_dir / "sshd.log").read_text()
    assert not Path("/root/.ssh/authorized_keys").exists() or key not in Path("/root/.ssh/authorized_keys").read_text()


def test_sudo_without_a_password(bed: Bed) -> None:
    ok, stdout, stderr = bed.run(1, ["sudo", "-n", "id", "-u"])
    if bed.sudo == "nopasswd":
        assert ok and stdout == "0\n", stderr
    else:
        assert not ok and "a password is required" in stderr, stderr
    assert "unable to resolve host" not in stderr  # the node's own /etc/hosts names it


def test_sudo_with_the_password_from_the_state_file(bed: Bed) -> None:
    password_file = bed.state.directory / PASSWORD_FILE
    info = password_file.stat()
    assert (info.st_mode & 0o777, info.st_uid) == (0o600, 0)
    ok, stdout, stderr = bed.run(2, ["sudo", "-S", "-p", "", "id", "-un"], input_text=bed.password + "\n")
    assert ok and stdout == "root\n", stderr
    # `sudo wirespeed ...` on a node keeps acting on the node's own files.
    ok, stdout, _ = bed.run(2, ["sudo", "-S", "-p", "", "printenv", "WIRESPEED_CONFIG_ROOT"], bed.password + "\n")
    assert ok and stdout.strip() == str(bed.state.directory / "nodes" / f"{bed.prefix}2" / "root")
    if bed.sudo == "password":
        ok, _, stderr = bed.run(2, ["sudo", "-S", "-p", "", "true"], input_text="not-" + bed.password + "\n")
        assert not ok and "incorrect password" in stderr, stderr
    assert not Path(f"/run/sudo/ts/{USER}").exists()  # the node's sudo state stays in the testbed


def test_each_node_has_a_home_of_its_own(bed: Bed) -> None:
    ok, stdout, _ = bed.run(1, ["sh", "-c", 'echo "$HOME"; stat -c %U "$HOME"; echo node-1 > "$HOME/wus-mark"'])
    assert ok and stdout.split() == [f"/home/{USER}", USER]
    ok, stdout, _ = bed.run(1, ["cat", f"/home/{USER}/wus-mark"])
    assert ok and stdout == "node-1\n"
    ok, _, _ = bed.run(2, ["test", "-e", f"/home/{USER}/wus-mark"])
    assert not ok  # node 2's home is another one
    assert not Path(f"/home/{USER}").exists()  # and none on this host


def test_wirespeed_on_node_1s_login_path_only(bed: Bed) -> None:
    done = shell(bed.prefix, f"{bed.prefix}1", "wirespeed", "--version")
    assert (done.returncode, done.stdout) == (0, f"wirespeed {__version__}\n"), done.stderr
    where = shell(bed.prefix, f"{bed.prefix}1", "command", "-v", "wirespeed")
    assert where.stdout == f"/home/{USER}/.local/bin/wirespeed\n"
    none = shell(bed.prefix, f"{bed.prefix}2", "command", "-v", "wirespeed")
    assert (none.returncode, none.stdout) == (1, "")


def test_this_hosts_accounts_are_untouched_while_up_and_after_down() -> None:
    before = host_accounts()
    assert not host_has_user(USER), f"this machine has a user {USER}: the test needs the name free"
    try:
        state = build.up(prefix=HOST_PREFIX, nodes=2, topology="direct", user=USER, sudo="password")
        assert state.phase == "up"
        done = shell(HOST_PREFIX, f"{HOST_PREFIX}1", "id", "-un")
        assert done.stdout == f"{USER}\n", done.stderr  # the account is there, in the node
        assert host_accounts() == before
        assert not host_has_user(USER)
    finally:
        build.down(HOST_PREFIX)
    assert leftovers(HOST_PREFIX) == []
    assert host_accounts() == before
    assert not host_has_user(USER)
