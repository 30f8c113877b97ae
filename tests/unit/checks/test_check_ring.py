"""ring.routes and ring.forward, and the plan behind them, on synthetic rings of 3 to 8 Sparks cabled as the testbed
cables them (cable c: node c's port 0 to node c+1's port 1, each half its own subnet 198.19.(2c+half).0/24)."""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest
from builders import P0H0, P0H1, P1H0, P1H1, Half, assert_actionable, cluster, fix_text, run, spark

from wirespeed.core.checks.model import CheckInput, CheckStatus
from wirespeed.core.checks.ring import FORWARD, FORWARD_FILE, IP_FORWARD, ROUTES, missing_routes, ring_plan
from wirespeed.core.fabric.facts import NodeFacts, Route, Unknown, facts_from_json
from wirespeed.core.fixplan import Operation, operation_from_json, plan_nodes, undo_of
from wirespeed.core.parsers.sysfs_values import ip_routes_json

PORT = {0: (P0H0, P0H1), 1: (P1H0, P1H1)}
IPTABLES_DOCKER = """-P INPUT ACCEPT
-P FORWARD DROP
-P OUTPUT ACCEPT
-N DOCKER
-N DOCKER-USER
-A FORWARD -j DOCKER-USER
-A FORWARD -o docker0 -j DOCKER
-A DOCKER-USER -j RETURN
"""


def names(count: int) -> list[str]:
    return [f"spark-{i}" for i in range(1, count + 1)]


def address(count: int, index: int, port: int, half: int) -> str:
    """Node `index` (0-based): port 0 is on cable index, port 1 on cable index-1."""
    cable = index if port == 0 else (index - 1) % count
    return f"198.19.{2 * cable + half}.{index + 1}/24"


def connected(facts_halves: dict[str, Half]) -> tuple[Route, ...]:
    return tuple(
        Route(str(ipaddress.IPv4Interface(h.ipv4[0]).network), name, None, "kernel")
        for name, h in facts_halves.items()
        if h.ipv4
    )


def ring(count: int, *, cut: int | None = None, routes: bool = False, **per_node: dict[str, object]) -> CheckInput:
    """A ring of `count` Sparks (cable `cut` left out: a chain); `routes`: every planned route in place;
    `per_node[name]`: NodeFacts fields to change on that node."""
    nodes = names(count)
    facts: list[NodeFacts] = []
    links: list[tuple[tuple[str, str], tuple[str, str]]] = []
    for i, node in enumerate(nodes):
        halves = {
            iface: Half(ipv4=(address(count, i, port, half),))
            for port in (0, 1)
            for half, iface in enumerate(PORT[port])
        }
        if cut is not None and i == cut:
            halves |= {iface: Half(up=False) for iface in PORT[0]}
        if cut is not None and i == (cut + 1) % count:
            halves |= {iface: Half(up=False) for iface in PORT[1]}
        sysctls = {**spark(node).sysctls, IP_FORWARD: "1"}
        facts.append(spark(node, cables=2, half=halves, sysctls=sysctls, routes=connected(halves), firewall={}))
    for c in range(count):
        if c == cut:
            continue
        a, b = nodes[c], nodes[(c + 1) % count]
        links += [((a, PORT[0][h]), (b, PORT[1][h])) for h in (0, 1)]
    data = cluster(*facts, links=links)
    if routes:
        data = with_planned_routes(data)
    changed = {n: dataclasses.replace(data.facts[n], **per_node[n]) for n in per_node}  # type: ignore[arg-type]
    return dataclasses.replace(data, facts={**data.facts, **changed}) if changed else data


def with_planned_routes(data: CheckInput) -> CheckInput:
    plan = ring_plan(data.cabling, data.facts)
    assert plan is not None
    facts = {}
    for node, f in data.facts.items():
        assert not isinstance(f.routes, Unknown)
        added = tuple(Route(r.dst, r.dev, r.via, "static") for r in plan.routes if r.node == node)
        facts[node] = dataclasses.replace(f, routes=f.routes + added)
    return dataclasses.replace(data, facts=facts)


