"""Every check over the snapshot fixtures of real hardware shapes, as `wirespeed check --snapshot` runs them."""

from __future__ import annotations

import dataclasses
from functools import cache

import pytest
from builders import FIXTURES, P1H0, P1H1, assert_actionable, cluster, plan_address, spark, without_rdma

import wirespeed.core.checks.all  # noqa: F401 - registers every check
from wirespeed.core.checks.model import REGISTRY, ActiveResults, CheckInput, CheckResult, CheckStatus
from wirespeed.engine.discover import discover_snapshots

CASES = ("spark-two-cables", "spark-one-cable", "spark-switch-100g", "gx10-pcie-x2", "spark-gid-ipv6", "ib-server")
OURS = sorted(i for i in REGISTRY if i != "ssh.mesh")


@cache
def data(case: str) -> CheckInput:
    found = discover_snapshots([FIXTURES / case])
    assert found.errors == {}
    return CheckInput(found.facts, found.cabling)


@cache
def results(case: str) -> dict[str, CheckResult]:
    return {check_id: REGISTRY[check_id].run(data(case)) for check_id in OURS}


def status(case: str, check_id: str) -> CheckStatus:
    return results(case)[check_id].status


@pytest.mark.parametrize("case", CASES)
def test_every_check_runs_and_says_what_to_do(case: str) -> None:
    for outcome in results(case).values():
        assert_actionable(outcome)
    assert status(case, "mtu.path") is CheckStatus.SKIP  # snapshots carry no active measurement
    assert status(case, "container.rdma") is CheckStatus.SKIP  # no node runs in a container


def test_two_cables_pass_the_link_checks() -> None:
    for check_id in ("link.speed", "link.halves", "addr.subnets", "mtu.host", "gid.rocev2", "pcie.width"):
        assert status("spark-two-cables", check_id) is CheckStatus.PASS, results("spark-two-cables")[check_id]
    assert status("spark-two-cables", "ipv6.fabric") is CheckStatus.PASS
    assert status("spark-two-cables", "sysctl.tcp") is CheckStatus.PASS  # tuned: 256 MiB buffers, backlog 250000
    assert status("spark-two-cables", "nccl.env") is CheckStatus.PASS


def test_switch_at_100g_fails_link_speed_naming_spark_3() -> None:
    outcome = results("spark-switch-100g")["link.speed"]
    assert outcome.status is CheckStatus.FAIL
    assert {(e.node, e.subject, e.value) for e in outcome.evidence} == {
        ("spark-3", "enp1s0f1np1", 100000),
        ("spark-3", "enP2p1s0f1np1", 100000),
    }
    assert [f.node for f in outcome.fixes] == [None]  # the switch port
    assert "200G-baseCR4" in outcome.fixes[0].description and "spark-3 port 1" in outcome.fixes[0].description
    assert status("spark-switch-100g", "link.halves") is CheckStatus.PASS
    assert status("spark-switch-100g", "addr.subnets") is CheckStatus.PASS


def test_gx10_fails_pcie_width_on_its_second_function_pair() -> None:
    outcome = results("gx10-pcie-x2")["pcie.width"]
    assert outcome.status is CheckStatus.FAIL
    assert {(e.node, e.subject) for e in outcome.evidence} == {("gx10-1", "0002:01:00.0"), ("gx10-1", "0002:01:00.1")}
    assert all("x2 of 32 GT/s x4" in str(e.value) for e in outcome.evidence)
    assert status("gx10-pcie-x2", "link.speed") is CheckStatus.PASS  # the network link itself is fine


def test_ipv6_shifted_gid_index_warns() -> None:
    ipv6 = results("spark-gid-ipv6")["ipv6.fabric"]
    assert ipv6.status is CheckStatus.WARN
    assert [(e.node, e.subject) for e in ipv6.evidence] == [("spark-2", "enp1s0f1np1")]
    # Without the pin in spark-2's environment the differing index is a warning: 3 on spark-1, 7 on spark-2.
    facts = {n: dataclasses.replace(f, environment={}) for n, f in data("spark-gid-ipv6").facts.items()}
    gid = REGISTRY["gid.rocev2"].run(dataclasses.replace(data("spark-gid-ipv6"), facts=facts))
    assert gid.status is CheckStatus.WARN
    assert "(3, 7)" in gid.summary
    seen = {(e.node, e.subject, e.value) for e in gid.evidence}
    assert {("spark-1", "rocep1s0f1", 3), ("spark-2", "rocep1s0f1", 7)} <= seen


