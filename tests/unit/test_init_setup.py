"""`wirespeed init`'s setup on two nodes through a fake remote: every node's host keys are pinned under its name,
its management address and every fabric address it reports (mpirun's `-H` names nodes by a fabric address), even
where discovery saw it on one half only; and only the keys seen at discovery, strictly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from wirespeed.core.cluster import sshmesh
from wirespeed.core.cluster.inventory import Node
from wirespeed.core.outcome import CommandResult, Status
from wirespeed.engine import init

KEY1 = "AAAAC3NzaC1lZDI1NTE5AAAAIJzNEvB/Sk6xSKxsthgsfMFk6u3qbUEQSZqoIYiqYnRp"
KEY2 = "AAAAC3NzaC1lZDI1NTE5AAAAIKxVB8dFm7wNkOq8pT+7FqgT0mQ2n0y4XbQb8l9rD1aZ"


@dataclass
class FakeNodes:
    """Each node's ~/.ssh as a dict, edited by init's fixed scripts as they would edit it."""

    files: dict[tuple[str, str], str] = field(default_factory=dict)  # (host, file) -> text
    names: dict[str, str] = field(default_factory=dict)  # host -> host name, for the key comment

    def run(
        self, node: Node, argv: Sequence[str], *, timeout_s: float | None = 60.0, input_text: str | None = None
    ) -> CommandResult:
        script, args = argv[2], list(argv[4:])
        code, out = 0, ""
        if script == init._ENSURE_KEY:
            out = f"ssh-ed25519 {KEY1 if node.is_local else KEY2} {args[1]}\n"
        elif script == init._READ:
            text = self.files.get((node.host, args[0]))
            code, out = (3, "") if text is None else (0, text)
        elif script == init._WRITE:
            self.files[node.host, args[0]] = input_text or ""
        elif script != init._BACKUP:
            raise AssertionError(f"unexpected command {argv}")
        status = Status.OK if code == 0 else Status.FAILED
        return CommandResult(node.name, tuple(argv), status, code, out, "", 0.0, "ok" if code == 0 else "failed")

    def stop_all(self) -> None:
        pass


class NoSession:
    def close(self) -> None:
        pass


def test_init_pins_every_nodes_host_keys_under_its_fabric_addresses_too() -> None:
    me = sshmesh.Peer(("192.168.100.10", "192.168.101.10"), (("ssh-ed25519", KEY1),))
    # mDNS showed spark-2 on one half only; it reports both halves (and its management address) once logged in.
    peer = sshmesh.Peer(("192.168.100.11",), (("ssh-ed25519", KEY2),))
    here, there = Node(name="this node", host="localhost"), Node(name="peer 1", host="192.168.100.11")
    members = [
        init.Member(here, "spark-1", "alice", "10.0.0.10", me, ("10.0.0.10", "192.168.100.10", "192.168.101.10")),
        init.Member(there, "spark-2", "alice", "10.0.0.11", peer, ("10.0.0.11", "192.168.100.11", "192.168.101.11")),
    ]
    fake = FakeNodes()
    mesh, _ = init.setup(init.Survey(NoSession(), fake, members), lambda line: None)
    assert [m.addresses for m in mesh] == [
        ("10.0.0.10", "192.168.100.10", "192.168.101.10"),
        ("10.0.0.11", "192.168.100.11", "192.168.101.11"),
    ]
    for host in ("localhost", "192.168.100.11"):
        pinned: dict[str, set[str]] = {}
        for line in fake.files[host, sshmesh.KNOWN_HOSTS_NAME].splitlines():
            if not line.startswith("#"):
                names, _, key = line.split()
                for name in names.split(","):
                    pinned.setdefault(name, set()).add(key)
        for address in ("spark-1", "10.0.0.10", "192.168.100.10", "192.168.101.10"):
            assert pinned[address] == {KEY1}, (host, address)
        for address in ("spark-2", "10.0.0.11", "192.168.100.11", "192.168.101.11"):
            assert pinned[address] == {KEY2}, (host, address)
        config = fake.files[host, sshmesh.CONFIG_NAME]
        [patterns] = [line for line in config.splitlines() if line.startswith("Host ") and "192.168.101.11" in line]
        assert {"192.168.100.10", "192.168.101.10", "192.168.100.11", "192.168.101.11"} <= set(patterns.split())
        assert "StrictHostKeyChecking yes" in config and "StrictHostKeyChecking no" not in config
