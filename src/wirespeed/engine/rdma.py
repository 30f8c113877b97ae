"""The RDMA rungs on the nodes, modelled on `bench.run_tcp`: one perftest server per half on the server node, then
every client at once (each half its own pair, as perftest measures one device per process), the wire sampled
while they run, both sides' raw output kept, and every server stopped on the way out, Ctrl-C included.

Files: `<rung>/perftest-<i>-<node>-<iface>.out` for the client and for the server of pair i (stdout, byte for byte;
stderr beside it as `.err` when there was any), `<rung>.samples.jsonl`, and the caller's `<rung>.json`.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from wirespeed.core.ladder import FlowResult, RungResult, diagnose, first_pair
from wirespeed.core.meter import layout_from_facts
from wirespeed.core.nccl import NotRunnable
from wirespeed.core.outcome import CommandResult
from wirespeed.core.rdma import (
    RdmaOptions,
    RdmaPair,
    client_argv,
    flow_result,
    latency_figures,
    plan_rdma,
    server_argv,
)
from wirespeed.engine.bench import RunDirectory, WireRecorder
from wirespeed.engine.discover import Discovery
from wirespeed.engine.remote import Remote, RemoteProcess

# What a perftest client prints while its server is not listening yet: worth another try.
NOT_LISTENING = ("Couldn't connect", "Unable to open file descriptor for socket connection", "Connection refused")
CONNECT_TRIES = 40
SERVER_EXIT_WAIT_S = 5.0  # a server ends by itself after its client; killing it earlier loses its buffered output


@dataclass
class PairRun:
    """What one pair left: the client's last attempt and the server's output (None where it never ran)."""

    pair: RdmaPair
    client: CommandResult | None = None
    server: CommandResult | None = None
    error: str | None = None  # the client's failure, one line

    @property
    def client_stdout(self) -> str:
        return self.client.stdout if self.client is not None else ""

    def where(self) -> str:
        c, s = self.pair.client, self.pair.server
        return f"{c.node} {c.iface} ({c.device}) -> {s.node} {s.iface} ({s.device})"

    def server_note(self) -> str:
        return f" (server: {self.server.message})" if self.server is not None and not self.server.ok else ""


def _plan(discovery: Discovery, options: RdmaOptions) -> list[RdmaPair] | NotRunnable:
    pair = first_pair(discovery.cabling)
    if pair is None:
        return NotRunnable("no two nodes have a link between them", "run `wirespeed discover`")
    return plan_rdma(discovery.facts, discovery.cabling, pair[0], pair[1], options)


def _stop(servers: Sequence[RemoteProcess], runs: Sequence[PairRun]) -> None:
    """Stop every server, each on its own: one that fails to stop does not keep the others running."""
    for run, server in zip(runs, servers, strict=False):
        try:
            run.server = server.stop(grace_s=3.0)
        except Exception as exc:  # the next server must still be stopped
            run.error = run.error or f"stopping the server: {exc}"


def _await_exit(servers: Sequence[RemoteProcess], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(s.running() for s in servers):
        time.sleep(0.1)


def _write(run_dir: RunDirectory, rung: str, index: int, node: str, iface: str, result: CommandResult | None) -> None:
    if result is None:
        return
    name = f"{rung}/perftest-{index}-{node}-{iface}"
    run_dir.write_text(f"{name}.out", result.stdout)
    if result.stderr:
        run_dir.write_text(f"{name}.err", result.stderr)


def run_pairs(
    remote: Remote, rung: str, pairs: Sequence[RdmaPair], options: RdmaOptions, run_dir: RunDirectory, lat: bool
) -> list[PairRun]:
    """Servers first, then every client at once in threads; the servers are stopped whatever happens."""
    base_port = random.randint(20000, 40000)  # noqa: S311 - a port choice, not a secret
    runs = [PairRun(p) for p in pairs]
    servers: list[RemoteProcess] = []
    quit_retrying = threading.Event()
    timeout_s = 60.0 + (options.lat_iterations / 1000 if lat else options.seconds)

    def client(index: int, run: PairRun) -> None:
        try:
            node = remote.cluster.node(run.pair.client.node)
            argv = client_argv(run.pair, options, base_port + index, lat)
            result = remote.run(node, argv, timeout_s=timeout_s)
            for _ in range(CONNECT_TRIES):  # the server may still be starting
                if quit_retrying.is_set() or not any(s in result.stdout + result.stderr for s in NOT_LISTENING):
                    break
                time.sleep(0.25)
                result = remote.run(node, argv, timeout_s=timeout_s)
            run.client = result
            run.error = None if result.ok else result.message
        except Exception as exc:  # a client's failure is that pair's result, not the end of the rung
            run.error = f"{type(exc).__name__}: {exc}"

    try:
        for i, run in enumerate(runs):
            node = remote.cluster.node(run.pair.server.node)
            servers.append(remote.start(node, server_argv(run.pair, options, base_port + i, lat)))
        time.sleep(0.5)  # the servers open their ports
        threads = [threading.Thread(target=client, args=(i, r), daemon=True) for i, r in enumerate(runs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        _await_exit(servers, SERVER_EXIT_WAIT_S)
    finally:
        quit_retrying.set()
        _stop(servers, runs)
        for i, run in enumerate(runs):
            c, s = run.pair.client, run.pair.server
            _write(run_dir, rung, i, c.node, c.iface, run.client)
            _write(run_dir, rung, i, s.node, s.iface, run.server)
    return runs


def run_rdma_bw(
    remote: Remote,
    discovery: Discovery,
    options: RdmaOptions,
    run_dir: RunDirectory,
    defaults: Sequence[str] = (),
) -> RungResult:
    """`ib_<test>_bw` with several QPs on every linked half between the first pair of nodes, all at once.

    `defaults` is the checks' evidence (as for the TCP rungs); only the MTU lines are kept: RDMA does not use the
    kernel's TCP buffers, but a 1500-byte netdev MTU caps the RoCE MTU at 1024."""
    rung = "rdma-bw"
    planned = _plan(discovery, options)
    if isinstance(planned, NotRunnable):
        return RungResult(rung, "skipped", planned.reason, planned.fix)
    nodes = (planned[0].client.node, planned[0].server.node)
    layouts = [layout_from_facts(discovery.facts[n]) for n in nodes]
    started = time.monotonic()
    with WireRecorder(remote, layouts, options.sample_interval_s, run_dir.path / f"{rung}.samples.jsonl") as recorder:
        runs = run_pairs(remote, rung, planned, options, run_dir, lat=False)
    results: list[FlowResult] = []
    for run in runs:
        for r in flow_result(run.pair, run.client_stdout, run.error):
            if r.tool_gbps is None:
                r = replace(r, error=f"{run.where()}: {r.error}{run.server_note()}")
            results.append(r)
    figures = recorder.figures(since=1.0)
    result = RungResult(rung, "ran", flows=tuple(results), wire=figures, seconds=time.monotonic() - started)
    failed = [r for r in results if r.tool_gbps is None]
    if failed:  # what finished stays in the result; a rung with a failed flow gets no ceiling
        reasons = "; ".join(sorted({r.error or "no result" for r in failed}))
        return replace(result, status="failed", reason=reasons)
    mtu = [line for line in defaults if line.startswith("mtu.")]
    return replace(result, ceiling=diagnose(result, halves_available=len(planned), defaults=mtu))


