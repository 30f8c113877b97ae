"""The testbed plan (pure data): Spark interface names, cabling per topology, subnets and addresses."""

from __future__ import annotations

import ipaddress
import json
from collections import Counter

import pytest

from wirespeed.core.errors import UsageError
from wirespeed.testbed.plan import (
    Endpoint,
    FabricIface,
    Topology,
    host_iface_name,
    links,
    make_plan,
    plan_from_json,
)
from wirespeed.testbed.plan import TestbedPlan as Plan

# Written out here on purpose (not imported): these are the DGX Spark's names, (port, half) -> interface.
SPARK_IFACES = {
    (0, 0): "enp1s0f0np0",
    (0, 1): "enP2p1s0f0np0",
    (1, 0): "enp1s0f1np1",
    (1, 1): "enP2p1s0f1np1",
}
BENCHMARK_NET = ipaddress.ip_network("198.18.0.0/15")

PLANS = {
    "direct-1": {"topology": Topology.DIRECT, "nodes": 2, "cables": 1},
    "direct-2": {"topology": Topology.DIRECT, "nodes": 2, "cables": 2},
    "ring": {"topology": Topology.RING, "nodes": 3},
    "switch-2": {"topology": Topology.SWITCH, "nodes": 2, "cables": 1},
    "switch-4": {"topology": Topology.SWITCH, "nodes": 4, "cables": 1},
    "switch-16x2": {"topology": Topology.SWITCH, "nodes": 16, "cables": 2},
    "prefixed": {"prefix": "ws1-", "topology": Topology.SWITCH, "nodes": 3, "cables": 2, "mgmt_index": 200},
}


@pytest.fixture(params=sorted(PLANS))
def plan(request: pytest.FixtureRequest) -> Plan:
    return make_plan(**PLANS[request.param])


def iface(plan: Plan, node: str, name: str) -> FabricIface:
    return plan.node(node).iface(name)


def network(item: FabricIface) -> ipaddress.IPv4Network:
    assert item.address is not None
    return ipaddress.ip_interface(item.address).network


# ------------------------------------------------------------------------------------ invariants of every plan
def test_every_address_is_in_the_benchmark_range(plan: Plan) -> None:
    addresses = [n.mgmt_address for n in plan.nodes] + [plan.host_mgmt_address]
    addresses += [f.address for n in plan.nodes for f in n.fabric if f.address]
    assert addresses
    for address in addresses:
        assert ipaddress.ip_interface(address).ip in BENCHMARK_NET
        assert ipaddress.ip_interface(address).network.prefixlen == 24
    mgmt = ipaddress.ip_network(plan.mgmt_subnet)
    assert isinstance(mgmt, ipaddress.IPv4Network)
    assert mgmt.subnet_of(BENCHMARK_NET)


def test_addresses_are_unique(plan: Plan) -> None:
    ips = [ipaddress.ip_interface(n.mgmt_address).ip for n in plan.nodes]
    ips += [ipaddress.ip_interface(plan.host_mgmt_address).ip]
    ips += [ipaddress.ip_interface(f.address).ip for n in plan.nodes for f in n.fabric if f.address]
    assert len(ips) == len(set(ips))


def test_management_addresses(plan: Plan) -> None:
    mgmt = ipaddress.ip_network(plan.mgmt_subnet)
    assert ipaddress.ip_interface(plan.host_mgmt_address).network == mgmt
    for node in plan.nodes:
        assert ipaddress.ip_interface(node.mgmt_address).network == mgmt
        for item in node.fabric:
            if item.address:
                assert not network(item).overlaps(mgmt)


def test_interface_names_are_the_sparks(plan: Plan) -> None:
    for node in plan.nodes:
        assert {(f.port, f.half): f.name for f in node.fabric} == SPARK_IFACES
        assert all(f.node == node.name for f in node.fabric)


def test_each_half_is_its_own_subnet(plan: Plan) -> None:
    for node in plan.nodes:
        subnets = [network(f) for f in node.fabric if f.cabled]
        assert len(subnets) == len(set(subnets)), f"{node.name} has two interfaces in one subnet"


