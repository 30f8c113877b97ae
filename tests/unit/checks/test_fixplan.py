"""What `wirespeed fix` plans from the facts, and how applied operations are undone."""

from __future__ import annotations

import dataclasses

import pytest
from builders import P1H0, P1H1, spark

from wirespeed.core.facts import Unknown
from wirespeed.core.fixplan import Operation, operation_from_json, plan, plan_node
from wirespeed.engine.apply import undo_ops


def test_a_tuned_healthy_node_needs_nothing() -> None:
    assert plan_node(spark("s1", 10)) == []
    assert plan({"s1": spark("s1", 10)}) == {}


def test_untuned_sysctls_are_raised() -> None:
    facts = spark(
        "s1",
        10,
        sysctls={
            "net.core.rmem_max": "212992",
            "net.ipv4.tcp_wmem": "4096 16384 4194304",
            "net.ipv4.conf.all.arp_ignore": "0",
            "net.ipv4.conf.all.arp_announce": "2",
            "net.ipv4.conf.all.rp_filter": "1",
        },
    )
    ops = {(op.target, op.value, op.reason) for op in plan_node(facts)}
    assert ops == {
        ("net.core.rmem_max", "268435456", "sysctl.tcp"),
        ("net.ipv4.tcp_wmem", "4096 87380 268435456", "sysctl.tcp"),
        ("net.ipv4.conf.all.arp_ignore", "1", "sysctl.arp"),
        ("net.ipv4.conf.all.rp_filter", "2", "sysctl.arp"),
    }


def test_fabric_mtu_ipv6_and_a_half_left_down() -> None:
    base = spark("s1", 10)
    netdevs = []
    for n in base.netdevs:
        if n.name == P1H0:
            n = dataclasses.replace(n, mtu=1500, ipv6=("fe80::1/64",))
        if n.name == P1H1:
            n = dataclasses.replace(n, operstate="down", carrier=Unknown("administratively down"))
        netdevs.append(n)
    ops = plan_node(dataclasses.replace(base, netdevs=tuple(netdevs)))
    assert Operation("mtu", P1H0, "9000", "mtu.host", network=True) in ops
    assert Operation("sysctl", f"net.ipv6.conf.{P1H0}.disable_ipv6", "1", "ipv6.fabric") in ops
    assert Operation("link", P1H1, "up", "link.halves", network=True) in ops
    assert all(op.target != "enP7s7" for op in ops)  # the management interface is never touched


def test_operations_round_trip_and_reject_unknown_kinds() -> None:
    op = Operation("mtu", "enp1s0f1np1", "9000", "mtu.host", network=True)
    assert operation_from_json(op.to_json()) == op
    with pytest.raises(ValueError):
        operation_from_json({"kind": "shell", "target": "x", "value": "rm -rf /"})


def test_undo_restores_originals_in_reverse_and_skips_no_ops_and_failures() -> None:
    done = [
        {"op": Operation("sysctl", "a", "1", "x").to_json(), "original": "0", "ok": True, "error": None},
        {"op": Operation("sysctl", "b", "1", "x").to_json(), "original": "1", "ok": True, "error": None},
        {"op": Operation("mtu", "e", "9000", "x", True).to_json(), "original": "1500", "ok": True, "error": None},
        {"op": Operation("sysctl", "c", "1", "x").to_json(), "original": None, "ok": False, "error": "denied"},
    ]
    assert undo_ops(done) == [
        Operation("mtu", "e", "1500", "revert", True),
        Operation("sysctl", "a", "0", "revert"),
    ]
