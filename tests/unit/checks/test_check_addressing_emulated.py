"""The address plan on the emulated cluster: fresh subnets come from 198.19.0.0/16, as the testbed's own do."""

from __future__ import annotations

import dataclasses
import ipaddress

from builders import P0H0, P0H1, P1H0, P1H1, Half, cluster, spark, without_rdma

from wirespeed.core.checks.model import REGISTRY, CheckInput, CheckStatus
from wirespeed.core.checks.plan import address_plan
from wirespeed.core.fixplan import plan as fix_plan
from wirespeed.core.ladder import flows_between, linked_halves
from wirespeed.engine.checks import load_checks

SHIPPED = {  # NVIDIA's link-local netplan: IPv4 link-local on the domain-0000 half of each port, nothing on its twin
    "s1": {P0H0: Half(ipv4=("169.254.1.1/16",)), P0H1: Half(), P1H0: Half(ipv4=("169.254.3.1/16",)), P1H1: Half()},
    "s2": {P0H0: Half(ipv4=("169.254.1.2/16",)), P0H1: Half(), P1H0: Half(ipv4=("169.254.3.2/16",)), P1H1: Half()},
}
LINKS = [(("s1", i), ("s2", i)) for i in (P0H0, P0H1, P1H0, P1H1)]


def shipped(*, emulated: bool) -> CheckInput:
    nodes = [spark(n, 10 + k, cables=2, half=SHIPPED[n]) for k, n in enumerate(("s1", "s2"))]
    if emulated:
        nodes = [dataclasses.replace(without_rdma(n), emulated=True) for n in nodes]
    return cluster(*nodes, links=LINKS)


def test_an_emulated_cluster_as_shipped_gets_every_half_its_own_benchmarking_subnet() -> None:
    plan = address_plan(shipped(emulated=True))
    assert len(plan) == 8
    subnets = {ipaddress.IPv4Interface(cidr).network for cidr in plan.values()}
    assert len(subnets) == 4  # one per half, shared by its two ends
    assert all(net.subnet_of(ipaddress.IPv4Network("198.19.0.0/16")) for net in subnets)
    assert plan[("s1", P0H0)] == "198.19.100.10/24" and plan[("s2", P0H0)] == "198.19.100.11/24"


def test_real_nodes_as_shipped_keep_the_playbooks_subnets() -> None:
    plan = address_plan(shipped(emulated=False))
    assert plan[("s1", P0H0)] == "192.168.100.10/24"
    assert all(cidr.startswith("192.168.") for cidr in plan.values())


def test_the_fix_readdresses_every_half_of_an_emulated_cluster_as_shipped() -> None:
    load_checks()
    data = shipped(emulated=True)
    results = [REGISTRY[i].run(data) for i in ("addr.subnets", "link.halves")]
    assert any(r.status in (CheckStatus.FAIL, CheckStatus.WARN) for r in results)
    ops = fix_plan(data, results)
    for node in ("s1", "s2"):
        addressed = {op.target: op.value for op in ops[node] if op.kind == "addr"}
        assert set(addressed) == {P0H0, P0H1, P1H0, P1H1}
        assert all(v.startswith("198.19.1") for v in addressed.values())


def test_as_shipped_the_tcp_rungs_count_the_unaddressed_twins_as_idle_halves() -> None:
    data = shipped(emulated=True)
    flows = flows_between(data.facts, data.cabling, "s1", "s2")
    assert [f.source[1] for f in flows] == [P0H0, P1H0]  # the link-local halves; their twins have no IPv4
    assert linked_halves(data.cabling, "s1", "s2") == 4


def test_the_fix_that_addresses_the_twins_sets_arp_for_them_in_the_same_plan() -> None:
    """As shipped with one cable a node has one addressed half, so sysctl.arp has nothing to judge; the readdressing
    gives it more, and the kernel's defaults (arp_ignore 0, arp_announce 0) then answer ARP on the wrong half."""
    load_checks()
    data = shipped(emulated=True)
    defaults = {"net.ipv4.conf.all.arp_ignore": "0", "net.ipv4.conf.all.arp_announce": "0"}
    facts = {
        n: dataclasses.replace(
            f,
            sysctls={**f.sysctls, **defaults},
            netdevs=tuple(dataclasses.replace(d, ipv4=()) if d.name == P0H0 else d for d in f.netdevs),
        )
        for n, f in data.facts.items()
    }
    data = dataclasses.replace(data, facts=facts)
    results = [REGISTRY[i].run(data) for i in ("addr.subnets", "link.halves", "sysctl.arp")]
    assert results[2].status is CheckStatus.SKIP  # one half of four addressed
    ops = fix_plan(data, results)
    for node in ("s1", "s2"):
        arp = {op.target: op.value for op in ops[node] if op.kind == "sysctl" and op.reason == "sysctl.arp"}
        assert arp[f"net.ipv4.conf.{P0H1}.arp_ignore"] == "1" and arp[f"net.ipv4.conf.{P1H1}.arp_announce"] == "2"
        assert any(op.kind == "file" and op.target.endswith("-arp.conf") for op in ops[node])
    tuned = fix_plan(shipped(emulated=True), results[:2])  # settings already fit: nothing more to plan
    assert not any(op.reason == "sysctl.arp" for node_ops in tuned.values() for op in node_ops)
