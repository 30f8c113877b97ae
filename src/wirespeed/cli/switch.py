"""`wirespeed switch`: the cluster's RouterOS switch, from the cluster file's `[switch]` table. `plan` prints the
RouterOS script for the fabric ports (and, with --lossless, the QoS recipe and the matching host-side commands);
`status` reads every fabric port over the REST API; `apply` shows the diff against the plan and changes it only with
--yes; `verify` re-reads and confirms each port is up at the rate, MTU and FEC the hosts need.

Registered by wirespeed.cli.main; like every command module it takes its shared parts from wirespeed.cli.common."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from wirespeed.cli.common import CONTEXT, Count, Ctx, Seconds, resolve_remote
from wirespeed.cli.output import Output
from wirespeed.core.cluster.routeros import FEC_MODES, SPEEDS, HostHalf, PlanOptions, SwitchConfig, plan
from wirespeed.core.cluster.switchstate import PortProblem, SwitchState, plan_updates, port_problems, wanted_ports
from wirespeed.core.errors import ExitStatus, UsageError
from wirespeed.core.fabric.facts import to_jsonable

HOST_MTU = Count(1280, 9978, "bytes")  # what PlanOptions accepts: the switch's L2MTU tops out at 10218


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
        config = dataclasses.replace(config, ports=merged)
    return config, cluster.names


@switch_group.command("plan")
@click.option("--cluster", "cluster_file", type=click.Path(path_type=Path), help="Cluster file with a [switch] table.")
@click.option("--port", "ports", multiple=True, help="NODE=PORT: a node's cable on the switch (overrides the file).")
@click.option("--speed", type=click.Choice(SPEEDS), default=None, help="Port speed [default: [switch] speed, 200G].")
@click.option("--fec", "fec_mode", type=click.Choice(FEC_MODES), default=None, help="[default: [switch] fec_mode].")
@click.option("--mtu", "host_mtu", type=HOST_MTU, default=9000, show_default=True, help="The hosts' MTU.")
@click.option("--lossless", is_flag=True, help="Add the RoCE QoS recipe (PFC, ECN; RouterOS 7.23+) and host commands.")
@click.option("--routeros-version", default=None, help="The switch's RouterOS version, for --lossless.")
@click.pass_obj
def plan_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    ports: tuple[str, ...],
    speed: str | None,
    fec_mode: str | None,
    host_mtu: int,
    lossless: bool,
    routeros_version: str | None,
) -> None:
    """Print the RouterOS script that makes the fabric ports carry what the hosts send: forced speed (no
    autonegotiation), FEC, L2MTU and MTU, bridge membership; with --lossless the QoS recipe and the hosts' side."""
    out = ctx.output(False)
    config, _ = _config(cluster_file, ports)
    options = _options(config, speed, fec_mode, host_mtu, lossless, routeros_version)
    halves: list[HostHalf] = []
    if lossless:
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


def _options(
    config: SwitchConfig,
    speed: str | None,
    fec_mode: str | None,
    host_mtu: int,
    lossless: bool = False,
    routeros_version: str | None = None,
) -> PlanOptions:
    try:
        return PlanOptions(speed or config.speed, fec_mode or config.fec_mode, host_mtu, lossless, routeros_version)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def switch_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """How to reach the switch: the cluster file, and TLS."""
    func = click.option("--timeout", "timeout_s", type=Seconds(300, low=0.5), default=10.0, show_default=True,
                        help="Seconds per REST call.")(func)  # fmt: skip
    func = click.option("--ca-file", type=click.Path(path_type=Path), default=None,
                        help="The switch's certificate (PEM) to trust [default: [switch] ca_file].")(func)  # fmt: skip
    func = click.option("--insecure", is_flag=True, help="Do not verify the switch's TLS certificate (curl -k).")(func)
    plaintext = "With tls = false, send the password over plain HTTP anyway (refused without it)."
    func = click.option("--allow-plaintext", is_flag=True, help=plaintext)(func)
    func = click.option("--port", "ports", multiple=True, help="NODE=PORT (overrides the file).")(func)
    func = click.option("--cluster", "cluster_file", type=click.Path(path_type=Path), help="Cluster file.")(func)
    return func


def _connect(
    out: Output,
    cluster_file: Path | None,
    ports: tuple[str, ...],
    insecure: bool,
    ca_file: Path | None,
    timeout_s: float,
    allow_plaintext: bool,
) -> tuple[SwitchConfig, Any]:
    from wirespeed.engine import switch

    config, _ = _config(cluster_file, ports)
    if not config.ports:
        raise UsageError(
            f"{cluster_file}: [switch] names no ports", hint='ports = { NODE = ["qsfp56-dd-1-1"] }, or --port NODE=PORT'
        )
    client = switch.connect(
        config,
        insecure=insecure,
        ca_file=str(ca_file) if ca_file else None,
        timeout_s=timeout_s,
        allow_plaintext=allow_plaintext,
        warn=out.warn,
    )
    return config, client


def _state_json(state: SwitchState, config: SwitchConfig) -> dict[str, Any]:
    ports = []
    for node, name in wanted_ports(config):
        port = state.port(name)
        ports.append({"node": node, "port": name, "found": port is not None, **(to_jsonable(port) if port else {})})
    return {"address": state.address, "version": state.version, "board_name": state.board_name, "ports": ports}


