"""The command line: parse arguments, call the engine, render. Errors become one line and an exit status."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from wirespeed import __version__
from wirespeed.adapters.slurm import SrunTransport
from wirespeed.cli.importing import import_cmd
from wirespeed.cli.init import init_cmd
from wirespeed.cli.output import Environment, Output
from wirespeed.cli.switch import switch_group
from wirespeed.core.errors import UsageError, WirespeedError
from wirespeed.core.outcome import worst_exit_status
from wirespeed.core.slurm import Launcher
from wirespeed.core.units import parse_rate_bps
from wirespeed.engine.clusters import resolve_cluster
from wirespeed.engine.remote import Remote, check_agents
from wirespeed.ui import render

TCP_RUNG_NAMES = ("tcp-single", "tcp-multi", "tcp-halves")

if TYPE_CHECKING:
    from wirespeed.core.fixplan import Operation

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 120}


class Ctx:
    """Per-invocation state handed to every command."""

    def __init__(self, env: Environment, debug: bool) -> None:
        self.env = env
        self.debug = debug

    def output(self, json_mode: bool) -> Output:
        return Output(self.env, json_mode)


pass_ctx = click.make_pass_decorator(Ctx)


def json_option(func: Any) -> Any:
    return click.option("--json", "json_mode", is_flag=True, help="Machine output on stdout; messages on stderr.")(func)


LAUNCHER_META = "wirespeed.launcher"


def _remember_launcher(ctx: click.Context, _: click.Parameter, value: str) -> None:
    ctx.meta[LAUNCHER_META] = Launcher(value)


def cluster_options(func: Any) -> Any:
    func = click.option(
        "--launcher",
        type=click.Choice([item.value for item in Launcher]),
        default=Launcher.AUTO.value,
        show_default=True,
        envvar="WIRESPEED_LAUNCHER",
        expose_value=False,
        callback=_remember_launcher,
        help="How processes start on the nodes: srun inside a Slurm allocation that holds them (auto), or ssh.",
    )(func)
    func = click.option("--user", "-l", help="User for --hosts entries without user@.")(func)
    func = click.option("--hosts", help="Comma-separated hosts (user@host:port allowed) instead of a cluster file.")(
        func
    )
    func = click.option(
        "--cluster",
        "cluster_file",
        type=click.Path(path_type=Path),
        help="Cluster file (TOML) naming the nodes.",
    )(func)
    return func


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "--version", "-V", prog_name="wirespeed", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """wirespeed: commission and measure a GPU cluster's interconnect (TCP, RDMA, NCCL) at the wire."""
    if ctx.obj is None:
        ctx.obj = Ctx(Environment(), debug)
    else:
        ctx.obj.debug = ctx.obj.debug or debug


def resolve_remote(out: Output, cluster_file: Path | None, hosts: str | None, user: str | None) -> Remote:
    """The nodes a command acts on; an implicit choice (testbed, localhost) is said on stderr."""
    launcher = click.get_current_context().meta.get(LAUNCHER_META, Launcher.AUTO)
    resolved = resolve_cluster(cluster_file, hosts, user, launcher)
    if resolved.note:
        out.message(f"wirespeed: {resolved.note}")
    if resolved.slurm is not None:
        transport = SrunTransport(resolved.slurm.job_id, resolved.slurm.slurm_names)
        return Remote(resolved.cluster, transport_factory=lambda node: transport)
    return Remote(resolved.cluster)


# ---------------------------------------------------------------------------------------------------------- exec
@cli.command("exec", context_settings={**CONTEXT, "ignore_unknown_options": True})
@cluster_options
@click.option("--timeout", "timeout_s", type=float, default=60.0, show_default=True, help="Seconds per node.")
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
) -> None:
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
    raise SystemExit(worst_exit_status(results))


# --------------------------------------------------------------------------------------------------------- agent
@cli.group("agent", context_settings=CONTEXT)
def agent() -> None:
    """What runs on the nodes on the controller's behalf."""


@agent.command("check")
@cluster_options
@json_option
@pass_ctx
def agent_check(ctx: Ctx, cluster_file: Path | None, hosts: str | None, user: str | None, json_mode: bool) -> None:
    """Check that every node has wirespeed at this version (later commands run `wirespeed agent ...` there)."""
    out = ctx.output(json_mode)
    remote = resolve_remote(out, cluster_file, hosts, user)
    checks = check_agents(remote)
    if json_mode:
        out.data([{"node": c.node, "ok": c.ok, "version": c.version, "message": c.message} for c in checks])
    else:
        for check in checks:
            out.console.print(("ok    " if check.ok else "FAIL  ") + check.message, markup=False)
    raise SystemExit(0 if all(c.ok for c in checks) else 1)


@agent.command("facts")
@click.option("--node", required=True, help="The name the controller knows this node by.")
@pass_ctx
def agent_facts(ctx: Ctx, node: str) -> None:
    """Print this node's facts as JSON (what `discover` reads on every node)."""
    from wirespeed.adapters.source import LiveSource
    from wirespeed.engine.collect import collect

    ctx.output(True).data(collect(LiveSource(), node).to_json())


