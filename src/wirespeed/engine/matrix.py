"""`wirespeed bench matrix`: every pair of nodes, in rounds of disjoint pairs at once, TCP on every half (and RDMA
per half where the nodes have it), sampled at the wire the whole time; the same tool runners as the ladder's rungs.

Files: `matrix-<layer>.json` (rewritten after every round, so an interrupted run keeps the rounds it finished, and
marked interrupted), `matrix-<layer>.samples.jsonl`, and `matrix-<layer>/round-<r>/...` with each tool's raw output.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.meter import layout_from_facts
from wirespeed.core.fabric.rdma import RdmaOptions, RdmaPair, plan_rdma
from wirespeed.core.fabric.relay import round_flows, round_label
from wirespeed.core.ladder import linked_halves
from wirespeed.core.records.matrix import (
    HalfFlow,
    MatrixCell,
    MatrixResult,
    RelayedCable,
    cells_from_flows,
    find_outliers,
    half_flows,
    relayed_cables,
    round_robin,
    unshared_half_flows,
)
from wirespeed.core.records.options import BenchOptions
from wirespeed.core.records.results import Flow, FlowResult, NotRunnable, RungStatus
from wirespeed.engine.live import LiveBoard
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.rungs.rdma import bw_results, measure_pairs, rdma_options
from wirespeed.engine.rungs.tcp import measure_flows
from wirespeed.engine.wire import WireRecorder

LAYERS = ("tcp", "rdma")
# A round's wire figures average the samples while the clients measure: after the servers bind (0.5 s), the
# clients' ssh start and iperf3's omitted first second, until the test's end; not the start-up or teardown.
MEASURE_FROM_S = 2.0


def matrix_nodes(discovery: Discovery) -> list[str]:
    """The nodes with at least one link to another node, by name, and every node of a ring or chain (its pairs that
    share no cable talk through the relays between)."""
    linked = {end[0] for link in discovery.cabling.links for end in link if link[0][0] != link[1][0]}
    return sorted(linked | set(discovery.cabling.order))


def _cabled(discovery: Discovery, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The pairs that share a cable: RDMA is measured on those only (a relay forwards IP, not RDMA)."""
    return [(a, b) for a, b in pairs if linked_halves(discovery.cabling, a, b)]


def _rdma_plan(discovery: Discovery, pairs: Sequence[tuple[str, str]], options: RdmaOptions) -> list[RdmaPair] | str:
    planned: list[RdmaPair] = []
    for a, b in pairs:
        found = plan_rdma(discovery.facts, discovery.cabling, a, b, options)
        if isinstance(found, NotRunnable):
            return f"{a} and {b}: {found.reason}"
        planned += found
    return planned


def _round(
    remote: Remote, discovery: Discovery, layer: str, pairs: Sequence[tuple[str, str]], flows: Sequence[Flow],
    options: BenchOptions, run_dir: RunDirectory, folder: str,
) -> list[FlowResult]:  # fmt: skip
    """Every half of every pair of one round, both directions at once where asked; over TCP, `flows` (a ring's
    pairs that share no cable through their relays)."""
    if layer == "rdma":
        planned = _rdma_plan(discovery, _cabled(discovery, pairs), rdma_options(options))
        if isinstance(planned, str) or not planned:
            return []
        runs = measure_pairs(remote, run_dir, planned, rdma_options(options), folder=folder, lat=False)
        return [r for run, pair in zip(runs, planned, strict=True) for r in bw_results(pair, run)]
    if not flows:
        return []
    return measure_flows(remote, run_dir, flows, seconds=options.seconds, bidir=options.bidir, folder=folder)


