"""The RDMA rungs: the plan (a perftest pair per half, each side's own device and the RoCE v2 GID index that
carries that half's IPv4), perftest's argv on both sides, why a rung cannot run, the reading of real ib_write_bw
output from a Spark pair, and the engine driven through a fake execution layer (servers stopped, files kept)."""

from __future__ import annotations

import json
import shlex
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from wirespeed.core.cluster.inventory import Cluster, Node
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import Gid, NodeFacts, Tool, Unknown
from wirespeed.core.fabric.rdma import GID_FIX, RdmaOptions, RdmaPair, client_argv, plan_rdma, server_argv
from wirespeed.core.outcome import CommandResult, Status
from wirespeed.core.records.options import BenchOptions
from wirespeed.core.records.results import Direction, Latency, NotRunnable, RungResult, RungStatus
from wirespeed.core.tools.perftest import flow_results, latency
from wirespeed.engine import serving
from wirespeed.engine.discover import discover_snapshots
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.rungs.base import RungContext, run_rung
from wirespeed.engine.rungs.rdma import RdmaBwRung, RdmaLatRung

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"
REAL = Path(__file__).parent.parent / "fixtures" / "real" / "perftest"
CLIENT1 = REAL / "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt"
CLIENT2 = REAL / "ib_write_bw_spark_report_gbits_run_infinitely_client2.txt"
MIB_GBPS = 2**20 * 8 / 1e9  # one perftest MB/sec (2^20 bytes/s) in Gb/s


@pytest.fixture(scope="module")
def sparks() -> Discovery:
    return discover_snapshots([SNAPSHOTS / "spark-two-cables"])


def plan(found: Discovery, facts: dict[str, NodeFacts] | None = None, **options: Any) -> list[RdmaPair] | NotRunnable:
    return plan_rdma(facts or dict(found.facts), found.cabling, "spark-1", "spark-2", RdmaOptions(**options))


def pairs(found: Discovery) -> list[RdmaPair]:
    planned = plan(found)
    assert not isinstance(planned, NotRunnable), planned
    return planned


def with_gids(facts: NodeFacts, device: str, gids: Sequence[Gid]) -> NodeFacts:
    """`facts` with one RDMA device's port 1 GID table replaced."""
    devices = tuple(
        replace(d, ports=(replace(d.ports[0], gids=tuple(gids)), *d.ports[1:])) if d.name == device else d
        for d in facts.rdma
    )
    return replace(facts, rdma=devices)


# ------------------------------------------------------------------------------------------------------ plan


def test_two_sparks_a_pair_per_half_each_side_its_own_device_and_gid(sparks: Discovery) -> None:
    planned = pairs(sparks)
    # Client (iface, device, GID index, address) and server (the same), in port order: port 0 halves, then port 1.
    assert [(p.client.iface, p.client.device, p.client.gid_index, p.client.address) for p in planned] == [
        ("enp1s0f0np0", "rocep1s0f0", 3, "192.168.102.10"),
        ("enP2p1s0f0np0", "roceP2p1s0f0", 3, "192.168.103.10"),
        ("enp1s0f1np1", "rocep1s0f1", 3, "192.168.100.10"),
        ("enP2p1s0f1np1", "roceP2p1s0f1", 3, "192.168.101.10"),
    ]
    assert [(p.server.iface, p.server.device, p.server.gid_index, p.server.address) for p in planned] == [
        ("enp1s0f0np0", "rocep1s0f0", 3, "192.168.102.11"),
        ("enP2p1s0f0np0", "roceP2p1s0f0", 3, "192.168.103.11"),
        ("enp1s0f1np1", "rocep1s0f1", 3, "192.168.100.11"),
        ("enP2p1s0f1np1", "roceP2p1s0f1", 3, "192.168.101.11"),
    ]
    assert {(p.client.node, p.server.node) for p in planned} == {("spark-1", "spark-2")}
    assert {(p.client.port, p.server.port) for p in planned} == {(1, 1)}
    # Index 3 is the RoCE v2 GID of the half's address in the fixture (index 2 holds the same address as RoCE v1).
    gids = {g.index: g for d in sparks.facts["spark-2"].rdma if d.name == "rocep1s0f1" for g in d.ports[0].gids}
    assert (gids[3].gid, gids[3].type) == ("0000:0000:0000:0000:0000:ffff:c0a8:640b", "RoCE v2")
    assert (gids[2].gid, gids[2].type) == ("0000:0000:0000:0000:0000:ffff:c0a8:640b", "IB/RoCE v1")


