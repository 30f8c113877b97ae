"""The cabling map from probe observations and from address plans, with its findings."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from wirespeed.core.fabric.cabling import Heard, build_map, cabling_from_json, edges_from_addresses, edges_from_probe
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import Netdev, NodeFacts, Unknown, to_jsonable
from wirespeed.core.fabric.ports import group_ports
from wirespeed.ui.discovery import cabling_diagram

HALVES = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")


def netdev(name: str, ipv4: tuple[str, ...] = (), up: bool = True) -> Netdev:
    return Netdev(
        name=name,
        operstate="up" if up else "down",
        carrier=up if up else Unknown("down"),
        speed_mbps=200000,
        mtu=9000,
        mac="02:00:00:00:00:01",
        ipv4=ipv4,
        ipv6=(),
        kind="pci",
        link_type=1,
        pci=None,
    )


def node(name: str, addresses: dict[str, str] | None = None, down: tuple[str, ...] = ()) -> NodeFacts:
    addresses = addresses or {}
    netdevs = tuple(netdev(h, (addresses[h],) if h in addresses else (), up=h not in down) for h in HALVES)
    return NodeFacts(
        node=name,
        hostname=name,
        netdevs=netdevs,
        rdma=(),
        rdma_absent_reason="none",
        pci=(),
        ports=group_ports([(h, None) for h in HALVES]),
        management="enP7s7",
        fabric=HALVES,
        gpus=Unknown("none"),
        nccl_version=Unknown("none"),
        tools=(),
    )


def mutual(a: str, a_if: str, b: str, b_if: str) -> list[Heard]:
    return [Heard(a, a_if, b, b_if), Heard(b, b_if, a, a_if)]


def test_direct_two_cables_from_the_probe() -> None:
    facts = {"s1": node("s1"), "s2": node("s2")}
    heard = [h for half in HALVES for h in mutual("s1", half, "s2", half)]
    cabling = build_map(facts, edges_from_probe(heard), "probe")
    assert (cabling.topology, cabling.cables, cabling.findings, cabling.unpaired) == ("direct", 2, (), ())
    assert [(p.a_port, p.b_port, len(p.halves)) for p in cabling.port_links] == [
        ("port 0", "port 0", 2),
        ("port 1", "port 1", 2),
    ]


def test_half_without_peer_and_single_half_port() -> None:
    facts = {"s1": node("s1", down=HALVES[:2]), "s2": node("s2", down=HALVES[:2])}
    heard = mutual("s1", "enp1s0f1np1", "s2", "enp1s0f1np1")  # the other half heard nothing
    cabling = build_map(facts, edges_from_probe(heard), "probe")
    assert cabling.unpaired == (("s1", "enP2p1s0f1np1"), ("s2", "enP2p1s0f1np1"))
    messages = [f.message for f in cabling.findings]
    assert "s1: enP2p1s0f1np1 has a link but no peer answered on it" in messages
    assert any(m.startswith("only one half of s1 port 1 reaches s2") for m in messages)


def test_cross_cabled_direct() -> None:
    facts = {"s1": node("s1"), "s2": node("s2")}
    heard = mutual("s1", "enp1s0f0np0", "s2", "enp1s0f1np1") + mutual("s1", "enP2p1s0f0np0", "s2", "enP2p1s0f1np1")
    heard += mutual("s1", "enp1s0f1np1", "s2", "enp1s0f0np0") + mutual("s1", "enP2p1s0f1np1", "s2", "enP2p1s0f0np0")
    cabling = build_map(facts, edges_from_probe(heard), "probe")
    assert cabling.topology == "direct" and cabling.cables == 2
    assert sum(f.message.startswith("cross-cabled") for f in cabling.findings) == 2


def test_ring_and_cross_cabled_ring() -> None:
    facts = {n: node(n) for n in ("s1", "s2", "s3")}
    good: list[Heard] = []
    for a, b in (("s1", "s2"), ("s2", "s3"), ("s3", "s1")):
        good += mutual(a, "enp1s0f0np0", b, "enp1s0f1np1") + mutual(a, "enP2p1s0f0np0", b, "enP2p1s0f1np1")
    ring = build_map(facts, edges_from_probe(good), "probe")
    assert (ring.topology, ring.cables, ring.findings) == ("ring", 3, ())
    bad = mutual("s1", "enp1s0f0np0", "s2", "enp1s0f0np0") + mutual("s2", "enp1s0f1np1", "s3", "enp1s0f1np1")
    bad += mutual("s3", "enp1s0f0np0", "s1", "enp1s0f1np1")
    crossed = build_map(facts, edges_from_probe(bad), "probe")
    assert crossed.topology == "ring"
    assert [f.message for f in crossed.findings if f.message.startswith("cross-cabled ring")] == [
        "cross-cabled ring: s1 port 0 is cabled to s2 port 0",
        "cross-cabled ring: s2 port 1 is cabled to s3 port 1",
    ]


def test_switch_is_one_interface_hearing_many() -> None:
    names = ("s1", "s2", "s3", "s4")
    facts = {n: node(n, down=HALVES[:2]) for n in names}
    heard = [Heard(a, h, b, h) for a in names for b in names if a != b for h in HALVES[2:]]
    cabling = build_map(facts, edges_from_probe(heard), "probe")
    assert cabling.topology == "switch" and cabling.findings == ()
    assert cabling.peers(("s1", "enp1s0f1np1")) == [("s2", "enp1s0f1np1"), ("s3", "enp1s0f1np1"), ("s4", "enp1s0f1np1")]


def test_nothing_linked() -> None:
    facts = {"s1": node("s1", down=HALVES), "s2": node("s2", down=HALVES)}
    cabling = build_map(facts, set(), "probe")
    assert cabling.topology == "none" and cabling.findings[0].severity == "fail"


def test_address_plan_fallback_pairs_by_subnet() -> None:
    facts = {
        "s1": node("s1", {"enp1s0f1np1": "192.168.100.10/24", "enP2p1s0f1np1": "192.168.101.10/24"}, down=HALVES[:2]),
        "s2": node("s2", {"enp1s0f1np1": "192.168.100.11/24", "enP2p1s0f1np1": "192.168.101.11/24"}, down=HALVES[:2]),
    }
    cabling = build_map(facts, edges_from_addresses(facts), "address plan")
    assert cabling.topology == "direct" and cabling.cables == 1
    assert set(cabling.links) == {
        (("s1", "enP2p1s0f1np1"), ("s2", "enP2p1s0f1np1")),
        (("s1", "enp1s0f1np1"), ("s2", "enp1s0f1np1")),
    }


# ----------------------------------------------------------------------------------------- rings of 3 to 8
PORT0, PORT1 = HALVES[:2], HALVES[2:]  # (half 0, half 1) of each port


def ring_heard(names: list[str], cut: int | None = None, swapped: str | None = None) -> list[Heard]:
    """Cable c joins names[c]'s port 0 to names[c+1]'s port 1, the last back to the first; `cut` leaves cable c out,
    `swapped` cross-cables that node's two ports."""
    heard: list[Heard] = []
    for c, a in enumerate(names):
        if c == cut:
            continue
        b = names[(c + 1) % len(names)]
        a_port, b_port = (PORT1 if a == swapped else PORT0), (PORT0 if b == swapped else PORT1)
        for half in (0, 1):
            heard += mutual(a, a_port[half], b, b_port[half])
    return heard


