"""`wirespeed init` on the emulated cluster, run on its first node as a user would: the nodes start with no shared
key (each has its own home, and only the first can reach the others, with a key of the user's own); init finds
the others by probing the fabric subnets, sets up the mesh, writes the cluster file and its checks pass; ssh then
works between every pair; a second run changes nothing; `--undo` gives back every file byte for byte."""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from wirespeed.engine.remote import Remote
from wirespeed.testbed.build import MDNS_TOOLS

from .helpers import running_testbed

if TYPE_CHECKING:
    from wirespeed.testbed.state import TestbedState

pytestmark = pytest.mark.root
PREFIX = "wit-"
NODES = ("wit-1", "wit-2", "wit-3")
AGENT = f"{sys.executable} -m wirespeed"
# What the nodes' ~/.ssh held before: a key of someone else, no newline at the end; a config of the user's.
BEFORE = {
    "wit-1": {"config": "# mine\nIdentityFile {key}\n"},
    "wit-2": {"authorized_keys": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKxVB8dFm7wNkOq8pT+someone else@laptop"},
    "wit-3": {},
}


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[TestbedState, Remote]]:
    with running_testbed(PREFIX, nodes=3, topology="switch", half_rate_bps=300_000_000) as (state, remote):
        key = state.directory / "keys" / "id_ed25519"  # the user's own key, known to the first node only
        for node, files in BEFORE.items():
            for name, text in files.items():
                write(remote, node, f".ssh/{name}", text.replace("{key}", str(key)))
        yield state, remote


def write(remote: Remote, node: str, relative: str, text: str) -> None:
    script = 'mkdir -p "$HOME/.ssh" && chmod 700 "$HOME/.ssh" && cat > "$HOME/$1"'
    result = remote.run(remote.cluster.node(node), ["sh", "-c", script, "sh", relative], input_text=text)
    assert result.ok, result.message


def ssh_dir(remote: Remote, node: str) -> dict[str, str]:
    """Every file of the node's ~/.ssh and its text (byte for byte, as Python reads it)."""
    script = (
        'cd "$HOME/.ssh" 2>/dev/null || exit 0; for f in $(find . -type f | sort); do'
        ' printf "==%s\\n" "$f"; cat "$f"; printf "\\n==end\\n"; done'
    )
    result = remote.run(remote.cluster.node(node), ["sh", "-c", script])
    assert result.ok, result.message
    files: dict[str, str] = {}
    for chunk in result.stdout.split("\n==end\n"):
        if chunk.startswith("=="):
            name, _, text = chunk[2:].partition("\n")
            files[name.removeprefix("./")] = text
    return files


def init_on_first(remote: Remote, *args: str) -> tuple[int, str, str]:
    argv = [sys.executable, "-m", "wirespeed", "init", "--yes", "--agent", AGENT, *args]
    result = remote.run(remote.cluster.node("wit-1"), argv, timeout_s=300)
    return result.returncode or 0, result.stdout, result.stderr


def mesh_works(remote: Remote, a: str, b_address: str) -> bool:
    argv = ["ssh", "-oBatchMode=yes", "-oConnectTimeout=5", b_address, "hostname"]
    return remote.run(remote.cluster.node(a), argv, timeout_s=30).ok


