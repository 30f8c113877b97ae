"""The commands that read or act on every node at once: `exec`, `discover`, `check`, `snapshot`."""

from __future__ import annotations

from pathlib import Path

import click

from wirespeed.cli.common import (
    PASS_THROUGH,
    Ctx,
    Seconds,
    cluster_options,
    json_option,
    pass_ctx,
    resolve_remote,
)
from wirespeed.core.errors import ExitStatus, UsageError
from wirespeed.core.outcome import worst_exit_status
from wirespeed.ui import render


@click.command("exec", context_settings=PASS_THROUGH)
@cluster_options
@click.option("--timeout", "timeout_s", type=Seconds(86400), default=60.0, show_default=True, help="Seconds per node.")
@json_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@pass_ctx
def exec_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    timeout_s: float,
    json_mode: bool,
    command: tuple[str, ...],
) -> int:
    """Run COMMAND on every node at once (write `--` before it) and show each node's result."""
    out = ctx.output(json_mode)
    remote = resolve_remote(out, cluster_file, hosts, user)
    results = remote.run_all(list(command), timeout_s=timeout_s)
    if json_mode:
        out.data({"cluster": remote.cluster.name, "results": [r.to_json() for r in results]})
    else:
        out.console.print(render.exec_results(results))
    for result in results:
        if not result.ok:
            out.message(f"wirespeed: {result.message}" + (f" (hint: {result.hint})" if result.hint else ""))
    return worst_exit_status(results)  # the command's own status, as a shell would give it


@click.command("discover")
@cluster_options
@click.option(
    "--snapshot",
    "snapshots",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Read a snapshot (directory or NODE.tar.gz) instead of live nodes; repeatable.",
)
@click.option("--no-probe", is_flag=True, help="Skip the active cabling probe; pair interfaces by subnet.")
@click.option("--format", "fmt", type=click.Choice(["table", "ibdev2netdev"]), default="table", show_default=True)
@json_option
@pass_ctx
def discover_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    snapshots: tuple[Path, ...],
    no_probe: bool,
    fmt: str,
    json_mode: bool,
) -> ExitStatus:
    """What every node has (RDMA devices, halves, ports, GIDs, PCIe, GPUs, tools) and how the cables pair them."""
    from wirespeed.engine import discover
    from wirespeed.ui import discovery as view

    out = ctx.output(json_mode)
    if snapshots:
        if cluster_file or hosts:
            raise UsageError("give --snapshot or live nodes (--cluster/--hosts), not both")
        result = discover.discover_snapshots(list(snapshots), say=lambda line: out.message(f"wirespeed: {line}"))
    else:
        remote = resolve_remote(out, cluster_file, hosts, user)
        result = discover.discover_live(remote, probe=not no_probe)
    if json_mode:
        out.data(result.to_json())
    elif fmt == "ibdev2netdev":
        out.console.print(view.ibdev2netdev(result), end="", markup=False, highlight=False)
    else:
        out.console.print(view.discovery_view(result))
    for reason in result.errors.values():
        out.message(f"wirespeed: {reason}")
    return ExitStatus.NOT_MEASURED if result.errors or not result.facts else ExitStatus.OK


