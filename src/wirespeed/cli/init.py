"""`wirespeed init`: run on one node, it finds the others on the fabric, shows them, and (after asking, or with
--yes) sets up passwordless ssh among all of them with keys of their own, writes the cluster file every other
command then uses by default, and runs the checks that say the mesh and the halves are right. `--undo` takes it
all away again.

Registered by wirespeed.cli.main; like every command module it takes its shared parts from wirespeed.cli.common."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from wirespeed.cli.common import CONTEXT, Ctx
from wirespeed.core.cluster import sshmesh
from wirespeed.core.cluster.inventory import DEFAULT_AGENT
from wirespeed.core.errors import ExitStatus, UsageError

FINAL_CHECKS = "ssh.mesh,link.halves,addr.subnets"


@click.command("init", context_settings=CONTEXT)
@click.option("--peers", help="The other nodes' addresses, instead of finding them (mDNS, else a probe).")
@click.option("--user", "-l", help="The user on every node (default: ssh's own default).")
@click.option("--yes", is_flag=True, help="Do not ask; never prompt for a password (for scripts).")
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Cluster file to write (default: $WIRESPEED_CLUSTER, else ~/.config/wirespeed/cluster.toml).",
)
@click.option("--agent", default=None, help="How to start wirespeed on the nodes, written to the cluster file.")
@click.option("--ssh-option", "ssh_options", multiple=True, help="An option for ssh's first contact (e.g. -i KEY).")
@click.option("--undo", is_flag=True, help="Remove the keys, lines and files init added, on every node.")
@click.option("--no-check", is_flag=True, help="Do not run the checks at the end.")
@click.option("--sudoers", is_flag=True, help="Let the user run wirespeed's agent (and only it) as root without a "
              "password on every node: a root-owned copy and a sudoers drop-in, checked by visudo; --undo removes "
              "them. Commands then need no --become.")  # fmt: skip
@click.option("--ask-become-pass", is_flag=True, help="Ask once for the nodes' sudo password (for --sudoers).")
@click.pass_obj
def init_cmd(
    ctx: Ctx,
    peers: str | None,
    user: str | None,
    yes: bool,
    output: Path | None,
    agent: str | None,
    ssh_options: tuple[str, ...],
    undo: bool,
    no_check: bool,
    sudoers: bool,
    ask_become_pass: bool,
) -> int:
    """Find the other nodes on the fabric, set up the ssh mesh among all nodes, write the cluster file."""
    from wirespeed.engine import init as engine
    from wirespeed.engine.clusters import default_cluster_path, load_cluster_file

    out = ctx.output(False)
    path = output or default_cluster_path()
    interactive = not yes and sys.stdin.isatty()
    options = engine.InitOptions(
        peers=tuple(p.strip() for p in (peers or "").split(",") if p.strip()),
        user=user,
        interactive=interactive,
        agent=tuple(shlex.split(agent)) if agent else DEFAULT_AGENT,
        ssh_options=ssh_options,
    )

    def say(text: str) -> None:
        out.message(f"init: {text}")

    if undo:
        if not path.is_file():
            raise UsageError(f"{path}: no cluster file from `wirespeed init`", hint="give --output FILE as init had it")
        cluster = load_cluster_file(path)
        if not yes and not click.confirm(f"Remove init's keys and lines from {', '.join(cluster.names)}?"):
            raise click.exceptions.Abort
        if cluster.extra.get("become") == "sudoers":  # first, while ssh still reaches every node
            for line in engine.revoke_sudoers(cluster, say):
                out.message(f"wirespeed: {line}")
        engine.undo(cluster, options, say)
        path.unlink(missing_ok=True)
        say(f"removed {path}")
        return ExitStatus.OK

    found = engine.find(options, say)
    if not found.peers:
        raise UsageError(
            f"no other node answered ssh on the fabric ({found.method})",
            hint="check the cables and addresses (`wirespeed discover`), or name the peers with --peers",
        )
    console = out.console

    def fabric(addresses: Sequence[str]) -> str:
        return ", ".join(f"{a} on {h}" for a in addresses if (h := sshmesh.half_of(a, found.fabric))) or "-"

    for number, peer in enumerate(found.peers, 1):
        names = f" ({', '.join(peer.names)})" if peer.names else ""
        console.print(f"peer {number}{names}: {fabric(peer.addresses)}; host key {peer.fingerprint}", soft_wrap=True)
    if interactive and not click.confirm(
        "ssh will accept these host keys only. Log in to each node to read its name and user "
        "(ssh may ask for a password, once per node)?"
    ):
        raise click.exceptions.Abort
    survey = engine.survey(found, options, say)
    for member in survey.members:
        console.print(
            f"{member.name}: user {member.user}, management {member.management}; fabric {fabric(member.addresses)}; "
            f"host key {member.machine.fingerprint}",
            soft_wrap=True,  # one node, one line, whatever the width
        )
    console.print(f"found by {found.method}; cluster file {path}", soft_wrap=True)
    lone = sshmesh.lone_halves({m.name: m.ipv4 for m in survey.members}, found.fabric)
    if lone:
        where = ", ".join(f"{node} {half} ({subnet})" for node, half, subnet in lone[:4])
        more = f" and {len(lone) - 4} more" if len(lone) > 4 else ""
        say(f"{where}{more}: cabled to a node init did not reach. In a ring of four or more, the nodes past the "
            "neighbours answer only once the ring is routed: name every other node by its management address, "
            "`wirespeed init --peers ADDR,ADDR,...`")  # fmt: skip
    question = (
        "Compare the host keys with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on each node. Set up the "
        f"ssh mesh on these {len(survey.members)} nodes?"
    )
    if not yes and not click.confirm(question):
        survey.close()
        raise click.exceptions.Abort
    mesh, outcomes = engine.setup(survey, say)
    for outcome in outcomes:
        changed = ", ".join(f"~/.ssh/{name}" for name in outcome.changed) or "nothing to change"
        say(f"{outcome.name} ({outcome.address}): {changed}")
    wrote = engine.write_cluster_file(path, mesh, options.agent)
    say(f"{'wrote' if wrote else 'unchanged:'} {path} ({', '.join(m.name for m in mesh)})")
    if not sudoers and interactive:
        sudoers = click.confirm(
            "Let this user run wirespeed's agent as root without a password on every node (a sudoers drop-in for "
            "that agent only; `init --undo` removes it)? Without it, commands that need root take --become",
            default=False,
        )
    if sudoers:
        from wirespeed.cli import common
        from wirespeed.core.cluster.become import Become

        become = Become(common.ask_become_pass(path.name) if ask_become_pass else None)
        refused = engine.grant_sudoers(path, become, say)
        for line in refused:
            out.message(f"wirespeed: {line}")
        if refused:
            return ExitStatus.FINDING
    if no_check:
        return ExitStatus.OK
    # The same `wirespeed check` a person would run next, through the root command (the error boundary is the
    # caller's): its exit status is init's.
    root = click.get_current_context().find_root().command
    status = root.main(
        ["check", "--cluster", str(path), "--only", FINAL_CHECKS], prog_name="wirespeed", standalone_mode=False, obj=ctx
    )
    return int(status) if isinstance(status, int) else ExitStatus.OK
