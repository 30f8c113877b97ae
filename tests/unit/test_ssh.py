"""How commands reach a node: the ssh argv is built so no user value is ever interpreted by a shell."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest

from wirespeed.adapters.ssh import LocalTransport, SshTransport, default_control_dir, transport_for
from wirespeed.core.cluster.inventory import Node

HOSTILE = ["printf", "%s\\n", "a; rm -rf /", "$(id)", "x y", "`id`", "'quoted'", '"dq"', "back\\slash", "", "*", "~"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


def split(argv: list[str]) -> tuple[list[str], str, str]:
    """ssh argv -> (options, host, remote command); asserts the shape ssh OPTIONS -- HOST COMMAND."""
    assert argv[0] == "ssh"
    assert argv.count("--") == 1
    dashes = argv.index("--")
    assert len(argv) == dashes + 3, "exactly the host and ONE command string after --"
    return argv[1:dashes], argv[dashes + 1], argv[dashes + 2]


def test_wrap_shape_and_hardwired_options(tmp_path: Path) -> None:
    transport = SshTransport(control_dir=tmp_path / "cm")
    options, host, command = split(transport.wrap(Node(name="n", host="spark-1"), ["hostname"]))
    assert host == "spark-1"
    assert command == "hostname"
    assert "-oBatchMode=yes" in options
    assert "-oConnectTimeout=10" in options
    assert "-oForwardAgent=no" in options
    assert "-l" not in options
    assert "-p" not in options
    assert "-F" not in options


def test_connect_timeout_is_configurable(tmp_path: Path) -> None:
    options, _, _ = split(SshTransport(connect_timeout_s=3, control_dir=tmp_path).wrap(Node("n", "h"), ["true"]))
    assert "-oConnectTimeout=3" in options
    assert "-oConnectTimeout=10" not in options


def test_user_and_port(tmp_path: Path) -> None:
    node = Node(name="n", host="10.0.0.1", user="alice", port=2222)
    options, host, _ = split(SshTransport(control_dir=tmp_path).wrap(node, ["true"]))
    assert host == "10.0.0.1"
    at_l = options.index("-l")
    assert options[at_l + 1] == "alice"
    at_p = options.index("-p")
    assert options[at_p + 1] == "2222"
    assert "alice@" not in " ".join([*options, host])


def test_users_options_come_before_the_hardwired_ones(tmp_path: Path, home: Path) -> None:
    transport = SshTransport(ssh_config="~/my ssh/config", control_dir=tmp_path / "cm")
    node = Node(
        name="n",
        host="spark-1",
        user="alice",
        port=2222,
        ssh_options=("-oConnectTimeout=2", "-i", "~/.ssh/id_wirespeed", "-oProxyJump=jump"),
    )
    options, _, _ = split(transport.wrap(node, ["true"]))
    assert options[:2] == ["-F", str(home / "my ssh" / "config")]
    assert options[2:6] == ["-oConnectTimeout=2", "-i", str(home / ".ssh" / "id_wirespeed"), "-oProxyJump=jump"]
    # ssh keeps the first value it sees for an option: the user's ConnectTimeout beats ours.
    assert options.index("-oConnectTimeout=2") < options.index("-oConnectTimeout=10")
    assert options.index("-oProxyJump=jump") < options.index("-oBatchMode=yes")
    assert options.index("-F") == 0


def test_ssh_options_without_tilde_are_passed_as_they_are(tmp_path: Path, home: Path) -> None:
    node = Node(name="n", host="h", ssh_options=("-oIdentityFile=~/k", "-v"))
    options, _, _ = split(SshTransport(control_dir=tmp_path).wrap(node, ["true"]))
    assert options[:2] == ["-oIdentityFile=~/k", "-v"]


@pytest.mark.parametrize(
    "argv",
    [
        HOSTILE,
        ["echo", "a; rm -rf /"],
        ["echo", "$(id)"],
        ["echo", "x y"],
        ["sh", "-c", "echo $HOME; exit 3"],
        ["printf", "%s", "new\nline", "\t"],
    ],
)
def test_remote_command_is_one_quoted_argument(tmp_path: Path, argv: list[str]) -> None:
    node = Node(name="n", host="h", user="u")
    _, _, command = split(SshTransport(control_dir=tmp_path).wrap(node, argv))
    assert command == shlex.join(argv)
    assert shlex.split(command) == argv


def test_remote_shell_gets_back_the_exact_argv(tmp_path: Path) -> None:
    # What sshd does with the command string: hand it to the user's shell. It must not interpret anything.
    marker = tmp_path / "pwned"
    argv = [*HOSTILE, f"; touch {marker}", f"$(touch {marker})"]
    _, _, command = split(SshTransport(control_dir=tmp_path).wrap(Node("n", "h"), argv))
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert out.split("\n")[:-1] == argv[2:]
    assert not marker.exists()


def test_control_master_options_and_private_directory(tmp_path: Path) -> None:
    control = tmp_path / "deep" / "cm"
    transport = SshTransport(control_dir=control, control_persist_s=12)
    options, _, _ = split(transport.wrap(Node("n", "h"), ["true"]))
    assert "-oControlMaster=auto" in options
    assert f"-oControlPath={control}/%C" in options
    assert "-oControlPersist=12" in options
    assert control.is_dir()
    assert stat.S_IMODE(control.stat().st_mode) & 0o077 == 0


def test_no_control_master_without_a_directory() -> None:
    options = SshTransport(control_dir=None).ssh_options(Node("n", "h"))
    assert not any(opt.startswith("-oControl") for opt in options)


def test_ssh_options_does_not_touch_the_filesystem(tmp_path: Path) -> None:
    control = tmp_path / "cm"
    SshTransport(control_dir=control).ssh_options(Node("n", "h"))
    assert not control.exists()


def test_destination() -> None:
    transport = SshTransport()
    assert transport.destination(Node("n", "h")) == "h"
    assert transport.destination(Node("n", "h", user="alice")) == "alice@h"
    assert transport.destination(Node("n", "h", user="alice", port=2222)) == "alice@h:2222"
    assert transport.destination(Node("n", "h", port=22)) == "h:22"
    assert transport.via_ssh is True


def test_local_transport_returns_argv_unchanged() -> None:
    transport = LocalTransport()
    argv = ["echo", "a; rm -rf /", "$(id)"]
    wrapped = transport.wrap(Node("localhost", "localhost"), argv)
    assert wrapped == argv
    assert wrapped is not argv
    assert transport.via_ssh is False
    assert transport.destination(Node("localhost", "localhost")) == "localhost"


def test_transport_for(tmp_path: Path) -> None:
    assert isinstance(transport_for(Node("localhost", "localhost"), None, tmp_path), LocalTransport)
    assert isinstance(transport_for(Node("l", "127.0.0.1"), "cfg", tmp_path), LocalTransport)
    remote = transport_for(Node("s", "spark-1"), "~/cfg", tmp_path)
    assert isinstance(remote, SshTransport)
    assert remote.ssh_config == "~/cfg"
    assert remote.control_dir == tmp_path
    # localhost with a user goes through ssh: the user asked for a login as someone.
    assert isinstance(transport_for(Node("l", "localhost", user="bob"), None, tmp_path), SshTransport)


def test_default_control_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert default_control_dir() == tmp_path / f"wirespeed-ssh-{os.getuid()}"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    path = default_control_dir()
    assert path.name == f"wirespeed-ssh-{os.getuid()}"
    # ControlPath sockets live in sun_path (108 bytes): leave room for %C (40 hex characters).
    assert len(str(path)) + 1 + 40 < 108