@agent.command("probe")
@click.option("--node", required=True)
@click.option("--ifaces", required=True, help="Comma-separated fabric interfaces.")
@click.option("--duration", type=float, default=2.0, show_default=True)
@click.option("--token", required=True, help="Identifies this probe run; other runs' frames are ignored.")
@pass_ctx
def agent_probe(ctx: Ctx, node: str, ifaces: str, duration: float, token: str) -> None:
    """Beacon and listen on the fabric interfaces; print what was heard as JSON (needs root)."""
    from wirespeed.adapters import l2probe

    if not l2probe.can_probe():
        raise UsageError("the cabling probe needs root (raw L2 frames)", hint="run discover with sudo, or --no-probe")
    result = l2probe.probe(node, [i for i in ifaces.split(",") if i], token, duration)
    ctx.output(True).data(result.to_json())


@agent.command("sample")
@click.option("--node", required=True, help="The name the controller knows this node by.")
@click.option("--ifaces", required=True, help="Comma-separated interfaces to read.")
@click.option("--interval", type=float, default=0.5, show_default=True, help="Seconds between samples.")
@click.option("--count", type=int, default=0, help="Stop after this many samples (0: until stdin closes).")
def agent_sample(node: str, ifaces: str, interval: float, count: int) -> None:
    """Stream this node's NIC counters and per-core CPU as JSON lines until stdin closes (used by `watch`)."""
    from wirespeed.engine.sampling import stream_samples

    if interval <= 0:
        raise UsageError(f"--interval {interval}: must be above 0", hint="for example --interval 0.5")
    stream_samples(node, [i for i in ifaces.split(",") if i], interval, count)


@agent.command("snapshot")
@click.option("--node", required=True)
@pass_ctx
def agent_snapshot(ctx: Ctx, node: str) -> None:
    """Record this node's snapshot and print it as base64 tar.gz in JSON (used by `wirespeed snapshot`)."""
    import base64
    import datetime
    import io
    import tarfile
    import tempfile

    from wirespeed.adapters.source import LiveSource, RecordingSource
    from wirespeed.engine.collect import collect

    with tempfile.TemporaryDirectory(prefix="wirespeed-agent-") as work:
        root = Path(work) / node
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        facts = collect(RecordingSource(LiveSource(), root, node, stamp, __version__), node)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            archive.add(root, arcname=node)
    ctx.output(True).data(
        {"node": node, "facts": facts.to_json(), "tar_gz_b64": base64.b64encode(buffer.getvalue()).decode()}
    )


@agent.command("apply")
@click.option("--token", required=True)
@click.option("--ops", "ops_json", required=True, help="JSON list of operations.")
@click.option("--rollback-after", type=float, default=20.0, show_default=True)
@pass_ctx
def agent_apply(ctx: Ctx, token: str, ops_json: str, rollback_after: float) -> None:
    """Apply operations here; network ones are rolled back by a timer unless `agent confirm` comes in time."""
    import json

    from wirespeed.core.fixplan import operation_from_json
    from wirespeed.engine import apply

    try:
        ops = [operation_from_json(item) for item in json.loads(ops_json)]
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--ops: not a list of operations ({exc})") from None
    done = apply.apply_all(ops)
    timer = None
    if rollback_after > 0 and any(op.network for op in ops):
        restore = apply.undo_ops(done)
        if restore:
            timer = apply.start_rollback_timer(token, rollback_after, restore)
    ctx.output(True).data({"applied": done, "timer": timer})


@agent.command("confirm")
@click.option("--token", required=True)
def agent_confirm(token: str) -> None:
    """Tell a pending rollback timer that the controller still reaches this node."""
    from wirespeed.engine import apply

    try:
        apply.confirm(token)
    except apply.TooLate:
        raise WirespeedError("too late: the rollback timer already restored the previous values") from None


@agent.command("rollback-timer", hidden=True)
@click.option("--token", required=True)
@click.option("--after", type=float, required=True)
@click.option("--restore", "restore_json", required=True)
def agent_rollback_timer(token: str, after: float, restore_json: str) -> None:
    """Restore the previous values after --after seconds unless confirmed (started by `agent apply`)."""
    import json

    from wirespeed.core.fixplan import operation_from_json
    from wirespeed.engine import apply

    apply.rollback_timer(token, after, [operation_from_json(item) for item in json.loads(restore_json)])


def _fix_plan(
    out: Output, remote: Remote
) -> tuple[dict[str, list[Operation]], dict[str, dict[str, str]], dict[str, list[str]]]:
    """Discover (with the link probe: the address plan needs the cabling), check, and plan per node."""
    from wirespeed.core.checks.model import CheckInput
    from wirespeed.core.fixplan import plan_nodes
    from wirespeed.engine import checks as checking
    from wirespeed.engine import discover

    found = discover.discover_live(remote, probe=True)
    for reason in found.errors.values():
        out.message(f"wirespeed: {reason}")
    run = checking.run_checks(found, checking.select([], []))
    for error in run.errors:
        if not error.startswith(tuple(found.errors.values())):
            out.message(f"wirespeed: {error}")
    nodes = plan_nodes(CheckInput(found.facts, found.cabling), run.results)
    plan = {node: p.operations for node, p in nodes.items() if p.operations}
    current = {node: facts.config_files for node, facts in found.facts.items()}
    return plan, current, {node: p.notes for node, p in nodes.items() if p.notes}


