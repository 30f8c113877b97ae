"""`wirespeed bench matrix`: every pair of nodes, in rounds of disjoint pairs at once, TCP on every half (and RDMA
per half where the nodes have it), sampled at the wire the whole time.

Files: `matrix-<layer>.json` (rewritten after every round, so an interrupted run keeps the rounds it finished),
`matrix-<layer>.samples.jsonl`, and `matrix-<layer>/round-<r>/...` with each tool's raw output.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from wirespeed.core.ladder import Flow, FlowResult, flows_between
from wirespeed.core.matrix import (
    MatrixCell,
    MatrixResult,
    cells_from_flows,
    find_outliers,
    half_flows,
    round_robin,
)
from wirespeed.core.meter import layout_from_facts
from wirespeed.core.nccl import NotRunnable
from wirespeed.core.rdma import RdmaOptions, RdmaPair, flow_result, plan_rdma
from wirespeed.engine.bench import BenchOptions, RunDirectory, WireRecorder, run_iperf_flows
from wirespeed.engine.discover import Discovery
from wirespeed.engine.rdma import run_pairs
from wirespeed.engine.remote import Remote

# A round's wire figures average the samples while the clients measure: after the servers bind (0.5 s), the
# clients' ssh start and iperf3's omitted first second, until the test's end; not the start-up or teardown.
MEASURE_FROM_S = 2.0


def matrix_nodes(discovery: Discovery) -> list[str]:
    """The nodes with at least one link to another node, by name."""
    linked = {end[0] for link in discovery.cabling.links for end in link if link[0][0] != link[1][0]}
    return sorted(linked)


def _tcp_round(
    remote: Remote, discovery: Discovery, pairs: Sequence[tuple[str, str]], options: BenchOptions,
    run_dir: RunDirectory, folder: str,
) -> list[FlowResult]:  # fmt: skip
    flows: list[Flow] = [f for a, b in pairs for f in flows_between(discovery.facts, discovery.cabling, a, b)]
    if not flows:
        return []
    return run_iperf_flows(remote, flows, options, run_dir, folder)


def _rdma_plan(discovery: Discovery, pairs: Sequence[tuple[str, str]], options: RdmaOptions) -> list[RdmaPair] | str:
    planned: list[RdmaPair] = []
    for a, b in pairs:
        found = plan_rdma(discovery.facts, discovery.cabling, a, b, options)
        if isinstance(found, NotRunnable):
            return f"{a} and {b}: {found.reason}"
        planned += found
    return planned


def run_matrix(
    remote: Remote,
    discovery: Discovery,
    layer: str,
    options: BenchOptions,
    run_dir: RunDirectory,
    rdma_options: RdmaOptions | None = None,
    on_round: Callable[[int, int, list[MatrixCell]], None] | None = None,
) -> MatrixResult:
    """All pairs in round-robin rounds; the result is written after every round."""
    nodes = matrix_nodes(discovery)
    rounds = round_robin(nodes)
    base = MatrixResult(layer, "skipped", tuple(nodes), tuple(tuple(r) for r in rounds),
                        seconds_per_test=float(options.seconds), bidir=options.bidir)  # fmt: skip
    if len(nodes) < 2:
        return replace(base, reason="fewer than two nodes have a link", fix="run `wirespeed discover`")
    if layer == "rdma":
        rdma_options = rdma_options or RdmaOptions(seconds=options.seconds, bidir=options.bidir)
        first = _rdma_plan(discovery, rounds[0], rdma_options)
        if isinstance(first, str):
            return replace(base, reason=f"no RDMA between {first}", fix="`wirespeed check` says what is missing")
    layouts = [layout_from_facts(discovery.facts[n]) for n in nodes]
    name = f"matrix-{layer}"
    cells: list[MatrixCell] = []
    every_flow: list[FlowResult] = []
    round_seconds: list[float] = []
    result = replace(base, status="ran")
    with WireRecorder(remote, layouts, options.interval, run_dir.path / f"{name}.samples.jsonl") as recorder:
        for number, pairs in enumerate(rounds, start=1):
            started = time.monotonic()
            folder = f"{name}/round-{number}"
            flows: list[FlowResult] = []
            if layer == "rdma":
                assert rdma_options is not None
                planned = _rdma_plan(discovery, pairs, rdma_options)
                if not isinstance(planned, str):
                    for run in run_pairs(remote, folder, planned, rdma_options, run_dir, lat=False):
                        flows += [replace(r, error=r.error and f"{run.where()}: {r.error}")
                                  for r in flow_result(run.pair, run.client_stdout, run.error)]  # fmt: skip
            else:
                flows = _tcp_round(remote, discovery, pairs, options, run_dir, folder)
            ended = time.monotonic()
            round_seconds.append(ended - started)
            window_end = min(ended, started + MEASURE_FROM_S + max(options.seconds - 0.5, 0.5))
            figures = recorder.figures(between=(started + MEASURE_FROM_S, window_end))
            made = cells_from_flows(number, pairs, flows, figures.tx_gbps)
            cells += made
            every_flow += flows
            result = replace(
                result,
                cells=tuple(cells),
                round_seconds=tuple(round_seconds),
                outliers=tuple(find_outliers(cells, half_flows(every_flow))),
            )
            run_dir.write_json(f"{name}.json", result.to_json())
            if on_round is not None:
                on_round(number, len(rounds), made)
    failed = [c for c in result.cells if c.tool_gbps is None]
    if failed:
        reason = "; ".join(sorted({c.error or f"{c.source} -> {c.target}: no figure" for c in failed}))
        result = replace(result, status="failed", reason=reason)
    run_dir.write_json(f"{name}.json", result.to_json())
    return result
