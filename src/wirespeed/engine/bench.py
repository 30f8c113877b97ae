"""`wirespeed bench`: run the ladder's rungs over the execution layer, sample the wire while each runs, write
every result into the run directory as soon as it exists, and stop every remote process on the way out.

Run directory: `runs/<UTC timestamp>/`: `<rung>.json` (the result with its ceiling), `<rung>/*.out` (each tool's
raw output), `<rung>.samples.jsonl` (every counter sample), `takeaway.json`.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from wirespeed.core.counters import is_congestion
from wirespeed.core.ladder import (
    Flow,
    FlowResult,
    RungResult,
    WireFigures,
    diagnose,
    first_pair,
    flows_between,
)
from wirespeed.core.meter import Meter, NodeLayout, NodeSample, NodeView, layout_from_facts, sample_line
from wirespeed.core.parsers.iperf3 import parse_json
from wirespeed.engine.discover import Discovery
from wirespeed.engine.remote import Remote, RemoteProcess
from wirespeed.engine.sampling import ClusterSampler

TCP_RUNGS = ("tcp-single", "tcp-multi", "tcp-halves")


@dataclass(frozen=True)
class BenchOptions:
    seconds: int = 5
    interval: float = 0.5
    streams: int = 16  # tcp-multi
    bidir: bool = False


class RunDirectory:
    """Where a run's results go, each written the moment it is known (an interrupted run keeps them)."""

    def __init__(self, root: Path) -> None:
        self.path = root / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        suffix = 1
        while self.path.exists():
            suffix += 1
            self.path = root / (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{suffix}")
        self.path.mkdir(parents=True)

    def write_json(self, name: str, data: object) -> Path:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.replace(target)
        return target

    def write_text(self, name: str, text: str) -> None:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


class WireRecorder:
    """Samples every node while a rung runs; averages per interface over the rung, the busiest core seen."""

    def __init__(self, remote: Remote, layouts: Sequence[NodeLayout], interval: float, record: Path) -> None:
        self.sampler = ClusterSampler(remote, layouts, interval)
        self.meter = Meter(layouts)
        self.views: list[NodeView] = []
        self.arrived: list[float] = []  # time.monotonic() when each view came in, for figures over a window
        self.record = record.open("a", encoding="utf-8")
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for item in self.sampler.samples(timeout_s=1.0):
            if isinstance(item, NodeSample):
                self.record.write(sample_line(item) + "\n")
                view = self.meter.add(item)
                if view is not None:
                    self.arrived.append(time.monotonic())
                    self.views.append(view)

    def __enter__(self) -> WireRecorder:
        self.sampler.start()
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.sampler.stop()
        self.thread.join(timeout=10)
        self.record.close()

    def figures(self, since: float = 0.0, between: tuple[float, float] | None = None) -> WireFigures:
        """Averages over the views after the first `since` seconds of each node (start-up left out), or over the
        views that came in `between` two time.monotonic() readings (one round of the matrix)."""
        tx: dict[tuple[str, str], list[float]] = {}
        rx: dict[tuple[str, str], list[float]] = {}
        busiest: dict[str, tuple[int, float]] = {}
        average: dict[str, list[float]] = {}
        errors: dict[tuple[str, str], dict[str, int]] = {}
        source = "phy"
        elapsed: dict[str, float] = {}
        for arrived, view in zip(list(self.arrived), list(self.views), strict=False):
            if between is not None and not between[0] <= arrived <= between[1]:
                continue
            elapsed[view.node] = elapsed.get(view.node, 0.0) + view.seconds
            if between is None and elapsed[view.node] <= since:
                continue
            for cable in view.cables:
                for name, half in cable.halves.items():
                    if half.source == "netdev":
                        source = "netdev"
                    if half.tx_gbps is not None:
                        tx.setdefault((view.node, name), []).append(half.tx_gbps)
                    if half.rx_gbps is not None:
                        rx.setdefault((view.node, name), []).append(half.rx_gbps)
                    for counter, grew in half.errors.items():
                        if not is_congestion(counter):
                            bucket = errors.setdefault((view.node, name), {})
                            bucket[counter] = bucket.get(counter, 0) + grew
            core = view.busiest_core
            if core is not None and core[1] > busiest.get(view.node, (0, -1.0))[1]:
                busiest[view.node] = core
            if view.cpu_average is not None:
                average.setdefault(view.node, []).append(view.cpu_average)
        return WireFigures(
            tx_gbps={k: sum(v) / len(v) for k, v in tx.items()},
            rx_gbps={k: sum(v) / len(v) for k, v in rx.items()},
            busiest_core=busiest,
            cpu_average={k: sum(v) / len(v) for k, v in average.items()},
            errors=errors,
            source=source,
        )


def _cores(remote: Remote, node_name: str) -> int:
    """How many CPUs the client node has (0 when unknown: then nothing is pinned)."""
    result = remote.run(remote.cluster.node(node_name), ["nproc"], timeout_s=20)
    return int(result.stdout.strip()) if result.ok and result.stdout.strip().isdigit() else 0


def _server(remote: Remote, flow: Flow, port: int) -> RemoteProcess:
    node = remote.cluster.node(flow.target[0])
    return remote.start(node, ["iperf3", "-s", "-1", "-B", flow.target_address, "-p", str(port), "-J"])


def _client_argv(flow: Flow, port: int, options: BenchOptions, streams: int, core: int | None) -> list[str]:
    argv = ["iperf3", "-c", flow.target_address, "-B", flow.source_address, "-p", str(port)]
    argv += ["-t", str(options.seconds), "-O", "1", "-J"]
    if streams > 1:
        argv += ["-P", str(streams)]
    if options.bidir:
        argv.append("--bidir")
    if core is not None:
        argv += ["-A", str(core)]  # disjoint cores per half on the client (and the same index on the server)
    return argv


def defaults_evidence(discovery: Discovery) -> list[str]:
    """What the checks say is still at its default (MTU 1500, small TCP buffers): the `defaults` ceiling's evidence."""
    from wirespeed.core.checks.model import CheckStatus
    from wirespeed.engine.checks import run_checks

    run = run_checks(discovery, ["mtu.host", "sysctl.tcp"])
    return [f"{r.id}: {r.summary}" for r in run.results if r.status in (CheckStatus.FAIL, CheckStatus.WARN)]


def run_tcp(
    remote: Remote,
    discovery: Discovery,
    rung: str,
    options: BenchOptions,
    run_dir: RunDirectory,
    defaults: Sequence[str] = (),
) -> RungResult:
    """One TCP rung between the first linked pair of nodes: single stream, many streams, or every half at once."""
    pair = first_pair(discovery.cabling)
    if pair is None:
        return RungResult(rung, "skipped", "no two nodes have a link between them", "run `wirespeed discover`")
    flows = flows_between(discovery.facts, discovery.cabling, *pair)
    if not flows:
        return RungResult(rung, "skipped", f"no addressed link between {pair[0]} and {pair[1]}", "wirespeed fix")
    chosen = flows if rung == "tcp-halves" else flows[:1]
    streams = options.streams if rung == "tcp-multi" else 1
    layouts = [layout_from_facts(discovery.facts[n]) for n in pair]
    cores = _cores(remote, pair[0]) if rung == "tcp-halves" else 0
    started = time.monotonic()
    with WireRecorder(remote, layouts, options.interval, run_dir.path / f"{rung}.samples.jsonl") as recorder:
        results = run_iperf_flows(remote, chosen, options, run_dir, rung, streams=streams, cores=cores)
    figures = recorder.figures(since=1.0)
    result = RungResult(rung, "ran", flows=tuple(results), wire=figures, seconds=time.monotonic() - started)
    failed = [r for r in results if r.tool_gbps is None]
    if failed:  # what finished stays in the result; a rung with a failed flow gets no ceiling
        reasons = "; ".join(sorted({r.error or "no result" for r in failed}))
        return replace(result, status="failed", reason=reasons)
    ceiling = diagnose(result, single_flow=rung == "tcp-single", halves_available=len(flows), defaults=defaults)
    return replace(result, ceiling=ceiling)


def run_iperf_flows(
    remote: Remote,
    flows: Sequence[Flow],
    options: BenchOptions,
    run_dir: RunDirectory,
    folder: str,
    *,
    streams: int = 1,
    cores: int = 0,
) -> list[FlowResult]:
    """One iperf3 server per flow, then every client at once; the servers are stopped whatever happens, and each
    client's JSON is kept as `<folder>/iperf3-<i>-<node>-<iface>.json`. A flow that failed says where, and why."""
    base_port = random.randint(20000, 40000)  # noqa: S311 - a port choice, not a secret
    outcomes: list[tuple[Flow, str, str | None]] = [(f, "", None) for f in flows]
    servers = [_server(remote, flow, base_port + i) for i, flow in enumerate(flows)]
    try:
        time.sleep(0.5)  # the servers bind

        def client(index: int, flow: Flow) -> None:
            node = remote.cluster.node(flow.source[0])
            core = index % cores if cores >= len(flows) else None  # pin only when each flow gets its own core
            argv = _client_argv(flow, base_port + index, options, streams, core)
            for _ in range(40):  # the server may still be starting: iperf3 says "Connection refused"
                result = remote.run(node, argv, timeout_s=options.seconds + 30)
                if "Connection refused" not in result.stdout + result.stderr:
                    break
                time.sleep(0.25)
            outcomes[index] = (flow, result.stdout, None if result.ok else result.message)

        threads = [threading.Thread(target=client, args=(i, f)) for i, f in enumerate(flows)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        stopped = [server.stop(grace_s=3.0) for server in servers]
    results: list[FlowResult] = []
    for i, (flow, stdout, error) in enumerate(outcomes):
        run_dir.write_text(f"{folder}/iperf3-{i}-{flow.source[0]}-{flow.source[1]}.json", stdout)
        server = stopped[i] if i < len(stopped) else None
        where = f"{flow.source[0]} -> {flow.target[0]} {flow.target[1]}"
        for r in _flow_results(flow, stdout, error):
            if r.tool_gbps is None:
                beside = f" ({server.message})" if server is not None and not server.ok else ""
                r = replace(r, error=f"{where}: {r.error}{beside}")
            results.append(r)
    return results


def _flow_results(flow: Flow, stdout: str, error: str | None) -> list[FlowResult]:
    try:
        parsed = parse_json(stdout)
    except ValueError as exc:
        return [FlowResult(flow, "forward", None, error or f"iperf3 output unreadable: {exc}")]
    if parsed.error:
        return [FlowResult(flow, "forward", None, f"iperf3: {parsed.error}")]
    found = [FlowResult(flow, "forward", parsed.receiver_gbps, error)]
    if parsed.reverse_receiver_gbps is not None:
        reverse = replace(flow, source=flow.target, target=flow.source, source_address=flow.target_address,
                          target_address=flow.source_address)  # fmt: skip
        found.append(FlowResult(reverse, "reverse", parsed.reverse_receiver_gbps))
    return found
