"""Issue 36: a cluster with no fabric fails (fabric.present), a CX-7 gone below a downtrained root port is named the
hardware path and a CX-7 never cabled is not a missing NIC (pcie.bridge), fatal AER on its path is found in this boot's
and the last boot's kernel log (pcie.aer). On the snapshot fixtures, as `wirespeed check --snapshot` runs them, and on
synthetic facts."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

import pytest
from builders import FIXTURES, MANAGEMENT, assert_actionable, cluster, fix_text, run, spark

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.checks.model import CheckStatus
from wirespeed.core.fabric.facts import Gpu, NodeFacts, PciRootPort, Unknown

NEW = ("fabric.present", "pcie.bridge", "pcie.aer")
HEALTHY = ("spark-two-cables", "spark-one-cable", "spark-switch-100g", "gx10-pcie-x2", "spark-gid-ipv6", "ib-server")
SPARK_DMI = {"sys_vendor": "NVIDIA", "product_name": "NVIDIA_DGX_Spark", "board_name": "P4242"}
# Forum threads 363193 and 362667, as a public defect report quotes them (drivers/pci/quirks.c's texts).
RETRAIN = (
    "[    0.912345] pci 0000:00:00.0: broken device, retraining non-functional downstream link at 2.5GT/s",
    "[    1.913002] pci 0000:00:00.0: retraining failed",
)


def check(case: str, *ids: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """`wirespeed check --snapshot FIXTURE [--only IDS] --json`: the exit status and the results by id."""
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    only = ["--only", ",".join(ids)] if ids else []
    status = main(["check", "--snapshot", str(FIXTURES / case), *only, "--json"], env)
    assert isinstance(env.stdout, io.StringIO)
    data = json.loads(env.stdout.getvalue())
    assert data["errors"] == []
    return int(status), {r["id"]: r for r in data["results"]}


def evidence(found: dict[str, Any]) -> set[tuple[str, str | None, str]]:
    return {(e["node"], e["subject"], str(e["value"])) for e in found["evidence"]}


def fixes(found: dict[str, Any]) -> str:
    return "\n".join(f["description"] + "\n" + "\n".join(f["commands"]) for f in found["fixes"])


def root_port(bdf: str, speed: float = 2.5, below: tuple[str, ...] = ()) -> PciRootPort:
    return PciRootPort(bdf, speed, 4, 32.0, 4, below)


def gone(node: str, host: int, kernel: tuple[str, ...] | Unknown = (), **changes: Any) -> NodeFacts:
    """A DGX Spark whose ConnectX-7 is off the PCI bus: management only, root ports at 2.5 GT/s with nothing below."""
    fields: dict[str, Any] = {
        "netdevs": (MANAGEMENT,),
        "rdma": (),
        "rdma_absent_reason": "no RDMA devices: /sys/class/infiniband does not exist",
        "pci": (),
        "ports": (),
        "fabric": (),
        "dmi": SPARK_DMI,
        "root_ports": (
            root_port("0000:00:00.0"),
            root_port("0002:00:00.0"),
            root_port("0004:00:00.0", 16.0, ("0004:01:00.0",)),
        ),
        "kernel_messages": kernel,
    }
    return spark(node, host, **(fields | changes))


# --------------------------------------------------------------------------------------------- snapshot fixtures
@pytest.mark.parametrize("case", HEALTHY)
def test_the_healthy_fixtures_pass_every_new_check(case: str) -> None:
    _, results = check(case, *NEW)
    assert {i: r["status"] for i, r in results.items()} == dict.fromkeys(NEW, "pass"), results


def test_the_real_report_rebuilt_fails_and_check_exits_1() -> None:
    """One node's CX-7 gone after boot, the other's halves without carrier: `check` used to pass it (exit 0)."""
    status, results = check("spark-no-fabric")
    assert status == 1
    found = results["fabric.present"]
    assert found["status"] == "fail"
    assert found["summary"].startswith("no fabric link between any two nodes; ")
    seen = evidence(found)
    assert ("spark-1", None, "none") in seen  # no fabric interface at all
    assert ("spark-1", "DMI", "NVIDIA_DGX_Spark") in seen
    assert ("spark-1", "0000:00:00.0", "2.5 GT/s x4 of 32 GT/s x4; nothing enumerated below it") in seen
    halves = {s for n, s, v in seen if n == "spark-2" and v.startswith("no carrier (operstate down); RDMA")}
    assert halves == {"enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"}
    assert {f["node"] for f in found["fixes"]} == {"spark-1", "spark-2"}
    assert "Link detected" in fixes(found)


def test_the_vanished_cx7_is_the_hardware_path_not_a_driver() -> None:
    _, results = check("spark-no-fabric", "pcie.bridge")
    found = results["pcie.bridge"]
    assert found["status"] == "fail"
    assert "spark-1: the hardware path" in found["summary"] and "spark-2" not in found["summary"]
    seen = evidence(found)
    assert ("spark-1", "0002:00:00.0", "2.5 GT/s x4 of 32 GT/s x4; nothing enumerated below it") in seen
    assert ("spark-1", "0000:01:00.0", "[   10.163483] mlx5_core 0000:01:00.0: E-Switch: cleanup") in seen
    assert any(e["what"] == "kernel log, 10.163483 s after boot" for e in found["evidence"])
    text = fixes(found)
    assert "not a missing driver" in text and "Field Diagnostics" in text and "RMA" in text
    assert "sudo lspci -vv -s 0000:00:00.0" in text and "rescan" in text  # and never to rescan


def test_no_cable_yet_is_its_own_message() -> None:
    status, results = check("spark-no-cable", *NEW)
    assert status == 1  # no fabric link between the two nodes
    bridge = results["pcie.bridge"]
    assert bridge["status"] == "warn"
    assert "not enumerated: no cable attached yet?" in bridge["summary"]
    assert "hardware" not in bridge["summary"] and "missing NIC" not in bridge["summary"]
    assert ("spark-2", None, "[   16.310455] cx7-pcie-hotplug MTKP0001:00: Cable removal") in evidence(bridge)
    assert "latch clicks" in fixes(bridge) and "/etc/nvidia/cx7-hotplug-enabled" in fixes(bridge)
    assert "no cable attached yet?" in results["fabric.present"]["summary"]
    assert results["pcie.aer"]["status"] == "pass"


def test_fatal_aer_in_the_last_boot_warns_with_its_lines_and_times() -> None:
    _, results = check("spark-aer-fatal", *NEW)
    assert results["fabric.present"]["status"] == "pass" and results["pcie.bridge"]["status"] == "pass"
    found = results["pcie.aer"]
    assert found["status"] == "warn"
    assert "spark-1 (last boot)" in found["summary"] and "soft-lock" in found["summary"]
    whats = {(e["subject"], e["what"]) for e in found["evidence"]}
    assert ("0000:00:00.0", "last boot, 2026-08-26T06:38:10+0000") in whats
    lines = [str(e["value"]) for e in found["evidence"]]
    assert any("AER: Uncorrectable (Fatal) error message received from 0000:00:00.0" in line for line in lines)
    assert any("mlx5_pci_slot_reset" in line for line in lines)
    assert any("soft lockup" in line for line in lines)
    assert not any("Correctable error message" in line for line in lines)  # the correctable one is not the finding
    assert {e["node"] for e in found["evidence"]} == {"spark-1"}
    assert "mlx5_pci_slot_reset" in fixes(found) and "journalctl -k -b -1" in fixes(found)


# --------------------------------------------------------------------------------------------- synthetic facts
def test_one_spark_without_its_cx7_fails_even_alone() -> None:
    outcome = run("fabric.present", cluster(gone("s1", 10, kernel=(*RETRAIN,))))
    assert outcome.status is CheckStatus.FAIL
    assert "s1 (NVIDIA_DGX_Spark) shows no ConnectX-7" in outcome.summary
    assert_actionable(outcome)
    bridge = run("pcie.bridge", cluster(gone("s1", 10, kernel=(*RETRAIN,))))
    assert bridge.status is CheckStatus.FAIL and "failed to train" in bridge.summary
    assert ("s1", "0000:00:00.0", RETRAIN[1]) in {(e.node, e.subject, e.value) for e in bridge.evidence}


def test_a_gb10_gpu_alone_says_a_cx7_belongs_there() -> None:
    node = gone("g1", 10, dmi={}, gpus=(Gpu("NVIDIA GB10", "12.1", "580.95.05"),))
    outcome = run("fabric.present", cluster(node))
    assert outcome.status is CheckStatus.FAIL and "model unread (no DMI)" in outcome.summary


def test_an_asus_gx10_by_dmi() -> None:
    node = gone("gx", 10, dmi={"sys_vendor": "ASUSTeK COMPUTER INC.", "product_name": "ASUS Ascent GX10"})
    assert run("fabric.present", cluster(node)).status is CheckStatus.FAIL


def test_never_probed_is_no_cable_yet_and_unread_log_is_undetermined() -> None:
    never = run("pcie.bridge", cluster(gone("s1", 10, kernel=())))
    assert never.status is CheckStatus.WARN and "no cable attached yet?" in never.summary
    unread = run("pcie.bridge", cluster(gone("s1", 10, kernel=Unknown("kernel log not read: needs root (--become)"))))
    assert unread.status is CheckStatus.WARN
    assert "root ports at 2.5 GT/s with nothing below; kernel log unread" in unread.summary
    assert "--become" in fix_text(unread.fixes)


def test_a_node_without_fabric_among_peers_that_have_it() -> None:
    plain = dataclasses.replace(gone("s2", 11), dmi={}, root_ports=Unknown("not read"))
    outcome = run("fabric.present", cluster(spark("s1", 10), plain))
    assert outcome.status is CheckStatus.FAIL
    assert "s2 (model unread (no DMI)) has no fabric NIC (its peers have: s1)" in outcome.summary
    assert ("s2", "root ports", "not read") in {(e.node, e.subject, e.value) for e in outcome.evidence}


def test_no_link_anywhere_and_a_lone_node_without_fabric() -> None:
    down = {"half": {}}
    s1 = spark("s1", 10, cables=2, **down)
    s1 = dataclasses.replace(s1, netdevs=tuple(dataclasses.replace(n, carrier=False) if n.pci != MANAGEMENT.pci else n
                                               for n in s1.netdevs))  # fmt: skip
    s2 = dataclasses.replace(s1, node="s2")
    outcome = run("fabric.present", cluster(s1, s2))
    assert outcome.status is CheckStatus.FAIL and outcome.summary.startswith("no fabric link between any two nodes")
    lone = dataclasses.replace(gone("x", 10), dmi={"product_name": "PowerEdge R760"})
    assert run("fabric.present", cluster(lone)).status is CheckStatus.SKIP


def test_healthy_synthetic_pair_passes() -> None:
    data = cluster(spark("s1", 10), spark("s2", 11))
    assert run("fabric.present", data).status is CheckStatus.PASS
    assert run("pcie.aer", data).status is CheckStatus.PASS


def test_fatal_aer_this_boot_fails_and_elsewhere_is_not_the_nics() -> None:
    this_boot = (
        "[ 7301.442120] pcieport 0000:00:00.0: AER: Uncorrectable (Fatal) error message received from 0000:00:00.0",
        "[ 7301.442981] mlx5_core 0000:01:00.0: mlx5_pci_slot_reset Device state = 2 pci_status: 0. Enter",
    )
    outcome = run("pcie.aer", cluster(spark("s1", 10, dmi=SPARK_DMI, kernel_messages=this_boot)))
    assert outcome.status is CheckStatus.FAIL and "s1 (this boot)" in outcome.summary
    assert "7301.442120 s after boot" in {e.what.split(", ", 1)[1] for e in outcome.evidence}
    assert "systemctl reboot" in fix_text(outcome.fixes)
    # An older kernel's spelling counts; an NVMe's root port (0004) is not the NIC's path.
    older = ("[  58.3] pcieport 0002:00:00.0: AER: Multiple Uncorrected (Fatal) error received: 0002:00:00.0",)
    assert run("pcie.aer", cluster(spark("s1", 10, dmi=SPARK_DMI, kernel_messages=older))).status is CheckStatus.FAIL
    nvme = ("[ 9.1] pcieport 0004:00:00.0: AER: Uncorrectable (Fatal) error message received from 0004:01:00.0",)
    assert run("pcie.aer", cluster(spark("s1", 10, dmi=SPARK_DMI, kernel_messages=nvme))).status is CheckStatus.PASS


def test_a_cable_pulled_after_boot_is_named_so() -> None:
    pulled = (
        "[ 8412.221760] cx7-pcie-hotplug MTKP0001:00: Cable plugin",
        "[ 9000.100000] cx7-pcie-hotplug MTKP0001:00: Cable removal",
    )
    outcome = run("pcie.bridge", cluster(gone("s1", 10, kernel=pulled)))
    assert outcome.status is CheckStatus.WARN
    assert "the cable was pulled (9000.100000 s after boot" in outcome.summary
    assert "no cable attached yet" not in outcome.summary


def test_two_plain_machines_without_any_fabric_fail_with_evidence() -> None:
    plain = [dataclasses.replace(gone(n, 10), dmi={"product_name": "OptiPlex 7090"}) for n in ("a", "b")]
    outcome = run("fabric.present", cluster(*plain))
    assert outcome.status is CheckStatus.FAIL and outcome.summary == "no fabric link between any two nodes"
    assert {(e.node, e.value) for e in outcome.evidence if e.what == "fabric interfaces"} == {
        ("a", "none"),
        ("b", "none"),
    }
    assert_actionable(outcome)


def test_an_emulated_node_reads_its_hosts_kernel_log_and_is_not_judged() -> None:
    fatal = ("[ 9.1] pcieport 0000:00:00.0: AER: Uncorrectable (Fatal) error message received from 0000:00:00.0",)
    outcome = run("pcie.aer", cluster(spark("e1", 10, emulated=True, kernel_messages=fatal)))
    assert outcome.status is CheckStatus.SKIP and "emulated" in outcome.summary
