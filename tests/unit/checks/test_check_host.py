"""pcie.width and power.slot."""

from __future__ import annotations

from builders import P1H1, Half, assert_actionable, cluster, plan_address, run, spark, without_rdma

from wirespeed.core.checks.model import CheckStatus
from wirespeed.core.fabric.facts import Unknown

SLOT_POWER = (
    "[    4.913276] mlx5_core 0000:01:00.0: mlx5_pcie_event:301:(pid 0): Detected insufficient power on the PCIe "
    "slot (27W)."
)


def test_pcie_passes_at_x4() -> None:
    outcome = run("pcie.width", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS
    assert "8 fabric PCI functions at full link (32 GT/s x4)" in outcome.summary


def test_pcie_fails_a_half_trained_at_x2() -> None:
    narrow = {P1H1: Half(ipv4=(plan_address(P1H1, 10),), width=2)}
    outcome = run("pcie.width", cluster(spark("gx10-1", 10, half=narrow), spark("gx10-2", 11)))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert [(e.node, e.subject, e.value) for e in outcome.evidence] == [
        ("gx10-1", "0002:01:00.1", "32 GT/s x2 of 32 GT/s x4")
    ]
    [fix] = outcome.fixes
    assert fix.node == "gx10-1"
    assert fix.commands == ("sudo lspci -vv -s 0002:01:00.1 | grep -E 'LnkCap|LnkSta'   # LnkSta should match LnkCap",)


def test_pcie_skips_without_pci_functions() -> None:
    outcome = run("pcie.width", cluster(without_rdma(spark("s1", 10)), without_rdma(spark("s2", 11))))
    assert outcome.status is CheckStatus.SKIP


def test_power_message_is_informational() -> None:
    outcome = run("power.slot", cluster(spark("s1", 10, kernel_messages=(SLOT_POWER,)), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS
    assert "informational: it appears on healthy Sparks" in outcome.summary
    assert [(e.node, e.value) for e in outcome.evidence] == [("s1", SLOT_POWER)]
    assert outcome.fixes == ()


def test_power_passes_quietly_and_skips_when_unreadable() -> None:
    assert run("power.slot", cluster(spark("s1", 10))).summary == "no insufficient-power message in the kernel log"
    unread = spark("s1", 10, kernel_messages=Unknown("dmesg exited with status 1"))
    outcome = run("power.slot", cluster(unread))
    assert outcome.status is CheckStatus.SKIP and "dmesg exited" in outcome.summary