def test_ipv6_shifted_gid_table_gives_each_side_its_own_index() -> None:
    planned = pairs(discover_snapshots([SNAPSHOTS / "spark-gid-ipv6"]))
    assert [(p.client.device, p.client.gid_index, p.server.gid_index) for p in planned] == [
        ("rocep1s0f1", 3, 7),  # spark-2 enp1s0f1np1 has IPv6 on: its IPv4 pair sits at 6/7
        ("roceP2p1s0f1", 3, 3),
    ]
    server, client = server_argv(planned[0], RdmaOptions(), 20000), client_argv(planned[0], RdmaOptions(), 20000)
    assert server[server.index("-x") + 1] == "7" and client[client.index("-x") + 1] == "3"


def test_the_gid_is_the_one_carrying_the_halfs_own_address_not_a_fixed_index(sparks: Discovery) -> None:
    facts = dict(sparks.facts)
    ndev = "enp1s0f0np0"
    facts["spark-1"] = with_gids(
        facts["spark-1"],
        "rocep1s0f0",
        [
            Gid(0, "fe80:0000:0000:0000:3e6d:66ff:fe55:e470", "IB/RoCE v1", ndev, None),
            Gid(1, "fe80:0000:0000:0000:3e6d:66ff:fe55:e470", "RoCE v2", ndev, None),
            Gid(2, "0000:0000:0000:0000:0000:ffff:0a00:000b", "IB/RoCE v1", ndev, "10.0.0.11"),
            Gid(3, "0000:0000:0000:0000:0000:ffff:0a00:000b", "RoCE v2", ndev, "10.0.0.11"),  # another address
            Gid(4, "0000:0000:0000:0000:0000:ffff:c0a8:660a", "RoCE v2", "other0", None),  # another netdev
            Gid(5, "0000:0000:0000:0000:0000:ffff:c0a8:660a", "IB/RoCE v1", ndev, None),  # RoCE v1
            Gid(6, "0000:0000:0000:0000:0000:ffff:c0a8:660a", "RoCE v2", ndev, None),  # ipv4 read from the GID
        ],
    )
    first = pairs(replace(sparks, facts=facts))[0]
    assert (first.client.device, first.client.gid_index, first.server.gid_index) == ("rocep1s0f0", 6, 3)


def test_infiniband_link_layer_gets_no_gid_index(sparks: Discovery) -> None:
    facts = dict(sparks.facts)
    for node in ("spark-1", "spark-2"):
        devices = tuple(
            replace(d, ports=tuple(replace(p, link_layer="InfiniBand", gids=()) for p in d.ports))
            for d in facts[node].rdma
        )
        facts[node] = replace(facts[node], rdma=devices)
    first = pairs(replace(sparks, facts=facts))[0]
    assert (first.client.gid_index, first.server.gid_index) == (None, None)
    assert server_argv(first, RdmaOptions(), 21000) == [
        "ib_write_bw", "-d", "rocep1s0f0", "-i", "1", "-q", "8", "-s", "65536", "-D", "5", "-F", "--report_gbits",
        "-p", "21000",
    ]  # fmt: skip


# ------------------------------------------------------------------------------------------------------ argv


def test_bandwidth_argv_on_both_sides(sparks: Discovery) -> None:
    pair = pairs(sparks)[2]  # port 1, half 0
    options = RdmaOptions(qps=8, seconds=5, size_bytes=65536)
    assert server_argv(pair, options, 23456) == [
        "ib_write_bw", "-d", "rocep1s0f1", "-i", "1", "-x", "3", "-q", "8", "-s", "65536", "-D", "5", "-F",
        "--report_gbits", "-p", "23456",
    ]  # fmt: skip
    assert client_argv(pair, options, 23456) == [
        "ib_write_bw", "-d", "rocep1s0f1", "-i", "1", "-x", "3", "-q", "8", "-s", "65536", "-D", "5", "-F",
        "--report_gbits", "-p", "23456", "192.168.100.11",
    ]  # fmt: skip
    bidir = RdmaOptions(qps=4, seconds=10, size_bytes=1 << 20, bidir=True)
    assert server_argv(pair, bidir, 30001) == [
        "ib_write_bw", "-d", "rocep1s0f1", "-i", "1", "-x", "3", "-q", "4", "-s", "1048576", "-D", "10", "-F",
        "--report_gbits", "-p", "30001", "-b", "--report-both",
    ]  # fmt: skip
    assert client_argv(pair, bidir, 30001) == [*server_argv(pair, bidir, 30001), "192.168.100.11"]


