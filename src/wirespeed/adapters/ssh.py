"""How a node is reached: directly, over the system OpenSSH client, or inside a testbed namespace.

The system ssh client is used on purpose: it honours ~/.ssh/config, agents, jump hosts and known_hosts as the
user already set them up. Commands are argument lists; the remote shell gets one string made by `shlex.join`,
so nothing user-supplied is ever interpreted by it.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from wirespeed.core.cluster.inventory import Node


class Transport(Protocol):
    """Turns a command for a node into the local argv that runs it there."""

    via_ssh: bool
    via_srun: bool

    def wrap(self, node: Node, argv: Sequence[str]) -> list[str]: ...

    def destination(self, node: Node) -> str: ...


class LocalTransport:
    """Runs on this machine, as it is."""

    via_ssh = False
    via_srun = False

    def wrap(self, node: Node, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def destination(self, node: Node) -> str:
        return "localhost"


def default_control_dir() -> Path:
    """A private directory for ssh ControlMaster sockets (paths must stay short: sun_path is 108 bytes)."""
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir())
    return base / f"wirespeed-ssh-{os.getuid()}"


@dataclass
class SshTransport:
    """Runs over the system OpenSSH client with batch mode, timeouts and connection reuse."""

    ssh_config: str | None = None
    connect_timeout_s: int = 10
    control_dir: Path | None = None
    control_persist_s: int = 30
    batch_mode: bool = True  # False lets ssh ask for a password on the terminal (`wirespeed init`'s first contact)
    via_ssh: bool = True
    via_srun: bool = False

    def destination(self, node: Node) -> str:
        user = f"{node.user}@" if node.user else ""
        port = f":{node.port}" if node.port else ""
        return f"{user}{node.host}{port}"

    def ssh_options(self, node: Node) -> list[str]:
        """ssh's own options for `node`: the user's first, since ssh honours the first value it sees."""
        options: list[str] = []
        if self.ssh_config:
            options += ["-F", str(Path(self.ssh_config).expanduser())]
        options += [str(Path(opt).expanduser()) if opt.startswith("~") else opt for opt in node.ssh_options]
        options += [
            f"-oBatchMode={'yes' if self.batch_mode else 'no'}",
            f"-oConnectTimeout={self.connect_timeout_s}",
            "-oForwardAgent=no",
            "-oForwardX11=no",
            "-oLogLevel=ERROR",
            "-oServerAliveInterval=5",
            "-oServerAliveCountMax=3",
        ]
        if self.control_dir is not None:
            options += [
                "-oControlMaster=auto",
                f"-oControlPath={self.control_dir}/%C",
                f"-oControlPersist={self.control_persist_s}",
            ]
        if node.user:
            options += ["-l", node.user]
        if node.port:
            options += ["-p", str(node.port)]
        return options

    def wrap(self, node: Node, argv: Sequence[str]) -> list[str]:
        if self.control_dir is not None:
            self.control_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return ["ssh", *self.ssh_options(node), "--", node.host, shlex.join(argv)]


def transport_for(node: Node, ssh_config: str | None, control_dir: Path | None) -> Transport:
    """Local nodes run directly; all others over ssh."""
    if node.is_local:
        return LocalTransport()
    return SshTransport(ssh_config=ssh_config, control_dir=control_dir)