def test_uncabled_halves_have_no_address_and_a_placeholder(plan: Plan) -> None:
    placeholders = [f.placeholder for n in plan.nodes for f in n.fabric if f.placeholder]
    assert len(placeholders) == len(set(placeholders))
    assert not {p.iface for p in placeholders} & {n.mgmt_bridge_port for n in plan.nodes}
    for node in plan.nodes:
        for item in node.fabric:
            if item.cabled:
                assert item.address is not None
                assert item.placeholder is None
            else:
                assert item.peer is None
                assert item.address is None
                assert item.placeholder is not None
                assert item.placeholder.netns == plan.mgmt_netns
                assert len(item.placeholder.iface) <= 15


def test_both_ends_of_every_link_share_a_subnet(plan: Plan) -> None:
    node_names = {n.name for n in plan.nodes}
    for here, there in links(plan):
        mine = iface(plan, here.netns, here.iface)
        if there.netns in node_names:
            theirs = iface(plan, there.netns, there.iface)
            assert network(mine) == network(theirs)
            assert theirs.peer == here, "a cable must look the same from both ends"
        else:
            assert there.netns == plan.switch_netns


def test_links_lists_each_link_once(plan: Plan) -> None:
    all_links = links(plan)
    keys = [frozenset({(a.netns, a.iface), (b.netns, b.iface)}) for a, b in all_links]
    assert len(keys) == len(set(keys))
    cabled_ends = sum(1 for n in plan.nodes for f in n.fabric if f.cabled)
    node_to_node = sum(1 for _, b in all_links if b.netns != plan.switch_netns)
    switch_links = len(all_links) - node_to_node
    assert 2 * node_to_node + switch_links == cabled_ends
    # Every interface end appears in exactly one link.
    ends = Counter(end for link in all_links for end in link)
    assert set(ends.values()) == {1}


def test_macs_are_unique_and_locally_administered(plan: Plan) -> None:
    macs = [n.mgmt_mac for n in plan.nodes] + [f.mac for n in plan.nodes for f in n.fabric]
    assert len(macs) == len(set(macs))
    for mac in macs:
        first = int(mac.split(":")[0], 16)
        assert first & 0b10, f"{mac} is not locally administered"
        assert not first & 0b1, f"{mac} is multicast"


def test_names_fit_linux_interface_names(plan: Plan) -> None:
    names = [n.mgmt_bridge_port for n in plan.nodes] + [p.name for p in plan.switch_ports] + [plan.host_iface]
    assert all(0 < len(name) <= 15 for name in names)


def test_json_round_trip(plan: Plan) -> None:
    assert plan_from_json(plan.to_json()) == plan
    assert plan_from_json(json.loads(json.dumps(plan.to_json()))) == plan


# --------------------------------------------------------------------------------------------------- direct
def test_direct_one_cable_uses_the_second_port() -> None:
    # NVIDIA's two-Spark and switch playbooks cable port 1 (enp1s0f1np1 / enP2p1s0f1np1).
    plan = make_plan(topology=Topology.DIRECT, nodes=2, cables=1)
    assert plan.cables == 1
    assert plan.switch_netns is None
    assert plan.switch_ports == ()
    assert plan.namespaces == ("spark-1", "spark-2", "spark-mgmt")
    for node, other in (("spark-1", "spark-2"), ("spark-2", "spark-1")):
        cabled = {f.name for f in plan.node(node).fabric if f.cabled}
        assert cabled == {"enp1s0f1np1", "enP2p1s0f1np1"}
        for name in cabled:
            assert iface(plan, node, name).peer == Endpoint(other, name)
    assert len(links(plan)) == 2


def test_direct_two_cables() -> None:
    plan = make_plan(topology=Topology.DIRECT, nodes=2, cables=2)
    for node, other in (("spark-1", "spark-2"), ("spark-2", "spark-1")):
        for item in plan.node(node).fabric:
            assert item.peer == Endpoint(other, item.name)
    assert len(links(plan)) == 4
    assert {a.netns for a, _ in links(plan)} == {"spark-1"}, "node-to-node links are listed from the lower node"
    assert iface(plan, "spark-1", "enp1s0f0np0").address is not None
    assert network(iface(plan, "spark-1", "enp1s0f0np0")) == network(iface(plan, "spark-2", "enp1s0f0np0"))