def test_ipv6_fixture_with_the_pinned_index_fails() -> None:
    """spark-2's ssh session pins NCCL_IB_GID_INDEX=3 with NCCL_IB_HCA=rocep1s0f1, whose index is 7."""
    gid = results("spark-gid-ipv6")["gid.rocev2"]
    assert gid.status is CheckStatus.FAIL
    assert "pinned wrong on spark-2" in gid.summary and "(3, 7)" in gid.summary
    assert ("spark-2", "NCCL_IB_GID_INDEX", "3") in {(e.node, e.subject, e.value) for e in gid.evidence}
    nccl = results("spark-gid-ipv6")["nccl.env"]
    assert nccl.status is CheckStatus.FAIL  # the HCA list leaves out roceP2p1s0f1, port 1's other half
    assert [(e.node, e.subject, e.value) for e in nccl.evidence] == [("spark-2", "NCCL_IB_HCA", "rocep1s0f1")]


def test_one_cable_passes_link_halves_with_port_0_empty() -> None:
    outcome = results("spark-one-cable")["link.halves"]
    assert outcome.status is CheckStatus.PASS
    assert outcome.summary == "2 cabled ports: 4 halves up and addressed"


def test_ib_server_skips_roce_gids() -> None:
    assert status("ib-server", "gid.rocev2") is CheckStatus.SKIP
    assert status("ib-server", "ipv6.fabric") is CheckStatus.SKIP
    assert status("ib-server", "mem.lock") is CheckStatus.PASS  # memlock unlimited
    tools = results("ib-server")["tools.present"]
    assert tools.status is CheckStatus.FAIL
    assert ("ib-node-1", "mpirun", "no") in {(e.node, e.subject, e.value) for e in tools.evidence}


@pytest.mark.parametrize("case", [c for c in CASES if c != "ib-server"])
def test_spark_defaults_ubuntu_memlock_and_slot_power(case: str) -> None:
    memlock = results(case)["mem.lock"]
    assert memlock.status is CheckStatus.FAIL
    assert {e.value for e in memlock.evidence} == {8388608}
    power = results(case)["power.slot"]
    assert power.status is CheckStatus.PASS and "informational" in power.summary
    assert status(case, "sysctl.arp") is CheckStatus.WARN  # arp_ignore 0 with two addressed halves
    if case != "spark-two-cables":
        assert status(case, "sysctl.tcp") is CheckStatus.WARN


def test_the_emulated_switch_cluster_shape() -> None:
    """Veths with Spark names on one bridge, no RDMA or PCI: the link checks judge, the hardware checks skip."""
    nodes = [without_rdma(spark(f"wcs-{n}", 9 + n)) for n in (1, 2, 3)]
    ends = [(f.node, i) for f in nodes for i in (P1H0, P1H1)]
    links = [(a, b) for a in ends for b in ends if a[0] < b[0]]
    addresses = {end: plan_address(end[1], 9 + int(end[0][-1])).split("/")[0] for end in ends}
    # The runner pings across every link; those between different halves cross subnets and never answer.
    pings = {(a[0], a[1], b[0], addresses[b]): a[1] == b[1] for a, b in links}
    data = cluster(*nodes, links=links, active=ActiveResults(mtu_pings=pings))
    assert data.cabling.topology == "switch"
    outcomes = {i: REGISTRY[i].run(data) for i in OURS}
    for check_id in ("link.halves", "link.speed", "addr.subnets", "mtu.host", "mtu.path", "ipv6.fabric"):
        assert outcomes[check_id].status is CheckStatus.PASS, outcomes[check_id]
    for check_id in ("gid.rocev2", "mem.lock", "pcie.width", "container.rdma"):
        assert outcomes[check_id].status is CheckStatus.SKIP, outcomes[check_id]


def test_nccl_arch_from_the_snapshots() -> None:
    # The playbook's sm_121 build passes; the GX10 pair's Hopper-era NCCL runs only by JIT from compute_90 PTX.
    assert status("spark-two-cables", "nccl.arch") is CheckStatus.PASS
    outcome = results("gx10-pcie-x2")["nccl.arch"]
    assert outcome.status is CheckStatus.WARN
    assert {e.node for e in outcome.evidence} == {"gx10-1", "gx10-2"}
    assert all("PTX only" in e.what for e in outcome.evidence)
    assert status("ib-server", "nccl.arch") is CheckStatus.SKIP  # no GPU