def _show_fix_plan(
    out: Output, plan: dict[str, list[Operation]], current: dict[str, dict[str, str]], notes: dict[str, list[str]]
) -> None:
    """Files as a diff against what the node has, then the changes made now, then what is left out."""
    from wirespeed.core.fixplan import file_diff

    if not plan and not notes:
        out.console.print("nothing to change", markup=False)
    for node in sorted(set(plan) | set(notes)):
        out.console.print(f"{node}:", markup=False)
        for op in plan.get(node, []):
            if op.kind == "file":
                out.console.print(f"  write {op.target}   [{op.reason}]", markup=False)
                for line in file_diff(op.target, current.get(node, {}).get(op.target), op.value):
                    style = "green" if line.startswith("+") else ("red" if line.startswith("-") else None)
                    out.console.print(f"    {line}", style=style, markup=False, highlight=False)
            elif op.kind == "unlink":
                out.console.print(f"  remove {op.target}   [{op.reason}]", markup=False)
            else:
                net = "  (network: rolled back unless confirmed)" if op.network else ""
                value = op.value or "(none)"
                out.console.print(f"  {op.kind} {op.target} -> {value}   [{op.reason}]{net}", markup=False)
        for note in notes.get(node, []):
            out.console.print(f"  note: {note}", markup=False)


@cli.command("fix")
@cluster_options
@click.option("--yes", is_flag=True, help="Apply the plan (without it, only show it).")
@click.option("--revert", is_flag=True, help="Restore what the last `fix --yes` replaced.")
@click.option(
    "--record",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the replaced values are kept (default ~/.local/state/wirespeed/last-fix.json).",
)
@click.option(
    "--rollback-after",
    type=float,
    default=20.0,
    show_default=True,
    help="Seconds a node waits for confirmation before undoing a network change by itself.",
)
@json_option
@pass_ctx
def fix_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    yes: bool,
    revert: bool,
    record: Path | None,
    rollback_after: float,
    json_mode: bool,
) -> None:
    """Turn what the checks found into changes per node (sysctls, fabric MTU, IPv6, halves left down); apply them
    with --yes, keep the old values, and undo them with --revert."""
    from wirespeed.engine import fix as fixing

    out = ctx.output(json_mode)
    record_path = record or fixing.default_record()
    remote = resolve_remote(out, cluster_file, hosts, user)
    if revert:
        plan = fixing.revert_plan(record_path)
        current: dict[str, dict[str, str]] = {}
        notes: dict[str, list[str]] = {}
    else:
        plan, current, notes = _fix_plan(out, remote)
    shown = {node: [op.to_json() for op in ops] for node, ops in plan.items()}
    if not json_mode:
        _show_fix_plan(out, plan, current, notes)
    if not yes:
        if json_mode:
            out.data({"plan": shown, "notes": notes, "applied": False})
        elif plan:
            out.message("wirespeed: nothing applied; run again with --yes to apply")
        return
    outcomes = fixing.apply_plan(remote, plan, rollback_s=rollback_after)
    if not revert:
        fixing.write_record(record_path, outcomes)
    failed = False
    for outcome in outcomes:
        if outcome.error:
            failed = True
            out.message(f"wirespeed: {outcome.error}")
        for entry in outcome.applied:
            if not entry["ok"]:
                failed = True
                out.message(f"wirespeed: {outcome.node}: {entry['op']['target']}: {entry['error']}")
        if outcome.rolled_back:
            failed = True
            out.message(f"wirespeed: {outcome.node}: not reachable after the change: it restored the old values itself")
    if json_mode:
        out.data(
            {
                "plan": shown,
                "applied": True,
                "record": str(record_path),
                "nodes": {
                    o.node: {
                        "applied": o.applied,
                        "error": o.error,
                        "confirmed": o.confirmed,
                        "rolled_back": o.rolled_back,
                    }
                    for o in outcomes
                },
            }
        )
    elif not revert:
        out.message(f"wirespeed: the replaced values are in {record_path}; `wirespeed fix --revert` restores them")
    raise SystemExit(1 if failed else 0)


# --------------------------------------------------------------------------------------------------------- bench
@cli.command("bench")
@cluster_options
@click.argument(
    "what", type=click.Choice(["ladder", "tcp", "rdma", "nccl", "matrix", *TCP_RUNG_NAMES]), default="ladder"
)
@click.option("--seconds", type=click.IntRange(2, 3600), default=5, show_default=True, help="Seconds per TCP rung.")
@click.option("--streams", type=click.IntRange(2, 128), default=16, show_default=True, help="Streams of tcp-multi.")
@click.option("--bidir", is_flag=True, help="Both directions at once (iperf3 --bidir): full duplex.")
@click.option("--interval", type=click.FloatRange(0.1, 10), default=0.5, show_default=True,
              help="Seconds between counter samples at the wire.")  # fmt: skip
