"""The RDMA rungs, planned and read back. Pure.

One perftest pair per fabric half. perftest's `-d` (device), `-i` (port) and `-x` (GID index) are local to the side
that reads them, so each side names its own; every test parameter (`-q`, `-s`, `-D`, `-n`, `-b`) must be the same on
both sides, or perftest refuses or hangs. The GID index is looked up per device, not pinned: it is the RoCE v2 GID
whose IPv4-mapped address (::ffff:a.b.c.d) is the half's own address on that netdev; IPv6 addresses shift it (3 on
one node, 7 on the other is real), and perftest's default picks the link-local GID. InfiniBand needs no `-x`.

Bandwidth comes from the client's table (`--report_gbits`: Gb/s, 10^9 bit/s; an `MB/sec` table is MiB/s and is
converted by the parser). With `-b`, perftest prints both directions added; `--report-both` makes it also print
the client's own sending rate ("Local results") and the server's ("Remote results"), which are the forward and the
reverse direction. Only those split the sum: it is never halved by guess.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass

from wirespeed.core.cabling import CablingMap
from wirespeed.core.facts import NodeFacts, RdmaDevice, RdmaPort, Unknown
from wirespeed.core.ladder import Flow, FlowResult, flows_between
from wirespeed.core.nccl import NotRunnable
from wirespeed.core.parsers import perftest

TESTS = ("write", "send")
GID_FIX = "wirespeed check --only gid.rocev2"
RDMA_FIX = "RDMA NICs (RoCE or InfiniBand) with their driver loaded (mlx5_ib), then `wirespeed discover`"
PERFTEST_FIX = "install perftest on every node (apt install perftest); `wirespeed check --only tools.present`"
_SECTION = re.compile(r"^\s*(?P<side>Local|Remote) results:\s*$", re.MULTILINE)  # --report-both's tables


@dataclass(frozen=True)
class RdmaOptions:
    qps: int = 8  # one QP cannot fill a half; NVIDIA's figures are with several
    seconds: int = 5
    size_bytes: int = 65536  # bandwidth message size
    bidir: bool = False
    lat_iterations: int = 1000
    lat_size_bytes: int = 2
    test: str = "write"  # write (ib_write_*) or send (ib_send_*)
    sample_interval_s: float = 0.5  # the wire sampler's period while a rung runs

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise ValueError(f"RDMA test {self.test!r}: one of {', '.join(TESTS)}")
        numbers = {
            "qps": self.qps,
            "seconds": self.seconds,
            "size_bytes": self.size_bytes,
            "lat_iterations": self.lat_iterations,
            "lat_size_bytes": self.lat_size_bytes,
        }
        low = [f"{name} {value}" for name, value in numbers.items() if value < 1]
        if low or self.sample_interval_s <= 0:
            raise ValueError(f"RDMA options must be positive: {', '.join(low) or 'sample_interval_s'}")


@dataclass(frozen=True)
class RdmaEnd:
    """One side of a pair: the half (node, netdev, its IPv4) and what perftest gets for it there."""

    node: str
    iface: str
    address: str
    device: str
    port: int
    gid_index: int | None  # None on an InfiniBand link layer (no -x)


@dataclass(frozen=True)
class RdmaPair:
    flow: Flow
    client: RdmaEnd
    server: RdmaEnd


def _mapped_ipv4(text: str) -> str | None:
    """The IPv4 address of an IPv4-mapped GID (0000:...:ffff:c0a8:640a), None for any other GID."""
    try:
        mapped = ipaddress.IPv6Address(text).ipv4_mapped
    except ValueError:
        return None
    return None if mapped is None else str(mapped)


def _device(facts: NodeFacts, iface: str) -> RdmaDevice | None:
    netdev = facts.netdev(iface)
    names = netdev.rdma_devices if netdev is not None else ()
    return next((d for d in facts.rdma if iface in d.netdevs or d.name in names), None)


def _port(device: RdmaDevice, iface: str) -> RdmaPort | None:
    """The port that carries `iface`: the one whose GIDs name it, else the device's only (or first active) port."""
    bound = [p for p in device.ports if any(g.ndev == iface for g in p.gids)]
    ports = bound or sorted(device.ports, key=lambda p: (p.state != "ACTIVE", p.number))
    return ports[0] if ports else None