def _show_problems(
    ctx: Ctx, json_mode: bool, state: SwitchState, problems: list[PortProblem], extra: Any
) -> ExitStatus:
    from wirespeed.ui.switch import problems_text

    out = ctx.output(json_mode)
    failed = [p for p in problems if p.severity == "fail"]
    if json_mode:
        out.data({**extra, "problems": [to_jsonable(p) for p in problems], "ok": not failed})
    else:
        out.console.print(problems_text(problems), end="")
        ports = len({(p.node, p.port) for p in problems})
        verdict = "verified" if not failed else f"{len(failed)} problem(s)"
        warned = f", {len(problems) - len(failed)} warning(s)" if len(problems) > len(failed) else ""
        out.message(f"wirespeed: switch {state.address}: {verdict}{warned} on {ports} port(s)" if problems else
                    f"wirespeed: switch {state.address}: every fabric port verified")  # fmt: skip
    return ExitStatus.FINDING if failed else ExitStatus.OK


def _links_ready(config: SwitchConfig) -> Callable[[SwitchState], bool]:
    def ready(state: SwitchState) -> bool:
        ports = [state.port(name) for _, name in wanted_ports(config)]
        return all(p is not None and p.link_up for p in ports)

    return ready


@switch_group.command("status")
@switch_options
@click.option("--json", "json_mode", is_flag=True, help="Machine output on stdout.")
@click.pass_obj
def status_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    ports: tuple[str, ...],
    insecure: bool,
    allow_plaintext: bool,
    ca_file: Path | None,
    timeout_s: float,
    json_mode: bool,
) -> None:
    """Each fabric port's link state, rate, speed, autonegotiation, FEC, MTU, L2MTU, bridge and error counters."""
    from wirespeed.engine import switch
    from wirespeed.ui.switch import status_table

    out = ctx.output(json_mode)
    config, client = _connect(out, cluster_file, ports, insecure, ca_file, timeout_s, allow_plaintext)
    state = switch.read_state(client, config)
    if json_mode:
        out.data(_state_json(state, config))
    else:
        out.console.print(status_table(state, config))


@switch_group.command("apply")
@switch_options
@click.option("--speed", type=click.Choice(SPEEDS), default=None, help="Port speed [default: [switch] speed, 200G].")
@click.option("--fec", "fec_mode", type=click.Choice(FEC_MODES), default=None, help="[default: [switch] fec_mode].")
@click.option("--mtu", "host_mtu", type=HOST_MTU, default=9000, show_default=True, help="The hosts' MTU.")
@click.option("--yes", is_flag=True, help="Make the changes (without it, only show the diff).")
@click.option("--wait", "wait_s", type=Seconds(600, zero_ok=True), default=20.0, show_default=True,
              help="Seconds to wait for the links after applying.")  # fmt: skip
@click.option("--json", "json_mode", is_flag=True, help="Machine output on stdout.")
@click.pass_obj
def apply_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    ports: tuple[str, ...],
    insecure: bool,
    allow_plaintext: bool,
    ca_file: Path | None,
    timeout_s: float,
    speed: str | None,
    fec_mode: str | None,
    host_mtu: int,
    yes: bool,
    wait_s: float,
    json_mode: bool,
) -> ExitStatus:
    """Show what differs between the fabric ports and the plan; with --yes change it (L2MTU before MTU, then the
    bridge), wait for the links and verify. Only the fabric ports of the cluster file are touched."""
    from wirespeed.engine import switch
    from wirespeed.ui.switch import diff_table

    out = ctx.output(json_mode)
    config, client = _connect(out, cluster_file, ports, insecure, ca_file, timeout_s, allow_plaintext)
    options = _options(config, speed, fec_mode, host_mtu)
    state = switch.read_state(client, config)
    changes, updates, missing = plan_updates(state, config, options)
    if missing:
        raise UsageError(
            f"switch {state.address} has no port {', '.join(missing)}", hint="`wirespeed switch status` lists them"
        )
    diff = {"changes": [to_jsonable(c) for c in changes]}
    if not json_mode:
        if changes:
            out.console.print(diff_table(changes))
        out.message(f"wirespeed: switch {state.address}: {len(changes)} change(s) on {len(updates)} port(s)")
    if not changes:
        if json_mode:
            out.data({**diff, "applied": []})
        return ExitStatus.OK
    if not yes:
        if json_mode:
            out.data({**diff, "applied": None})
        else:
            out.message("wirespeed: nothing changed; run again with --yes to apply")
        return ExitStatus.OK
    applied = switch.apply_updates(client, updates, None if json_mode else lambda s: out.message(f"wirespeed: set {s}"))
    after = switch.wait_for_links(client, config, wait_s, _links_ready(config))
    problems = port_problems(after, config, host_mtu, options.speed)
    return _show_problems(ctx, json_mode, after, problems, {**diff, "applied": applied})


@switch_group.command("verify")
@switch_options
@click.option("--mtu", "host_mtu", type=HOST_MTU, default=9000, show_default=True, help="The hosts' MTU.")
@click.option("--wait", "wait_s", type=Seconds(600, zero_ok=True), default=0.0, show_default=True,
              help="Seconds to wait for every fabric link to come up.")  # fmt: skip
@click.option("--json", "json_mode", is_flag=True, help="Machine output on stdout.")
@click.pass_obj
def verify_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    ports: tuple[str, ...],
    insecure: bool,
    allow_plaintext: bool,
    ca_file: Path | None,
    timeout_s: float,
    host_mtu: int,
    wait_s: float,
    json_mode: bool,
) -> ExitStatus:
    """Re-read the fabric ports and confirm: link up at [switch] speed, L2MTU >= host MTU + 22, MTU >= host MTU,
    FEC as planned, error counters at zero. Exit 0: verified; 1: a port falls short."""
    from wirespeed.engine import switch

    out = ctx.output(json_mode)
    config, client = _connect(out, cluster_file, ports, insecure, ca_file, timeout_s, allow_plaintext)
    state = switch.wait_for_links(client, config, wait_s, _links_ready(config))
    return _show_problems(
        ctx, json_mode, state, port_problems(state, config, host_mtu), {"switch": _state_json(state, config)}
    )
