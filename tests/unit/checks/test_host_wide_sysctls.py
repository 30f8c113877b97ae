"""Host-wide sysctls on a node that is a network namespace of its own (a container, an emulated node): the kernel
refuses them there, so `fix` notes them instead of planning them, `sysctl.tcp` leaves them to the host, and once
the node's own settings are fixed a second plan is empty."""

from __future__ import annotations

import dataclasses

from builders import cluster, run, spark

from wirespeed.core.checks.model import REGISTRY, CheckInput, CheckResult, CheckStatus
from wirespeed.core.checks.sysctl import HOST_WIDE_REASON, TCP_FILE, in_network_namespace
from wirespeed.core.fabric.facts import NodeFacts
from wirespeed.core.fixplan import NodePlan, plan_nodes

# What the testbed's nodes show (a network namespace on a 6.x kernel): rmem_max and its kin read-only from the
# host, net.core.netdev_max_backlog not at all, the per-namespace TCP and ARP settings their own.
NAMESPACE = {
    "net.core.rmem_max": "4194304",
    "net.core.wmem_max": "4194304",
    "net.core.rmem_default": "212992",
    "net.core.wmem_default": "212992",
    "net.ipv4.tcp_rmem": "4096 131072 33554432",
    "net.ipv4.tcp_wmem": "4096 16384 4194304",
    "net.ipv4.conf.all.arp_ignore": "1",
    "net.ipv4.conf.all.arp_announce": "2",
    "net.ipv4.conf.all.rp_filter": "2",
}
NOTE = f"sysctl net.core.rmem_max, net.core.wmem_max, net.core.netdev_max_backlog skipped: {HOST_WIDE_REASON}"


def results(data: CheckInput) -> list[CheckResult]:
    run("link.speed", data)  # registers every check
    return [run(check_id, data) for check_id in sorted(REGISTRY) if check_id != "ssh.mesh"]


def plans(*nodes: NodeFacts) -> dict[str, NodePlan]:
    data = cluster(*nodes)
    return plan_nodes(data, results(data))


def namespaced(name: str, index: int) -> NodeFacts:
    return spark(name, index, sysctls=dict(NAMESPACE))


def test_the_kernel_says_which_node_is_a_network_namespace() -> None:
    assert in_network_namespace(namespaced("s1", 10))  # per-namespace sysctls read, netdev_max_backlog not
    assert not in_network_namespace(spark("s1", 10))  # the host's own namespace shows netdev_max_backlog
    assert not in_network_namespace(spark("s1", 10, sysctls={}))  # nothing read: no sign either way
    with_backlog = NAMESPACE | {"net.core.netdev_max_backlog": "1000"}
    assert in_network_namespace(spark("s1", 10, sysctls=with_backlog, emulated=True))  # the testbed says so


def test_host_wide_sysctls_are_a_note_not_an_operation_in_a_namespace() -> None:
    node = plans(namespaced("s1", 10), namespaced("s2", 11))["s1"]
    [written] = [op for op in node.operations if op.kind == "file"]
    assert written.target == TCP_FILE and "net.core.rmem_max = 134217728" in written.value  # the file, as checked
    live = {(op.target, op.value) for op in node.operations if op.kind == "sysctl"}
    assert live == {("net.ipv4.tcp_rmem", "4096 131072 134217728"), ("net.ipv4.tcp_wmem", "4096 16384 134217728")}
    assert node.notes == [NOTE]


def test_an_emulated_node_that_shows_the_backlog_still_skips_it() -> None:
    sysctls = NAMESPACE | {"net.core.netdev_max_backlog": "1000"}
    node = plans(spark("s1", 10, sysctls=sysctls, emulated=True), spark("s2", 11))["s1"]
    assert all(op.target not in ("net.core.rmem_max", "net.core.netdev_max_backlog") for op in node.operations)
    assert node.notes == [NOTE]


def test_the_hosts_own_namespace_still_sets_them() -> None:
    host = NAMESPACE | {"net.core.netdev_max_backlog": "1000"}
    node = plans(spark("s1", 10, sysctls=host), spark("s2", 11))["s1"]
    live = {op.target for op in node.operations if op.kind == "sysctl"}
    assert {"net.core.rmem_max", "net.core.wmem_max", "net.core.netdev_max_backlog"} <= live
    assert node.notes == []


def test_a_second_fix_plans_nothing() -> None:
    first = plans(namespaced("s1", 10), namespaced("s2", 11))
    after: list[NodeFacts] = []
    for name, index in (("s1", 10), ("s2", 11)):
        ops = first[name].operations
        applied = {op.target: op.value for op in ops if op.kind == "sysctl"}
        files = {op.target: op.value for op in ops if op.kind == "file"}
        node = namespaced(name, index)
        after.append(dataclasses.replace(node, sysctls={**node.sysctls, **applied}, config_files=files))
    assert plans(*after) == {}


def test_sysctl_tcp_leaves_host_wide_values_to_the_host_in_a_namespace() -> None:
    tuned = NAMESPACE | {"net.ipv4.tcp_rmem": "4096 131072 134217728", "net.ipv4.tcp_wmem": "4096 16384 134217728"}
    outcome = run("sysctl.tcp", cluster(spark("s1", 10, sysctls=tuned)))
    assert outcome.status is CheckStatus.PASS and not outcome.evidence
    assert f"left to the host ({HOST_WIDE_REASON}): s1 net.core.rmem_max=4194304" in outcome.summary
    assert "not read" not in outcome.summary  # netdev_max_backlog is not the namespace's to show
    untuned = run("sysctl.tcp", cluster(namespaced("s1", 10)))
    assert untuned.status is CheckStatus.WARN
    assert {e.subject for e in untuned.evidence} == {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
