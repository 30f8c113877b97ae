"""The RDMA rungs on the nodes: one perftest server per half on the server node, the clients all at once, the
wire sampled while they run, every side's raw output kept, and every server stopped on the way out."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from wirespeed.core.ladder import FlowResult, RungResult, diagnose, first_pair
from wirespeed.core.meter import layout_from_facts
from wirespeed.core.nccl import NotRunnable
from wirespeed.core.rdma import (
    RdmaOptions,
    RdmaPair,
    bw_argv,
    bw_flow_results,
    lat_argv,
    latency,
    plan_rdma,
)
from wirespeed.engine.bench import RunDirectory, WireRecorder
from wirespeed.engine.discover import Discovery
from wirespeed.engine.remote import Remote

Argv = Callable[[RdmaPair, RdmaOptions, int, bool], list[str]]
_NOT_LISTENING = ("Couldn't connect", "Unable to open file descriptor", "Connection refused")


def _plan(discovery: Discovery) -> list[RdmaPair] | NotRunnable:
    pair = first_pair(discovery.cabling)
    if pair is None:
        return NotRunnable("no two nodes have a link between them", "run `wirespeed discover`")
    return plan_rdma(discovery.facts, discovery.cabling, *pair)


def _run_pairs(
    remote: Remote, pairs: Sequence[RdmaPair], argv: Argv, options: RdmaOptions, rung: str, run_dir: RunDirectory
) -> list[tuple[RdmaPair, str, str | None]]:
    """Servers first, then every client at once; the servers are stopped whatever happens."""
    base = random.randint(20000, 40000)  # noqa: S311 - a port choice, not a secret
    servers = [
        remote.start(remote.cluster.node(p.server.node), argv(p, options, base + i, True)) for i, p in enumerate(pairs)
    ]
    outcomes: list[tuple[RdmaPair, str, str | None]] = [(p, "", "not run") for p in pairs]
    try:
        time.sleep(0.5)

        def client(index: int, pair: RdmaPair) -> None:
            node = remote.cluster.node(pair.client.node)
            command = argv(pair, options, base + index, False)
            result = remote.run(node, command, timeout_s=options.seconds + 60)
            for _ in range(20):  # the server may still be starting
                if result.ok or not any(s in result.stdout + result.stderr for s in _NOT_LISTENING):
                    break
                time.sleep(0.25)
                result = remote.run(node, command, timeout_s=options.seconds + 60)
            outcomes[index] = (pair, result.stdout, None if result.ok else result.message)

        threads = [threading.Thread(target=client, args=(i, p)) for i, p in enumerate(pairs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        stopped = [server.stop(grace_s=3.0) for server in servers]
    for i, (pair, stdout, _) in enumerate(outcomes):
        name = f"{rung}/perftest-{i}-{pair.client.node}-{pair.client.iface}"
        run_dir.write_text(f"{name}.client.out", stdout)
        run_dir.write_text(f"{name}.server.out", stopped[i].stdout + stopped[i].stderr)
    return outcomes


def run_rdma_bw(
    remote: Remote, discovery: Discovery, options: RdmaOptions, run_dir: RunDirectory, interval: float = 0.5
) -> RungResult:
    """`ib_write_bw` on every linked half between the first pair of nodes, all at once."""
    rung = "rdma-bw"
    pairs = _plan(discovery)
    if isinstance(pairs, NotRunnable):
        return RungResult(rung, "skipped", pairs.reason, pairs.fix)
    nodes = sorted({pairs[0].client.node, pairs[0].server.node})
    layouts = [layout_from_facts(discovery.facts[n]) for n in nodes]
    started = time.monotonic()
    with WireRecorder(remote, layouts, interval, run_dir.path / f"{rung}.samples.jsonl") as recorder:
        outcomes = _run_pairs(remote, pairs, bw_argv, options, rung, run_dir)
    results: list[FlowResult] = []
    for pair, stdout, error in outcomes:
        where = f"{pair.client.node} {pair.client.device} -> {pair.server.node} {pair.server.device}"
        for r in bw_flow_results(pair, stdout, error):
            results.append(r if r.tool_gbps is not None else replace(r, error=f"{where}: {r.error}"))
    result = RungResult(rung, "ran", flows=tuple(results), wire=recorder.figures(since=1.0),
                        seconds=time.monotonic() - started)  # fmt: skip
    failed = [r for r in results if r.tool_gbps is None]
    if failed:
        return replace(result, status="failed", reason="; ".join(sorted({r.error or "no result" for r in failed})))
    return replace(result, ceiling=diagnose(result, halves_available=len(pairs)))


def run_rdma_lat(remote: Remote, discovery: Discovery, options: RdmaOptions, run_dir: RunDirectory) -> RungResult:
    """`ib_write_lat` on the first half: the latency figures go into the rung's notes."""
    rung = "rdma-lat"
    pairs = _plan(discovery)
    if isinstance(pairs, NotRunnable):
        return RungResult(rung, "skipped", pairs.reason, pairs.fix)
    started = time.monotonic()
    [(pair, stdout, error)] = _run_pairs(remote, pairs[:1], lat_argv, options, rung, run_dir)
    figures = latency(stdout)
    elapsed = time.monotonic() - started
    if isinstance(figures, str):
        where = f"{pair.client.node} {pair.client.device} -> {pair.server.node} {pair.server.device}"
        return RungResult(rung, "failed", f"{where}: {error or figures}", seconds=elapsed)
    return RungResult(
        rung, "ran", seconds=elapsed, notes=(f"{pair.client.node} {pair.client.iface}: {figures.line()}",)
    )
