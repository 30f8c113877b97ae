"""addr.subnets, ipv6.fabric and the per-half address plan their fixes propose."""

from __future__ import annotations

from builders import P0H0, P0H1, P1H0, P1H1, Half, assert_actionable, cluster, fix_text, plan_address, run, spark

from wirespeed.core.checks.model import CheckStatus
from wirespeed.core.checks.plan import address_plan


def addressed(s1: dict[str, str], s2: dict[str, str]) -> tuple[dict[str, Half], dict[str, Half]]:
    return ({i: Half(ipv4=(c,)) for i, c in s1.items()}, {i: Half(ipv4=(c,)) for i, c in s2.items()})


def test_subnets_pass_with_one_subnet_per_half() -> None:
    outcome = run("addr.subnets", cluster(spark("s1", 10, cables=2), spark("s2", 11, cables=2)))
    assert outcome.status is CheckStatus.PASS
    assert outcome.summary.startswith("8 addressed fabric interfaces")


def test_two_halves_on_one_subnet_fail_and_the_plan_moves_one() -> None:
    # The December 2025 playbook: both halves of port 1 in 192.168.100.0/24.
    a, b = addressed(
        {P1H0: "192.168.100.10/24", P1H1: "192.168.100.14/24"}, {P1H0: "192.168.100.11/24", P1H1: "192.168.100.15/24"}
    )
    outcome = run("addr.subnets", cluster(spark("s1", 10, half=a), spark("s2", 11, half=b)))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert "several fabric interfaces of one node on one subnet: s1, s2" in outcome.summary
    assert ("s1", P1H1, "192.168.100.14/24") in {(e.node, e.subject, e.value) for e in outcome.evidence}
    fixes = {f.node: f for f in outcome.fixes}
    assert set(fixes) == {"s1", "s2"}
    assert fixes["s1"].commands[:2] == (
        f"sudo ip addr del 192.168.100.14/24 dev {P1H1}",
        f"sudo ip addr add 192.168.101.10/24 dev {P1H1}",
    )
    [(path, content)] = fixes["s1"].files
    assert path == "/etc/netplan/40-cx7.yaml"
    assert "- 192.168.100.10/24" in content and "- 192.168.101.10/24" in content  # the first half keeps its address


def test_link_local_on_several_interfaces_fails_with_the_static_plan() -> None:
    a, b = addressed(
        {P1H0: "169.254.10.1/16", P1H1: "169.254.20.1/16"}, {P1H0: "169.254.10.2/16", P1H1: "169.254.20.2/16"}
    )
    outcome = run("addr.subnets", cluster(spark("s1", 10, half=a), spark("s2", 11, half=b)))
    assert outcome.status is CheckStatus.FAIL
    assert "169.254/16 link-local" in outcome.summary
    assert "link-local" in outcome.fixes[0].description
    [(path, content)] = next(f for f in outcome.fixes if f.node == "s2").files
    assert path == "/etc/netplan/40-cx7.yaml"
    expected = (
        f"    {P1H0}:\n      addresses:\n        - 192.168.100.11/24\n      dhcp4: false\n      dhcp6: false\n"
        f"      link-local: []\n      mtu: 9000\n"
    )
    assert expected in content
    assert f"    {P1H1}:\n      addresses:\n        - 192.168.101.11/24\n" in content
    assert "169.254" not in content


def test_peers_on_different_subnets_fail() -> None:
    a, b = addressed({P1H0: "10.0.0.1/24"}, {P1H0: "10.0.1.2/24"})
    links = [(("s1", P1H0), ("s2", P1H0)), (("s1", P1H1), ("s2", P1H1))]
    outcome = run("addr.subnets", cluster(spark("s1", 10, half=a), spark("s2", 11, half=b), links=links))
    assert outcome.status is CheckStatus.FAIL
    assert "no link peer on a shared subnet" in outcome.summary
    assert {(e.node, e.subject) for e in outcome.evidence} == {("s1", P1H0), ("s2", P1H0)}
    assert f"sudo ip addr add 192.168.100.10/24 dev {P1H0}" in fix_text(outcome.fixes)


def test_a_switch_joining_other_halves_at_l2_is_fine() -> None:
    """One bridge: every half hears every other node's halves, yet each has a peer on its own subnet."""
    nodes = [spark(f"s{n}", 9 + n) for n in (1, 2, 3)]
    ends = [(f.node, i) for f in nodes for i in (P1H0, P1H1)]
    links = [(a, b) for a in ends for b in ends if a[0] < b[0]]
    outcome = run("addr.subnets", cluster(*nodes, links=links))
    assert outcome.status is CheckStatus.PASS


def test_plan_for_an_unaddressed_two_cable_pair() -> None:
    data = cluster(
        spark("s1", 10, cables=2, half={P0H0: Half()}),
        spark("s2", 11, cables=2, half={P0H0: Half()}),
        links=[(("s1", i), ("s2", i)) for i in (P0H0, P1H0, P1H1)],
    )
    plan = address_plan(data)
    assert plan[("s1", P0H0)] == "192.168.102.10/24"  # the first /24 from 192.168.100 that is free
    assert plan[("s2", P0H0)] == "192.168.102.11/24"
    assert plan[("s1", P1H0)] == plan_address(P1H0, 10)  # working subnets are kept
    # No link seen on port 0's second half: it goes with its twin's peer, on the subnet both ends already share.
    assert plan[("s1", P0H1)] == plan_address(P0H1, 10)
    assert plan[("s2", P0H1)] == plan_address(P0H1, 11)


def test_ipv6_passes_when_off() -> None:
    assert run("ipv6.fabric", cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.PASS


def test_ipv6_on_a_half_warns_with_the_sysctl_and_netplan_fix() -> None:
    v6 = {P1H0: Half(ipv4=(plan_address(P1H0, 11),), ipv6=("fe80::3a1c:9b2e:77d4:1c05/64",))}
    outcome = run("ipv6.fabric", cluster(spark("s1", 10), spark("s2", 11, half=v6)))
    assert outcome.status is CheckStatus.WARN
    assert_actionable(outcome)
    assert [(e.node, e.subject, e.value) for e in outcome.evidence] == [("s2", P1H0, "fe80::3a1c:9b2e:77d4:1c05/64")]
    [fix] = outcome.fixes
    assert fix.node == "s2"
    assert f"sudo sysctl -w net.ipv6.conf.{P1H0}.disable_ipv6=1" in fix.commands
    files = dict(fix.files)
    assert "link-local: []" in files["/etc/netplan/42-wirespeed-no-ipv6.yaml"]
    assert f"net.ipv6.conf.{P1H0}.disable_ipv6 = 1" in files["/etc/sysctl.d/92-wirespeed-no-ipv6.conf"]
