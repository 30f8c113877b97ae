"""The RDMA rungs with perftest between the first linked pair of nodes: `rdma-bw` (`ib_<test>_bw` with several QPs
on every linked half at once, each half its own pair, as perftest measures one device per process) and `rdma-lat`
(`ib_<test>_lat` on the first half). Raw output: `<rung>/perftest-<i>-<node>-<iface>.out` for the client and for
the server of pair i (stdout, byte for byte; stderr beside it as `.err` when there was any)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wirespeed.core.fabric.rdma import RdmaOptions, RdmaPair, client_argv, plan_rdma, server_argv
from wirespeed.core.ladder import diagnose, first_pair
from wirespeed.core.records.options import BenchOptions
from wirespeed.core.records.results import Ceiling, FlowResult, NotRunnable, RungResult
from wirespeed.core.tools import perftest
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.rungs.base import Measured, Rung, RungContext
from wirespeed.engine.serving import PairCommand, PairRun, run_pairs


def rdma_options(options: BenchOptions) -> RdmaOptions:
    """perftest's parameters from the bench's shared options (the rest at perftest's sound defaults)."""
    return RdmaOptions(seconds=options.seconds, bidir=options.bidir)


def where(pair: RdmaPair) -> str:
    c, s = pair.client, pair.server
    return f"{c.node} {c.iface} ({c.device}) -> {s.node} {s.iface} ({s.device})"


def measure_pairs(
    remote: Remote,
    run_dir: RunDirectory,
    pairs: Sequence[RdmaPair],
    options: RdmaOptions,
    *,
    folder: str,
    lat: bool,
    on_done: Callable[[int, PairRun], None] | None = None,
) -> list[PairRun]:
    """One perftest pair per half, all at once; both sides' output kept under `folder`; `on_done` hears each pair
    as its client finishes."""
    base_port = random.randint(20000, 40000)  # noqa: S311 - a port choice, not a secret
    commands = [
        PairCommand(
            p.server.node, tuple(server_argv(p, options, base_port + i, lat)), p.client.node,
            tuple(client_argv(p, options, base_port + i, lat)),
            client_file=f"{folder}/perftest-{i}-{p.client.node}-{p.client.iface}.out",
            server_file=f"{folder}/perftest-{i}-{p.server.node}-{p.server.iface}.out",
        )
        for i, p in enumerate(pairs)
    ]  # fmt: skip
    timeout_s = 60.0 + (options.lat_iterations / 1000 if lat else options.seconds)
    return run_pairs(remote, commands, run_dir, not_listening=perftest.NOT_LISTENING, timeout_s=timeout_s,
                     on_done=on_done)  # fmt: skip


def bw_results(pair: RdmaPair, run: PairRun) -> list[FlowResult]:
    """A pair's flows (forward, and reverse with -b); a failure names both ends and their devices."""
    found = []
    for r in perftest.flow_results(pair.flow, run.client_stdout, run.error):
        if r.tool_gbps is None:
            r = FlowResult(r.flow, r.direction, None, f"{where(pair)}: {r.error}{run.server_note()}")
        found.append(r)
    return found


@dataclass(frozen=True)
class RdmaPlan:
    pairs: tuple[RdmaPair, ...]
    options: RdmaOptions

    @property
    def nodes(self) -> tuple[str, str]:
        return self.pairs[0].client.node, self.pairs[0].server.node


def _plan(ctx: RungContext, first_only: bool) -> RdmaPlan | NotRunnable:
    pair = first_pair(ctx.discovery.cabling)
    if pair is None:  # plan_rdma says why a pair with links has no RDMA between them
        return NotRunnable("no two nodes have a link between them", "run `wirespeed discover`")
    options = rdma_options(ctx.options)
    planned = plan_rdma(ctx.discovery.facts, ctx.discovery.cabling, pair[0], pair[1], options)
    if isinstance(planned, NotRunnable):
        return planned
    return RdmaPlan(tuple(planned[:1] if first_only else planned), options)


class RdmaBwRung(Rung):
    name = "rdma-bw"
    layer = "rdma"

    def plan(self, ctx: RungContext) -> RdmaPlan | NotRunnable:
        return _plan(ctx, first_only=False)

    def expected_s(self, ctx: RungContext, plan: RdmaPlan) -> float:
        return ctx.options.seconds + 1.0

    def run(self, ctx: RungContext, plan: RdmaPlan, measured: Measured) -> None:
        def done(index: int, run: PairRun) -> None:  # as each client finishes: a rung cut short keeps them
            measured.flows.extend(bw_results(plan.pairs[index], run))

        measure_pairs(ctx.remote, ctx.run_dir, plan.pairs, plan.options, folder=self.name, lat=False, on_done=done)

    def diagnose(self, ctx: RungContext, plan: RdmaPlan, result: RungResult) -> Ceiling:
        """As for TCP, but only the MTU lines of the defaults: RDMA does not use the kernel's TCP buffers, while a
        1500-byte netdev MTU caps the RoCE MTU at 1024."""
        mtu = [line for line in ctx.defaults if line.startswith("mtu.")]
        return diagnose(result, halves_available=len(plan.pairs), defaults=mtu)


class RdmaLatRung(Rung):
    """One-way latency on the first linked half; no ceiling (latency has none to name)."""

    name = "rdma-lat"
    layer = "rdma"
    settle_s = 0.0

    def plan(self, ctx: RungContext) -> RdmaPlan | NotRunnable:
        return _plan(ctx, first_only=True)

    def run(self, ctx: RungContext, plan: RdmaPlan, measured: Measured) -> None:
        [run] = measure_pairs(ctx.remote, ctx.run_dir, plan.pairs, plan.options, folder=self.name, lat=True)
        [pair] = plan.pairs
        try:
            measured.latency.append(perftest.latency(pair.flow, run.client_stdout))
        except ValueError as exc:
            measured.failure = f"{where(pair)}: {run.error or f'perftest output unreadable: {exc}'}{run.server_note()}"
            return
        if run.error is not None:
            measured.notes.append(f"the client reported: {run.error}")
