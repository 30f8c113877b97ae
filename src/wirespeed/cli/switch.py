"""`wirespeed switch`: the cluster's RouterOS switch. `plan` prints the RouterOS script for the fabric ports (and,
with --lossless, the QoS recipe and the matching host-side commands) from the cluster file's `[switch]` table.

Registered by wirespeed.cli.app; it takes nothing from that module at import time (that would be a cycle)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from wirespeed.core.errors import UsageError
from wirespeed.core.routeros import FEC_MODES, SPEEDS, HostHalf, PlanOptions, SwitchConfig, plan

if TYPE_CHECKING:
    from wirespeed.cli.app import Ctx

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 120}


@click.group("switch", context_settings=CONTEXT)
def switch_group() -> None:
    """The cluster's switch (MikroTik RouterOS), named in the cluster file's [switch] table."""


def _config(cluster_file: Path | None, ports: tuple[str, ...]) -> tuple[SwitchConfig, tuple[str, ...]]:
    from wirespeed.engine.clusters import load_cluster_file, load_switch

    if cluster_file is None:
        raise UsageError("the switch is named in a cluster file", hint="--cluster FILE with a [switch] table")
    cluster = load_cluster_file(cluster_file)
    config = load_switch(cluster_file, cluster)
    if config is None:
        raise UsageError(
            f"{cluster_file}: no [switch] table",
            hint='[switch] kind = "routeros", address = "...", ports = { NODE = ["qsfp56-dd-1-1"] }',
        )
    given: dict[str, list[str]] = {}
    for item in ports:
        node, sep, port = item.partition("=")
        if not sep or node not in cluster.names or not port:
            raise UsageError(
                f"--port {item!r}: not NODE=PORT with a node of the cluster", hint="--port spark-1=qsfp56-dd-1-1"
            )
        given.setdefault(node, []).append(port)
    if given:
        merged = {**config.ports, **{node: tuple(names) for node, names in given.items()}}
        config = SwitchConfig(**{**config.__dict__, "ports": merged})
    return config, cluster.names


@switch_group.command("plan")
@click.option("--cluster", "cluster_file", type=click.Path(path_type=Path), help="Cluster file with a [switch] table.")
@click.option("--port", "ports", multiple=True, help="NODE=PORT: a node's cable on the switch (overrides the file).")
@click.option("--speed", type=click.Choice(SPEEDS), default="200G-baseCR4", show_default=True)
@click.option("--fec", "fec_mode", type=click.Choice(FEC_MODES), default="fec91", show_default=True)
@click.option("--mtu", "host_mtu", type=int, default=9000, show_default=True, help="The hosts' MTU.")
@click.option("--lossless", is_flag=True, help="Add the RoCE QoS recipe (PFC, ECN; RouterOS 7.23+) and host commands.")
@click.option("--routeros-version", default=None, help="The switch's RouterOS version, for --lossless.")
@click.pass_obj
def plan_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    ports: tuple[str, ...],
    speed: str,
    fec_mode: str,
    host_mtu: int,
    lossless: bool,
    routeros_version: str | None,
) -> None:
    """Print the RouterOS script that makes the fabric ports carry what the hosts send: forced speed (no
    autonegotiation), FEC, L2MTU and MTU, bridge membership; with --lossless the QoS recipe and the hosts' side."""
    out = ctx.output(False)
    config, _ = _config(cluster_file, ports)
    try:
        options = PlanOptions(speed, fec_mode, host_mtu, lossless, routeros_version)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    halves: list[HostHalf] = []
    if lossless:
        from wirespeed.cli.app import resolve_remote
        from wirespeed.engine import discover

        found = discover.discover_live(resolve_remote(out, cluster_file, None, None), probe=False)
        for node in config.ports:
            facts = found.facts.get(node)
            for iface in facts.fabric if facts else ():
                netdev = facts.netdev(iface) if facts else None
                if netdev is not None and netdev.carrier is True:
                    halves.append(HostHalf(node, iface, netdev.rdma_devices[0] if netdev.rdma_devices else None))
    try:
        made = plan(config, options, halves)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    out.env.stdout.write("\n".join(made.script) + "\n")
    if made.host_commands:
        out.env.stdout.write("\n# on the hosts (as root)\n" + "\n".join(made.host_commands) + "\n")
    for note in made.notes:
        out.message(f"wirespeed: {note}")
