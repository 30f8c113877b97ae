"""Issue 22's field problems on the snapshot fixtures, as `wirespeed check --snapshot` judges them: a NIC re-probed
after boot, a stale NCCL configuration file, bootstrap on a repeated or isolated interface, no CMA."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from builders import FIXTURES, assert_actionable, fix_text

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.checks.model import CheckStatus

NEW = ("nic.reprobe", "nccl.conf", "bootstrap.iface", "mem.cma")
SCENARIOS = ("spark-nic-reprobe", "spark-nccl-conf", "spark-docker-bootstrap", "spark-cma-off")


def check(case: str, *ids: str) -> dict[str, dict[str, Any]]:
    """`wirespeed check --snapshot FIXTURE --only IDS --json`, results by id."""
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    main(["check", "--snapshot", str(FIXTURES / case), "--only", ",".join(ids), "--json"], env)
    assert isinstance(env.stdout, io.StringIO)
    data = json.loads(env.stdout.getvalue())
    assert data["errors"] == []
    return {r["id"]: r for r in data["results"]}


def evidence(found: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(e["node"], e["subject"], str(e["value"])) for e in found["evidence"]}


def fixes(found: dict[str, Any]) -> str:
    return "\n".join(f["description"] + "\n" + "\n".join(f["commands"]) for f in found["fixes"])


def test_the_healthy_two_sparks_pass_every_new_check() -> None:
    results = check("spark-two-cables", *NEW)
    assert {i: r["status"] for i, r in results.items()} == dict.fromkeys(NEW, "pass")
    assert "none later than 300 s after boot" in results["nic.reprobe"]["summary"]  # boot-time lines: normal


@pytest.mark.parametrize("case", SCENARIOS)
def test_each_scenario_finds_only_its_own_problem(case: str) -> None:
    results = check(case, *NEW)
    flagged = {i for i, r in results.items() if r["status"] in ("warn", "fail")}
    assert flagged == {dict(zip(SCENARIOS, NEW, strict=True))[case]}


def test_a_nic_hot_plugged_long_after_boot_warns_with_its_timestamps() -> None:
    found = check("spark-nic-reprobe", "nic.reprobe")["nic.reprobe"]
    assert found["status"] == "warn"
    seen = evidence(found)
    assert ("spark-2", "hot-plug", "[ 8431.907512] cx7-pcie-hotplug MTKP0001:00: Cable plugin") in seen
    assert ("spark-2", "probe", "[ 8433.118204] mlx5_core 0000:01:00.0: firmware version: 28.45.4028") in seen
    assert any(node == "spark-2" and subject == "slot power" for node, subject, _ in seen)
    assert {node for node, _, _ in seen} == {"spark-2"}  # spark-1's boot-time lines are normal
    assert any("2h20m31s" in e["what"] for e in found["evidence"])
    assert "reboot (or power-drain) after final cabling" in fixes(found).lower()
    assert [f["node"] for f in found["fixes"]] == ["spark-2"]


def test_a_stale_nccl_conf_fails_naming_the_file_and_line() -> None:
    found = check("spark-nccl-conf", "nccl.conf", "nccl.env")
    conf = found["nccl.conf"]
    assert conf["status"] == "fail"
    subjects = {(e["node"], e["subject"]) for e in conf["evidence"]}
    assert subjects == {
        ("spark-1", "/etc/nccl.conf:2 NCCL_IB_HCA"),
        ("spark-1", "/etc/nccl.conf:4 NCCL_IB_USE_INLINE"),
        ("spark-1", "/etc/nccl.conf:5 NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS"),
        ("spark-2", "/home/user/.nccl.conf:1 NCCL_IB_GID_INDEX"),
    }  # line 3's NCCL_SOCKET_IFNAME=eth0 is not judged: the session's environment sets it, and wins
    assert any("'mlx5_0', not an RDMA device here" in e["what"] for e in conf["evidence"])
    text = fixes(conf)
    assert "sudo sed -i '2s|.*|NCCL_IB_HCA=rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1|' /etc/nccl.conf" in text
    assert "sed -i '1s/^/# /' /home/user/.nccl.conf" in text
    assert found["nccl.env"]["status"] == "pass"  # the environment alone is fine


def test_docker0_and_an_isolated_wifi_warn_with_what_to_pin() -> None:
    found = check("spark-docker-bootstrap", "bootstrap.iface")["bootstrap.iface"]
    assert found["status"] == "warn"
    seen = evidence(found)
    assert {("spark-1", "docker0", "172.17.0.1/16"), ("spark-2", "docker0", "172.17.0.1/16")} <= seen
    assert ("spark-1", "wlP9s9", "192.168.1.23/24") in seen
    assert ("spark-2", "wlP9s9", "192.168.1.23/24") not in seen  # spark-2's Wi-Fi is down
    text = fixes(found)
    for pin in (
        "NCCL_SOCKET_IFNAME=enp1s0f0np0",
        "GLOO_SOCKET_IFNAME=enp1s0f0np0",
        "btl_tcp_if_include = 192.168.102.0/24",
        "oob_tcp_if_include = 192.168.102.0/24",
        "--node-ip-address=192.168.102.10",
        "--node-ip-address=192.168.102.11",
    ):
        assert pin in text, pin


def test_cma_off_on_a_gb10_warns_with_what_was_read_and_the_kernel_parameter() -> None:
    found = check("spark-cma-off", "mem.cma")["mem.cma"]
    assert found["status"] == "warn"
    assert evidence(found) == {
        ("spark-1", "/proc/meminfo", "0 kB"),
        ("spark-1", "/proc/meminfo", "262144 kB"),
        ("spark-1", "/proc/cmdline", "no cma= and no kho= on it"),
    }
    text = fixes(found)
    assert "cma=32M" in text and "kho=off" in text  # sized as spark-2, which has 32768 kB


def test_every_new_finding_has_evidence_and_a_fix() -> None:
    import wirespeed.core.checks.all  # noqa: F401 - registers every check
    from wirespeed.core.checks.model import REGISTRY, CheckInput
    from wirespeed.engine.discover import discover_snapshots

    for case in ("spark-two-cables", *SCENARIOS, "ib-server", "spark-gid-ipv6"):
        found = discover_snapshots([FIXTURES / case])
        data = CheckInput(found.facts, found.cabling)
        for check_id in NEW:
            outcome = REGISTRY[check_id].run(data)
            assert_actionable(outcome)
            if outcome.status in (CheckStatus.WARN, CheckStatus.FAIL):
                assert fix_text(outcome.fixes)