def reaches(data: CheckInput, source: str, dst_address: str) -> list[str]:
    """Forward hop by hop with each node's routes (the longest prefix: connected /24s and the planned ones), as
    the kernel would; the nodes visited, ending at the one that holds the address."""
    owner = {
        ipaddress.IPv4Interface(c).ip: n for n, f in data.facts.items() for nd in f.netdevs for c in nd.ipv4 if nd.ipv4
    }
    target = ipaddress.IPv4Address(dst_address)
    path = [source]
    here = source
    while owner.get(target) != here:
        routes = data.facts[here].routes
        assert not isinstance(routes, Unknown)
        route = next(r for r in routes if r.dst != "default" and target in ipaddress.IPv4Network(r.dst))
        # on the link: the owner answers; else the gateway takes it
        here = owner[target] if route.via is None else owner[ipaddress.IPv4Address(route.via)]
        path.append(here)
        assert len(path) <= len(data.facts) + 1, f"routing loop: {path}"
    return path


# --------------------------------------------------------------------------------------------------- the plan
@pytest.mark.parametrize("count", range(4, 9))
def test_every_pair_reaches_every_address_the_shorter_way(count: int) -> None:
    data = ring(count, routes=True)
    for source in names(count):
        for j in range(count):
            for port in (0, 1):
                for half in (0, 1):
                    target = address(count, j, port, half).split("/")[0]
                    path = reaches(data, source, target)
                    assert path[-1] == f"spark-{j + 1}"
                    assert len(path) - 1 <= count // 2 + 1  # the shorter way, never more than half round (+ the link)
    assert run(ROUTES, data).status is CheckStatus.PASS


@pytest.mark.parametrize("count", range(4, 9))
def test_a_missing_route_names_node_and_fix(count: int) -> None:
    data = ring(count)
    outcome = run(ROUTES, data)
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    per_node = 2 * count - 4  # every half subnet of the ring but the node's own four
    assert f"{per_node * count} of {per_node * count} routes missing" in outcome.summary
    assert outcome.summary.startswith(f"ring of {count}: spark-1 → spark-2")
    assert {f.node for f in outcome.fixes} == set(names(count))


def test_four_node_ring_routes_are_the_playbook_ones() -> None:
    data = ring(4)
    outcome = run(ROUTES, data)
    (first,) = [f for f in outcome.fixes if f.node == "spark-1"]
    assert first.commands == (
        "sudo ip route replace 198.19.2.0/24 via 198.19.0.2 dev enp1s0f0np0",
        "sudo ip route replace 198.19.3.0/24 via 198.19.1.2 dev enP2p1s0f0np0",
        "sudo ip route replace 198.19.4.0/24 via 198.19.6.4 dev enp1s0f1np1",
        "sudo ip route replace 198.19.5.0/24 via 198.19.7.4 dev enP2p1s0f1np1",
    )
    evidence = {(e.node, e.subject): e for e in outcome.evidence}
    assert evidence[("spark-1", "198.19.2.0/24")].value == "none"
    assert "relayed by spark-2" in evidence[("spark-1", "198.19.2.0/24")].what


def test_a_wrong_route_is_replaced() -> None:
    data = ring(4, routes=True)
    wrong = tuple(
        dataclasses.replace(r, via="198.19.6.4", dev=P1H0) if r.dst == "198.19.2.0/24" else r
        for r in data.facts["spark-1"].routes  # type: ignore[union-attr]
    )
    data = dataclasses.replace(
        data, facts={**data.facts, "spark-1": dataclasses.replace(data.facts["spark-1"], routes=wrong)}
    )
    outcome = run(ROUTES, data)
    assert outcome.status is CheckStatus.FAIL
    assert [(e.node, e.subject, e.value) for e in outcome.evidence] == [
        ("spark-1", "198.19.2.0/24", "via 198.19.6.4 dev enp1s0f1np1")
    ]


def test_ring_of_three_needs_no_route_and_no_relay() -> None:
    data = ring(3)
    assert run(ROUTES, data).status is CheckStatus.PASS
    assert "every pair shares a cable" in run(ROUTES, data).summary
    assert run(FORWARD, data).status is CheckStatus.PASS


@pytest.mark.parametrize("count", [3, 4, 6, 8])
def test_cut_ring_routes_along_the_chain(count: int) -> None:
    data = ring(count, cut=1)
    assert data.cabling.topology == "chain"
    outcome = run(ROUTES, data)
    assert outcome.status is CheckStatus.FAIL and "cut ring (chain)" in outcome.summary
    fixed = with_planned_routes(data)
    ends = data.cabling.order[0], data.cabling.order[-1]
    # the far end's port 1 (its port 0 is the cut cable's end)
    path = reaches(fixed, ends[0], address(count, names(count).index(ends[1]), 1, 0).split("/")[0])
    assert path == list(data.cabling.order)  # end to end through every relay
    assert run(ROUTES, fixed).status is CheckStatus.PASS


