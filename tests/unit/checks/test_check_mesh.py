"""ssh.mesh: every node reaches every other without a prompt at its management address and at the fabric address
mpirun's `-H` names it by; the probe behind it tries both, as plain ssh (the user's config decides, as for mpirun)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from builders import MANAGEMENT, assert_actionable, cluster, fix_text, run, spark

from wirespeed.core.checks import mesh
from wirespeed.core.checks.model import ActiveResults, CheckInput, CheckStatus
from wirespeed.core.cluster.inventory import Cluster, Node
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.nccl import NcclOptions, NcclPlan, plan_nccl
from wirespeed.core.outcome import CommandResult, Status
from wirespeed.engine.checks import measure_ssh_mesh
from wirespeed.engine.discover import discover_snapshots

SNAPSHOTS = Path(__file__).resolve().parents[2] / "fixtures" / "snapshots"
HOST_KEY_FAILED = "Host key verification failed."


def managed(node: str, host: int) -> NodeFacts:
    """A Spark whose management address is its own (the builders' default is one address for all)."""
    facts = spark(node, host)
    own = dataclasses.replace(MANAGEMENT, ipv4=(f"10.0.0.{host}/24",))
    return dataclasses.replace(facts, netdevs=tuple(own if n.name == own.name else n for n in facts.netdevs))


def sparks(ssh: dict[tuple[str, str, str], str | None] | None = None) -> CheckInput:
    data = cluster(managed("s1", 10), managed("s2", 11))
    return dataclasses.replace(data, active=ActiveResults(ssh_mesh=ssh))


def every_connection(data: CheckInput) -> dict[tuple[str, str, str], str | None]:
    targets = mesh.targets(data.facts, data.cabling)
    return {(a, b, address): None for a in data.facts for b in targets if a != b for address in targets[b]}


def test_each_node_is_tried_at_its_management_address_and_at_the_address_mpirun_names_it_by() -> None:
    data = sparks()
    assert mesh.targets(data.facts, data.cabling) == {
        "s1": {"10.0.0.10": mesh.MANAGEMENT, "192.168.100.10": mesh.FABRIC},
        "s2": {"10.0.0.11": mesh.MANAGEMENT, "192.168.100.11": mesh.FABRIC},
    }
    # No management address known: its fabric address is still mpirun's.
    bare = dataclasses.replace(managed("s2", 11), management=Unknown("no default route"))
    data = cluster(managed("s1", 10), bare)
    assert mesh.targets(data.facts, data.cabling)["s2"] == {"192.168.100.11": mesh.FABRIC}


def test_the_fabric_address_tried_is_the_one_plan_nccl_gives_mpirun() -> None:
    found = discover_snapshots([SNAPSHOTS / "spark-two-cables"])
    plan = plan_nccl(found.facts, found.cabling, "all_gather", NcclOptions())
    assert isinstance(plan, NcclPlan)
    targets = mesh.targets(found.facts, found.cabling)
    fabric = {node: a for node, addresses in targets.items() for a, what in addresses.items() if what == mesh.FABRIC}
    assert [fabric[node] for node in plan.nodes] == [host for host, _ in plan.hosts]


def test_a_working_mesh_passes() -> None:
    data = sparks()
    ssh = every_connection(data)
    assert len(ssh) == 4  # two nodes, each to the other at two addresses
    outcome = run(mesh.ID, sparks(ssh))
    assert outcome.status is CheckStatus.PASS, outcome
    assert "all 4 ssh connections" in outcome.summary


def test_a_mesh_pinned_on_management_addresses_only_fails_on_the_fabric_address() -> None:
    ssh = every_connection(sparks())
    ssh["s1", "s2", "192.168.100.11"] = HOST_KEY_FAILED  # discover-sparks pinned s2 by name and 10.0.0.11 only
    outcome = run(mesh.ID, sparks(ssh))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert "s1->s2 (192.168.100.11)" in outcome.summary
    [seen] = outcome.evidence
    assert (seen.node, seen.subject, seen.value) == ("s1", "s2", HOST_KEY_FAILED)
    assert "192.168.100.11" in seen.what and "mpirun" in seen.what
    [fix] = outcome.fixes
    assert fix.node == "s1"
    text = fix_text(outcome.fixes)
    assert "wirespeed init" in text
    assert "ssh-keyscan -H 192.168.100.11 >> ~/.ssh/known_hosts" in text
    assert "ssh-keygen -lF 192.168.100.11" in text  # and compare the fingerprint, not accept it blindly
    assert "StrictHostKeyChecking=no" not in text


def test_sshd_not_listening_on_the_fabric_says_so() -> None:
    ssh = every_connection(sparks())
    ssh["s2", "s1", "192.168.100.10"] = "ssh: connect to host 192.168.100.10 port 22: Connection refused"
    outcome = run(mesh.ID, sparks(ssh))
    assert outcome.status is CheckStatus.FAIL
    [fix] = outcome.fixes
    assert fix.node == "s2" and "let sshd listen on 192.168.100.10" in fix_text([fix])


def test_a_management_failure_keeps_its_own_fix() -> None:
    ssh = every_connection(sparks())
    ssh["s1", "s2", "10.0.0.11"] = "Permission denied (publickey,password)."
    outcome = run(mesh.ID, sparks(ssh))
    assert outcome.status is CheckStatus.FAIL
    [seen] = outcome.evidence
    assert seen.what == "ssh 10.0.0.11 (management)"
    assert "ssh-copy-id -i ~/.ssh/id_ed25519.pub 10.0.0.11" in fix_text(outcome.fixes)


@dataclasses.dataclass
class FakeRemote:
    """Answers each node's `ssh ... ADDRESS true` from a table; records what ran where."""

    cluster: Cluster
    refused: dict[tuple[str, str], str]  # (from node, address) -> ssh's last line
    ran: list[tuple[str, tuple[str, ...]]] = dataclasses.field(default_factory=list)

    def run(self, node: Node, argv: Sequence[str], timeout_s: float | None = 60.0) -> CommandResult:
        self.ran.append((node.name, tuple(argv)))
        said = self.refused.get((node.name, argv[-2]))
        status = Status.OK if said is None else Status.FAILED
        return CommandResult(node.name, tuple(argv), status, 255 if said else 0, "", said or "", 0.1, said or "ok")


def test_the_probe_runs_plain_strict_ssh_from_every_node_to_every_peer_address() -> None:
    data = sparks()
    nodes = tuple(Node(name=n, host=f"{n}.example") for n in data.facts)
    remote = FakeRemote(Cluster("test", nodes, "test"), {("s1", "192.168.100.11"): HOST_KEY_FAILED})
    measured = measure_ssh_mesh(remote, Discovery(dict(data.facts), data.cabling))
    assert measured == every_connection(data) | {("s1", "s2", "192.168.100.11"): HOST_KEY_FAILED}
    assert sorted((node, argv[-2]) for node, argv in remote.ran) == [
        ("s1", "10.0.0.11"),
        ("s1", "192.168.100.11"),
        ("s2", "10.0.0.10"),
        ("s2", "192.168.100.10"),
    ]
    for _, argv in remote.ran:
        assert argv[0] == "ssh" and argv[-1] == "true"
        assert "-oBatchMode=yes" in argv and "-oStrictHostKeyChecking=yes" in argv
