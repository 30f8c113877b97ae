"""Grouping logical interfaces into physical ports: Spark halves by PCI domain, one port per interface elsewhere."""

from __future__ import annotations

from wirespeed.core.fabric.ports import group_ports, pci_address


def test_spark_halves_group_by_function_across_domains() -> None:
    ports = group_ports(
        [
            ("enp1s0f0np0", "0000:01:00.0"),
            ("enP2p1s0f0np0", "0002:01:00.0"),
            ("enp1s0f1np1", "0000:01:00.1"),
            ("enP2p1s0f1np1", "0002:01:00.1"),
        ]
    )
    assert [(p.label, p.halves) for p in ports] == [
        ("port 0", ("enp1s0f0np0", "enP2p1s0f0np0")),
        ("port 1", ("enp1s0f1np1", "enP2p1s0f1np1")),
    ]


def test_names_alone_place_emulated_halves() -> None:
    ports = group_ports([("enP2p1s0f1np1", None), ("enp1s0f1np1", None)])
    assert [(p.label, p.halves) for p in ports] == [("port 1", ("enp1s0f1np1", "enP2p1s0f1np1"))]


def test_a_dual_port_card_is_two_ports() -> None:
    ports = group_ports([("ens1f0np0", "0000:3b:00.0"), ("ens1f1np1", "0000:3b:00.1")])
    assert [p.halves for p in ports] == [("ens1f0np0",), ("ens1f1np1",)]
    assert [p.label for p in ports] == ["port 0", "port 1"]


def test_two_cards_are_labelled_by_address() -> None:
    ports = group_ports([("a", "0000:3b:00.0"), ("b", "0000:86:00.0")])
    assert [p.label for p in ports] == ["port 3b:00.0", "port 86:00.0"]


def test_unplaceable_names_are_their_own_port() -> None:
    ports = group_ports([("ib0", None), ("ib1", None)])
    assert [(p.label, p.halves) for p in ports] == [("ib0", ("ib0",)), ("ib1", ("ib1",))]


def test_pci_address() -> None:
    assert pci_address("x", "0002:01:00.1") == (2, "01:00.1")
    assert pci_address("enP2p1s0f1np1", None) == (2, "01:00.1")
    assert pci_address("enp1s0f0np0", None) == (0, "01:00.0")
    assert pci_address("eth0", None) is None
