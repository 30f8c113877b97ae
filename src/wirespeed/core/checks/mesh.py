"""ssh.mesh: mpirun and NCCL launchers ssh from every node to every other, as the same user, without a prompt, at
every address they use: the management address, and the fabric address mpirun's `-H` names each node by."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.checks.ring import missing_routes
from wirespeed.core.fabric.cabling import CablingMap
from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.nccl import launch_address

ID = "ssh.mesh"
MANAGEMENT = "management"
FABRIC = "fabric, mpirun -H"


def targets(facts: Mapping[str, NodeFacts], cabling: CablingMap) -> dict[str, dict[str, str]]:
    """Each node's addresses its peers must reach it on, with what each is. A mesh pinned by name or management
    address only (as NVIDIA's discover-sparks leaves it) works there and stops mpirun at daemon launch."""
    found: dict[str, dict[str, str]] = {}
    for name, node in facts.items():
        addresses: dict[str, str] = {}
        netdev = None if isinstance(node.management, Unknown) else node.netdev(node.management)
        if netdev is not None and netdev.ipv4:
            addresses[netdev.ipv4[0].split("/")[0]] = MANAGEMENT
        fabric = launch_address(node, cabling)
        if fabric is not None:
            addresses.setdefault(fabric, FABRIC)
        if addresses:
            found[name] = addresses
    return found


@check(ID, "passwordless ssh from every node to every other")
def ssh_mesh(data: CheckInput) -> CheckResult:
    mesh = data.active.ssh_mesh
    if mesh is None:
        return skip(ID, "not measured (snapshot, or --no-active)")
    if len(data.facts) < 2:
        return skip(ID, "one node: no mesh to check")
    failed = {job: reason for job, reason in sorted(mesh.items()) if reason is not None}
    if not failed:
        return result(
            ID, CheckStatus.PASS, f"all {len(mesh)} ssh connections (management and fabric) work without a prompt"
        )
    roles = targets(data.facts, data.cabling)
    evidence, fixes = [], []
    for (a, b, address), reason in failed.items():
        what = roles.get(b, {}).get(address, "address")
        evidence.append(Evidence(a, b, f"ssh {address} ({what})", reason))
        fixes.append(
            Fix(
                a,
                f"let {a} log in to {b} at {address} ({what}) as the same user without a prompt",
                _commands(a, b, address, what == FABRIC, reason),
            )
        )
    pairs = ", ".join(f"{a}->{b} ({address})" for a, b, address in failed)
    awaiting = _awaiting_routes(data, failed)
    if awaiting == set(failed):  # every failure is a ring pair without its route yet: `fix` mends them
        return result(ID, CheckStatus.WARN, f"{len(failed)} of {len(mesh)} connections wait for the ring's routes "
                      f"(ring.routes; `wirespeed fix` adds them): {pairs}", evidence, fixes)  # fmt: skip
    return result(ID, CheckStatus.FAIL, f"{len(failed)} of {len(mesh)} connections fail: {pairs}", evidence, fixes)


def _awaiting_routes(data: CheckInput, failed: Mapping[tuple[str, str, str], str]) -> set[tuple[str, str, str]]:
    """The failed connections to a fabric address that the ring's planned routes, still missing on the node that
    tried, would carry: in a ring of four or more, pairs that share no cable cannot reach each other before
    `fix` routes them, which is no reason to stop a commission whose fix adds the routes."""
    missing = missing_routes(data)
    awaiting = set()
    for a, b, address in failed:
        try:
            target = ipaddress.ip_address(address)
        except ValueError:
            continue
        if any(target in ipaddress.ip_network(route.dst) for route in missing.get(a, [])):
            awaiting.add((a, b, address))
    return awaiting


def _commands(node: str, peer: str, address: str, fabric: bool, reason: str) -> tuple[str, ...]:
    said = reason.lower()
    if "host key" in said or "known_hosts" in said:
        if fabric:  # reached by name or management address only: the fabric address has no pinned key
            return (
                "wirespeed init   # on one node: pins every node's host keys under its management and fabric addresses",
                f"# or by hand, on {node}: ssh-keyscan -H {address} >> ~/.ssh/known_hosts",
                f"#   then compare `ssh-keygen -lF {address}` with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`"
                f" on {peer}",
            )
        return (
            f"ssh {address} true   # once, by hand: compare the fingerprint with `ssh-keygen -lf` on {peer}, then"
            " accept",
        )
    if fabric and ("refused" in said or "timed out" in said or "no route" in said):
        return (
            f"# on {peer}: let sshd listen on {address} (no ListenAddress in /etc/ssh/sshd_config listens on all)"
            " and let port 22 in on its fabric halves",
        )
    return (
        "wirespeed init   # on one node: a key of its own per node, every key on every node, host keys pinned",
        "# or by hand: test -f ~/.ssh/id_ed25519 || ssh-keygen -t ed25519 -N '' -f ~/.ssh/id_ed25519",
        f"#   then: ssh-copy-id -i ~/.ssh/id_ed25519.pub {address}",
    )