@click.option(
    "--collectives", default="sendrecv,all_gather,all_reduce", show_default=True,
    help="nccl-tests collectives of the nccl rung, comma-separated.",
)  # fmt: skip
@click.option("--min-size", default="1M", show_default=True, help="Smallest NCCL message (nccl-tests -b).")
@click.option("--max-size", default="1G", show_default=True, help="Largest NCCL message (-e); capped by free memory.")
@click.option("--iters", type=click.IntRange(1, 10000), default=20, show_default=True, help="nccl-tests -n.")
@click.option(
    "--env", "env", multiple=True, metavar="NAME[=VALUE]",
    help="An environment variable for every rank (mpirun -x); wins over what wirespeed derives. Repeatable.",
)  # fmt: skip
@click.option("--nccl-timeout", type=click.IntRange(10, 86400), default=900, show_default=True, help="Seconds.")
@click.option(
    "--runs", "runs_dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
    help="Where run directories are written.",
)  # fmt: skip
@json_option
@pass_ctx
def bench_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    what: str,
    seconds: int,
    streams: int,
    bidir: bool,
    interval: float,
    collectives: str,
    min_size: str,
    max_size: str,
    iters: int,
    env: tuple[str, ...],
    nccl_timeout: int,
    runs_dir: Path,
    json_mode: bool,
) -> None:
    """Climb the bandwidth ladder: TCP (one stream, many streams, every half at once), RDMA, and NCCL through
    nccl-tests and mpirun, each measured at the wire while it runs, with the ceiling it hit and the evidence.
    Results go to RUNS/<timestamp>/ as they come; a rung that cannot run says why and how to fix it.

    `bench matrix` measures every pair of nodes instead: round-robin rounds of disjoint pairs at once (N-1 rounds
    for N nodes), both directions at once on every half, TCP and (where present) RDMA; outliers are flagged."""
    from wirespeed.core.ladder import RungResult, takeaway
    from wirespeed.core.nccl import NcclOptions
    from wirespeed.core.rdma import RdmaOptions
    from wirespeed.core.units import parse_size_bytes
    from wirespeed.engine import bench, discover, nccl, rdma
    from wirespeed.engine import checks as check_engine

    out = ctx.output(json_mode)
    chosen = [c.strip() for c in collectives.split(",") if c.strip()]
    bad = [c for c in chosen if not re.fullmatch(r"[a-z_]+", c)]
    if bad or not chosen:
        raise UsageError(f"--collectives {collectives!r}: not collective names", hint="e.g. sendrecv,all_reduce")
    low, high = parse_size_bytes(min_size), parse_size_bytes(max_size)
    if low > high:
        raise UsageError(
            f"--min-size {min_size} is above --max-size {max_size}", hint="e.g. --min-size 1M --max-size 1G"
        )
    env_pairs: list[tuple[str, str | None]] = []
    for item in env:
        name, sep, value = item.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise UsageError(f"--env {item!r}: not NAME=VALUE or NAME", hint="e.g. --env NCCL_IB_DISABLE=1")
        env_pairs.append((name, value if sep else None))
    nccl_options = NcclOptions(tuple(chosen), low, high, iters, env=tuple(env_pairs), timeout_s=float(nccl_timeout))
    remote = resolve_remote(out, cluster_file, hosts, user)
    tcp_rungs = list(bench.TCP_RUNGS) if what in ("tcp", "ladder") else [what] if what in bench.TCP_RUNGS else []
    options = bench.BenchOptions(seconds=seconds, interval=interval, streams=streams, bidir=bidir)
    found = discover.discover_live(remote, probe=what != "nccl")
    for reason in found.errors.values():
        out.message(f"wirespeed: {reason}")
    try:
        run_dir = bench.RunDirectory(runs_dir)
    except OSError as exc:
        raise WirespeedError(f"{runs_dir}: cannot write the run directory: {exc.strerror or exc}") from None
    run_dir.write_json("discovery.json", found.to_json())
    # The checks as this discovery saw them (passive: the active ones ping and ssh, `wirespeed check` runs those),
    # so the run's report shows what the cluster looked like when it was measured.
    recorded = check_engine.run_checks(found, check_engine.select([], [])).to_json()
    run_dir.write_json("checks.json", {**recorded, "active": False})
    results: list[RungResult] = []

    def keep(result: RungResult) -> None:
        run_dir.write_json(f"{result.rung}.json", result.to_json())
        results.append(result)
        if not json_mode and result.status != "ran":
            out.message(f"wirespeed: {result.rung} {result.status}: {result.reason}")

    if what == "matrix":
        _bench_matrix(out, remote, found, replace(options, bidir=True), run_dir, json_mode)
    with remote.owned():
        try:
            defaults = bench.defaults_evidence(found) if tcp_rungs else []
            for rung in tcp_rungs:
                out.message(f"wirespeed: {rung} ...")
                keep(bench.run_tcp(remote, found, rung, options, run_dir, defaults))
            if what in ("rdma", "ladder"):
                rdma_options = RdmaOptions(seconds=seconds, bidir=bidir)
                out.message("wirespeed: rdma-bw ...")
                keep(rdma.run_rdma_bw(remote, found, rdma_options, run_dir))
                out.message("wirespeed: rdma-lat ...")
                keep(rdma.run_rdma_lat(remote, found, rdma_options, run_dir))
            if what in ("nccl", "ladder"):
                for collective in chosen:
                    out.message(f"wirespeed: {nccl.rung_name(collective)} ...")
                    keep(nccl.run_collective(remote, found, collective, nccl_options, run_dir))
        except KeyboardInterrupt:
            out.message(f"wirespeed: interrupted; what was measured is in {run_dir.path}")
    table = takeaway(results)
    run_dir.write_json("takeaway.json", table)
    if json_mode:
        out.data({"run": str(run_dir.path), "rungs": [r.to_json() for r in results], "takeaway": table})
    else:
        out.console.print(render.takeaway_table(table))
        for r in results:
            if r.ceiling and len(r.ceiling.evidence) > 1:
                for line in r.ceiling.evidence[1:]:
                    out.message(f"  {r.rung}: {line}")
        out.message(f"wirespeed: results in {run_dir.path}")
    raise SystemExit(1 if any(r.status == "failed" for r in results) else 0)


