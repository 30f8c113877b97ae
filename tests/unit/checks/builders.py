"""Small synthetic DGX Spark facts for the check tests: a healthy node by default, changed one field at a time.

`spark("s1", 10)` is a Spark cabled on port 1 as NVIDIA's two-Spark playbook addresses it (enp1s0f1np1
192.168.100.10/24, enP2p1s0f1np1 192.168.101.10/24), MTU 9000, 200G, GID index 3, tuned sysctls, memlock
unlimited, tools present; `half=` and `**changes` alter it. `cluster(...)` pairs nodes into a `CheckInput` the way
offline discovery does (interfaces of different nodes on one subnet are linked), or from probe-style links.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wirespeed.core.checks.model import REGISTRY, ActiveResults, CheckInput, CheckResult, CheckStatus, Fix
from wirespeed.core.fabric.cabling import build_map, edges_from_addresses
from wirespeed.core.fabric.facts import (
    Netdev,
    NodeFacts,
    PciFunction,
    RdmaDevice,
    RdmaPort,
    Tool,
    Unknown,
)
from wirespeed.core.fabric.ports import group_ports

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "snapshots"

# (netdev, RDMA device, BDF); half 0 of a port is domain 0000, half 1 domain 0002 (spark-facts 2.1)
SPARK = (
    ("enp1s0f0np0", "rocep1s0f0", "0000:01:00.0"),
    ("enP2p1s0f0np0", "roceP2p1s0f0", "0002:01:00.0"),
    ("enp1s0f1np1", "rocep1s0f1", "0000:01:00.1"),
    ("enP2p1s0f1np1", "roceP2p1s0f1", "0002:01:00.1"),
)
P0H0, P0H1, P1H0, P1H1 = (name for name, _, _ in SPARK)
SUBNET = {P1H0: 100, P1H1: 101, P0H0: 102, P0H1: 103}  # third octet per half, as in the fixtures
RDMA_OF = {name: rdma for name, rdma, _ in SPARK}
TUNED = {
    "net.core.rmem_max": "268435456",
    "net.core.wmem_max": "268435456",
    "net.ipv4.tcp_rmem": "4096 87380 268435456",
    "net.ipv4.tcp_wmem": "4096 65536 268435456",
    "net.core.netdev_max_backlog": "250000",
    "net.ipv4.conf.all.arp_ignore": "1",
    "net.ipv4.conf.all.arp_announce": "2",
    "net.ipv4.conf.all.rp_filter": "2",
}


MANAGEMENT = Netdev(
    name="enP7s7",
    operstate="up",
    carrier=True,
    speed_mbps=10000,
    mtu=1500,
    mac="3c:6d:66:00:00:00",
    ipv4=("10.0.0.11/24",),
    ipv6=(),
    kind="pci",
    link_type=1,
    pci="0007:01:00.0",
    driver="r8127",
)


@dataclasses.dataclass(frozen=True)
class Half:
    """One Spark half as a test wants it."""

    up: bool = True
    ipv4: tuple[str, ...] = ()
    ipv6: tuple[str, ...] = ()
    speed: int | Unknown = 200000
    rate_gbps: float | Unknown = 200.0
    mtu: int | Unknown = 9000
    gid_index: int | Unknown = 3
    width: int = 4
    admin_down: bool = False


def plan_address(name: str, host: int) -> str:
    return f"192.168.{SUBNET[name]}.{host}/24"


def _netdev(name: str, half: Half) -> Netdev:
    bdf = next(b for n, _, b in SPARK if n == name)
    carrier: bool | Unknown = Unknown("interface is administratively down") if half.admin_down else half.up
    return Netdev(
        name=name,
        operstate="up" if half.up and not half.admin_down else "down",
        carrier=carrier,
        speed_mbps=half.speed if half.up else Unknown("no link (speed -1)"),
        mtu=half.mtu,
        mac="3c:6d:66:00:00:01",
        ipv4=half.ipv4,
        ipv6=half.ipv6,
        kind="pci",
        link_type=1,
        pci=bdf,
        rdma_devices=(RDMA_OF[name],),
        driver="mlx5_core",
    )


def _rdma(name: str, half: Half) -> RdmaDevice:
    _, rdma, bdf = next(s for s in SPARK if s[0] == name)
    index: int | Unknown = half.gid_index if half.up else Unknown("no RoCE v2 GID with an IPv4 address")
    port = RdmaPort(
        number=1,
        state="ACTIVE" if half.up else "DOWN",
        phys_state="LinkUp" if half.up else "Disabled",
        rate=f"{half.rate_gbps:g} Gb/sec (2X NDR)" if isinstance(half.rate_gbps, float) else half.rate_gbps,
        rate_gbps=half.rate_gbps if half.up else 40.0,
        link_layer="Ethernet",
        gids=(),
        rocev2_ipv4_index=index,
    )
    return RdmaDevice(rdma, (name,), bdf, "28.45.4028", "3c6d:6603:0000:0001", (port,))


def _pci(name: str, half: Half) -> PciFunction:
    bdf = next(b for n, _, b in SPARK if n == name)
    return PciFunction(bdf, "mlx5_core", 0, 32.0, half.width, 32.0, 4)


def default_halves(host: int, cables: int = 1) -> dict[str, Half]:
    cabled = (P1H0, P1H1) if cables == 1 else (P0H0, P0H1, P1H0, P1H1)
    return {name: Half(ipv4=(plan_address(name, host),)) if name in cabled else Half(up=False) for name, _, _ in SPARK}


def tools(iperf3: str = "3.16", perftest: str = "6.20", mpirun: str = "Open MPI 4.1.6") -> tuple[Tool, ...]:
    return (
        Tool("iperf3", iperf3),
        Tool("perftest", perftest),
        Tool("mpirun", mpirun),
        Tool("all_reduce_perf", "present", path="/home/u/nccl-tests/build/all_reduce_perf", detail="mpi=yes"),
    )


def spark(
    node: str,
    host: int = 10,
    *,
    cables: int = 1,
    half: dict[str, Half] | None = None,
    **changes: Any,
) -> NodeFacts:
    """A healthy Spark; `half` replaces halves by name, `changes` replaces NodeFacts fields."""
    halves = default_halves(host, cables) | (half or {})
    names = [name for name, _, _ in SPARK]
    facts = NodeFacts(
        node=node,
        hostname=node,
        netdevs=(MANAGEMENT, *(_netdev(n, halves[n]) for n in names)),
        rdma=tuple(_rdma(n, halves[n]) for n in names),
        rdma_absent_reason=None,
        pci=tuple(_pci(n, halves[n]) for n in names),
        ports=group_ports([(n, next(b for m, _, b in SPARK if m == n)) for n in names]),
        management="enP7s7",
        fabric=tuple(sorted(names)),
        gpus=(),
        nccl_version="2.28.9",
        tools=tools(),
        sysctls=dict(TUNED),
        memlock_bytes=None,
        kernel_messages=(),
        environment={},
        in_container=False,
        dev_infiniband=("rdma_cm", "uverbs0", "uverbs1", "uverbs2", "uverbs3"),
        packages={},
        management_wireless=False,
    )
    return dataclasses.replace(facts, **changes)


def without_rdma(facts: NodeFacts) -> NodeFacts:
    """The emulated cluster's view: veths with Spark names, no RDMA devices, no PCI functions."""
    netdevs = tuple(dataclasses.replace(n, pci=None, rdma_devices=(), driver="veth") for n in facts.netdevs)
    return dataclasses.replace(
        facts,
        netdevs=netdevs,
        rdma=(),
        pci=(),
        rdma_absent_reason="no RDMA devices: /sys/class/infiniband does not exist (emulated cluster)",
    )