def test_init_sets_up_the_mesh_reruns_idempotently_and_undoes_byte_for_byte(
    bed: tuple[TestbedState, Remote],
) -> None:
    state, remote = bed
    before = {node: ssh_dir(remote, node) for node in NODES}
    addresses = {n.name: n.mgmt_address.split("/")[0] for n in state.plan.nodes}
    assert not mesh_works(remote, "wit-2", addresses["wit-3"])  # no shared key to start with

    code, stdout, stderr = init_on_first(remote)
    assert code == 0, stdout + stderr
    assert "found by probe of" in stdout and stdout.count("host key SHA256:") == 2 + 3
    for node in NODES:  # what it found, before changing anything: name, user, management, addresses per half
        assert f"{node}: user root, management {addresses[node]}; fabric 198.19." in stdout
    assert " on enp1s0f1np1" in stdout and " on enP2p1s0f1np1" in stdout
    assert "PASS   │ ssh.mesh" in stdout and "0 fail" in stdout, stdout
    for a in NODES:
        for b in NODES:
            if a != b:
                assert mesh_works(remote, a, addresses[b]), f"{a} -> {b}"
                assert mesh_works(remote, a, b), f"{a} -> {b} by name"
    after = {node: ssh_dir(remote, node) for node in NODES}
    keys = [after[n]["wirespeed_ed25519.pub"].strip() for n in NODES]
    for node in NODES:
        assert "wirespeed_ed25519" in after[node]  # each node's own private key, made there
        assert all(key in after[node]["authorized_keys"] for key in keys)
        assert after[node]["config"].startswith("Include wirespeed_config")
        assert after[node]["config"].endswith(before[node].get("config", ""))
    assert len(set(after[n]["wirespeed_ed25519"] for n in NODES)) == 3
    assert after["wit-2"]["authorized_keys"].startswith(BEFORE["wit-2"]["authorized_keys"] + "\n")
    cluster = remote.run(remote.cluster.node("wit-1"), ["cat", ".config/wirespeed/cluster.toml"]).stdout
    for node in NODES:
        assert f'name = "{node}"' in cluster and f'host = "{addresses[node]}"' in cluster

    code, stdout, stderr = init_on_first(remote, "--no-check")
    assert code == 0, stdout + stderr
    assert stderr.count("nothing to change") == 3 and "unchanged:" in stderr, stderr
    assert {node: ssh_dir(remote, node) for node in NODES} == after

    code, stdout, stderr = init_on_first(remote, "--undo")
    assert code == 0, stdout + stderr
    assert {node: ssh_dir(remote, node) for node in NODES} == before
    assert not mesh_works(remote, "wit-2", addresses["wit-3"])
    assert remote.run(remote.cluster.node("wit-1"), ["test", "-e", ".config/wirespeed/cluster.toml"]).returncode == 1


def test_init_names_what_it_needs_when_it_finds_nobody(bed: tuple[TestbedState, Remote]) -> None:
    _, remote = bed
    code, _, stderr = init_on_first(remote, "--peers", "198.19.250.250")
    assert code != 0
    lines = [line for line in stderr.splitlines() if line.startswith("wirespeed:")]
    assert lines == [lines[0]] and "no other node answered ssh" in lines[0] and "hint:" in lines[0], stderr
    assert "Traceback" not in stderr


def test_init_on_a_terminal_asks_before_logging_in_and_before_changing_anything(
    bed: tuple[TestbedState, Remote],
) -> None:
    _, remote = bed
    before = {node: ssh_dir(remote, node) for node in NODES}
    argv = [sys.executable, "-m", "wirespeed", "init", "--no-check"]
    # `script` gives init a terminal; the answers: yes, log in; no, change nothing
    result = remote.run(
        remote.cluster.node("wit-1"),
        ["script", "-qec", shlex.join(argv), "/dev/null"],
        input_text="y\nn\n",
        timeout_s=300,
    )
    assert "Log in to each node to read its name and user" in result.stdout, result.stdout
    assert "Set up the ssh mesh on these 3 nodes?" in result.stdout
    assert "wit-2: user root" in result.stdout  # it read the names after the first yes
    assert "aborted" in result.stdout and result.returncode == 130
    assert {node: ssh_dir(remote, node) for node in NODES} == before


@pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in MDNS_TOOLS), reason="needs avahi-daemon, avahi-utils and dbus"
)
def test_init_finds_the_nodes_by_mdns_and_pins_every_address() -> None:
    """As on Sparks: every node announces ssh over mDNS (through a switch each is heard on every half, often under
    one address only); init finds them that way, and every address of every node is pinned, so ssh to any half
    works strictly."""
    with running_testbed("wim-", nodes=3, topology="switch", mdns=True) as (state, remote):
        key = state.directory / "keys" / "id_ed25519"
        write(remote, "wim-1", ".ssh/config", f"IdentityFile {key}\n")
        argv = [sys.executable, "-m", "wirespeed", "init", "--yes", "--no-check"]
        result = remote.run(remote.cluster.node("wim-1"), argv, timeout_s=300)
        assert result.ok, result.stdout + result.stderr
        assert "found by mDNS (avahi-browse _ssh._tcp)" in result.stdout
        assert "(wim-2.local)" in result.stdout and "(wim-3.local)" in result.stdout
        for node in state.plan.nodes:
            for half in node.fabric:
                if half.address is None:
                    continue
                for source in ("wim-1", "wim-2", "wim-3"):
                    if source != node.name:
                        assert mesh_works(remote, source, half.address.split("/")[0]), (source, half.name)