def _bench_matrix(out: Any, remote: Remote, found: Any, options: Any, run_dir: Any, json_mode: bool) -> None:
    """`bench matrix`: TCP then RDMA over every pair; exit 1 when a cell failed or an outlier was flagged."""
    from wirespeed.core.matrix import MatrixCell
    from wirespeed.engine.matrix import run_matrix
    from wirespeed.ui.matrix import matrix_view

    def said(layer: str) -> Any:
        def on_round(number: int, total: int, cells: list[MatrixCell]) -> None:
            shown = ", ".join(f"{c.source}->{c.target} {c.tool_gbps:.2f}" if c.tool_gbps is not None
                              else f"{c.source}->{c.target} failed" for c in cells)  # fmt: skip
            out.message(f"wirespeed: matrix {layer} round {number}/{total}: {shown}")

        return on_round

    results = []
    with remote.owned():
        try:
            for layer in ("tcp", "rdma"):
                out.message(f"wirespeed: matrix {layer} ...")
                results.append(run_matrix(remote, found, layer, options, run_dir, on_round=said(layer)))
        except KeyboardInterrupt:
            out.message(f"wirespeed: interrupted; the rounds measured are in {run_dir.path}")
    if json_mode:
        out.data({"run": str(run_dir.path), "matrices": [m.to_json() for m in results]})
    else:
        for matrix in results:
            out.console.print(matrix_view(matrix))
        out.message(f"wirespeed: results in {run_dir.path}")
    bad = any(m.status == "failed" or any(o.kind in ("cell", "half") for o in m.outliers) for m in results)
    raise SystemExit(1 if bad else 0)


# ---------------------------------------------------------------------------------------- runs, compare, baseline
RUNS_OPTION = click.option(
    "--runs", "runs_dir", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
    help="Where run directories are.",
)  # fmt: skip


def _headline(rung: dict[str, Any]) -> dict[str, Any]:
    ceiling = rung.get("ceiling")
    return {
        "status": rung.get("status"),
        "forward_gbps": rung.get("forward_gbps"),
        "ceiling": ceiling.get("name") if isinstance(ceiling, dict) else None,
    }


@cli.command("runs")
@RUNS_OPTION
@json_option
@pass_ctx
def runs_cmd(ctx: Ctx, runs_dir: Path, json_mode: bool) -> None:
    """The runs `wirespeed bench` left, oldest first: date, nodes, and each rung's headline and ceiling."""
    from rich.table import Table

    from wirespeed.engine.runs import BASELINE, list_runs

    out = ctx.output(json_mode)
    found = list_runs(runs_dir)
    marker = runs_dir / BASELINE
    base = marker.read_text().strip() if marker.exists() else None
    rows = [
        {
            "run": info.path.name,
            "baseline": info.path.name == base,
            "nodes": list(info.nodes),
            "rungs": {name: _headline(r) for name, r in info.rungs.items()},
        }
        for info in found
    ]
    if json_mode:
        out.data(rows)
        return
    if not rows:
        out.message(f"wirespeed: no runs in {runs_dir} (wirespeed bench writes them)")
        return
    table = Table("run", "nodes", "headline")
    for info in found:
        parts = []
        for name, rung in info.rungs.items():
            head = _headline(rung)
            value = head["forward_gbps"]
            parts.append(
                f"{name} {value:.2f} Gb/s ({head['ceiling']})" if value is not None else f"{name} {head['status']}"
            )
        mark = " (baseline)" if info.path.name == base else ""
        table.add_row(info.path.name + mark, ", ".join(info.nodes), "; ".join(parts))
    out.console.print(table)


@cli.group("baseline", context_settings=CONTEXT)
def baseline_group() -> None:
    """The run `compare` measures against by default."""


@baseline_group.command("set")
@click.argument("run", type=click.Path(path_type=Path))
@RUNS_OPTION
@pass_ctx
def baseline_set(ctx: Ctx, run: Path, runs_dir: Path) -> None:
    """Mark RUN as the baseline."""
    from wirespeed.engine.runs import set_baseline

    marker = set_baseline(runs_dir, run if run.exists() else runs_dir / run)
    ctx.output(False).message(f"wirespeed: baseline is {marker.read_text().strip()} ({marker})")


@cli.command("compare")
@click.argument("runs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--threshold", type=click.FloatRange(0, 100), default=5.0, show_default=True,
              help="Percent a figure may drop before it counts as worse.")  # fmt: skip
