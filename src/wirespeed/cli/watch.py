"""`wirespeed watch`: the live dashboard at the wire."""

from __future__ import annotations

from pathlib import Path

import click

from wirespeed.cli.bench import live_flags, live_view
from wirespeed.cli.common import PASS_THROUGH, Ctx, Seconds, cluster_options, json_option, pass_ctx, resolve_remote
from wirespeed.core.errors import ExitStatus, UsageError

MAX_WATCH_S = 7 * 86400  # a week: a watch meant to run longer is a service, not a command


@click.command("watch", context_settings=PASS_THROUGH)
@cluster_options
@click.option(
    "--interval",
    type=Seconds(60),
    default=0.5,
    show_default=True,
    help="Seconds between samples.",
)
@click.option(
    "--duration",
    "duration_s",
    type=Seconds(MAX_WATCH_S),
    default=None,
    help="Stop after this many seconds (at most a week).",
)
@click.option("--once", is_flag=True, help="One interval on every node, then stop (with --json: for scripts).")
@click.option("--record", type=click.Path(path_type=Path), default=None, help="Append every sample as JSON lines.")
@click.option("--run", "run_flag", is_flag=True, help="Run the command after `--` alongside; stop when it ends.")
@click.option(
    "--serve",
    "serve_at",
    metavar="ADDR:PORT",
    default=None,
    help="Also serve the samples as Prometheus metrics at http://ADDR:PORT/metrics (ADDR an IP address, e.g. "
    "127.0.0.1:9810; port 0: one the kernel picks, printed).",
)
@click.option(
    "--textfile",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Also write the samples to DIR/wirespeed.prom every interval: the node exporter's textfile format.",
)
@live_flags
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
    serve_at: str | None,
    textfile: Path | None,
    no_live: bool,
    halves: bool,
    json_mode: bool,
    command: tuple[str, ...],
) -> ExitStatus:
    """Live TX/RX per node and cable at the wire (NIC PHY counters: RDMA included) against the line rate, NOW and
    PEAK per node and for the cluster, per-core CPU, error counters that grew. On a terminal: the full screen (q or
    Ctrl-C leaves, h shows the halves; the last frame stays printed). Otherwise, or with --no-live: one plain line
    per interval. --serve ADDR:PORT and --textfile DIR give the same samples to Prometheus (counters of bytes at the
    wire, CPU, error counters), while the view runs as ever."""
    import contextlib
    import ipaddress

    from wirespeed.core.fabric.meter import layout_from_facts
    from wirespeed.core.metrics import parse_listen
    from wirespeed.engine import discover
    from wirespeed.engine.live import LiveBoard
    from wirespeed.engine.watch import open_record, watch
    from wirespeed.ui.dashboard import final_lines

    out = ctx.output(json_mode)
    if command and not run_flag:
        raise UsageError(f"unexpected argument {command[0]!r}", hint="to run a command alongside: --run -- CMD ...")
    if run_flag and not command:
        raise UsageError("--run needs a command after `--`", hint="wirespeed watch --run -- all_reduce_perf -b 1G")
    listen = parse_listen(serve_at) if serve_at is not None else None
    remote = resolve_remote(out, cluster_file, hosts, user)
    with contextlib.ExitStack() as stack:
        on_sample, writer, collector = None, None, None
        if listen is not None or textfile is not None:
            from wirespeed.adapters import prometheus

            collector = prometheus.WatchCollector()  # before discovery: a port in use or a bad DIR fails at once
            on_sample = collector.add
            if listen is not None:
                server = prometheus.serve(collector, *listen)
                stack.callback(server.close)
                out.message(f"wirespeed: serving Prometheus metrics on {server.url}")
                if not ipaddress.ip_address(server.host).is_loopback:
                    out.message("wirespeed: not loopback: whoever reaches that address reads the wire's figures")
            if textfile is not None:
                writer = prometheus.TextfileWriter(collector, textfile, interval)
                on_sample = writer.add
                out.message(f"wirespeed: writing Prometheus metrics to {writer.path} every {interval:g} s")
        found = discover.discover_live(remote, probe=False)
        for reason in found.errors.values():
            out.message(f"wirespeed: {reason}")
        layouts = [layout_from_facts(found.facts[node]) for node in sorted(found.facts)]
        if collector is not None:
            collector.set_layouts(layouts)
        title = f"watch: {' '.join(command)}" if command else "watch"
        board = LiveBoard(title, interval, nodes=[layout.node for layout in layouts if layout.interfaces])
        board.show_halves(halves)
        sink = stack.enter_context(open_record(record)) if record else None
        with contextlib.ExitStack() as view_stack:
            if not json_mode:
                view_stack.enter_context(live_view(out, board, not no_live))
            result = watch(
                remote, layouts, board, interval=interval, duration_s=duration_s,
                intervals=1 if once else None, record=sink, run_argv=command or None, on_sample=on_sample,
            )  # fmt: skip
        if writer is not None:
            writer.write()  # the last samples too, whenever the watch ended
    for node, reason in sorted(result.ended.items()):
        out.message(f"wirespeed: {node}: {reason}")
    for node in result.silent:
        out.message(f"wirespeed: {node}: no reading came from it (its sampler did not answer)")
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
        for line in final_lines(board.frame()):
            out.console.print(line, markup=False, highlight=False)
    if result.run_returncode:
        out.message(f"wirespeed: {command[0]} exited with status {result.run_returncode}")
    failed = (bool(result.ended) and not result.interrupted) or (result.run_returncode or 0) != 0
    if found.errors or result.silent:  # a node that could not be read: what is shown is not the whole cluster
        return ExitStatus.NOT_MEASURED
    return ExitStatus.FINDING if failed else ExitStatus.OK