def test_latency_argv_on_both_sides(sparks: Discovery) -> None:
    pair = pairs(sparks)[1]  # port 0, half 1
    options = RdmaOptions(lat_iterations=5000, lat_size_bytes=8)
    assert server_argv(pair, options, 24000, lat=True) == [
        "ib_write_lat", "-d", "roceP2p1s0f0", "-i", "1", "-x", "3", "-s", "8", "-n", "5000", "-F", "-p", "24000",
    ]  # fmt: skip
    assert client_argv(pair, options, 24000, lat=True) == [
        "ib_write_lat", "-d", "roceP2p1s0f0", "-i", "1", "-x", "3", "-s", "8", "-n", "5000", "-F", "-p", "24000",
        "192.168.103.11",
    ]  # fmt: skip
    assert client_argv(pair, RdmaOptions(test="send"), 24001, lat=True) == [
        "ib_send_lat", "-d", "roceP2p1s0f0", "-i", "1", "-x", "3", "-s", "2", "-n", "1000", "-F", "-p", "24001",
        "192.168.103.11",
    ]  # fmt: skip


def _local_values_removed(argv: list[str]) -> list[str]:
    """argv without the values that are local to a side in perftest (-d, -i, -x)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("-d", "-i", "-x"):
            skip = True
        out.append(arg)
    return out


@pytest.mark.parametrize("lat", [False, True])
@pytest.mark.parametrize("bidir", [False, True])
def test_both_sides_get_identical_test_parameters_only_the_client_adds_the_address(lat: bool, bidir: bool) -> None:
    # spark-gid-ipv6: GID index 3 on the client, 7 on the server: the local values differ, the test parameters not.
    pair = pairs(discover_snapshots([SNAPSHOTS / "spark-gid-ipv6"]))[0]
    options = RdmaOptions(qps=6, seconds=7, size_bytes=4096, bidir=bidir, lat_iterations=200, lat_size_bytes=64)
    server, client = server_argv(pair, options, 25000, lat), client_argv(pair, options, 25000, lat)
    assert client[-1] == "192.168.100.11" and "192.168.100.11" not in server
    assert _local_values_removed(client[:-1]) == _local_values_removed(server)
    assert client[:-1] != server  # the -x values differ (3 and 7): each side names its own
    assert ("-b" in server) == (bidir and not lat)


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="read"):
        RdmaOptions(test="read")
    with pytest.raises(ValueError, match="qps 0"):
        RdmaOptions(qps=0)


# ------------------------------------------------------------------------------------------------ not runnable


def test_no_rdma_on_a_node_or_on_both(sparks: Discovery) -> None:
    facts = dict(sparks.facts)
    facts["spark-2"] = replace(
        facts["spark-2"], rdma=(), rdma_absent_reason="no RDMA devices: /sys/class/infiniband is empty"
    )
    one = plan(sparks, facts)
    assert one == NotRunnable(
        "spark-2: no RDMA devices (/sys/class/infiniband is empty)",
        "RDMA NICs (RoCE or InfiniBand) with their driver loaded (mlx5_ib), then `wirespeed discover`",
    )
    facts["spark-1"] = replace(
        facts["spark-1"], rdma=(), rdma_absent_reason="no RDMA devices: /sys/class/infiniband does not exist"
    )
    both = plan(sparks, facts)
    assert isinstance(both, NotRunnable)
    assert both.reason == (
        "no RDMA devices on the nodes (spark-1: /sys/class/infiniband does not exist; "
        "spark-2: /sys/class/infiniband is empty)"
    )
    assert both.fix.startswith("RDMA NICs (RoCE or InfiniBand)")


def test_a_half_without_an_rdma_device(sparks: Discovery) -> None:
    facts = dict(sparks.facts)
    spark2 = facts["spark-2"]
    netdevs = tuple(replace(n, rdma_devices=()) if n.name == "enp1s0f1np1" else n for n in spark2.netdevs)
    facts["spark-2"] = replace(spark2, rdma=tuple(d for d in spark2.rdma if d.name != "rocep1s0f1"), netdevs=netdevs)
    reason = plan(sparks, facts)
    assert isinstance(reason, NotRunnable) and reason.reason == "spark-2 enp1s0f1np1: no RDMA device"


def test_a_half_without_its_rocev2_gid(sparks: Discovery) -> None:
    facts = dict(sparks.facts)
    only_link_local = [g for d in facts["spark-1"].rdma if d.name == "rocep1s0f0" for g in d.ports[0].gids[:2]]
    facts["spark-1"] = with_gids(facts["spark-1"], "rocep1s0f0", only_link_local)
    assert plan(sparks, facts) == NotRunnable(
        "spark-1 enp1s0f0np0: no RoCE v2 GID for 192.168.102.10 (rocep1s0f0 port 1)",
        "wirespeed check --only gid.rocev2",
    )
    # A RoCE v1 GID with the address is not enough either.
    v1_only = [g for d in sparks.facts["spark-1"].rdma if d.name == "rocep1s0f0" for g in d.ports[0].gids[:3]]
    facts["spark-1"] = with_gids(sparks.facts["spark-1"], "rocep1s0f0", v1_only)
    refused = plan(sparks, facts)
    assert isinstance(refused, NotRunnable) and refused.fix == GID_FIX and "192.168.102.10" in refused.reason


def test_a_port_that_is_down(sparks: Discovery) -> None:
    facts = dict(sparks.facts)
    spark1 = facts["spark-1"]
    devices = tuple(
        replace(d, ports=(replace(d.ports[0], state="DOWN"),)) if d.name == "roceP2p1s0f1" else d for d in spark1.rdma
    )
    facts["spark-1"] = replace(spark1, rdma=devices)
    reason = plan(sparks, facts)
    assert isinstance(reason, NotRunnable) and reason.reason == "spark-1 enP2p1s0f1np1: roceP2p1s0f1 port 1 is DOWN"


@pytest.mark.parametrize("node", ["spark-1", "spark-2"])
def test_perftest_missing(sparks: Discovery, node: str) -> None:
    facts = dict(sparks.facts)
    tools = tuple(
        Tool("perftest", Unknown("ib_write_bw: command not found")) if t.name == "perftest" else t
        for t in facts[node].tools
    )
    facts[node] = replace(facts[node], tools=tools)
    reason = plan(sparks, facts)
    assert isinstance(reason, NotRunnable)
    assert reason.reason == f"{node}: perftest not found (ib_write_bw: command not found)"
    assert "apt install perftest" in reason.fix
    facts[node] = replace(facts[node], tools=tuple(t for t in facts[node].tools if t.name != "perftest"))
    absent = plan(sparks, facts)
    assert isinstance(absent, NotRunnable) and absent.reason.startswith(f"{node}: perftest not found")


def test_no_link_and_send_both_ways(sparks: Discovery) -> None:
    unlinked = replace(sparks, cabling=replace(sparks.cabling, links=()))
    assert plan(unlinked) == NotRunnable("no addressed link between spark-1 and spark-2", "wirespeed fix")
    send_bidir = plan(sparks, test="send", bidir=True)
    assert isinstance(send_bidir, NotRunnable) and "ib_send_bw -b -D" in send_bidir.reason
    assert isinstance(plan(sparks, test="send"), list)


# ------------------------------------------------------------------------------------------------ results

DASHES = "---------------------------------------------------------------------------------------\n"
HEADER = (
    DASHES + "                    {title}\n"
    " Dual-port       : OFF\t\tDevice         : rocep1s0f0\n"
    " Number of qps   : 8\t\tTransport type : IB\n"
    " Connection type : RC\t\tUsing SRQ      : OFF\n"
    " Mtu             : 4096[B]\n"
    " Link type       : Ethernet\n"
    " GID index       : 3\n" + DASHES
)
GB_TABLE = (
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
    " 65536      {iters:<10}       0.00               {avg:<7.2f}\t\t     {rate:<7.6f}\n"
)


def test_real_spark_runs_read_in_gbps_as_a_person_reads_them(sparks: Discovery) -> None:
    pair = pairs(sparks)[0]
    [first] = flow_results(pair.flow, CLIENT1.read_text())
    [second] = flow_results(pair.flow, CLIENT2.read_text())
    # --run_infinitely printed one row per period: 92.57 (four times) and 92.56; 97.28 (five times) and 97.29.
    assert (first.direction, first.error) == (Direction.FORWARD, None)
    assert first.tool_gbps == pytest.approx((4 * 92.57 + 92.56) / 5)
    assert second.tool_gbps == pytest.approx((5 * 97.28 + 97.29) / 6)
    assert (first.tool_gbps or 0) + (second.tool_gbps or 0) == pytest.approx(189.85, abs=0.01)  # the guide's sum
    assert first.flow == pair.flow


def test_a_mb_per_sec_table_is_mebibytes(sparks: Discovery) -> None:
    pair = pairs(sparks)[0]
    text = (
        HEADER.format(title="RDMA_Write BW Test")
        + " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
        + " 65536      664644           0.00               11200.50\t\t     0.179208\n"
        + DASHES
    )
    [result] = flow_results(pair.flow, text)
    assert result.tool_gbps == pytest.approx(11200.50 * MIB_GBPS)  # 93.96 Gb/s, not 89.60
    assert result.tool_gbps == pytest.approx(93.96, abs=0.005)


def test_both_directions_come_from_report_both_never_from_halving(sparks: Discovery) -> None:
    pair = pairs(sparks)[0]
    title = "RDMA_Write Bidirectional BW Test"
    table = (
        HEADER.format(title=title)
        + GB_TABLE.format(iters=5000, avg=183.50, rate=0.350000)
        + DASHES
        + "\n Local results: \n"
        + DASHES
        + GB_TABLE.format(iters=2500, avg=94.80, rate=0.180817)
        + DASHES
        + "\n Remote results: \n"
        + DASHES
        + GB_TABLE.format(iters=2500, avg=88.70, rate=0.169183)
        + DASHES
    )
    forward, reverse = flow_results(pair.flow, table)
    assert (forward.direction, forward.tool_gbps, forward.flow) == (Direction.FORWARD, 94.80, pair.flow)
    assert (reverse.direction, reverse.tool_gbps) == (Direction.REVERSE, 88.70)
    assert reverse.flow == pair.flow.reversed()
    assert (reverse.flow.source, reverse.flow.target) == (pair.flow.target, pair.flow.source)
    assert (reverse.flow.source_address, reverse.flow.target_address) == ("192.168.102.11", "192.168.102.10")
    # The sum alone says nothing of each direction: no figure is invented, the sum is named in the error.
    [summed] = flow_results(pair.flow, HEADER.format(title=title) + GB_TABLE.format(iters=5000, avg=183.50, rate=0.35))
    assert summed.tool_gbps is None and summed.error is not None
    assert "183.50 Gb/s" in summed.error and "--report-both" in summed.error


def test_failed_and_unreadable_runs_keep_their_error(sparks: Discovery) -> None:
    pair = pairs(sparks)[0]
    refused = "Couldn't connect to 192.168.102.11:20000\nUnable to open file descriptor for socket connection"
    [result] = flow_results(pair.flow, refused, "spark-1: ib_write_bw exited with status 1")
    assert (result.tool_gbps, result.error) == (None, "spark-1: ib_write_bw exited with status 1")
    [bare] = flow_results(pair.flow, "")
    assert bare.tool_gbps is None and bare.error is not None and bare.error.startswith("perftest output unreadable")
    [wrong] = flow_results(pair.flow, HEADER.format(title="RDMA_Write Latency Test") + LAT_TABLE)
    assert wrong.tool_gbps is None and wrong.error == "perftest printed a latency table, not bandwidth"


LAT_TABLE = (
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
    "   99% percentile[usec]   99.9% percentile[usec] \n"
    " 2       1000          1.61           5.36         1.66     \t       1.68        "
    "\t0.08   \t\t2.07    \t\t5.36   \n" + DASHES
)


def test_latency_figures_in_microseconds(sparks: Discovery) -> None:
    pair = pairs(sparks)[0]
    figures = latency(pair.flow, HEADER.format(title="RDMA_Write Latency Test") + LAT_TABLE)
    assert figures == Latency(
        pair.flow, "perftest", message_bytes=2, p50_us=1.66, p99_us=2.07, p999_us=5.36, min_us=1.61, max_us=5.36,
        avg_us=1.68, samples=1000,
    )  # fmt: skip
    with pytest.raises(ValueError, match="bandwidth table"):
        latency(pair.flow, CLIENT1.read_text())


# ------------------------------------------------------------------------------------------------ engine


@dataclass
class FakeProcess:
    node: str
    argv: tuple[str, ...]
    stopped: bool = False

    def running(self) -> bool:
        return False  # a perftest server ends by itself once its client is done

    def stop(self, grace_s: float = 5.0) -> CommandResult:
        self.stopped = True
        return CommandResult(self.node, self.argv, Status.OK, 0, f"server {self.argv[2]}\n", "", 0.0, "ok")


@dataclass
class FakeSampler:
    """A node's `agent sample` that sends no sample: the rung's wire figures stay empty."""

    node: Node
    argv: tuple[str, ...]
    popen: Any = field(default_factory=lambda: SimpleNamespace(stdin=None))
    stopped: bool = False

    def lines(self) -> Iterator[str]:
        return iter(())

    def running(self) -> bool:
        return False

    def stop(self, grace_s: float = 5.0) -> CommandResult:
        self.stopped = True
        return CommandResult(self.node.name, self.argv, Status.OK, 0, "", "", 0.0, f"{self.node.name}: stopped")


@dataclass
class FakeRemote:
    """Answers perftest clients with `answers(argv, attempt)`; records servers started and clients run, and the
    wire recorder's samplers apart from them."""

    answers: Any
    fail_start_at: int | None = None
    cluster: Cluster = field(
        default_factory=lambda: Cluster("fake", (Node("spark-1", "10.0.0.11"), Node("spark-2", "10.0.0.12")), "test")
    )
    servers: list[FakeProcess] = field(default_factory=list)
    samplers: list[FakeSampler] = field(default_factory=list)
    clients: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def agent_argv(self, node: Node) -> list[str]:
        return ["wirespeed"]

    def start(self, node: Node, argv: Sequence[str]) -> FakeProcess | FakeSampler:
        if "agent" in argv and "sample" in argv:
            sampler = FakeSampler(node, tuple(argv))
            self.samplers.append(sampler)
            return sampler
        if self.fail_start_at is not None and len(self.servers) == self.fail_start_at:
            raise KeyboardInterrupt
        process = FakeProcess(node.name, tuple(argv))
        self.servers.append(process)
        return process

    def run(self, node: Node, argv: Sequence[str], *, timeout_s: float | None = 60.0) -> CommandResult:
        with self.lock:
            attempt = sum(1 for _, a in self.clients if a == tuple(argv))
            self.clients.append((node.name, tuple(argv)))
        rc, stdout, stderr = self.answers(tuple(argv), attempt)
        status = Status.OK if rc == 0 else Status.FAILED
        return CommandResult(node.name, tuple(argv), status, rc, stdout, stderr, 0.1, f"{node.name}: exit {rc}")


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake servers listen at once: no pause for them to bind, none between a client's tries."""
    monkeypatch.setattr(serving, "BIND_WAIT_S", 0.0)
    monkeypatch.setattr(serving, "RETRY_PAUSE_S", 0.0)