def _end(facts: NodeFacts, iface: str, address: str) -> RdmaEnd | NotRunnable:
    where = f"{facts.node} {iface}"
    device = _device(facts, iface)
    if device is None:
        return NotRunnable(f"{where}: no RDMA device", RDMA_FIX)
    port = _port(device, iface)
    if port is None:
        return NotRunnable(f"{where}: {device.name} has no port", RDMA_FIX)
    if isinstance(port.state, str) and port.state != "ACTIVE":
        return NotRunnable(
            f"{where}: {device.name} port {port.number} is {port.state}",
            f"bring {iface} up on {facts.node} (cable, `ip link set {iface} up`), then `wirespeed discover`",
        )
    if port.link_layer == "InfiniBand":
        return RdmaEnd(facts.node, iface, address, device.name, port.number, None)
    found = sorted(
        g.index
        for g in port.gids
        if g.type == "RoCE v2" and g.ndev in (None, iface) and address in (g.ipv4, _mapped_ipv4(g.gid))
    )
    if not found:
        return NotRunnable(f"{where}: no RoCE v2 GID for {address} ({device.name} port {port.number})", GID_FIX)
    return RdmaEnd(facts.node, iface, address, device.name, port.number, found[0])


def _no_rdma(facts: Mapping[str, NodeFacts], nodes: tuple[str, str]) -> NotRunnable | None:
    def detail(node: str) -> str:
        reason = facts[node].rdma_absent_reason or "none found"
        return reason.removeprefix("no RDMA devices: ")

    lacking = [n for n in nodes if not facts[n].rdma]
    if len(lacking) == len(nodes):
        shown = "; ".join(f"{n}: {detail(n)}" for n in lacking)
        return NotRunnable(f"no RDMA devices on the nodes ({shown})", RDMA_FIX)
    if lacking:
        return NotRunnable(f"{lacking[0]}: no RDMA devices ({detail(lacking[0])})", RDMA_FIX)
    return None


def plan_rdma(
    facts: Mapping[str, NodeFacts], cabling: CablingMap, client: str, server: str, options: RdmaOptions
) -> list[RdmaPair] | NotRunnable:
    """A perftest pair per addressed, linked half between `client` and `server` (in port order), or exactly why
    the RDMA rungs cannot run and what would fix it."""
    absent = _no_rdma(facts, (client, server))
    if absent is not None:
        return absent
    for node in (client, server):
        tool = next((t for t in facts[node].tools if t.name == "perftest"), None)
        if tool is None or not isinstance(tool.version, str):
            why = tool.version.reason if tool is not None and isinstance(tool.version, Unknown) else "not looked for"
            return NotRunnable(f"{node}: perftest not found ({why})", PERFTEST_FIX)
    if options.bidir and options.test == "send":
        # send_bw.c: in duration mode with -b it prints its own side only and exchanges no report with the peer.
        return NotRunnable(
            "ib_send_bw -b -D reports one side only (perftest exchanges no reports in duration mode)",
            "use the write test for both directions at once",
        )
    flows = flows_between(facts, cabling, client, server)
    if not flows:
        return NotRunnable(f"no addressed link between {client} and {server}", "wirespeed fix")
    pairs: list[RdmaPair] = []
    for flow in flows:
        a = _end(facts[client], flow.source[1], flow.source_address)
        if isinstance(a, NotRunnable):
            return a
        b = _end(facts[server], flow.target[1], flow.target_address)
        if isinstance(b, NotRunnable):
            return b
        pairs.append(RdmaPair(flow, a, b))
    return pairs


def _argv(end: RdmaEnd, options: RdmaOptions, tcp_port: int, lat: bool) -> list[str]:
    argv = [f"ib_{options.test}_{'lat' if lat else 'bw'}", "-d", end.device, "-i", str(end.port)]
    if end.gid_index is not None:
        argv += ["-x", str(end.gid_index)]
    if lat:
        return [*argv, "-s", str(options.lat_size_bytes), "-n", str(options.lat_iterations), "-F", "-p", str(tcp_port)]
    argv += ["-q", str(options.qps), "-s", str(options.size_bytes), "-D", str(options.seconds)]
    argv += ["-F", "--report_gbits", "-p", str(tcp_port)]
    if options.bidir:
        argv += ["-b", "--report-both"]  # --report-both: each direction's own figure besides their sum
    return argv


def server_argv(pair: RdmaPair, options: RdmaOptions, tcp_port: int, lat: bool = False) -> list[str]:
    """The server side: its own device, port and GID index, the shared test parameters, no address."""
    return _argv(pair.server, options, tcp_port, lat)