@pytest.mark.parametrize("count", range(3, 9))
def test_ring_of_n_in_order(count: int) -> None:
    names = [f"spark-{i}" for i in range(1, count + 1)]
    facts = {n: node(n) for n in reversed(names)}
    cabling = build_map(facts, edges_from_probe(ring_heard(names)), "probe")
    assert (cabling.topology, cabling.cables, cabling.findings, cabling.unpaired) == ("ring", count, (), ())
    assert cabling.order == tuple(names)
    cables = {frozenset({(p.a_node, p.a_port), (p.b_node, p.b_port)}) for p in cabling.port_links}
    assert cables == {frozenset({(names[c], "port 0"), (names[(c + 1) % count], "port 1")}) for c in range(count)}
    assert all(len(p.halves) == 2 for p in cabling.port_links)


@pytest.mark.parametrize("count", range(3, 9))
def test_cut_ring_is_a_chain(count: int) -> None:
    names = [f"spark-{i}" for i in range(1, count + 1)]
    cut = count // 2  # between names[cut] and names[(cut + 1) % count]: no carrier at either end
    facts = {n: node(n) for n in names}
    facts[names[cut]] = node(names[cut], down=PORT0)
    facts[names[(cut + 1) % count]] = node(names[(cut + 1) % count], down=PORT1)
    cabling = build_map(facts, edges_from_probe(ring_heard(names, cut=cut)), "probe")
    assert cabling.topology == "chain" and cabling.cables == count - 1
    first, last = names[cut + 1], names[cut]
    assert cabling.order == (*names[cut + 1 :], *names[: cut + 1])
    (finding,) = cabling.findings
    assert finding.severity == "warn"
    assert finding.message.startswith(f"cut ring: no cable between {last} and {first}")
    assert f"through {count - 2} relay(s)" in finding.message