def context(remote: FakeRemote, discovery: Discovery, run_dir: RunDirectory) -> RungContext:
    return RungContext(remote, discovery, BenchOptions(), run_dir)  # type: ignore[arg-type]


def written(run_dir: RunDirectory, rung: str) -> RungResult:
    return RungResult.from_json(json.loads((run_dir.path / f"{rung}.json").read_text()), f"{rung}.json")


def test_bw_rung_runs_every_half_at_once_and_stops_every_server(sparks: Discovery, tmp_path: Path) -> None:
    real = CLIENT1.read_text()

    def answers(argv: tuple[str, ...], attempt: int) -> tuple[int, str, str]:
        if argv[2] == "rocep1s0f0" and attempt == 0:  # its server was not listening yet
            return 1, "", "Couldn't connect to 192.168.102.11:20000\n"
        if argv[2] == "roceP2p1s0f1":
            return 1, "", "Failed to modify QP to RTR\n"
        return 0, real, ""

    remote = FakeRemote(answers)
    run_dir = RunDirectory(tmp_path)
    result = run_rung(RdmaBwRung(), context(remote, sparks, run_dir))
    planned = pairs(sparks)
    port = int(remote.servers[0].argv[remote.servers[0].argv.index("-p") + 1])
    assert [(s.node, list(s.argv)) for s in remote.servers] == [
        ("spark-2", server_argv(p, RdmaOptions(), port + i)) for i, p in enumerate(planned)
    ]
    assert all(s.stopped for s in remote.servers)
    assert {n for n, _ in remote.clients} == {"spark-1"}
    assert sum(1 for _, a in remote.clients if a[2] == "rocep1s0f0") == 2  # retried once
    assert result.rung == "rdma-bw" and result.status is RungStatus.FAILED
    assert result.reason == (
        "spark-1 enP2p1s0f1np1 (roceP2p1s0f1) -> spark-2 enP2p1s0f1np1 (roceP2p1s0f1): spark-1: exit 1"
    )
    kept = [r.tool_gbps for r in result.flows]
    assert kept[:3] == pytest.approx([92.568] * 3) and kept[3] is None  # what finished stays
    out = run_dir.path / "rdma-bw"
    assert (out / "perftest-0-spark-1-enp1s0f0np0.out").read_text() == real
    assert (out / "perftest-0-spark-2-enp1s0f0np0.out").read_text() == "server rocep1s0f0\n"
    # the wire was recorded on both nodes of the plan, and its samplers stopped; the record is in the run
    assert sorted(s.node.name for s in remote.samplers) == ["spark-1", "spark-2"]
    assert all(s.stopped for s in remote.samplers)
    assert written(run_dir, "rdma-bw") == result


