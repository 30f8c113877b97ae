"""The RDMA rungs, planned and read back. Pure.

One perftest pair per fabric half: each side names its own device, port and RoCE v2 GID index (`-d`, `-i`, `-x`
are local in perftest), and both sides get identical test parameters, which perftest requires. The GID index
comes from discovery, per device: after IPv6 shifted one device's table, a fixed index picks the wrong GID.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wirespeed.core.cabling import CablingMap
from wirespeed.core.facts import NodeFacts, RdmaDevice, RdmaPort, Unknown
from wirespeed.core.ladder import Flow, FlowResult, flows_between
from wirespeed.core.nccl import NotRunnable
from wirespeed.core.parsers import perftest


@dataclass(frozen=True)
class RdmaOptions:
    test: str = "write"  # write (ib_write_*) or send (ib_send_*)
    qps: int = 8
    seconds: int = 5
    size_bytes: int = 65536
    bidir: bool = False
    lat_iterations: int = 1000
    lat_size_bytes: int = 2


@dataclass(frozen=True)
class RdmaEnd:
    node: str
    iface: str
    device: str
    port: int
    gid_index: int | None  # None on InfiniBand (no -x)


@dataclass(frozen=True)
class RdmaPair:
    flow: Flow
    client: RdmaEnd
    server: RdmaEnd


def _end(facts: NodeFacts, iface: str) -> RdmaEnd | NotRunnable:
    device: RdmaDevice | None = next((d for d in facts.rdma if iface in d.netdevs), None)
    if device is None or not device.ports:
        return NotRunnable(f"{facts.node} {iface}: no RDMA device", "wirespeed discover (is the mlx5 driver loaded?)")
    port: RdmaPort = device.ports[0]
    if port.link_layer == "InfiniBand":
        return RdmaEnd(facts.node, iface, device.name, port.number, None)
    if isinstance(port.rocev2_ipv4_index, Unknown):
        return NotRunnable(
            f"{facts.node} {iface} ({device.name}): no RoCE v2 IPv4 GID ({port.rocev2_ipv4_index.reason})",
            "wirespeed check --only gid.rocev2",
        )
    return RdmaEnd(facts.node, iface, device.name, port.number, port.rocev2_ipv4_index)


def plan_rdma(
    facts: Mapping[str, NodeFacts], cabling: CablingMap, client: str, server: str
) -> list[RdmaPair] | NotRunnable:
    """A pair per addressed, linked half between `client` and `server`, or why the RDMA rungs cannot run."""
    for node in (client, server):
        if not facts[node].rdma:
            reason = facts[node].rdma_absent_reason or "none found"
            return NotRunnable(f"{node}: {reason}", "RDMA NICs (RoCE or InfiniBand) with their driver loaded")
        tool = next((t for t in facts[node].tools if t.name == "perftest"), None)
        if tool is None or not isinstance(tool.version, str):
            return NotRunnable(f"{node}: perftest not found", "apt install perftest (the same version on every node)")
    flows = flows_between(facts, cabling, client, server)
    if not flows:
        return NotRunnable(f"no addressed link between {client} and {server}", "wirespeed fix")
    pairs: list[RdmaPair] = []
    for flow in flows:
        a, b = _end(facts[client], flow.source[1]), _end(facts[server], flow.target[1])
        if isinstance(a, NotRunnable):
            return a
        if isinstance(b, NotRunnable):
            return b
        pairs.append(RdmaPair(flow, a, b))
    return pairs


def _common(end: RdmaEnd, tcp_port: int) -> list[str]:
    argv = ["-d", end.device, "-i", str(end.port)]
    if end.gid_index is not None:
        argv += ["-x", str(end.gid_index)]
    return [*argv, "-p", str(tcp_port), "-F"]


def bw_argv(pair: RdmaPair, options: RdmaOptions, tcp_port: int, server: bool) -> list[str]:
    """`ib_write_bw` for one side: its own device/port/GID, the shared test parameters, the client adds the
    server half's address."""
    end = pair.server if server else pair.client
    argv = [f"ib_{options.test}_bw", *_common(end, tcp_port)]
    argv += ["-q", str(options.qps), "-s", str(options.size_bytes), "-D", str(options.seconds), "--report_gbits"]
    if options.bidir:
        argv.append("-b")
    return argv if server else [*argv, pair.flow.target_address]


def lat_argv(pair: RdmaPair, options: RdmaOptions, tcp_port: int, server: bool) -> list[str]:
    end = pair.server if server else pair.client
    argv = [f"ib_{options.test}_lat", *_common(end, tcp_port)]
    argv += ["-s", str(options.lat_size_bytes), "-n", str(options.lat_iterations)]
    return argv if server else [*argv, pair.flow.target_address]


def bw_flow_results(pair: RdmaPair, stdout: str, error: str | None) -> list[FlowResult]:
    """The client's average bandwidth in Gb/s. With `-b` perftest prints both directions added; it is split
    evenly into a forward and a reverse result (perftest gives no per-direction figure), and the wire figures
    of the rung show each direction as the NIC counted it."""
    try:
        parsed = perftest.parse_text(stdout)
    except ValueError as exc:
        return [FlowResult(pair.flow, "forward", None, error or f"perftest output unreadable: {exc}")]
    rows = [r for r in parsed.rows if isinstance(r, perftest.BwRow)]
    if not rows:
        return [FlowResult(pair.flow, "forward", None, error or "perftest printed no bandwidth row")]
    total = rows[-1].bw_avg_gbps
    if not parsed.bidirectional:
        return [FlowResult(pair.flow, "forward", total, error)]
    reverse = Flow(
        pair.flow.target,
        pair.flow.source,
        pair.flow.target_address,
        pair.flow.source_address,
        pair.flow.line_rate_gbps,
        pair.flow.pcie_gbps,
        pair.flow.cable,
        pair.flow.cable_rate_gbps,
    )
    return [FlowResult(pair.flow, "forward", total / 2, error), FlowResult(reverse, "reverse", total / 2, error)]


@dataclass(frozen=True)
class LatencyFigures:
    size_bytes: int
    t_typical_us: float
    t_avg_us: float | None
    p99_us: float | None
    p999_us: float | None

    def line(self) -> str:
        parts = [f"{self.size_bytes} B: typical {self.t_typical_us:.2f} us"]
        parts += [
            f"{name} {v:.2f} us"
            for name, v in (("avg", self.t_avg_us), ("p99", self.p99_us), ("p99.9", self.p999_us))
            if v is not None
        ]
        return ", ".join(parts)


def latency(stdout: str) -> LatencyFigures | str:
    """The client's latency row, or why there is none."""
    try:
        parsed = perftest.parse_text(stdout)
    except ValueError as exc:
        return f"perftest output unreadable: {exc}"
    rows = [r for r in parsed.rows if isinstance(r, perftest.LatRow)]
    if not rows:
        return "perftest printed no latency row"
    r = rows[-1]
    return LatencyFigures(r.size_bytes, r.t_typical_us, r.t_avg_us, r.p99_us, r.p999_us)
