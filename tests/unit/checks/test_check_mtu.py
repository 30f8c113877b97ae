"""mtu.host and mtu.path."""

from __future__ import annotations

from builders import P0H0, P1H0, P1H1, Half, assert_actionable, cluster, fix_text, plan_address, run, spark

from wirespeed.core.checks.model import ActiveResults, CheckStatus


def mtu(node: str, host: int, value: int, *ifaces: str) -> dict[str, Half]:
    return {i: Half(ipv4=(plan_address(i, host),), mtu=value) for i in ifaces}


def test_host_passes_at_9000_everywhere() -> None:
    outcome = run("mtu.host", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS
    assert outcome.summary == "all 4 cabled halves at MTU 9000"


def test_host_fails_on_a_mismatch_naming_the_odd_half() -> None:
    data = cluster(spark("s1", 10), spark("s2", 11), spark("s3", 12, half=mtu("s3", 12, 1500, P1H0)))
    outcome = run("mtu.host", data)
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert [(e.node, e.subject, e.value) for e in outcome.evidence] == [("s3", P1H0, 1500)]
    [fix] = outcome.fixes
    assert fix.node == "s3"
    assert fix.commands[0] == f"sudo ip link set {P1H0} mtu 9000"
    [(path, content)] = fix.files
    assert path == "/etc/netplan/41-wirespeed-mtu.yaml"
    assert f"    {P1H0}:\n      mtu: 9000\n" in content


def test_host_warns_when_equal_but_below_9000() -> None:
    data = cluster(
        spark("s1", 10, half=mtu("s1", 10, 1500, P1H0, P1H1)), spark("s2", 11, half=mtu("s2", 11, 1500, P1H0, P1H1))
    )
    outcome = run("mtu.host", data)
    assert outcome.status is CheckStatus.WARN
    assert_actionable(outcome)
    assert len(outcome.evidence) == 4 and {e.value for e in outcome.evidence} == {1500}
    assert f"sudo ip link set {P1H1} mtu 9000" in fix_text(outcome.fixes)


def test_host_ignores_uncabled_halves() -> None:
    uncabled = {P0H0: Half(up=False, mtu=1500)}
    assert run("mtu.host", cluster(spark("s1", 10, half=uncabled), spark("s2", 11))).status is CheckStatus.PASS


def pings(results: dict[tuple[str, str, str, str], bool]) -> ActiveResults:
    return ActiveResults(mtu_pings=results)


def all_pings(ok_except: tuple[str, str, str, str] | None = None) -> dict[tuple[str, str, str, str], bool]:
    keys = [
        ("s1", P1H0, "s2", "192.168.100.11"),
        ("s2", P1H0, "s1", "192.168.100.10"),
        ("s1", P1H1, "s2", "192.168.101.11"),
        ("s2", P1H1, "s1", "192.168.101.10"),
    ]
    return {k: k != ok_except for k in keys}


def test_path_skips_without_measurements() -> None:
    outcome = run("mtu.path", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.SKIP
    assert outcome.summary == "not measured: snapshot or --no-active"


def test_path_passes_when_every_ping_answers() -> None:
    outcome = run("mtu.path", cluster(spark("s1", 10), spark("s2", 11), active=pings(all_pings())))
    assert outcome.status is CheckStatus.PASS
    assert "all 4 full-MTU" in outcome.summary


def test_path_fails_and_blames_a_peer_with_a_smaller_mtu() -> None:
    failed = ("s1", P1H1, "s2", "192.168.101.11")
    s2 = spark("s2", 11, half=mtu("s2", 11, 1500, P1H1))
    outcome = run("mtu.path", cluster(spark("s1", 10), s2, active=pings(all_pings(failed))))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert [(e.node, e.subject) for e in outcome.evidence] == [("s1", P1H1)]
    assert "192.168.101.11" in str(outcome.evidence[0].value)
    [fix] = outcome.fixes
    assert fix.node == "s2" and fix.commands[0] == f"sudo ip link set {P1H1} mtu 9000"


def test_path_through_a_switch_points_at_the_switch_port() -> None:
    nodes = [spark(f"s{n}", 9 + n) for n in (1, 2, 3)]
    failed = {("s1", P1H1, "s3", "192.168.101.12"): False, ("s1", P1H0, "s3", "192.168.100.12"): True}
    outcome = run("mtu.path", cluster(*nodes, active=pings(failed)))
    assert outcome.status is CheckStatus.FAIL
    [fix] = outcome.fixes
    assert fix.node is None and "l2mtu=9022" in fix.description
    assert f"ping -M do -s 8972 -c 3 -I {P1H1} 192.168.101.12" in fix.commands[0]


def test_path_ignores_pings_across_subnets() -> None:
    """A switch joins one node's half 0 and another's half 1 at L2; a ping between them is no path test."""
    cross = {("s1", P1H0, "s2", "192.168.101.11"): False, ("s1", P1H1, "s2", "192.168.101.11"): True}
    outcome = run("mtu.path", cluster(spark("s1", 10), spark("s2", 11), active=pings(cross)))
    assert outcome.status is CheckStatus.PASS