def client_argv(pair: RdmaPair, options: RdmaOptions, tcp_port: int, lat: bool = False) -> list[str]:
    """The client side: the server's arguments with the client's own device, port and GID index, then the
    server half's IPv4 (perftest's out-of-band TCP connection goes there, over that half's subnet)."""
    return [*_argv(pair.client, options, tcp_port, lat), pair.server.address]


def _bw_gbps(parsed: perftest.PerftestResult) -> float | None:
    """The rate of the largest message size: the mean of its rows (several only with --run_infinitely)."""
    rows = [r for r in parsed.rows if isinstance(r, perftest.BwRow)]
    if not rows:
        return None
    largest = max(r.size_bytes for r in rows)
    rates = [r.bw_avg_gbps for r in rows if r.size_bytes == largest]
    return sum(rates) / len(rates)


def _sections(stdout: str) -> dict[str, float]:
    """--report-both's "Local results" and "Remote results" tables, each read by the perftest parser."""
    found: dict[str, float] = {}
    for match in _SECTION.finditer(stdout):
        try:
            rate = _bw_gbps(perftest.parse_text(stdout[match.end() :]))
        except ValueError:
            continue
        if rate is not None:
            found.setdefault(match["side"], rate)
    return found


def reverse_flow(flow: Flow) -> Flow:
    """The same half, server to client: what the server sends under `-b`."""
    return Flow(
        flow.target,
        flow.source,
        flow.target_address,
        flow.source_address,
        flow.line_rate_gbps,
        flow.pcie_gbps,
        flow.cable,
        flow.cable_rate_gbps,
    )


def flow_result(pair: RdmaPair, client_stdout: str, error: str | None = None) -> list[FlowResult]:
    """The client's bandwidth in Gb/s: one forward result, or with `-b` a forward (client's own sending rate) and a
    reverse one (the server's), read from `--report-both`'s tables. A sum without them is reported as what it
    is, with no per-direction figure: halving it would invent one. `error` is the run's own failure, if any."""
    try:
        parsed = perftest.parse_text(client_stdout)
    except ValueError as exc:
        return [FlowResult(pair.flow, "forward", None, error or f"perftest output unreadable: {exc}")]
    total = _bw_gbps(parsed)
    if total is None:
        return [FlowResult(pair.flow, "forward", None, error or "perftest printed a latency table, not bandwidth")]
    if not parsed.bidirectional:
        return [FlowResult(pair.flow, "forward", total, error)]
    sides = _sections(client_stdout)
    if "Local" not in sides or "Remote" not in sides:
        why = f"perftest printed both directions added ({total:.2f} Gb/s) without each one (--report-both)"
        return [FlowResult(pair.flow, "forward", None, f"{error}; {why}" if error else why)]
    return [
        FlowResult(pair.flow, "forward", sides["Local"], error),
        FlowResult(reverse_flow(pair.flow), "reverse", sides["Remote"], error),
    ]


@dataclass(frozen=True)
class LatencyFigures:
    """One-way latency as perftest prints it (it halves the round trip), microseconds. t_typical is the median;
    the average and percentiles are None where the perftest version did not print them."""

    size_bytes: int
    iterations: int
    t_min_us: float
    t_typical_us: float
    t_avg_us: float | None
    p99_us: float | None
    p999_us: float | None
    t_max_us: float

    def text(self) -> str:
        parts = [f"t_typical {self.t_typical_us:.2f} us"]
        optional = (("t_avg", self.t_avg_us), ("p99", self.p99_us), ("p99.9", self.p999_us))
        parts += [f"{name} {value:.2f} us" for name, value in optional if value is not None]
        parts += [f"t_min {self.t_min_us:.2f} us", f"t_max {self.t_max_us:.2f} us"]
        return f"{', '.join(parts)} ({self.size_bytes} B, {self.iterations} iterations)"


def latency_figures(client_stdout: str) -> LatencyFigures:
    """The latency of the smallest message in the client's table; ValueError says why there is none."""
    parsed = perftest.parse_text(client_stdout)
    rows = [r for r in parsed.rows if isinstance(r, perftest.LatRow)]
    if not rows:
        raise ValueError("perftest printed a bandwidth table, not latency")
    row = min(rows, key=lambda r: r.size_bytes)
    return LatencyFigures(
        row.size_bytes, row.iterations, row.t_min_us, row.t_typical_us, row.t_avg_us, row.p99_us, row.p999_us,
        row.t_max_us,
    )  # fmt: skip