def run_matrix(
    remote: Remote,
    discovery: Discovery,
    layer: str,
    options: BenchOptions,
    run_dir: RunDirectory,
    on_round: Callable[[int, int, list[MatrixCell]], None] | None = None,
    board: LiveBoard | None = None,
) -> MatrixResult:
    """All pairs in round-robin rounds; the result is written after every round, and as interrupted when a signal
    cuts it."""
    nodes = matrix_nodes(discovery)
    rounds = round_robin(nodes)
    base = MatrixResult(layer, RungStatus.SKIPPED, tuple(nodes), tuple(tuple(r) for r in rounds),
                        seconds_per_test=float(options.seconds), bidir=options.bidir)  # fmt: skip
    name = f"matrix-{layer}"

    def written(result: MatrixResult) -> MatrixResult:
        run_dir.matrix(result)
        if board is not None and result.status is not RungStatus.RAN:
            board.end(name, result.status.value)
        return result

    if len(nodes) < 2:
        return written(replace(base, reason="fewer than two nodes have a link", fix="run `wirespeed discover`"))
    if layer == "rdma":
        first = _rdma_plan(discovery, _cabled(discovery, rounds[0]), rdma_options(options))
        if isinstance(first, str):
            return written(
                replace(base, reason=f"no RDMA between {first}", fix="`wirespeed check` says what is missing")
            )
    layouts = [layout_from_facts(discovery.facts[n]) for n in nodes]
    if board is not None:
        board.start(name, len(rounds) * (options.seconds + MEASURE_FROM_S))
    cells: list[MatrixCell] = []
    every_flow: list[FlowResult] = []
    unshared: list[HalfFlow] = []
    relayed: list[RelayedCable] = []
    round_seconds: list[float] = []
    result = replace(base, status=RungStatus.RAN)
    record = run_dir.open_text(f"{name}.samples.jsonl")
    with WireRecorder(remote, layouts, options.interval_s, record, board.view if board else None) as recorder:
        try:
            for number, pairs in enumerate(rounds, start=1):
                tcp = layer == "tcp"
                planned = round_flows(discovery.facts, discovery.cabling, pairs, options.bidir) if tcp else []
                if board is not None:
                    board.detail(f"round {number} of {len(rounds)}: {round_label(pairs, planned)}")
                started = time.monotonic()
                flows = _round(remote, discovery, layer, pairs, planned, options, run_dir, f"{name}/round-{number}")
                ended = time.monotonic()
                round_seconds.append(ended - started)
                window_end = min(ended, started + MEASURE_FROM_S + max(options.seconds - 0.5, 0.5))
                figures = recorder.figures(between=(started + MEASURE_FROM_S, window_end))
                made = cells_from_flows(number, pairs, flows, figures.tx_gbps, figures.busiest_core)
                cells += made
                every_flow += flows
                unshared += unshared_half_flows(flows)
                relayed += relayed_cables(number, flows, figures.tx_gbps)
                result = replace(
                    result,
                    cells=tuple(cells),
                    round_seconds=tuple(round_seconds),
                    outliers=tuple(find_outliers(cells, unshared)),
                    flows=tuple(half_flows(every_flow)),
                    relayed_cables=tuple(relayed),
                )
                run_dir.matrix(result)
                if on_round is not None:
                    on_round(number, len(rounds), made)
        except KeyboardInterrupt as exc:
            why = getattr(exc, "reason", None) or "interrupted (Ctrl-C)"
            written(replace(result, status=RungStatus.INTERRUPTED, reason=f"{why} after {len(round_seconds)} "
                                   f"of {len(rounds)} rounds"))  # fmt: skip
            raise
    failed = [c for c in result.cells if c.tool_gbps is None]
    if failed:
        reason = "; ".join(sorted({c.error or f"{c.source} -> {c.target}: no figure" for c in failed}))
        result = replace(result, status=RungStatus.FAILED, reason=reason)
    if board is not None and result.status is RungStatus.RAN:
        known = [c.tool_gbps for c in result.cells if c.tool_gbps is not None]
        board.end(name, result.status.value, f"{min(known):.2f}-{max(known):.2f} Gb/s" if known else None)
    return written(result)
