"""The TCP bandwidth rungs with iperf3, between the first linked pair of nodes: one stream on one half
(`tcp-single`), many streams on one half (`tcp-multi`), and one pair per half on every half at once (`tcp-halves`,
each client pinned to a core of its own). Raw output: `<rung>/iperf3-<i>-<node>-<iface>.json`."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from wirespeed.adapters.affinity import kept_off
from wirespeed.core.fabric.facts import NodeFacts
from wirespeed.core.ladder import diagnose, first_pair_flows, linked_halves
from wirespeed.core.records.results import Ceiling, Flow, FlowResult, NotRunnable, RungResult
from wirespeed.core.tools import iperf3
from wirespeed.engine.remote import Remote
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.rungs.base import Measured, Rung, RungContext
from wirespeed.engine.serving import PairCommand, PairRun, run_pairs


@dataclass(frozen=True)
class TcpPlan:
    nodes: tuple[str, str]
    flows: tuple[Flow, ...]  # the halves this rung uses
    halves_available: int  # every linked half between the pair, addressed or not
    streams: int
    cores: int  # the client node's CPUs, for pinning (0: nothing pinned)


def measure_flows(
    remote: Remote,
    run_dir: RunDirectory,
    flows: Sequence[Flow],
    *,
    seconds: int,
    bidir: bool,
    folder: str,
    streams: int = 1,
    cores: int = 0,
    sink: list[FlowResult] | None = None,
) -> list[FlowResult]:
    """One iperf3 server per flow, then every client at once; a flow that failed says where and why. Results go
    into `sink` as each client finishes (a rung cut short keeps them)."""
    base_port = random.randint(20000, 40000)  # noqa: S311 - a port choice, not a secret
    commands = []
    pinned: set[int] = set()  # the clients' cores, where a node has a core for each
    for i, flow in enumerate(flows):
        core = i % cores if cores >= len(flows) else None  # pin only when each flow gets its own core
        if core is not None:
            pinned.add(core)
        client = iperf3.client_argv(flow.source_address, flow.target_address, base_port + i, seconds=seconds,
                                    streams=streams, bidir=bidir, core=core)  # fmt: skip
        commands.append(
            PairCommand(
                flow.target[0], tuple(iperf3.server_argv(flow.target_address, base_port + i)), flow.source[0],
                tuple(client), client_file=f"{folder}/iperf3-{i}-{flow.source[0]}-{flow.source[1]}.json",
            )
        )  # fmt: skip
    found: list[FlowResult] = []

    def done(index: int, run: PairRun) -> None:
        flow = flows[index]
        where = f"{flow.source[0]} -> {flow.target[0]} {flow.target[1]}"
        for r in iperf3.flow_results(flow, run.client_stdout, run.error):
            if r.tool_gbps is None:
                r = FlowResult(r.flow, r.direction, None, f"{where}: {r.error}{run.server_note()}")
            found.append(r)
            if sink is not None:
                sink.append(r)

    with kept_off(pinned):  # wirespeed's own threads stay off the clients' cores, should it run on that node
        runs = run_pairs(remote, commands, run_dir, not_listening=iperf3.NOT_LISTENING, timeout_s=seconds + 30.0,
                         on_done=done)  # fmt: skip
    # A server that failed is known only once it is stopped, after its client's result was kept: its note (a node
    # that lost its connection, say) joins the failure it explains.
    for index, run in enumerate(runs):
        note = run.server_note()
        if not note:
            continue
        for results in (found, sink) if sink is not None else (found,):
            for i, r in enumerate(results):
                if r.flow == flows[index] and r.tool_gbps is None and r.error and note not in r.error:
                    results[i] = FlowResult(r.flow, r.direction, None, f"{r.error}{note}")
    return found


def _cpus(facts: NodeFacts) -> int:
    """How many CPUs the client node may use, as discovery read them (0 when unknown: then nothing is pinned)."""
    return facts.cpus if isinstance(facts.cpus, int) else 0


class TcpRung(Rung):
    layer = "tcp"
    tools = (iperf3,)

    def __init__(self, name: str) -> None:
        if name not in ("tcp-single", "tcp-multi", "tcp-halves"):
            raise ValueError(f"not a TCP rung: {name}")
        self.name = name

    def plan(self, ctx: RungContext) -> TcpPlan | NotRunnable:
        found = first_pair_flows(ctx.discovery.facts, ctx.discovery.cabling)
        if isinstance(found, NotRunnable):
            return found
        pair, flows = found
        every = self.name == "tcp-halves"
        return TcpPlan(
            nodes=pair,
            flows=tuple(flows if every else flows[:1]),
            halves_available=max(len(flows), linked_halves(ctx.discovery.cabling, *pair)),
            streams=ctx.options.streams if self.name == "tcp-multi" else 1,
            cores=_cpus(ctx.discovery.facts[pair[0]]) if every else 0,
        )

    def expected_s(self, ctx: RungContext, plan: TcpPlan) -> float:
        return ctx.options.seconds + 1.0  # every flow at once; the servers' start

    def run(self, ctx: RungContext, plan: TcpPlan, measured: Measured) -> None:
        measure_flows(
            ctx.remote, ctx.run_dir, plan.flows, seconds=ctx.options.seconds, bidir=ctx.options.bidir,
            folder=self.name, streams=plan.streams, cores=plan.cores, sink=measured.flows,
        )  # fmt: skip

    def diagnose(self, ctx: RungContext, plan: TcpPlan, result: RungResult) -> Ceiling:
        single = self.name == "tcp-single"
        return diagnose(result, single_flow=single, halves_available=plan.halves_available, defaults=ctx.defaults)
