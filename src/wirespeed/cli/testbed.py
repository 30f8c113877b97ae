"""`wirespeed testbed ...`: the emulated cluster, to try and test every command without the hardware."""

from __future__ import annotations

import shlex
from typing import Any

import click

from wirespeed.cli.common import CONTEXT, PASS_THROUGH, Count, Ctx, json_option, pass_ctx
from wirespeed.cli.output import Output
from wirespeed.core.errors import ExitStatus, UsageError
from wirespeed.core.fabric.units import parse_rate_bps
from wirespeed.ui import render


@click.group("testbed", context_settings=CONTEXT)
def testbed() -> None:
    """The emulated cluster: DGX Spark nodes in network namespaces, with sshd, shaped links and faults."""


prefix_option = click.option(
    "--prefix", default="spark-", show_default=True, help="Name prefix: nodes are PREFIX1..PREFIXN."
)


def say_how_to_name_it(out: Output, status: dict[str, Any]) -> None:
    """Commands act on a cluster only when it is named: say how, in lines to paste (stderr)."""
    cluster_file = status.get("cluster_file")
    if not cluster_file or status.get("phase") == "down":
        return
    path = shlex.quote(str(cluster_file))
    out.message(f"testbed: name it with --cluster {path}, or for every command of this shell:")
    out.message(f"export WIRESPEED_CLUSTER={path}")


def account_line(status: dict[str, Any]) -> str | None:
    """With `testbed up --user`: the nodes' account, its sudo and where its password is; None without."""
    account = status.get("account")
    if not account or status.get("phase") == "down":
        return None
    from wirespeed.testbed.account import SudoMode

    uid = f" (uid {account['uid']})" if account.get("uid") is not None else ""
    return (
        f"account: {account['user']}{uid} on every node, {SudoMode(account['sudo']).describe()}; "
        f"password in {account['password_file']} (root only); root cannot log in over ssh"
    )


def print_status(out: Output, status: dict[str, Any]) -> None:
    out.console.print(render.testbed_status(status))
    line = account_line(status)
    if line:
        out.console.print(line, style="dim", highlight=False, soft_wrap=True)


@testbed.command("up")
@prefix_option
@click.option("--nodes", "-n", type=Count(2, 16), help="Number of nodes (direct: 2, ring: 3-8, switch: 2-16).")
@click.option("--topology", type=click.Choice(["direct", "ring", "switch"]), default="direct", show_default=True)
@click.option("--cables", type=Count(1, 2), default=1, show_default=True, help="Cabled ports per node.")
@click.option(
    "--half-rate",
    default="1gbit",
    show_default=True,
    help="tc rate of each PCIe half (tc units), or `none`: not shaped, the CPU is the ceiling.",
)
@click.option(
    "--mtu",
    type=Count(68, 65535, "bytes"),
    default=None,
    help="MTU of the fabric interfaces (default: 9000; 1500 with --as-shipped).",
)
@click.option(
    "--as-shipped",
    is_flag=True,
    help="Start as a Spark ships with NVIDIA's link-local netplan: IPv4 link-local on one half of each port, its "
    "twin IPv6 link-local only, MTU 1500.",
)
@click.option(
    "--switch-mtu", type=Count(68, 65535, "bytes"), default=None, help="MTU of the switch ports (default: --mtu)."
)
@click.option("--miswire", is_flag=True, help="Cross-cable: swap node 2's ports (a fault for discovery to find).")
@click.option("--slurm", is_flag=True, help="Also run Slurm: slurmctld here, a slurmd inside every node.")
@click.option("--mdns", is_flag=True, help="Every node announces ssh over mDNS (avahi), as a Spark does.")
@click.option(
    "--user",
    default=None,
    metavar="NAME",
    help="Log in as this ordinary account (every node's own, with sudo), not root; root cannot log in then.",
)
@click.option(
    "--sudo",
    type=click.Choice(["password", "nopasswd"]),
    default=None,
    help="With --user: sudo asks the account's password (default, as on a Spark) or not (NOPASSWD).",
)
@json_option
@pass_ctx
def testbed_up(
    ctx: Ctx,
    prefix: str,
    nodes: int | None,
    topology: str,
    cables: int,
    half_rate: str,
    mtu: int | None,
    as_shipped: bool,
    switch_mtu: int | None,
    miswire: bool,
    slurm: bool,
    mdns: bool,
    user: str | None,
    sudo: str | None,
    json_mode: bool,
) -> ExitStatus:
    """Create the emulated cluster (or recover a half-built one) and write its cluster file. With --user, ssh logs
    in as that account (its password: `<testbed dir>/user-password`, readable by root only)."""
    from wirespeed.testbed import build
    from wirespeed.testbed.slurm import require_slurm, start_slurm

    out = ctx.output(json_mode)
    count = nodes if nodes is not None else {"direct": 2, "ring": 3, "switch": 4}[topology]
    if slurm:
        require_slurm()  # before anything is built
    state = build.up(
        prefix=prefix,
        nodes=count,
        topology=topology,
        cables=cables,
        half_rate_bps=0 if half_rate.strip().lower() == "none" else parse_rate_bps(half_rate),
        mtu=mtu if mtu is not None else (1500 if as_shipped else 9000),
        switch_mtu=switch_mtu,
        miswire=miswire,
        mdns=mdns,
        as_shipped=as_shipped,
        user=user,
        sudo=sudo,
        progress=lambda text: out.message(f"testbed: {text}"),
    )
    if slurm:
        conf = start_slurm(state)
        out.message(f"testbed: Slurm is up: SLURM_CONF={conf} salloc -N {count} wirespeed bench ...")
    status = build.status(prefix)
    if json_mode:
        out.data(status)
    else:
        print_status(out, status)
    say_how_to_name_it(out, status)
    return ExitStatus.OK if state.phase == "up" else ExitStatus.FINDING


