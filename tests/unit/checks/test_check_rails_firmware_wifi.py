"""Issue 36's nccl.rails, nic.firmware and mgmt.wifi: on the snapshot fixtures (as `wirespeed check --snapshot`
runs them) and on synthetic facts, one field at a time."""

from __future__ import annotations

import dataclasses
from functools import cache

import pytest
from builders import FIXTURES, assert_actionable, cluster, fix_text, run, spark

import wirespeed.core.checks.all  # noqa: F401 - registers every check
from wirespeed.core.checks.model import REGISTRY, CheckInput, CheckResult, CheckStatus
from wirespeed.core.fabric.facts import PciFunction, Unknown, facts_from_json
from wirespeed.core.parsers.hoststate import dpkg_status, firmware_version, iw_power_save
from wirespeed.engine.discover import discover_snapshots

NEW = ("nccl.rails", "nic.firmware", "mgmt.wifi")
SCENARIOS = {"spark-rails-one-domain": "nccl.rails", "gx10-fw-updater": "nic.firmware", "spark-mgmt-wifi": "mgmt.wifi"}
HEALTHY = ("spark-two-cables", "spark-one-cable", "spark-switch-100g", "gx10-pcie-x2", "ib-server")
ALL_FOUR = "rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1"


@cache
def data(case: str) -> CheckInput:
    found = discover_snapshots([FIXTURES / case])
    assert found.errors == {}
    return CheckInput(found.facts, found.cabling)


def outcome(case: str, check_id: str) -> CheckResult:
    return REGISTRY[check_id].run(data(case))


def seen(result: CheckResult) -> set[tuple[str | None, str | None, str]]:
    return {(e.node, e.subject, str(e.value)) for e in result.evidence}


@pytest.mark.parametrize("case", HEALTHY)
def test_the_healthy_fixtures_pass_the_new_checks(case: str) -> None:
    for check_id in NEW:
        result = outcome(case, check_id)
        assert result.status is CheckStatus.PASS, result
        assert_actionable(result)


@pytest.mark.parametrize(("case", "flagged"), SCENARIOS.items())
def test_each_scenario_flags_only_its_own_check(case: str, flagged: str) -> None:
    for check_id in NEW:
        result = outcome(case, check_id)
        assert_actionable(result)
        assert (result.status in (CheckStatus.WARN, CheckStatus.FAIL)) == (check_id == flagged), result


# ------------------------------------------------------------------------------------------------------ nccl.rails
def test_rails_on_one_pcie_domain_fail_naming_the_domains_and_where_it_is_set() -> None:
    result = outcome("spark-rails-one-domain", "nccl.rails")
    assert result.status is CheckStatus.FAIL
    found = seen(result)
    assert ("spark-1", "NCCL_IB_HCA", "rocep1s0f0,rocep1s0f1") in found  # the ssh session's environment
    assert ("spark-2", "/etc/nccl.conf:1 NCCL_IB_HCA", "rocep1s0f0,rocep1s0f1") in found  # the file, by line
    for node in ("spark-1", "spark-2"):
        assert (node, "PCIe domain 0002", "roceP2p1s0f0 (0002:01:00.0), roceP2p1s0f1 (0002:01:00.1)") in found
    main = next(e for e in result.evidence if e.node == "spark-1" and e.subject == "NCCL_IB_HCA")
    assert "only PCIe domain 0000" in main.what and "near 108 Gb/s of the 217" in main.what
    text = fix_text(result.fixes)
    assert f"export NCCL_IB_HCA={ALL_FOUR}" in text
    assert "rocep1s0f0,roceP2p1s0f0: one rail per domain" in text
    assert f"sudo sed -i '1s|.*|NCCL_IB_HCA={ALL_FOUR}|' /etc/nccl.conf" in text


def test_the_ipv6_fixture_s_single_hca_is_one_domain_too() -> None:
    """spark-gid-ipv6 pins NCCL_IB_HCA=rocep1s0f1 on spark-2: port 1's 0002 half is cabled and idle."""
    result = outcome("spark-gid-ipv6", "nccl.rails")
    assert result.status is CheckStatus.FAIL
    assert ("spark-2", "NCCL_IB_HCA", "rocep1s0f1") in seen(result)


