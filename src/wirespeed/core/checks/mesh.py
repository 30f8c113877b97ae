"""ssh.mesh: mpirun and NCCL launchers ssh from every node to every other, as the same user, without a prompt."""

from __future__ import annotations

from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip

ID = "ssh.mesh"


@check(ID, "passwordless ssh from every node to every other")
def ssh_mesh(data: CheckInput) -> CheckResult:
    mesh = data.active.ssh_mesh
    if mesh is None:
        return skip(ID, "not measured (snapshot, or --no-active)")
    if len(data.facts) < 2:
        return skip(ID, "one node: no mesh to check")
    failed = {pair: reason for pair, reason in sorted(mesh.items()) if reason is not None}
    if not failed:
        return result(ID, CheckStatus.PASS, f"all {len(mesh)} node-to-node ssh connections work without a prompt")
    evidence = [Evidence(a, b, "ssh", reason) for (a, b), reason in failed.items()]
    fixes = [
        Fix(
            a,
            f"let {a} log in to {b} as the same user without a prompt",
            _commands(b, reason),
        )
        for (a, b), reason in failed.items()
    ]
    pairs = ", ".join(f"{a}->{b}" for a, b in failed)
    return result(ID, CheckStatus.FAIL, f"{len(failed)} of {len(mesh)} connections fail: {pairs}", evidence, fixes)


def _commands(peer: str, reason: str) -> tuple[str, ...]:
    if "host key" in reason.lower() or "known_hosts" in reason:
        return (
            f"ssh {peer} true   # once, by hand: compare the fingerprint with `ssh-keygen -lf` on {peer}, then accept",
        )
    return (
        "wirespeed init   # on one node: a key of its own per node, every key on every node, host keys pinned",
        "# or by hand: test -f ~/.ssh/id_ed25519 || ssh-keygen -t ed25519 -N '' -f ~/.ssh/id_ed25519",
        f"#   then: ssh-copy-id -i ~/.ssh/id_ed25519.pub {peer}",
    )
