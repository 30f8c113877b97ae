"""link.speed and link.halves on synthetic Sparks."""

from __future__ import annotations

from builders import P0H0, P0H1, P1H0, P1H1, Half, assert_actionable, cluster, fix_text, plan_address, run, spark

from wirespeed.core.checks.model import CheckStatus
from wirespeed.core.fabric.facts import Unknown


def test_speed_passes_when_every_cabled_half_runs_at_the_top_rate() -> None:
    outcome = run("link.speed", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS
    assert "4 cabled halves, all at 200000 Mb/s" in outcome.summary


def test_speed_fails_a_switch_port_that_negotiated_100g() -> None:
    slow = {h: Half(ipv4=(plan_address(h, 12),), speed=100000, rate_gbps=100.0) for h in (P1H0, P1H1)}
    data = cluster(spark("s1", 10), spark("s2", 11), spark("s3", 12, half=slow))
    assert data.cabling.topology == "switch"
    outcome = run("link.speed", data)
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert {(e.node, e.subject, e.value) for e in outcome.evidence} == {("s3", P1H0, 100000), ("s3", P1H1, 100000)}
    [fix] = outcome.fixes  # one switch port carries both halves of the port
    assert fix.node is None and "200G-baseCR4" in fix.description and "auto-negotiation" in fix.description
    assert f"ethtool {P1H0} | grep Speed" in fix_text(outcome.fixes)


def test_speed_on_a_direct_cable_says_reseat_the_cable() -> None:
    slow = {P1H0: Half(ipv4=(plan_address(P1H0, 11),), speed=100000)}
    outcome = run("link.speed", cluster(spark("s1", 10), spark("s2", 11, half=slow)))
    assert outcome.status is CheckStatus.FAIL
    assert [fix.node for fix in outcome.fixes] == ["s2"]
    assert "reseat" in outcome.fixes[0].description and P1H0 in outcome.fixes[0].description


def test_speed_falls_back_to_the_rdma_rate() -> None:
    unknown = {P1H0: Half(ipv4=(plan_address(P1H0, 11),), speed=Unknown("unreadable"), rate_gbps=100.0)}
    outcome = run("link.speed", cluster(spark("s1", 10), spark("s2", 11, half=unknown)))
    assert outcome.status is CheckStatus.FAIL
    assert [(e.node, e.subject, e.value) for e in outcome.evidence] == [("s2", P1H0, 100000)]


def test_speed_skips_without_a_link() -> None:
    down = {h: Half(up=False) for h in (P1H0, P1H1)}
    outcome = run("link.speed", cluster(spark("s1", 10, half=down)))
    assert outcome.status is CheckStatus.SKIP


def test_halves_pass_with_one_cable_and_port_0_empty() -> None:
    outcome = run("link.halves", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS
    assert outcome.summary == "2 cabled ports: 4 halves up and addressed"


def test_halves_fail_names_the_unaddressed_half_and_plans_its_address() -> None:
    data = cluster(spark("s1", 10), spark("s2", 11, half={P1H1: Half()}))
    outcome = run("link.halves", data)
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert [(e.node, e.subject, e.value) for e in outcome.evidence] == [("s2", P1H1, "none")]
    [fix] = outcome.fixes
    assert fix.node == "s2"
    # Its peer's half is on 192.168.101.0/24: the plan puts it there, with the node's own host number.
    assert f"sudo ip addr add 192.168.101.11/24 dev {P1H1}" in fix.commands
    [(path, content)] = fix.files
    assert path == "/etc/netplan/40-cx7.yaml"
    assert f"    {P1H1}:\n      addresses:\n        - 192.168.101.11/24" in content
    assert "        - 192.168.100.11/24" in content  # the working half keeps its address
    assert "mtu: 9000" in content and "dhcp4: false" in content and "link-local: []" in content


def test_halves_fail_on_an_administratively_down_half() -> None:
    down = {P1H1: Half(admin_down=True, up=False, ipv4=(plan_address(P1H1, 10),))}
    outcome = run("link.halves", cluster(spark("s1", 10, half=down), spark("s2", 11)))
    assert outcome.status is CheckStatus.FAIL
    assert [(e.node, e.subject) for e in outcome.evidence] == [("s1", P1H1)]
    assert "administratively down" in str(outcome.evidence[0].value)
    assert f"sudo ip link set {P1H1} up" in outcome.fixes[0].commands


def test_halves_with_two_cables_check_both_ports() -> None:
    broken = {P0H1: Half()}
    outcome = run("link.halves", cluster(spark("s1", 10, cables=2), spark("s2", 11, cables=2, half=broken)))
    assert outcome.status is CheckStatus.FAIL
    assert [(e.node, e.subject) for e in outcome.evidence] == [("s2", P0H1)]
    assert f"192.168.103.11/24 dev {P0H1}" in fix_text(outcome.fixes)
    assert P0H0 not in {e.subject for e in outcome.evidence}
