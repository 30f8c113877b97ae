"""The TCP latency rung, `tcp-lat`: sockperf ping-pong over TCP on every linked half between the first pair of
nodes, one half at a time (so each half's figures are its own), one-way p50, p99 and p99.9 in microseconds. It is
the other side of `rdma-lat`: TCP through the kernel takes tens to hundreds of microseconds where RDMA takes one or
two. Raw output: `tcp-lat/sockperf-<i>-<node>-<iface>.out` for the client and the server of half i."""

from __future__ import annotations

import random
from dataclasses import dataclass

from wirespeed.core.ladder import first_pair_flows
from wirespeed.core.records.results import Flow, Latency, NotRunnable
from wirespeed.core.tools import sockperf
from wirespeed.engine.rungs.base import Measured, Rung, RungContext
from wirespeed.engine.serving import PairCommand, run_pairs


@dataclass(frozen=True)
class TcpLatPlan:
    nodes: tuple[str, str]
    flows: tuple[Flow, ...]


class TcpLatRung(Rung):
    name = "tcp-lat"
    layer = "tcp"
    tools = (sockperf,)
    settle_s = 0.0

    def plan(self, ctx: RungContext) -> TcpLatPlan | NotRunnable:
        found = first_pair_flows(ctx.discovery.facts, ctx.discovery.cabling)
        return found if isinstance(found, NotRunnable) else TcpLatPlan(found[0], tuple(found[1]))

    def expected_s(self, ctx: RungContext, plan: TcpLatPlan) -> float:
        return (ctx.options.seconds + 1.0) * len(plan.flows)  # one half at a time

    def run(self, ctx: RungContext, plan: TcpLatPlan, measured: Measured) -> None:
        size = sockperf.DEFAULT_MESSAGE_BYTES
        failures = []
        for i, flow in enumerate(plan.flows):
            port = random.randint(20000, 40000)  # noqa: S311 - a port choice, not a secret
            client = sockperf.client_argv(flow.target_address, port, seconds=ctx.options.seconds, message_bytes=size,
                                          source_address=flow.source_address)  # fmt: skip
            command = PairCommand(
                flow.target[0], tuple(sockperf.server_argv(flow.target_address, port)), flow.source[0], tuple(client),
                client_file=f"{self.name}/sockperf-{i}-{flow.source[0]}-{flow.source[1]}.out",
                server_file=f"{self.name}/sockperf-{i}-{flow.target[0]}-{flow.target[1]}.out",
            )  # fmt: skip
            [run] = run_pairs(ctx.remote, [command], ctx.run_dir, not_listening=sockperf.NOT_LISTENING,
                              timeout_s=ctx.options.seconds + 30.0, server_exit_wait_s=0.0)  # fmt: skip
            try:
                x = sockperf.parse(run.client_stdout, message_bytes=size)
            except ValueError as exc:  # the text is sockperf's only verdict: its exit status is 0 on errors too
                failures.append(f"{flow.label()}: {run.error or exc}{run.server_note()}")
                continue
            figures = (x.p50_us, x.p99_us, x.p999_us, x.min_us, x.max_us, x.avg_us, x.observations)
            measured.latency.append(Latency(flow, sockperf.NAME, size, *figures, p25_us=x.p25_us, p75_us=x.p75_us))
        if failures:
            measured.failure = "; ".join(failures)