@testbed.command("down")
@prefix_option
@json_option
@pass_ctx
def testbed_down(ctx: Ctx, prefix: str, json_mode: bool) -> None:
    """Remove everything the testbed made (namespaces, links, processes, files). Safe to repeat."""
    from wirespeed.testbed import build

    out = ctx.output(json_mode)
    report = build.down(prefix)
    if json_mode:
        out.data(report.to_json())
    elif report.namespaces or report.files:
        out.message(f"testbed: removed {len(report.namespaces)} namespace(s), stopped {len(report.killed)} process(es)")
    else:
        out.message(f"testbed: nothing to remove for {prefix!r}")


@testbed.command("status")
@prefix_option
@json_option
@pass_ctx
def testbed_status(ctx: Ctx, prefix: str, json_mode: bool) -> ExitStatus:
    """Show the testbed: nodes, interfaces, cabling, shaping, faults and health."""
    from wirespeed.testbed import build

    out = ctx.output(json_mode)
    status = build.status(prefix)
    if json_mode:
        out.data(status)
    else:
        print_status(out, status)
    say_how_to_name_it(out, status)
    return ExitStatus.OK if status["phase"] == "up" else ExitStatus.FINDING


@testbed.command("fault")
@prefix_option
@click.argument("node")
@click.argument("iface")
@click.option("--mtu", type=Count(68, 65535, "bytes"), help="Set this MTU on the half (or switch port).")
@click.option("--down", "down_", is_flag=True, help="Take the half down.")
@click.option("--unaddress", is_flag=True, help="Remove its IPv4 address.")
@click.option("--ipv6", type=click.Choice(["on", "off"]), help="Turn IPv6 on or off on it.")
@click.option("--rate", help="Degrade it to this tc rate (e.g. 300mbit).")
@click.option("--revert", is_flag=True, help="Undo every fault on it: back to the planned state.")
@json_option
@pass_ctx
def testbed_fault(
    ctx: Ctx,
    prefix: str,
    node: str,
    iface: str,
    mtu: int | None,
    down_: bool,
    unaddress: bool,
    ipv6: str | None,
    rate: str | None,
    revert: bool,
    json_mode: bool,
) -> None:
    """Inject a fault on NODE's half IFACE (NODE may be `switch` with a switch port), or --revert it."""
    from wirespeed.testbed import build

    out = ctx.output(json_mode)
    if revert:
        if any((mtu is not None, down_, unaddress, ipv6, rate)):
            raise UsageError("--revert takes no other fault option")
        result = build.revert(prefix, node, iface)
    else:
        change = build.Fault(
            mtu=mtu,
            down=down_,
            unaddress=unaddress,
            ipv6=None if ipv6 is None else ipv6 == "on",
            rate_bps=parse_rate_bps(rate) if rate else None,
        )
        result = build.fault(prefix, node, iface, change)
    if json_mode:
        out.data(result)
    else:
        out.message(f"testbed: {result['target']}: {result.get('fault', result.get('reverted'))}")


def after_node(command: tuple[str, ...]) -> list[str]:
    """The command given after NODE: options end at NODE, so the `--` that may follow it is the separator's, not
    the command's first word."""
    return list(command[1:] if command[:1] == ("--",) else command)


@testbed.command("exec", context_settings=PASS_THROUGH)
@prefix_option
@click.argument("node")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@pass_ctx
def testbed_exec(ctx: Ctx, prefix: str, node: str, command: tuple[str, ...]) -> int:
    """Run COMMAND inside NODE directly (no ssh), with its terminal: for poking at the testbed."""
    from wirespeed.adapters.process import run_attached
    from wirespeed.testbed import build

    state = build.require_state(prefix)
    state.plan.node(node)
    return run_attached(build.node_argv(state, node, after_node(command)))  # the command's own status


@testbed.command("shell", context_settings=PASS_THROUGH)
@prefix_option
@click.argument("node")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@pass_ctx
def testbed_shell(ctx: Ctx, prefix: str, node: str, command: tuple[str, ...]) -> int:
    """Log in to NODE as its user would, over ssh through its own sshd: a login shell with the node's home, PATH
    and environment; or run COMMAND in that login shell (after --). The testbed's key goes along in an ssh agent,
    so ssh from NODE to the other nodes gets in. Exit status: the command's (255: ssh could not log in)."""
    import sys

    from wirespeed.adapters.process import run_attached
    from wirespeed.core.errors import TestbedError
    from wirespeed.testbed import build
    from wirespeed.testbed.login import shell_argv

    state = build.require_state(prefix)
    state.plan.node(node)
    argv = shell_argv(state, node, after_node(command), tty=sys.stdin.isatty())
    try:
        return run_attached(argv)  # the command's own status, as ssh reports it
    except OSError as exc:
        raise TestbedError(f"cannot start {argv[0]}: {exc.strerror}", hint="install openssh-client") from None