def test_direct_addresses_are_node_index_in_their_subnet() -> None:
    plan = make_plan(topology=Topology.DIRECT, nodes=2, cables=2)
    for node in plan.nodes:
        for item in node.fabric:
            assert item.address is not None
            assert item.address.endswith(f".{node.index}/24")
            assert item.address.startswith("198.19.")


# ----------------------------------------------------------------------------------------------------- ring
def test_ring_cabling_follows_the_three_spark_playbook() -> None:
    plan = make_plan(topology=Topology.RING, nodes=3)
    assert plan.cables == 2, "every ring node uses both ports"
    names = ["spark-1", "spark-2", "spark-3"]
    for n, name in enumerate(names):
        following = names[(n + 1) % 3]
        for half in (0, 1):
            port0 = iface(plan, name, SPARK_IFACES[(0, half)])
            assert port0.peer == Endpoint(following, SPARK_IFACES[(1, half)])
            back = iface(plan, following, SPARK_IFACES[(1, half)])
            assert back.peer == Endpoint(name, SPARK_IFACES[(0, half)])
            assert network(port0) == network(back)
    assert len(links(plan)) == 6
    assert all(f.cabled for n in plan.nodes for f in n.fabric)


def test_ring_uses_six_different_subnets() -> None:
    plan = make_plan(topology=Topology.RING, nodes=3)
    subnets = {network(f) for n in plan.nodes for f in n.fabric}
    assert len(subnets) == 6


@pytest.mark.parametrize("count", range(3, 9))
def test_rings_of_three_to_eight(count: int) -> None:
    plan = make_plan(topology=Topology.RING, nodes=count)
    names = [n.name for n in plan.nodes]
    for i, node in enumerate(plan.nodes):
        after, before = names[(i + 1) % count], names[i - 1]
        for half in (0, 1):
            out, back = node.iface(SPARK_IFACES[(0, half)]), node.iface(SPARK_IFACES[(1, half)])
            assert out.peer == Endpoint(after, SPARK_IFACES[(1, half)])
            assert back.peer == Endpoint(before, SPARK_IFACES[(0, half)])
            assert out.address == f"198.19.{2 * i + half}.{i + 1}/24"
            assert back.address == f"198.19.{2 * ((i - 1) % count) + half}.{i + 1}/24"
    assert len(links(plan)) == 2 * count


def test_ring_forces_two_cables() -> None:
    assert make_plan(topology=Topology.RING, nodes=3, cables=1).cables == 2


# --------------------------------------------------------------------------------------------------- switch
@pytest.mark.parametrize(("nodes", "cables"), [(2, 1), (4, 1), (4, 2), (16, 1)])
def test_switch(nodes: int, cables: int) -> None:
    plan = make_plan(topology=Topology.SWITCH, nodes=nodes, cables=cables)
    assert plan.switch_netns == "spark-switch"
    assert plan.namespaces[-2:] == ("spark-mgmt", "spark-switch")
    assert len(plan.switch_ports) == nodes * 2 * cables
    assert len({p.name for p in plan.switch_ports}) == len(plan.switch_ports)
    for port in plan.switch_ports:
        node_iface = iface(plan, port.node, port.node_iface)
        assert node_iface.peer == Endpoint("spark-switch", port.name)
        assert plan.switch_port(port.name) == port
    # All nodes' same half share one subnet (the switch is one L2 domain per half), each node its own address.
    by_half: dict[str, list[FabricIface]] = {}
    for node in plan.nodes:
        for item in node.fabric:
            if item.cabled:
                by_half.setdefault(item.name, []).append(item)
    assert len(by_half) == 2 * cables
    for items in by_half.values():
        assert len(items) == nodes
        assert len({network(i) for i in items}) == 1
        assert len({i.address for i in items}) == nodes
    assert len({network(items[0]) for items in by_half.values()}) == 2 * cables
    assert len(links(plan)) == nodes * 2 * cables


def test_switch_with_one_cable_uses_the_second_port() -> None:
    plan = make_plan(topology=Topology.SWITCH, nodes=4, cables=1)
    assert {p.node_iface for p in plan.switch_ports} == {"enp1s0f1np1", "enP2p1s0f1np1"}