def run_rdma_lat(remote: Remote, discovery: Discovery, options: RdmaOptions, run_dir: RunDirectory) -> RungResult:
    """`ib_<test>_lat` on the first linked half: its figures go into the rung's notes (there is no ceiling)."""
    rung = "rdma-lat"
    planned = _plan(discovery, options)
    if isinstance(planned, NotRunnable):
        return RungResult(rung, "skipped", planned.reason, planned.fix)
    pair = planned[0]
    layouts = [layout_from_facts(discovery.facts[n]) for n in (pair.client.node, pair.server.node)]
    started = time.monotonic()
    with WireRecorder(remote, layouts, options.sample_interval_s, run_dir.path / f"{rung}.samples.jsonl") as recorder:
        [run] = run_pairs(remote, rung, [pair], options, run_dir, lat=True)
    figures = recorder.figures(since=0.0)
    elapsed = time.monotonic() - started
    try:
        latency = latency_figures(run.client_stdout)
    except ValueError as exc:
        reason = f"{run.where()}: {run.error or f'perftest output unreadable: {exc}'}{run.server_note()}"
        return RungResult(rung, "failed", reason, wire=figures, seconds=elapsed)
    note = f"{run.where()}: {latency.text()}"
    notes = (note,) if run.error is None else (note, f"the client reported: {run.error}")
    return RungResult(rung, "ran", wire=figures, seconds=elapsed, notes=notes)
