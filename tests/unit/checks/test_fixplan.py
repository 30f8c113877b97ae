"""What `wirespeed fix` plans from the facts and the checks, and how applied operations are undone."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from builders import P1H0, P1H1, Half, cluster, plan_address, run, spark

from wirespeed.core.checks.model import REGISTRY, CheckInput, CheckResult
from wirespeed.core.checks.plan import NETPLAN_PATH
from wirespeed.core.checks.sysctl import TCP_FILE
from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.fixplan import (
    Operation,
    file_diff,
    operation_from_json,
    plan,
    plan_nodes,
    sysctl_lines,
    undo_of,
)
from wirespeed.core.records.fixrecord import AppliedChange, NodeFixResult, undo_changes


def results(data: CheckInput) -> list[CheckResult]:
    run("link.speed", data)  # registers every check
    return [run(check_id, data) for check_id in sorted(REGISTRY) if check_id != "ssh.mesh"]


def planned(*nodes: NodeFacts) -> dict[str, list[Operation]]:
    data = cluster(*nodes)
    return plan(data, results(data))


def test_a_tuned_healthy_cluster_needs_nothing() -> None:
    assert planned(spark("s1", 10, netplan=True), spark("s2", 11, netplan=True)) == {}


def test_untuned_sysctls_get_the_checks_file_and_each_line_applied_now() -> None:
    untuned = {"net.core.rmem_max": "212992", "net.ipv4.tcp_wmem": "4096 16384 4194304"}
    s1 = spark("s1", 10, sysctls={**spark("s1").sysctls, **untuned})
    ops = planned(s1, spark("s2", 11))["s1"]
    [written] = [op for op in ops if op.kind == "file"]
    assert written.target == TCP_FILE and written.reason == "sysctl.tcp"
    assert "net.core.rmem_max = 134217728" in written.value
    live = {(op.target, op.value) for op in ops if op.kind == "sysctl"}
    # Only what differs is set now; a higher value already there is kept (the file says so too).
    assert live == {("net.core.rmem_max", "134217728"), ("net.ipv4.tcp_wmem", "4096 16384 134217728")}


def test_a_file_the_node_already_has_is_not_rewritten() -> None:
    s1 = spark("s1", 10, sysctls={**spark("s1").sysctls, "net.core.rmem_max": "212992"})
    first = planned(s1, spark("s2", 11))["s1"]
    content = next(op.value for op in first if op.kind == "file")
    again = planned(dataclasses.replace(s1, config_files={TCP_FILE: content}), spark("s2", 11))["s1"]
    assert [op.kind for op in again] == ["sysctl"]


def test_mtu_ipv6_and_a_half_left_down_with_netplan() -> None:
    halves = {P1H0: Half(ipv4=(plan_address(P1H0, 10),), mtu=1500, ipv6=("fe80::1/64",))}
    s1 = spark("s1", 10, half=halves, netplan=True)
    ops = planned(s1, spark("s2", 11, netplan=True))["s1"]
    assert Operation("mtu", P1H0, "9000", "mtu.host", network=True) in ops
    assert Operation("sysctl", f"net.ipv6.conf.{P1H0}.disable_ipv6", "1", "ipv6.fabric") in ops
    files = {op.target for op in ops if op.kind == "file"}
    assert files == {
        "/etc/netplan/41-wirespeed-mtu.yaml",
        "/etc/netplan/42-wirespeed-no-ipv6.yaml",
        "/etc/sysctl.d/92-wirespeed-no-ipv6.conf",
    }
    assert all(op.target != "enP7s7" for op in ops)  # the management interface is never touched


def test_without_netplan_the_netplan_files_are_left_out_and_said_so() -> None:
    halves = {P1H0: Half(ipv4=(plan_address(P1H0, 10),), mtu=1500)}
    data = cluster(spark("s1", 10, half=halves, netplan=False), spark("s2", 11))
    node = plan_nodes(data, results(data))["s1"]
    assert [op.kind for op in node.operations] == ["mtu"]
    assert node.notes and "41-wirespeed-mtu.yaml" in node.notes[0] and "netplan" in node.notes[0]


def test_an_unaddressed_half_is_addressed_from_the_plan_and_brought_up() -> None:
    halves = {P1H1: Half(ipv4=(), admin_down=True)}
    s1 = spark("s1", 10, half=halves, netplan=True)
    ops = planned(s1, spark("s2", 11, netplan=True))["s1"]
    assert Operation("addr", P1H1, plan_address(P1H1, 10), "link.halves", network=True) in ops
    assert Operation("link", P1H1, "up", "link.halves", network=True) in ops
    netplan = next(op for op in ops if op.target == NETPLAN_PATH)
    assert plan_address(P1H1, 10) in netplan.value and plan_address(P1H0, 10) in netplan.value


def test_operations_round_trip_and_unsafe_ones_are_refused() -> None:
    for op in (
        Operation("mtu", "enp1s0f1np1", "9000", "mtu.host", network=True),
        Operation("file", TCP_FILE, "a = 1\n", "sysctl.tcp"),
        Operation("addr", "enp1s0f1np1", "192.168.100.10/24", "addr.subnets", network=True),
    ):
        assert operation_from_json(op.to_json()) == op
    with pytest.raises(ValueError, match="unknown operation kind"):
        operation_from_json({"kind": "shell", "target": "x", "value": "rm -rf /"})
    with pytest.raises(ValueError, match="only under"):
        operation_from_json({"kind": "file", "target": "/etc/passwd", "value": "x"})
    with pytest.raises(ValueError, match="only under"):
        operation_from_json({"kind": "unlink", "target": "/etc/sysctl.d/../shadow", "value": ""})


def undo_ops(done: list[dict[str, Any]]) -> list[Operation]:
    """What `fix --revert` restores of a node's applied changes: those that took and replaced something."""
    return undo_changes(NodeFixResult("n", tuple(AppliedChange.from_json(e) for e in done)).changed())