@pytest.mark.parametrize(
    ("value", "status"),
    [
        (ALL_FOUR, CheckStatus.PASS),
        ("rocep1s0f1,roceP2p1s0f1", CheckStatus.PASS),  # one rail per domain: the halves of one port
        ("roce", CheckStatus.PASS),  # a prefix of every device
        ("=rocep1s0f0:1,roceP2p1s0f0:1", CheckStatus.PASS),  # exact names with a port
        ("rocep1s0f0,rocep1s0f1", CheckStatus.FAIL),  # the public notes' pair: both on 0000
        ("rocep1", CheckStatus.FAIL),  # a prefix that matches only domain 0000's devices
        ("=rocep1s0f0:1,rocep1s0f1:1", CheckStatus.FAIL),
        ("^roceP2", CheckStatus.FAIL),  # excludes every domain-0002 device
        ("^rocep1s0f0", CheckStatus.PASS),
        ("mlx5_0,mlx5_1", CheckStatus.PASS),  # no device here: nccl.env's to judge, not a domain question
    ],
)
def test_hca_lists_as_nccl_matches_them(value: str, status: CheckStatus) -> None:
    data = cluster(spark("s1", 10, cables=2, environment={"NCCL_IB_HCA": value}), spark("s2", 11, cables=2))
    result = run("nccl.rails", data)
    assert result.status is status, result
    assert_actionable(result)


def test_one_cable_with_one_half_of_each_port_uses_one_domain() -> None:
    """Port 0 has no cable: rocep1s0f0 has no carrier, so only rocep1s0f1 carries, and 0002 idles."""
    data = cluster(spark("s1", 10, environment={"NCCL_IB_HCA": "rocep1s0f0,rocep1s0f1"}), spark("s2", 11))
    result = run("nccl.rails", data)
    assert result.status is CheckStatus.FAIL
    assert ("s1", "PCIe domain 0002", "roceP2p1s0f1 (0002:01:00.1)") in seen(result)
    assert "export NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1" in fix_text(result.fixes)


def test_the_cluster_file_nccl_env_is_judged_for_wirespeed_s_own_runs() -> None:
    data = dataclasses.replace(
        cluster(spark("s1", 10, cables=2), spark("s2", 11, cables=2)),
        cluster_nccl_env=(("NCCL_IB_HCA", "rocep1s0f0,rocep1s0f1"),),
    )
    result = run("nccl.rails", data)
    assert result.status is CheckStatus.FAIL
    subject = "the cluster file's [nccl.env] NCCL_IB_HCA"
    assert {(e.node, e.subject) for e in result.evidence if e.subject == subject} == {("s1", subject), ("s2", subject)}
    assert [f.node for f in result.fixes] == [None]  # one cluster file, one fix
    assert f'NCCL_IB_HCA = "{ALL_FOUR}"' in fix_text(result.fixes)


def test_the_environment_wins_over_a_file() -> None:
    facts = spark(
        "s1", 10, cables=2, environment={"NCCL_IB_HCA": ALL_FOUR}, home="/home/u",
        job_files={"/etc/nccl.conf": "NCCL_IB_HCA=rocep1s0f0,rocep1s0f1\n"},
    )  # fmt: skip
    assert run("nccl.rails", cluster(facts, spark("s2", 11, cables=2))).status is CheckStatus.PASS
    alone = dataclasses.replace(facts, environment={})  # the file alone: judged, by file and line
    result = run("nccl.rails", cluster(alone, spark("s2", 11, cables=2)))
    assert result.status is CheckStatus.FAIL
    assert ("s1", "/etc/nccl.conf:1 NCCL_IB_HCA", "rocep1s0f0,rocep1s0f1") in seen(result)