def test_a_clients_stderr_is_kept_beside_its_output_as_err(sparks: Discovery, tmp_path: Path) -> None:
    def answers(argv: tuple[str, ...], attempt: int) -> tuple[int, str, str]:
        return (1, "", "Failed to modify QP to RTR\n") if argv[2] == "roceP2p1s0f1" else (0, CLIENT1.read_text(), "")

    run_dir = RunDirectory(tmp_path)
    run_rung(RdmaBwRung(), context(FakeRemote(answers), sparks, run_dir))
    out = run_dir.path / "rdma-bw"
    assert (out / "perftest-3-spark-1-enP2p1s0f1np1.err").read_text() == "Failed to modify QP to RTR\n"


def test_bw_rung_that_ran_gets_a_ceiling(sparks: Discovery, tmp_path: Path) -> None:
    remote = FakeRemote(lambda argv, attempt: (0, CLIENT2.read_text(), ""))
    result = run_rung(RdmaBwRung(), context(remote, sparks, RunDirectory(tmp_path)))
    assert result.status is RungStatus.RAN and result.ceiling is not None and len(result.flows) == 4
    assert result.total_gbps() == pytest.approx(4 * 97.2817, abs=0.01)


def test_interrupted_while_starting_servers_stops_those_started(sparks: Discovery, tmp_path: Path) -> None:
    remote = FakeRemote(lambda argv, attempt: (0, "", ""), fail_start_at=2)
    run_dir = RunDirectory(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_rung(RdmaBwRung(), context(remote, sparks, run_dir))
    assert len(remote.servers) == 2 and all(s.stopped for s in remote.servers)
    assert remote.clients == []
    assert remote.samplers and all(s.stopped for s in remote.samplers)
    cut = written(run_dir, "rdma-bw")  # written as interrupted, on the way out
    assert cut.status is RungStatus.INTERRUPTED and cut.reason == "interrupted (Ctrl-C)"


def test_lat_rung_one_half_figures_in_its_latency(sparks: Discovery, tmp_path: Path) -> None:
    text = HEADER.format(title="RDMA_Write Latency Test") + LAT_TABLE
    remote = FakeRemote(lambda argv, attempt: (0, text, ""))
    run_dir = RunDirectory(tmp_path)
    result = run_rung(RdmaLatRung(), context(remote, sparks, run_dir))
    assert [s.argv[0] for s in remote.servers] == ["ib_write_lat"] and remote.servers[0].stopped
    assert result.rung == "rdma-lat" and result.status is RungStatus.RAN and result.flows == ()
    [figures] = result.latency
    assert figures == Latency(
        pairs(sparks)[0].flow, "perftest", message_bytes=2, p50_us=1.66, p99_us=2.07, p999_us=5.36, min_us=1.61,
        max_us=5.36, avg_us=1.68, samples=1000,
    )  # fmt: skip
    assert figures.flow.label() == "spark-1 enp1s0f0np0 -> spark-2 enp1s0f0np0"
    assert (result.p50_us, result.p99_us) == (1.66, 2.07) and result.notes == ()
    assert written(run_dir, "rdma-lat") == result


def test_a_rung_that_cannot_run_is_skipped_with_its_fix(sparks: Discovery, tmp_path: Path) -> None:
    facts = {n: replace(f, rdma=(), rdma_absent_reason="no RDMA devices: none found") for n, f in sparks.facts.items()}
    remote = FakeRemote(lambda argv, attempt: (0, "", ""))
    bare = replace(sparks, facts=facts)
    run_dir = RunDirectory(tmp_path)
    result = run_rung(RdmaBwRung(), context(remote, bare, run_dir))
    assert (result.status, result.reason) == (
        RungStatus.SKIPPED,
        "no RDMA devices on the nodes (spark-1: none found; spark-2: none found)",
    )
    assert result.fix is not None and remote.servers == [] and remote.samplers == []
    assert written(run_dir, "rdma-bw") == result
    lat = run_rung(RdmaLatRung(), context(remote, bare, RunDirectory(tmp_path)))
    assert lat.status is RungStatus.SKIPPED and lat.rung == "rdma-lat"


def test_the_live_board_hears_the_rung_start_and_end_with_its_figure(sparks: Discovery, tmp_path: Path) -> None:
    from wirespeed.engine.live import LiveBoard

    board = LiveBoard("bench rdma", 0.5, steps=["rdma-bw", "rdma-lat"])
    seen: list[tuple[str | None, float | None]] = []
    remote = FakeRemote(lambda argv, attempt: (0, CLIENT2.read_text(), ""))
    ctx = context(remote, sparks, RunDirectory(tmp_path))
    ctx.board = board
    original = board.start

    def start(name: str, expected_s: float | None = None) -> None:
        original(name, expected_s)
        seen.append((board.frame().running, board.frame().expected_s))

    board.start = start  # type: ignore[method-assign]
    result = run_rung(RdmaBwRung(), ctx)
    assert seen == [("rdma-bw", BenchOptions().seconds + 1.0)]  # running, with the seconds it should take
    frame = board.frame()
    assert frame.running is None
    [bw, lat] = frame.steps
    assert (bw.name, bw.state) == ("rdma-bw", "ran") and lat.state == "waiting"
    assert bw.figure == f"{result.forward_gbps:.2f} Gb/s ({result.ceiling.name})"  # type: ignore[union-attr]


def test_what_ran_where_is_kept_beside_the_output(sparks: Discovery, tmp_path: Path) -> None:
    """Each pair's server and client argv, per node, so the same tool can be run by hand with the same arguments."""
    remote = FakeRemote(lambda argv, attempt: (0, CLIENT2.read_text(), ""))
    run_dir = RunDirectory(tmp_path)
    run_rung(RdmaBwRung(), context(remote, sparks, run_dir))
    lines = (run_dir.path / "rdma-bw" / "commands.txt").read_text().splitlines()
    assert len(lines) == 2 * len(pairs(sparks))
    server = remote.servers[0]
    assert lines[0] == f"server on {server.node}: {shlex.join(server.argv)}"
    client_node, client_argv = remote.clients[0]
    assert f"client on {client_node}: {shlex.join(client_argv)}" in lines


def test_a_climb_plans_each_rung_once_and_runs_preflights_plan(
    sparks: Discovery, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wirespeed.engine.bench import climb
    from wirespeed.engine.rungs.base import preflight

    made: list[str] = []
    for kind in (RdmaBwRung, RdmaLatRung):
        original = kind.plan

        def counted(self: Any, ctx: RungContext, original: Any = original) -> Any:
            made.append(self.name)
            return original(self, ctx)

        monkeypatch.setattr(kind, "plan", counted)
    remote = FakeRemote(lambda argv, attempt: (0, CLIENT2.read_text(), ""))
    ctx = context(remote, sparks, RunDirectory(tmp_path))
    runnable, skipped = preflight(ctx, [RdmaBwRung(), RdmaLatRung()])
    assert [p.name for p in runnable] == ["rdma-bw", "rdma-lat"] and skipped == []
    results = climb(ctx, runnable, skipped, lambda _: None)
    assert [r.rung for r in results] == ["rdma-bw", "rdma-lat"]
    assert made == ["rdma-bw", "rdma-lat"]  # preflight's plans are the ones that ran: none made again