def cluster(
    *nodes: NodeFacts,
    links: Iterable[tuple[tuple[str, str], tuple[str, str]]] | None = None,
    active: ActiveResults | None = None,
) -> CheckInput:
    """Nodes and a cabling map: from `links` (a probe's view) or, without them, from the address plan."""
    facts = {f.node: f for f in nodes}
    edges = {frozenset(pair) for pair in links} if links is not None else edges_from_addresses(facts)
    return CheckInput(facts, build_map(facts, edges, "test"), active or ActiveResults())


def two_sparks(**changes: Any) -> CheckInput:
    return cluster(spark("s1", 10, **changes), spark("s2", 11, **changes))


def run(check_id: str, data: CheckInput) -> CheckResult:
    import wirespeed.core.checks.all  # noqa: F401 - registers every check

    return REGISTRY[check_id].run(data)


def assert_actionable(outcome: CheckResult) -> None:
    """What every check promises: a non-pass has evidence; a warn or fail has a fix; the summary is one line."""
    assert "\n" not in outcome.summary
    if outcome.status is not CheckStatus.PASS and outcome.status is not CheckStatus.SKIP:
        assert outcome.evidence, outcome
        assert outcome.fixes, outcome


def fix_text(fixes: Iterable[Fix]) -> str:
    """Everything a fix shows a person: description, commands, file paths and contents."""
    return "\n".join(
        "\n".join([f.description, *f.commands, *(p for p, _ in f.files), *(c for _, c in f.files)]) for f in fixes
    )