def test_one_pcie_link_per_node_has_nothing_to_spread() -> None:
    """A server whose two ports are functions of one NIC (one link): any HCA list is as good as another here."""
    moved = {f"{a}": f"0000:3b:00.{i}" for i, a in enumerate(("0000:01:00.0", "0000:01:00.1"))}
    moved |= {"0002:01:00.0": "0000:3b:00.2", "0002:01:00.1": "0000:3b:00.3"}
    facts = spark("s1", 10, cables=2, environment={"NCCL_IB_HCA": "rocep1s0f0"})
    facts = dataclasses.replace(
        facts,
        rdma=tuple(dataclasses.replace(d, pci=moved[str(d.pci)]) for d in facts.rdma),
        netdevs=tuple(dataclasses.replace(n, pci=moved.get(str(n.pci), n.pci)) for n in facts.netdevs),
        pci=tuple(PciFunction(moved[p.bdf], "mlx5_core", 0, 16.0, 16, 16.0, 16) for p in facts.pci),
    )
    assert run("nccl.rails", cluster(facts, spark("s2", 11, cables=2))).status is CheckStatus.PASS


def test_no_rdma_skips() -> None:
    facts = dataclasses.replace(spark("s1"), rdma=(), rdma_absent_reason="no RDMA devices: emulated")
    assert run("nccl.rails", cluster(facts)).status is CheckStatus.SKIP


# ---------------------------------------------------------------------------------------------------- nic.firmware
def test_firmware_that_differs_and_the_updater_warn_per_node() -> None:
    result = outcome("gx10-fw-updater", "nic.firmware")
    assert result.status is CheckStatus.WARN
    found = seen(result)
    devices = "roceP2p1s0f0, roceP2p1s0f1, rocep1s0f0, rocep1s0f1"
    assert ("gx10-1", devices, "28.45.4028") in found and ("gx10-2", devices, "28.47.1088") in found
    assert ("gx10-2", "mlnx-fw-updater", "install ok installed 24.10-1.1.4.0") in found
    assert not any(e.node == "gx10-1" and e.subject == "mlnx-fw-updater" for e in result.evidence)
    text = fix_text(result.fixes)
    assert "sudo apt-mark hold mlnx-fw-updater" in text and "sudo apt-get remove mlnx-fw-updater" in text
    assert "mlxfwmanager --query" in text and "flint -d" in text
    assert "28.45.4028 on gx10-1; 28.47.1088 on gx10-2" in text


@pytest.mark.parametrize(
    ("raw", "status", "note"),
    [
        ("hold ok installed 24.10-1.1.4.0", CheckStatus.PASS, "held"),  # apt-mark hold: apt upgrades it no more
        ("deinstall ok config-files 24.10-1.1.4.0", CheckStatus.PASS, "config-files"),  # removed, not purged
        ("install ok installed 24.10-1.1.4.0", CheckStatus.WARN, "installed"),
        ("install reinstreq half-configured 24.10-1.1.4.0", CheckStatus.WARN, "installed"),
    ],
)
def test_what_dpkg_says_of_the_updater(raw: str, status: CheckStatus, note: str) -> None:
    data = cluster(spark("s1", packages={"mlnx-fw-updater": raw}), spark("s2", 11))
    result = run("nic.firmware", data)
    assert result.status is status, result
    assert note in result.summary or any(note in e.what for e in result.evidence)


def test_without_dpkg_the_updater_is_named_not_read() -> None:
    data = cluster(spark("s1", packages=Unknown("dpkg-query is not installed")), spark("s2", 11))
    result = run("nic.firmware", data)
    assert result.status is CheckStatus.PASS
    assert "dpkg-query is not installed" in result.summary


def test_firmware_families_are_compared_apart_and_ethtool_fills_a_missing_fw_ver() -> None:
    cx6 = spark("s2", 11)
    cx6 = dataclasses.replace(cx6, rdma=tuple(dataclasses.replace(d, fw_ver="20.39.1002") for d in cx6.rdma))
    assert run("nic.firmware", cluster(spark("s1"), cx6)).status is CheckStatus.PASS  # CX-7 and CX-6: no comparison
    other = spark("s2", 11)
    other = dataclasses.replace(
        other,
        rdma=tuple(dataclasses.replace(d, fw_ver=Unknown("firmware: not read")) for d in other.rdma),
        netdevs=tuple(
            dataclasses.replace(n, firmware="28.47.1088 (MT_0000000994)") if n.driver == "mlx5_core" else n
            for n in other.netdevs
        ),
    )
    result = run("nic.firmware", cluster(spark("s1"), other))
    assert result.status is CheckStatus.WARN
    assert {e.value for e in result.evidence} == {"28.45.4028", "28.47.1088"}