@RUNS_OPTION
@json_option
@pass_ctx
def compare_cmd(ctx: Ctx, runs: tuple[Path, ...], threshold: float, runs_dir: Path, json_mode: bool) -> None:
    """What changed between two runs (RUN_A RUN_B, or the baseline and RUN_B), per rung and per message size.
    Exit status 1 when a figure dropped by more than the threshold or a rung that ran no longer does."""
    from rich.table import Table

    from wirespeed.core.compare import compare_runs, regressions
    from wirespeed.engine.runs import baseline, load_run

    if len(runs) not in (1, 2):
        raise UsageError("compare takes RUN_A RUN_B, or RUN_B alone to compare with the baseline",
                         hint="wirespeed runs lists them")  # fmt: skip
    out = ctx.output(json_mode)
    first, second = (baseline(runs_dir), runs[0]) if len(runs) == 1 else runs
    before, after = load_run(first), load_run(second)
    changes = compare_runs(before.rungs, after.rungs)
    worse = regressions(changes, threshold)
    if json_mode:
        out.data({
            "before": str(before.path), "after": str(after.path), "threshold_percent": threshold,
            "changes": [{"rung": c.rung, "measure": c.measure, "before": c.before, "after": c.after,
                         "change_percent": c.percent, "status_before": c.status_before,
                         "status_after": c.status_after, "worse": c in worse} for c in changes],
        })  # fmt: skip
    else:
        table = Table("rung", "measure", before.path.name, after.path.name, "change", title=f"worse: > {threshold:g}%")
        for c in changes:
            shown = "-" if c.percent is None else f"{c.percent:+.1f}%"
            if c.status_before != c.status_after:
                shown += f" ({c.status_before} -> {c.status_after})"
            style = "red" if c in worse else None
            table.add_row(c.rung, c.measure, "-" if c.before is None else f"{c.before:.3f}",
                          "-" if c.after is None else f"{c.after:.3f}", shown, style=style)  # fmt: skip
        out.console.print(table)
        out.message(f"wirespeed: {len(worse)} figure(s) worse by more than {threshold:g}%")
    raise SystemExit(1 if worse else 0)


@cli.command("report")
@click.argument("run", required=False, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["html", "md", "json"]), default="html", show_default=True)
@click.option("-o", "--output", "output", type=click.Path(path_type=Path), default=None,
              help="File to write ('-': stdout). Default: RUN/report.html, or stdout for md and json.")  # fmt: skip
@RUNS_OPTION
@pass_ctx
def report_cmd(ctx: Ctx, run: Path | None, fmt: str, output: Path | None, runs_dir: Path) -> None:
    """The report of one run (default: the newest under --runs): the takeaway first, every rung with its ceiling
    and evidence, plots of the wire and the CPUs over time, NCCL busbw against message size, each half's
    bandwidth, the checks, discovery and cabling, the environment. HTML is one self-contained file."""
    from wirespeed.engine.report import load_report
    from wirespeed.engine.runs import list_runs
    from wirespeed.ui import report as view

    out = ctx.output(False)
    if run is None:
        found = list_runs(runs_dir)
        if not found:
            raise UsageError(f"no runs in {runs_dir}", hint="wirespeed bench, or give a run directory")
        run = found[-1].path
    elif not run.exists() and (runs_dir / run).is_dir():
        run = runs_dir / run
    report = load_report(run)
    if fmt == "json":
        text = json.dumps(report.to_json(), indent=2) + "\n"
    else:
        text = view.html(report) if fmt == "html" else view.markdown(report)
    target = output if output is not None else (run / "report.html" if fmt == "html" else Path("-"))
    if str(target) == "-":
        out.env.stdout.write(text)
        out.env.stdout.flush()
        return
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise WirespeedError(f"{target}: cannot write the report: {exc.strerror or exc}",
                             hint="-o FILE somewhere writable") from None  # fmt: skip
    out.message(f"wirespeed: report of {run.name} in {target}")


