"""nic.offloads, nic.errors and firewall."""

from __future__ import annotations

import dataclasses

from builders import P1H0, P1H1, assert_actionable, cluster, run, spark, two_sparks, without_rdma

from wirespeed.core.checks.model import ActiveResults, CheckStatus

ALL_ON = {
    name: [True, False]
    for name in (
        "tcp-segmentation-offload",
        "generic-segmentation-offload",
        "generic-receive-offload",
        "rx-checksumming",
        "tx-checksumming",
        "scatter-gather",
    )
}


def test_offloads_skip_when_unread() -> None:
    assert run("nic.offloads", cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.SKIP


def test_offloads_pass_when_on() -> None:
    offloads = {P1H0: ALL_ON, P1H1: ALL_ON}
    outcome = run("nic.offloads", cluster(spark("s1", 10, offloads=offloads), spark("s2", 11, offloads=offloads)))
    assert outcome.status is CheckStatus.PASS and "4 interfaces" in outcome.summary


def test_offloads_warn_with_the_ethtool_fix() -> None:
    gro_off = {**ALL_ON, "generic-receive-offload": [False, False], "scatter-gather": [False, True]}
    outcome = run("nic.offloads", cluster(spark("s1", 10, offloads={P1H0: gro_off, P1H1: ALL_ON}), spark("s2", 11)))
    assert outcome.status is CheckStatus.WARN
    assert {(e.node, e.subject, e.what, e.value) for e in outcome.evidence} == {
        ("s1", P1H0, "generic-receive-offload", "off"),
        ("s1", P1H0, "scatter-gather", "off [fixed]"),
    }
    [fix] = outcome.fixes
    assert fix.node == "s1" and fix.commands == (f"ethtool -K {P1H0} gro on",)  # a [fixed] feature is not offered


def test_a_virtual_links_fixed_off_offloads_are_its_nature_not_a_finding() -> None:
    """The emulated cluster's halves are macvlans over a tap: rx-checksumming off [fixed], nothing to turn on."""
    macvlan = {**ALL_ON, "rx-checksumming": [False, True]}
    virtual = [without_rdma(spark(n, h, offloads={P1H0: macvlan, P1H1: macvlan})) for n, h in (("s1", 10), ("s2", 11))]
    assert run("nic.offloads", cluster(*virtual)).status is CheckStatus.PASS
    gro_off = {**macvlan, "generic-receive-offload": [False, False]}
    outcome = run("nic.offloads", cluster(without_rdma(spark("s1", 10, offloads={P1H0: gro_off})), virtual[1]))
    assert outcome.status is CheckStatus.WARN
    assert {(e.subject, e.what) for e in outcome.evidence} == {(P1H0, "generic-receive-offload")}


def test_errors_pass_at_zero_and_warn_above() -> None:
    zero = {P1H0: {"rx_discards_phy": 0, "tx_bytes_phy": 10**12}, P1H1: {"rx_crc_errors_phy": 0}}
    assert run("nic.errors", cluster(spark("s1", 10, nic_counters=zero), spark("s2", 11))).status is CheckStatus.PASS
    bad = {P1H0: {"rx_discards_phy": 5861, "rx_oversize_pkts_phy": 3}, P1H1: {}}
    outcome = run("nic.errors", cluster(spark("s1", 10), spark("s2", 11, nic_counters=bad)))
    assert outcome.status is CheckStatus.WARN
    assert {(e.node, e.subject, e.what, e.value) for e in outcome.evidence} == {
        ("s2", P1H0, "rx_discards_phy", 5861),
        ("s2", P1H0, "rx_oversize_pkts_phy", 3),
    }
    assert "growth not measured" in outcome.summary and outcome.fixes


def test_errors_skip_without_counters() -> None:
    assert run("nic.errors", cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.SKIP


def test_firewall_skip_pass_and_warn() -> None:
    assert run("firewall", cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.SKIP
    open_fw = {"iptables": "-P INPUT ACCEPT\n-P FORWARD ACCEPT\n-P OUTPUT ACCEPT\n", "ufw": "Status: inactive\n"}
    outcome = run("firewall", cluster(spark("s1", 10, firewall=open_fw), spark("s2", 11, firewall=open_fw)))
    assert outcome.status is CheckStatus.PASS
    closed = {"ufw": "Status: active\n\nTo Action From\n-- ------ ----\n22/tcp ALLOW Anywhere\n"}
    outcome = run("firewall", cluster(spark("s1", 10), spark("s2", 11, firewall=closed)))
    assert outcome.status is CheckStatus.WARN
    [fix] = outcome.fixes
    assert fix.node == "s2"
    assert fix.commands == ("ufw allow from 192.168.100.0/24", "ufw allow from 192.168.101.0/24")


def test_firewall_sees_nft_and_iptables_drops() -> None:
    nft = "table inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n\t}\n}\n"
    iptables = "-P INPUT ACCEPT\n-A INPUT -s 10.0.0.0/8 -j REJECT --reject-with icmp-port-unreachable\n"
    outcome = run(
        "firewall", cluster(spark("s1", 10, firewall={"nft": nft}), spark("s2", 11, firewall={"iptables": iptables}))
    )
    assert outcome.status is CheckStatus.WARN
    assert {(e.node, e.subject) for e in outcome.evidence} == {("s1", "nft"), ("s2", "iptables")}
    assert all("iptables -I INPUT -s 192.168.100.0/24 -j ACCEPT" in f.commands for f in outcome.fixes)


def test_errors_growing_between_two_readings_fail_and_old_totals_do_not() -> None:
    base = two_sparks()
    growing = {("s1", P1H0): {"rx_discards_phy": 12, "rx_pause_ctrl_phy": 400}, ("s2", P1H0): {}}
    grown = run(
        "nic.errors", dataclasses.replace(base, active=ActiveResults(counter_growth=growing, growth_window_s=2))
    )
    assert grown.status is CheckStatus.FAIL
    assert_actionable(grown)
    assert [(e.node, e.subject, e.what, e.value) for e in grown.evidence] == [
        ("s1", P1H0, "rx_discards_phy grew in 2 s", "+12")  # pause frames are congestion signals, not errors
    ]
    quiet = {("s1", P1H0): {"tx_pause_ctrl_phy": 3}, ("s2", P1H0): {}}
    calm = run("nic.errors", dataclasses.replace(base, active=ActiveResults(counter_growth=quiet, growth_window_s=2)))
    assert calm.status is CheckStatus.PASS and "2 interfaces in 2 s" in calm.summary
    none = run("nic.errors", dataclasses.replace(base, active=ActiveResults(counter_growth={}, growth_window_s=2)))
    assert none.status is CheckStatus.SKIP