# ------------------------------------------------------------------------------------------------------- mgmt.wifi
def test_wifi_management_with_power_saving_on_warns_on_that_node_only() -> None:
    result = outcome("spark-mgmt-wifi", "mgmt.wifi")
    assert result.status is CheckStatus.WARN
    assert seen(result) == {("spark-1", "wlP9s9", "Power save: on")}  # spark-2's is off
    text = fix_text(result.fixes)
    assert "sudo iw dev wlP9s9 set power_save off" in text
    assert "sudo nmcli connection modify 'Lab 5G' 802-11-wireless.powersave 2" in text
    assert "sudo nmcli connection modify 'Lab 5G' connection.autoconnect-retries 0" in text
    assert "enP7s7" in text  # the wired port to move management to
    facts = data("spark-mgmt-wifi").facts
    assert facts["spark-1"].management == "wlP9s9" and facts["spark-1"].management_wireless is True
    assert facts["spark-2"].management_power_save == "off"


def test_wifi_power_saving_unread_warns_and_says_how_to_find_the_connection() -> None:
    facts = spark(
        "s1", management="wlP9s9", management_wireless=True, management_power_save=Unknown("iw is not installed"),
        management_connection=Unknown("nmcli is not installed"),
    )  # fmt: skip
    result = run("mgmt.wifi", cluster(facts, spark("s2", 11)))
    assert result.status is CheckStatus.WARN
    assert "iw is not installed" in result.evidence[0].what
    assert "nmcli -g GENERAL.CONNECTION device show wlP9s9" in fix_text(result.fixes)


def test_wired_management_passes() -> None:
    result = run("mgmt.wifi", cluster(spark("s1"), spark("s2", 11)))
    assert result.status is CheckStatus.PASS
    assert "s1 enP7s7 (wired)" in result.summary


# -------------------------------------------------------------------------------------------- parsers and facts
def test_the_readings_parse_real_lines() -> None:
    assert iw_power_save("Power save: on\n") == "on"
    assert iw_power_save("Power save: off\n") == "off"
    with pytest.raises(ValueError, match="Power save"):
        iw_power_save("command failed: No such device (-19)\n")
    status = dpkg_status("install ok installed 24.10-1.1.4.0")
    assert (status.want, status.eflag, status.state, status.version) == ("install", "ok", "installed", "24.10-1.1.4.0")
    assert status.installed and not status.held
    assert not dpkg_status("unknown ok not-installed ").installed  # known to dpkg, never installed: no version
    with pytest.raises(ValueError):
        dpkg_status("dpkg-query: no packages found matching mlnx-fw-updater")
    assert firmware_version("28.45.4028 (MT_0000000994)") == "28.45.4028"  # ethtool -i: "%d.%d.%04d (%.16s)"
    assert firmware_version("28.47.1088") == "28.47.1088"  # sysfs fw_ver
    assert firmware_version("N/A") is None


def test_new_facts_survive_json_and_old_snapshots_load() -> None:
    facts = data("spark-mgmt-wifi").facts["spark-1"]
    again = facts_from_json(facts.to_json())
    assert again.packages == {} and again.management_connection == "Lab 5G"
    assert again.management_power_save == "on" and again.management_wireless is True
    old = facts.to_json()
    for key in ("packages", "management_wireless", "management_power_save", "management_connection"):
        del old[key]
    loaded = facts_from_json(old)
    assert isinstance(loaded.packages, Unknown) and isinstance(loaded.management_wireless, Unknown)


def test_run_checks_hands_the_cluster_file_s_nccl_env_to_the_checks() -> None:
    from wirespeed.engine.checks import run_checks

    found = discover_snapshots([FIXTURES / "spark-two-cables"])
    assert run_checks(found, ["nccl.rails"]).results[0].status is CheckStatus.PASS
    pinned = run_checks(found, ["nccl.rails"], nccl_env=(("NCCL_IB_HCA", "rocep1s0f0,rocep1s0f1"),))
    assert pinned.results[0].status is CheckStatus.FAIL