@click.command("check")
@cluster_options
@click.option(
    "--snapshot",
    "snapshots",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Check snapshots (directory or NODE.tar.gz) instead of live nodes; repeatable.",
)
@click.option(
    "--pastes",
    "pastes",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Check pasted outputs instead of nodes (NCCL_DEBUG=INFO logs, dmesg, lspci -vv, ip addr, ethtool, "
    "nvidia-smi topo -m; prompts and several outputs per file are fine); more files may follow as arguments.",
)
@click.argument("more_pastes", nargs=-1, type=click.Path(path_type=Path))
@click.option("--only", default="", help="Comma-separated check ids to run.")
@click.option("--skip", "skip_ids", default="", help="Comma-separated check ids to leave out.")
@click.option("--no-active", is_flag=True, help="No active measurements (cabling probe, MTU pings, ssh mesh).")
@click.option("--insecure", is_flag=True, help="Do not verify the TLS certificate of the cluster file's switch.")
@click.option(
    "--allow-plaintext", is_flag=True, help="With the switch's tls = false, send its password over plain HTTP anyway."
)
@click.option("--junit", type=click.Path(path_type=Path), default=None,
              help="Also write the results as JUnit XML (one test case per check) for CI.")  # fmt: skip
@json_option
@pass_ctx
def check_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    snapshots: tuple[Path, ...],
    pastes: tuple[Path, ...],
    more_pastes: tuple[Path, ...],
    only: str,
    skip_ids: str,
    no_active: bool,
    insecure: bool,
    allow_plaintext: bool,
    junit: Path | None,
    json_mode: bool,
) -> ExitStatus:
    """Every known pitfall, with the evidence seen and the exact fix. Exit 0: nothing fails; 1: something
    fails; 3: a check or a node could not be read."""
    from wirespeed.engine import checks, discover
    from wirespeed.ui.checks import check_report

    out = ctx.output(json_mode)
    ids = checks.select(only.split(","), skip_ids.split(","))
    if more_pastes and not pastes:
        raise UsageError(f"unexpected argument {str(more_pastes[0])!r}", hint="files to read go after --pastes")
    if pastes:
        if junit is not None:
            raise UsageError("--junit is for checks of nodes or snapshots, not of pastes")
        if snapshots or cluster_file or hosts:
            raise UsageError("give --pastes, --snapshot or live nodes (--cluster/--hosts), one of them")
        from wirespeed.cli.pastes import check_pastes

        return check_pastes(ctx, pastes + more_pastes, ids, json_mode)
    if snapshots:
        if cluster_file or hosts:
            raise UsageError("give --snapshot or live nodes (--cluster/--hosts), not both")
        found_offline = discover.discover_snapshots(list(snapshots), say=lambda line: out.message(f"wirespeed: {line}"))
        run = checks.run_checks(found_offline, ids)
    else:
        remote = resolve_remote(out, cluster_file, hosts, user)
        found = discover.discover_live(remote, probe=not no_active)
        active = None if no_active else checks.measure_active(remote, found, ids)
        reading = None
        if cluster_file is not None and set(ids) & set(checks.SWITCH_CHECKS):
            from wirespeed.engine import switch
            from wirespeed.engine.clusters import load_switch

            config = load_switch(cluster_file, remote.cluster)
            if config is not None:
                reading = switch.read_for_checks(
                    config, insecure=insecure, allow_plaintext=allow_plaintext, warn=out.warn
                )
        run = checks.run_checks(found, ids, active, reading, remote.cluster.nccl_env)
    if junit is not None:
        from wirespeed.adapters import files
        from wirespeed.core.junit import checks_junit

        files.write_atomic(junit, checks_junit(run.record()))
    if json_mode:
        out.data(run.to_json())
    else:
        out.console.print(check_report(run))
    return run.exit_status


@click.command("snapshot")
@cluster_options
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    type=click.Path(path_type=Path),
    help="Directory to write one snapshot per node into.",
)
@click.option("--tar", is_flag=True, help="Write NODE.tar.gz files instead of directories.")
@click.option("--no-probe", is_flag=True, help="Do not record the cabling probe.")
@json_option
@pass_ctx
def snapshot_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    output: Path,
    tar: bool,
    no_probe: bool,
    json_mode: bool,
) -> ExitStatus:
    """Capture, per node, exactly what discovery and the checks read, for offline use or to send to a colleague."""
    from wirespeed.engine import discover

    out = ctx.output(json_mode)
    remote = resolve_remote(out, cluster_file, hosts, user)
    written, errors = discover.take_snapshots(remote, output, probe=not no_probe, tar=tar)
    if json_mode:
        out.data({"written": [str(p) for p in written], "errors": errors})
    else:
        for path in written:
            out.console.print(f"wrote {path}", markup=False)
    for reason in errors.values():
        out.message(f"wirespeed: {reason}")
    return ExitStatus.NOT_MEASURED if errors else ExitStatus.OK
