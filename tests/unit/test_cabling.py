"""The cabling map from probe observations and from address plans, with its findings."""

from __future__ import annotations

from wirespeed.core.cabling import Heard, build_map, edges_from_addresses, edges_from_probe
from wirespeed.core.facts import Netdev, NodeFacts, Unknown
from wirespeed.core.ports import group_ports

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