# --------------------------------------------------------------------------------------------------------- watch
@cli.command("watch", context_settings={**CONTEXT, "ignore_unknown_options": True})
@cluster_options
@click.option("--interval", type=float, default=0.5, show_default=True, help="Seconds between samples.")
@click.option("--duration", "duration_s", type=float, default=None, help="Stop after this many seconds.")
@click.option("--once", is_flag=True, help="One interval on every node, then stop (with --json: for scripts).")
@click.option("--record", type=click.Path(path_type=Path), default=None, help="Append every sample as JSON lines.")
@click.option("--run", "run_flag", is_flag=True, help="Run the command after `--` alongside; stop when it ends.")
@json_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@pass_ctx
def watch_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    interval: float,
    duration_s: float | None,
    once: bool,
    record: Path | None,
    run_flag: bool,
    json_mode: bool,
    command: tuple[str, ...],
) -> None:
    """Live TX/RX per node and cable at the wire (NIC PHY counters: RDMA included), per-core CPU, error counters.
    Ctrl-C stops; the peaks are printed at the end."""
    import contextlib

    from rich.live import Live

    from wirespeed.core.meter import layout_from_facts
    from wirespeed.engine import discover
    from wirespeed.engine.watch import open_record, watch
    from wirespeed.ui.watch import dashboard, peak_lines

    out = ctx.output(json_mode)
    if interval <= 0 or interval > 60:
        raise UsageError(f"--interval {interval}: must be above 0 and at most 60 seconds", hint="e.g. --interval 0.5")
    if command and not run_flag:
        raise UsageError(f"unexpected argument {command[0]!r}", hint="to run a command alongside: --run -- CMD ...")
    if run_flag and not command:
        raise UsageError("--run needs a command after `--`", hint="wirespeed watch --run -- all_reduce_perf -b 1G")
    remote = resolve_remote(out, cluster_file, hosts, user)
    found = discover.discover_live(remote, probe=False)
    for reason in found.errors.values():
        out.message(f"wirespeed: {reason}")
    layouts = [layout_from_facts(found.facts[node]) for node in sorted(found.facts)]
    header = f"wirespeed watch  {len(layouts)} node(s)  every {interval:g} s  Gb/s per direction  Ctrl-C stops"
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(open_record(record)) if record else None
        if json_mode or (not out.console.is_terminal and not run_flag and (once or duration_s)):
            result = watch(
                remote, layouts, lambda *_: None, interval=interval, duration_s=duration_s,
                intervals=1 if once else None, record=sink, run_argv=command or None,
            )  # fmt: skip
        else:
            live = stack.enter_context(
                Live(console=out.console, auto_refresh=False, transient=False, redirect_stdout=False)
            )

            def show(views: Any, waiting: list[str], tail: list[str]) -> None:
                live.update(dashboard(views, waiting, header, out.console.width, tail), refresh=True)

            result = watch(
                remote, layouts, show, interval=interval, duration_s=duration_s,
                intervals=1 if once else None, record=sink, run_argv=command or None,
            )  # fmt: skip
            show(result.views, [], result.run_tail)  # the final frame, with the command's last output
        if not json_mode:
            out.console.print()
    for node, reason in sorted(result.ended.items()):
        out.message(f"wirespeed: {node}: {reason}")
    if json_mode:
        out.data(
            {
                "interval_s": interval,
                "intervals": result.intervals,
                "samples": result.samples,
                "nodes": {node: view.to_json() for node, view in sorted(result.views.items())},
                "ended": result.ended,
                "run_returncode": result.run_returncode,
                "run_tail": result.run_tail,
                "record": str(record) if record else None,
            }
        )
    else:
        for line in peak_lines(result.views):
            out.console.print(line, markup=False, highlight=False)
    if result.run_returncode:
        out.message(f"wirespeed: {command[0]} exited with status {result.run_returncode}")
    failed = (bool(result.ended) and not result.interrupted) or (result.run_returncode or 0) != 0
    raise SystemExit(1 if failed else 0)


# ------------------------------------------------------------------------------------------------------ discover
@cli.command("discover")
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
) -> None:
    """What every node has (RDMA devices, halves, ports, GIDs, PCIe, GPUs, tools) and how the cables pair them."""
    from wirespeed.engine import discover
    from wirespeed.ui import discovery as view

    out = ctx.output(json_mode)
    if snapshots:
        if cluster_file or hosts:
            raise UsageError("give --snapshot or live nodes (--cluster/--hosts), not both")
        result = discover.discover_snapshots(list(snapshots))
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
    raise SystemExit(1 if result.errors or not result.facts else 0)


@cli.command("check")
@cluster_options
@click.option(
    "--snapshot",
    "snapshots",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Check snapshots (directory or NODE.tar.gz) instead of live nodes; repeatable.",
)
@click.option("--only", default="", help="Comma-separated check ids to run.")
@click.option("--skip", "skip_ids", default="", help="Comma-separated check ids to leave out.")
@click.option("--no-active", is_flag=True, help="No active measurements (cabling probe, MTU pings, ssh mesh).")
@click.option("--insecure", is_flag=True, help="Do not verify the TLS certificate of the cluster file's switch.")
@json_option
@pass_ctx
def check_cmd(
    ctx: Ctx,
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None,
    snapshots: tuple[Path, ...],
    only: str,
    skip_ids: str,
    no_active: bool,
    insecure: bool,
    json_mode: bool,
) -> None:
    """Every known pitfall, with the evidence seen and the exact fix. Exit 0: nothing fails; 1: something
    fails; 2: a check or a node could not be read."""
    from wirespeed.engine import checks, discover
    from wirespeed.ui.checks import check_report

    out = ctx.output(json_mode)
    ids = checks.select(only.split(","), skip_ids.split(","))
    if snapshots:
        if cluster_file or hosts:
            raise UsageError("give --snapshot or live nodes (--cluster/--hosts), not both")
        run = checks.run_checks(discover.discover_snapshots(list(snapshots)), ids)
    else:
        remote = resolve_remote(out, cluster_file, hosts, user)
        found = discover.discover_live(remote, probe=not no_active)
        active = None if no_active else checks.measure_active(remote, found, ids)
        reading = None
        if cluster_file is not None and set(ids) & set(checks.SWITCH_CHECKS):
            from wirespeed.engine import switch
            from wirespeed.engine.clusters import load_switch

            config = load_switch(cluster_file, remote.cluster)
            reading = switch.read_for_checks(config, insecure=insecure) if config is not None else None
        run = checks.run_checks(found, ids, active, reading)
    if json_mode:
        out.data(run.to_json())
    else:
        out.console.print(check_report(run))
    raise SystemExit(run.exit_status)