@pytest.mark.parametrize("count", [3, 4, 6, 8])
def test_cross_cabled_ring_names_the_node(count: int) -> None:
    names = [f"spark-{i}" for i in range(1, count + 1)]
    facts = {n: node(n) for n in names}
    cabling = build_map(facts, edges_from_probe(ring_heard(names, swapped="spark-2")), "probe")
    assert cabling.topology == "ring" and cabling.order == tuple(names)
    assert [f.message for f in cabling.findings] == [
        "cross-cabled ring: spark-1 port 0 is cabled to spark-2 port 0",
        "cross-cabled ring: spark-2 port 1 is cabled to spark-3 port 1",
    ]


def test_two_rings_or_a_stray_node_are_no_ring() -> None:
    names = [f"s{i}" for i in range(1, 7)]
    facts = {n: node(n) for n in names}
    two = build_map(facts, edges_from_probe(ring_heard(names[:3]) + ring_heard(names[3:])), "probe")
    assert two.topology == "partial" and two.order == ()
    stray = build_map({**facts, "s7": node("s7", down=HALVES)}, edges_from_probe(ring_heard(names)), "probe")
    assert stray.topology == "partial"


def test_order_survives_json() -> None:
    names = [f"spark-{i}" for i in range(1, 5)]
    cabling = build_map({n: node(n) for n in names}, edges_from_probe(ring_heard(names)), "probe")
    assert cabling_from_json(to_jsonable(cabling)).order == tuple(names)


def test_discover_prints_the_ring_in_order() -> None:
    names = [f"spark-{i}" for i in range(1, 5)]
    facts = {n: node(n) for n in names}
    cabling = build_map(facts, edges_from_probe(ring_heard(names)), "probe")
    console = Console(file=io.StringIO(), width=120)
    console.print(cabling_diagram(Discovery(facts, cabling)))
    lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines[0].startswith("cabling: ring, 4 cable(s)")
    assert lines[1].strip() == "ring: spark-1 → spark-2 → spark-3 → spark-4 → spark-1"
    cables = [line.strip() for line in lines if "════" in line]
    assert cables == [
        "spark-1 port 0 ════ spark-2 port 1",
        "spark-2 port 0 ════ spark-3 port 1",
        "spark-3 port 0 ════ spark-4 port 1",
        "spark-4 port 0 ════ spark-1 port 1",
    ]


def test_discover_prints_a_cut_ring_as_a_chain() -> None:
    names = [f"spark-{i}" for i in range(1, 5)]
    facts = {n: node(n) for n in names}
    facts["spark-2"], facts["spark-3"] = node("spark-2", down=PORT0), node("spark-3", down=PORT1)
    cabling = build_map(facts, edges_from_probe(ring_heard(names, cut=1)), "probe")
    console = Console(file=io.StringIO(), width=120)
    console.print(cabling_diagram(Discovery(facts, cabling)))
    lines = [line.strip() for line in console.file.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert lines[0].startswith("cabling: chain, 3 cable(s)")
    assert lines[1] == "chain: spark-3 → spark-4 → spark-1 → spark-2"
    assert [line for line in lines if "════" in line] == [
        "spark-3 port 0 ════ spark-4 port 1",
        "spark-4 port 0 ════ spark-1 port 1",
        "spark-1 port 0 ════ spark-2 port 1",
    ]
    assert any(line.startswith("warn: cut ring: no cable between spark-2 and spark-3") for line in lines)