def test_undo_restores_originals_in_reverse_files_included() -> None:
    done = [
        {"op": Operation("sysctl", "a", "1", "x").to_json(), "original": "0", "ok": True, "error": None},
        {"op": Operation("sysctl", "b", "1", "x").to_json(), "original": "1", "ok": True, "error": None},
        {"op": Operation("file", TCP_FILE, "new\n", "x").to_json(), "original": None, "ok": True, "error": None},
        {"op": Operation("file", NETPLAN_PATH, "new\n", "x").to_json(), "original": "old\n", "ok": True, "error": None},
        {"op": Operation("mtu", "e", "9000", "x", True).to_json(), "original": "1500", "ok": True, "error": None},
        {"op": Operation("sysctl", "c", "1", "x").to_json(), "original": None, "ok": False, "error": "denied"},
    ]
    assert undo_ops(done) == [
        Operation("mtu", "e", "1500", "revert", True),
        Operation("file", NETPLAN_PATH, "old\n", "revert"),
        Operation("unlink", TCP_FILE, "", "revert"),
        Operation("sysctl", "a", "0", "revert"),
    ]
    assert undo_of(Operation("addr", "e", "192.168.100.10/24", "x", True).to_json(), "") == Operation(
        "addr", "e", "", "revert", True
    )


def test_sysctl_files_read_as_sysctl_reads_them() -> None:
    text = "# comment\n; also\n\nnet.core.rmem_max = 1\n-net/ipv4/tcp_rmem=4096\t87380   2\nnot a line\n"
    assert sysctl_lines(text) == [("net.core.rmem_max", "1"), ("net.ipv4.tcp_rmem", "4096 87380 2")]


def test_file_diff_against_nothing_and_against_an_old_version() -> None:
    assert file_diff("/etc/x", None, "a\n") == ["--- /dev/null", "+++ /etc/x", "@@ -0,0 +1 @@", "+a"]
    assert file_diff("/etc/x", "a\nb\n", "a\nc\n")[-2:] == ["-b", "+c"]
    assert file_diff("/etc/x", "same\n", "same\n") == []


def test_unknown_netplan_is_not_assumed() -> None:
    halves = {P1H0: Half(ipv4=(plan_address(P1H0, 10),), mtu=1500)}
    data = cluster(spark("s1", 10, half=halves, netplan=Unknown("config_files: not recorded")), spark("s2", 11))
    assert "not recorded" in plan_nodes(data, results(data))["s1"].notes[0]


def test_a_readdressed_half_takes_the_host_number_its_node_uses_on_the_other_halves() -> None:
    # Nodes numbered .1 and .2 (not the plan's .10, .11): the lost half comes back as .2, like its twin.
    s1 = spark("s1", 1, netplan=True)
    s2 = spark("s2", 2, half={P1H1: Half(ipv4=())}, netplan=True)
    ops = planned(s1, s2)["s2"]
    assert Operation("addr", P1H1, plan_address(P1H1, 2), "link.halves", network=True) in ops