@cli.command("snapshot")
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
) -> None:
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
    raise SystemExit(1 if errors else 0)


# ------------------------------------------------------------------------------------------------------- testbed
@cli.group("testbed", context_settings=CONTEXT)
def testbed() -> None:
    """The emulated cluster: DGX Spark nodes in network namespaces, with sshd, shaped links and faults."""


prefix_option = click.option(
    "--prefix", default="spark-", show_default=True, help="Name prefix: nodes are PREFIX1..PREFIXN."
)


@testbed.command("up")
@prefix_option
@click.option("--nodes", "-n", type=int, default=None, help="Number of nodes (direct: 2, ring: 3, switch: 2-16).")
@click.option("--topology", type=click.Choice(["direct", "ring", "switch"]), default="direct", show_default=True)
@click.option("--cables", type=click.IntRange(1, 2), default=1, show_default=True, help="Cabled ports per node.")
@click.option("--half-rate", default="1gbit", show_default=True, help="tc rate of each PCIe half (tc units).")
@click.option("--mtu", type=int, default=9000, show_default=True, help="MTU of the fabric interfaces.")
@click.option("--switch-mtu", type=int, default=None, help="MTU of the switch ports (default: --mtu).")
@click.option("--miswire", is_flag=True, help="Cross-cable: swap node 2's ports (a fault for discovery to find).")
@click.option("--slurm", is_flag=True, help="Also run Slurm: slurmctld here, a slurmd inside every node.")
@click.option("--mdns", is_flag=True, help="Every node announces ssh over mDNS (avahi), as a Spark does.")
@json_option
@pass_ctx
def testbed_up(
    ctx: Ctx,
    prefix: str,
    nodes: int | None,
    topology: str,
    cables: int,
    half_rate: str,
    mtu: int,
    switch_mtu: int | None,
    miswire: bool,
    slurm: bool,
    mdns: bool,
    json_mode: bool,
) -> None:
    """Create the emulated cluster (or recover a half-built one) and write its cluster file."""
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
        half_rate_bps=parse_rate_bps(half_rate),
        mtu=mtu,
        switch_mtu=switch_mtu,
        miswire=miswire,
        mdns=mdns,
        progress=lambda text: out.message(f"testbed: {text}"),
    )
    if slurm:
        conf = start_slurm(state)
        out.message(f"testbed: Slurm is up: SLURM_CONF={conf} salloc -N {count} wirespeed bench ...")
    status = build.status(prefix)
    if json_mode:
        out.data(status)
    else:
        out.console.print(render.testbed_status(status))
    raise SystemExit(0 if state.phase == "up" else 1)


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
def testbed_status(ctx: Ctx, prefix: str, json_mode: bool) -> None:
    """Show the testbed: nodes, interfaces, cabling, shaping, faults and health."""
    from wirespeed.testbed import build

    out = ctx.output(json_mode)
    status = build.status(prefix)
    if json_mode:
        out.data(status)
    else:
        out.console.print(render.testbed_status(status))
    raise SystemExit(0 if status["phase"] == "up" else 1)


@testbed.command("fault")
@prefix_option
@click.argument("node")
@click.argument("iface")
@click.option("--mtu", type=int, help="Set this MTU on the half (or switch port).")
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


@testbed.command("exec", context_settings={**CONTEXT, "ignore_unknown_options": True})
@prefix_option
@click.argument("node")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@pass_ctx
def testbed_exec(ctx: Ctx, prefix: str, node: str, command: tuple[str, ...]) -> None:
    """Run COMMAND inside NODE directly (no ssh), with its terminal: for poking at the testbed."""
    import subprocess

    from wirespeed.testbed import build

    state = build.require_state(prefix)
    state.plan.node(node)
    completed = subprocess.run(build.node_argv(state, node, list(command)), check=False)
    raise SystemExit(completed.returncode)


cli.add_command(import_cmd)
cli.add_command(init_cmd)
cli.add_command(switch_group)


# ------------------------------------------------------------------------------------------------- entry points
def main(argv: Sequence[str] | None = None, env: Environment | None = None) -> int:
    """Run the CLI and return its exit status; the only place exceptions become messages."""
    env = env or Environment()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    ctx_obj = Ctx(env, debug)
    try:
        # click writes --help and --version to sys.stdout; send them where this environment says.
        with redirect_stdout(env.stdout):
            cli.main(args=args, prog_name="wirespeed", standalone_mode=False, obj=ctx_obj)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        env.stderr.write(f"wirespeed: error: {exc.format_message()}\n")
        return exc.exit_code
    except click.exceptions.Abort:
        env.stderr.write("wirespeed: aborted\n")
        return 130
    except WirespeedError as exc:
        if ctx_obj.debug:
            raise
        env.stderr.write(f"wirespeed: error: {exc}\n")
        return exc.exit_status
    except KeyboardInterrupt:
        env.stderr.write("wirespeed: interrupted\n")
        return 130
    except BrokenPipeError:
        return 141
    return 0