def test_routes_unread_everywhere_is_a_skip() -> None:
    data = ring(4, **{n: {"routes": Unknown("ip_route was not recorded in this snapshot")} for n in names(4)})
    outcome = run(ROUTES, data)
    assert outcome.status is CheckStatus.SKIP and "not recorded" in outcome.summary


def test_not_a_ring_is_a_skip() -> None:
    assert run(ROUTES, cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.SKIP
    assert run(FORWARD, cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.SKIP


# ------------------------------------------------------------------------------------------------ forwarding
def test_relay_without_ip_forward() -> None:
    sysctls = {**ring(4).facts["spark-2"].sysctls, IP_FORWARD: "0"}
    data = ring(4, routes=True, **{"spark-2": {"sysctls": sysctls}})
    outcome = run(FORWARD, data)
    assert outcome.status is CheckStatus.FAIL and "spark-2 cannot relay" in outcome.summary
    assert_actionable(outcome)
    assert [(e.node, e.subject, e.value) for e in outcome.evidence] == [("spark-2", IP_FORWARD, "0")]
    (fix,) = outcome.fixes
    assert fix.files == ((FORWARD_FILE, f"# {FORWARD_FILE} (wirespeed): this node relays a ring's traffic between "
                                        f"its cables\n{IP_FORWARD} = 1\n"),)  # fmt: skip


def test_docker_forward_drop_on_a_relay_is_named_with_docker_user_rules() -> None:
    data = ring(4, routes=True, **{"spark-3": {"firewall": {"iptables": IPTABLES_DOCKER}}})
    outcome = run(FORWARD, data)
    assert outcome.status is CheckStatus.FAIL
    assert [(e.node, e.value) for e in outcome.evidence] == [("spark-3", "-P FORWARD DROP")]
    assert "Docker's FORWARD policy DROP" in outcome.evidence[0].what
    (fix,) = outcome.fixes
    assert fix.node == "spark-3" and not fix.files
    rule = f"-i {P0H0} -o {P1H0} -j ACCEPT"
    assert f"sudo iptables -C DOCKER-USER {rule} 2>/dev/null || sudo iptables -I DOCKER-USER 1 {rule}" in fix.commands
    assert len([c for c in fix.commands if "DOCKER-USER" in c]) == 4  # both ways, both halves


def test_docker_user_accept_rules_let_the_relay_forward() -> None:
    accepts = "".join(f"-A DOCKER-USER -i {i} -o {o} -j ACCEPT\n" for i, o in
                      ((P0H0, P1H0), (P1H0, P0H0), (P0H1, P1H1), (P1H1, P0H1)))  # fmt: skip
    data = ring(4, routes=True, **{"spark-3": {"firewall": {"iptables": IPTABLES_DOCKER + accepts}}})
    assert run(FORWARD, data).status is CheckStatus.PASS


def test_nft_forward_drop() -> None:
    nft = "table inet filter {\n\tchain forward {\n\t\ttype filter hook forward priority filter; policy drop;\n\t}\n}\n"
    data = ring(4, routes=True, **{"spark-2": {"firewall": {"nft": nft}}})
    outcome = run(FORWARD, data)
    assert outcome.status is CheckStatus.FAIL
    assert f"sudo nft insert rule inet filter forward iifname {P0H0} oifname {P1H0} accept" in fix_text(outcome.fixes)


def test_odd_ring_needs_loose_rp_filter_where_strict() -> None:
    strict = {**ring(5).facts["spark-1"].sysctls, "net.ipv4.conf.all.rp_filter": "1"}
    data = ring(5, routes=True, **{n: {"sysctls": strict} for n in names(5)})
    plan = ring_plan(data.cabling, data.facts)
    assert plan is not None and plan.asymmetric  # a tie on an odd ring: the answer comes back the other way
    outcome = run(FORWARD, data)
    assert outcome.status is CheckStatus.FAIL and "rp_filter" in fix_text(outcome.fixes)
    assert "net.ipv4.conf.all.rp_filter = 2" in fix_text(outcome.fixes)
    assert run(FORWARD, ring(5, routes=True)).status is CheckStatus.PASS  # the tuned rp_filter=2
    even = {**ring(4).facts["spark-1"].sysctls, "net.ipv4.conf.all.rp_filter": "1"}
    assert run(FORWARD, ring(4, routes=True, **{n: {"sysctls": even} for n in names(4)})).status is CheckStatus.PASS


def test_mtu_differing_along_the_path_warns() -> None:
    base = ring(4, routes=True)
    netdevs = tuple(dataclasses.replace(n, mtu=1500) if n.name == P0H0 else n for n in base.facts["spark-2"].netdevs)
    data = ring(4, routes=True, **{"spark-2": {"netdevs": netdevs}})
    outcome = run(FORWARD, data)
    assert outcome.status is CheckStatus.WARN and "1500, 9000" in outcome.summary
    assert_actionable(outcome)
    assert outcome.fixes[0].commands == (f"sudo ip link set dev {P0H0} mtu 9000",)


# ---------------------------------------------------------------------------------------------- fix's plan
def test_fix_plans_routes_and_forwarding_through_the_journal() -> None:
    sysctls = {**ring(4).facts["spark-2"].sysctls, IP_FORWARD: "0"}
    data = ring(4, **{"spark-2": {"sysctls": sysctls}})
    results = [run(ROUTES, data), run(FORWARD, data)]
    plans = plan_nodes(data, results)
    ops = plans["spark-2"].operations
    assert [(op.kind, op.target) for op in ops[:2]] == [("file", FORWARD_FILE), ("sysctl", IP_FORWARD)]
    routes = [op for op in ops if op.kind == "route"]
    assert len(routes) == 4 and all(op.network and op.reason == ROUTES for op in routes)
    assert routes[0] == Operation("route", "198.19.4.0/24", "via 198.19.2.3 dev enp1s0f0np0", ROUTES, network=True)
    assert len(missing_routes(data)["spark-1"]) == 4
    assert [op.kind for op in plans["spark-1"].operations] == ["route"] * 4


def test_route_operations_round_trip_and_undo() -> None:
    op = Operation("route", "198.19.4.0/24", "via 198.19.2.3 dev enp1s0f0np0", ROUTES, network=True)
    assert operation_from_json(op.to_json()) == op
    assert undo_of(op.to_json(), "") == Operation("route", "198.19.4.0/24", "", "revert", True)
    assert undo_of(op.to_json(), "via 198.19.6.4 dev enp1s0f1np1").value == "via 198.19.6.4 dev enp1s0f1np1"
    on_link = undo_of(op.to_json(), "dev enp1s0f1np1")  # a route on the link that was there before
    assert operation_from_json(on_link.to_json()).value == "dev enp1s0f1np1"
    for target, value in (
        ("198.19.4.0/33", ""),
        ("198.19.4.1/24", ""),  # host bits set: not a network
        ("198.19.4.0/24", "via 198.19.2.3 dev eth0; reboot"),
        ("198.19.4.0/24", "via nowhere dev eth0"),
        ("198.19.4.0/24", "dev eth0 table 7"),
    ):
        with pytest.raises(ValueError, match="route"):
            operation_from_json({"kind": "route", "target": target, "value": value, "reason": ROUTES})


# ---------------------------------------------------------------------------------------------- the facts
def test_routes_parsed_and_kept_in_the_facts_json() -> None:
    text = (
        '[{"dst":"default","gateway":"10.0.0.1","dev":"enP7s7","protocol":"dhcp","flags":[]},'
        '{"dst":"198.19.0.0/24","dev":"enp1s0f0np0","protocol":"kernel","scope":"link","prefsrc":"198.19.0.1"},'
        '{"dst":"198.19.2.0/24","gateway":"198.19.0.2","dev":"enp1s0f0np0","flags":[]},'
        '{"dst":"198.19.9.9","gateway":"198.19.0.2","dev":"enp1s0f0np0"},'
        '{"type":"blackhole","dst":"10.9.0.0/16","flags":[]}]'
    )
    routes = ip_routes_json(text)
    assert routes == (
        Route("default", "enP7s7", "10.0.0.1", "dhcp"),
        Route("198.19.0.0/24", "enp1s0f0np0", None, "kernel"),
        Route("198.19.2.0/24", "enp1s0f0np0", "198.19.0.2", None),
        Route("198.19.9.9/32", "enp1s0f0np0", "198.19.0.2", None),
    )
    facts = dataclasses.replace(spark("s1"), routes=routes)
    assert facts_from_json(facts.to_json()).routes == routes
    unread = dataclasses.replace(spark("s1"), routes=Unknown("ip -j route: exit 1"))
    assert facts_from_json(unread.to_json()).routes == Unknown("ip -j route: exit 1")
