"""sysctl.tcp and sysctl.arp."""

from __future__ import annotations

from builders import P1H0, P1H1, TUNED, Half, assert_actionable, cluster, run, spark

from wirespeed.core.checks.model import CheckStatus

UBUNTU = {
    "net.core.rmem_max": "212992",
    "net.core.wmem_max": "212992",
    "net.ipv4.tcp_rmem": "4096 131072 6291456",
    "net.ipv4.tcp_wmem": "4096 16384 4194304",
    "net.core.netdev_max_backlog": "1000",
    "net.ipv4.conf.all.arp_ignore": "0",
    "net.ipv4.conf.all.arp_announce": "0",
    "net.ipv4.conf.all.rp_filter": "2",
}


def test_tcp_passes_when_tuned() -> None:
    assert run("sysctl.tcp", cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.PASS


def test_tcp_warns_on_ubuntu_defaults_with_a_sysctl_d_drop_in() -> None:
    outcome = run("sysctl.tcp", cluster(spark("s1", 10, sysctls=dict(UBUNTU)), spark("s2", 11)))
    assert outcome.status is CheckStatus.WARN
    assert_actionable(outcome)
    seen = {(e.node, e.subject, e.value) for e in outcome.evidence}
    assert ("s1", "net.core.rmem_max", "212992") in seen
    assert ("s1", "net.ipv4.tcp_rmem", "4096 131072 6291456") in seen
    assert ("s1", "net.core.netdev_max_backlog", "1000") in seen
    assert {e.node for e in outcome.evidence} == {"s1"}
    [fix] = outcome.fixes
    [(path, content)] = fix.files
    assert path == "/etc/sysctl.d/90-wirespeed.conf"
    assert "net.core.rmem_max = 134217728\n" in content
    assert "net.ipv4.tcp_rmem = 4096 131072 134217728\n" in content  # min and default fields kept
    assert "net.core.netdev_max_backlog = 250000\n" in content
    assert "sudo sysctl --system" in fix.commands


def test_tcp_keeps_higher_values_in_the_drop_in() -> None:
    partly = TUNED | {"net.core.netdev_max_backlog": "1000"}
    outcome = run("sysctl.tcp", cluster(spark("s1", 10, sysctls=partly)))
    assert [e.subject for e in outcome.evidence] == ["net.core.netdev_max_backlog"]
    assert "net.core.rmem_max = 268435456\n" in outcome.fixes[0].files[0][1]


def test_tcp_skips_when_nothing_was_read() -> None:
    assert run("sysctl.tcp", cluster(spark("s1", 10, sysctls={}))).status is CheckStatus.SKIP


def test_arp_passes_when_tuned() -> None:
    assert run("sysctl.arp", cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.PASS


def test_arp_warns_on_defaults_and_strict_rp_filter() -> None:
    strict = {"net.ipv4.conf.all.rp_filter": "0", f"net.ipv4.conf.{P1H0}.rp_filter": "1"}
    sysctls = UBUNTU | strict | {f"net.ipv4.conf.{P1H1}.rp_filter": "0"}
    outcome = run("sysctl.arp", cluster(spark("s1", 10, sysctls=sysctls), spark("s2", 11)))
    assert outcome.status is CheckStatus.WARN
    assert_actionable(outcome)
    assert outcome.summary.startswith("arp_ignore, arp_announce, rp_filter unfit")
    seen = {(e.node, e.subject, e.what.split()[0], e.value) for e in outcome.evidence}
    assert ("s1", P1H0, "rp_filter", 1) in seen and ("s1", P1H1, "arp_ignore", 0) in seen
    assert not any(e.subject == P1H1 and e.what.startswith("rp_filter") for e in outcome.evidence)
    [fix] = outcome.fixes
    assert f"sudo sysctl -w net.ipv4.conf.{P1H0}.rp_filter=2" in fix.commands
    [(path, content)] = fix.files
    assert path == "/etc/sysctl.d/91-wirespeed-arp.conf"
    assert f"net.ipv4.conf.{P1H1}.arp_announce = 2" in content


def test_arp_effective_value_is_the_larger_of_all_and_the_interface() -> None:
    sysctls = TUNED | {"net.ipv4.conf.all.rp_filter": "1", f"net.ipv4.conf.{P1H0}.rp_filter": "2"}
    outcome = run("sysctl.arp", cluster(spark("s1", 10, sysctls=sysctls)))
    assert [e.subject for e in outcome.evidence] == [P1H1]  # max(1, 2) = 2 is loose on P1H0; P1H1 inherits 1


def test_arp_skips_with_one_addressed_interface() -> None:
    one = spark("s1", 10, half={P1H1: Half()})
    assert run("sysctl.arp", cluster(one)).status is CheckStatus.SKIP