def test_switch_mtu_defaults_to_mtu() -> None:
    assert make_plan(topology=Topology.SWITCH, nodes=2, mtu=1500).switch_mtu == 1500
    assert make_plan(topology=Topology.SWITCH, nodes=2, mtu=9000, switch_mtu=1500).switch_mtu == 1500


# ---------------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"topology": Topology.DIRECT, "nodes": 3}, "exactly 2 nodes"),
        ({"topology": Topology.DIRECT, "nodes": 1}, "exactly 2 nodes"),
        ({"topology": Topology.RING, "nodes": 9}, "3 to 8 nodes"),
        ({"topology": Topology.RING, "nodes": 2}, "3 to 8 nodes"),
        ({"topology": Topology.SWITCH, "nodes": 1}, "2 to 16"),
        ({"topology": Topology.SWITCH, "nodes": 17}, "2 to 16"),
        ({"cables": 3}, "--cables"),
        ({"cables": 0}, "--cables"),
        ({"topology": Topology.RING, "nodes": 3, "cables": 3}, "--cables"),
        ({"mtu": 67}, "--mtu"),
        ({"mtu": 65536}, "--mtu"),
        ({"mgmt_index": 256}, "management index"),
        ({"mgmt_index": -1}, "management index"),
    ],
)
def test_invalid_layouts(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        make_plan(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("prefix", ["", "Spark-", "1spark", "spark--", "toolongname", "sp ark", "sp_ark", "-", "a-b-"])
def test_bad_prefix(prefix: str) -> None:
    with pytest.raises(UsageError) as info:
        make_plan(prefix=prefix)
    assert repr(prefix) in info.value.message
    assert info.value.hint is not None


@pytest.mark.parametrize("prefix", ["a", "a-", "spark-", "ws1", "abcdefgh-"])
def test_good_prefix(prefix: str) -> None:
    plan = make_plan(prefix=prefix)
    assert [n.name for n in plan.nodes] == [f"{prefix}1", f"{prefix}2"]
    assert plan.mgmt_netns == f"{prefix}mgmt"


def test_lookups_raise_usage_errors_with_hints() -> None:
    plan = make_plan()
    with pytest.raises(UsageError) as info:
        plan.node("spark-9")
    assert info.value.hint == "nodes are spark-1, spark-2"
    with pytest.raises(UsageError) as info:
        plan.node("spark-1").iface("eth0")
    assert info.value.hint is not None
    assert "enp1s0f0np0" in info.value.hint
    with pytest.raises(UsageError) as info:
        plan.switch_port("n1p1h0")
    assert info.value.hint is not None
    assert "no switch" in info.value.hint


# ------------------------------------------------------------------------------------------------ host link
def test_host_iface_name() -> None:
    prefixes = ["spark-", "a", "abcdefgh-", "ws1-", "ws2-", "spark"]
    names = [host_iface_name(p) for p in prefixes]
    assert all(len(name) <= 15 for name in names)
    assert len(set(names)) == len(names)
    assert host_iface_name("spark-") == host_iface_name("spark-")
    assert make_plan(prefix="ws1-").host_iface == host_iface_name("ws1-")


def test_plans_with_different_prefixes_do_not_share_namespaces_or_links() -> None:
    first, second = make_plan(prefix="a-"), make_plan(prefix="b-")
    assert not set(first.namespaces) & set(second.namespaces)
    assert first.host_iface != second.host_iface


def test_mgmt_index_moves_the_management_subnet() -> None:
    plan = make_plan(mgmt_index=7)
    assert plan.mgmt_subnet == "198.18.7.0/24"
    assert plan.host_mgmt_address == "198.18.7.1/24"
    assert [n.mgmt_address for n in plan.nodes] == ["198.18.7.11/24", "198.18.7.12/24"]


def test_unshaped_halves_and_a_negative_rate() -> None:
    plan = make_plan(prefix="wnr-", nodes=2, topology=Topology.DIRECT, cables=1, half_rate_bps=0, mtu=9000)
    assert plan.half_rate_bps == 0  # `--half-rate none`: no tbf on any half
    with pytest.raises(UsageError):
        make_plan(prefix="wnr-", nodes=2, topology=Topology.DIRECT, cables=1, half_rate_bps=-1, mtu=9000)
