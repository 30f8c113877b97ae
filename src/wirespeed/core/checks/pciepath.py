"""pcie.bridge and pcie.aer: the PCIe path between the SoC and the ConnectX-7, where a fabric fails below the driver.

pcie.bridge: on some DGX Sparks the root ports above the CX-7 (0000:00:00.0, 0002:00:00.0) train at 2.5 GT/s
instead of 32, mlx5 logs "E-Switch: cleanup" for each function and the endpoints vanish after boot: no `enp1s0f*`
interfaces, and a PCI rescan hangs the host. NVIDIA's answer is field diagnostics and an RMA, not a driver
(forum threads 363193, 362667; field-problems-2026-11-26 problem 1). The `cx7-pcie-hotplug` driver also removes the
card, root ports dropping to Gen1, when it sees no cable ("Cable removal"), and a CX-7 never enumerated before any
cable was attached is not a missing NIC either (problem 11): the kernel log tells these apart.
pcie.aer: a fatal AER on the CX-7's root port sends Linux into error recovery that can wedge in
`mlx5_pci_slot_reset` and soft-lock CPUs for hours, until a reboot (MiaAI-Lab/DeepSeek-v4-Flash-DSpark-2x-DGX-Spark
issue 146: "root port 0000:00:00.0 reports an Uncorrectable Fatal Transaction Layer error"); this boot's kernel log
and the last boot's (journald) are read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import NodeFacts, PciRootPort, Unknown
from wirespeed.core.parsers import kernel_log, pcie_log
from wirespeed.core.parsers.pcie_log import PcieEvent

BRIDGE = "pcie.bridge"
AER = "pcie.aer"
SPARK_CX7_PORTS = ("0000:00:00.0", "0002:00:00.0")  # spark-facts 2.1: the bridges above the four CX-7 functions
# GB10 machines, all with the ConnectX-7 of NVIDIA's reference design, as DMI names them: a DGX Spark reads
# sys_vendor "NVIDIA", product_name "NVIDIA_DGX_Spark", board_name "P4242" (kernel "Hardware name:" lines in public
# oops reports). The OEM patterns are the products' names, their DMI spelling unconfirmed: a GB10 GPU counts too.
GB10_MODELS = re.compile(
    r"DGX[ _-]?Spark|\bGX10\b|\bGB10\b|ThinkStation[ _-]?PGX|EdgeXpert|\bZGX\b|Veriton[ _-]?GN100"
    r"|AI[ _-]?TOP[ _-]?ATOM",
    re.IGNORECASE,
)
# NVIDIA's path for this fault on the forum: field diagnostics, then an RMA (userguide-dgx-spark-fieldiag.pdf at
# docs.nvidia.com; owners run it as `partnerdiag --field`).
FIELD_DIAG = (
    "NVIDIA DGX Spark Field Diagnostics (docs.nvidia.com: userguide-dgx-spark-fieldiag.pdf; "
    "`sudo ./partnerdiag --field`), then its logs to NVIDIA support for an RMA"
)
NO_RESCAN = "# do not `echo 1 > /sys/bus/pci/rescan` or bounce the links: on this fault it hangs the host"

HARDWARE, NO_CABLE, UNDETERMINED = "hardware", "no cable", "undetermined"


def model(facts: NodeFacts) -> str:
    """The machine model as DMI names it (product_name, else the vendor), or why it is not known."""
    return facts.dmi.get("product_name") or facts.dmi.get("sys_vendor") or "model unread (no DMI)"


def ships_cx7(facts: NodeFacts) -> bool:
    """Whether this node's model comes with a ConnectX-7: a GB10 machine by DMI or by its GPU."""
    if facts.emulated:
        return False
    if GB10_MODELS.search(" ".join(facts.dmi.values())):
        return True
    return not isinstance(facts.gpus, Unknown) and any("GB10" in g.name for g in facts.gpus)


def has_nic(facts: NodeFacts) -> bool:
    """An RDMA device, or an mlx5 PCI function, enumerated on this node."""
    return bool(facts.rdma) or any(f.driver == "mlx5_core" for f in facts.pci)


def _speed(value: float | Unknown) -> str:
    return f"{value:g} GT/s" if isinstance(value, float | int) else "? GT/s"


def link_text(port: PciRootPort) -> str:
    width = f"x{port.current_width}" if isinstance(port.current_width, int) else "x?"
    max_width = f"x{port.max_width}" if isinstance(port.max_width, int) else "x?"
    below = ", ".join(port.downstream) if port.downstream else "nothing enumerated below it"
    return f"{_speed(port.current_speed_gts)} {width} of {_speed(port.max_speed_gts)} {max_width}; {below}"


def downtrained(port: PciRootPort) -> bool:
    current, maximum = port.current_speed_gts, port.max_speed_gts
    return not isinstance(current, Unknown) and not isinstance(maximum, Unknown) and current < maximum


def cx7_ports(facts: NodeFacts) -> list[PciRootPort]:
    """The root ports above the NIC: those with its functions below; with none enumerated, the empty ones (and a
    Spark's known two, if they are there)."""
    if isinstance(facts.root_ports, Unknown):
        return []
    functions = {f.bdf for f in facts.pci if f.driver == "mlx5_core"} | {d.pci for d in facts.rdma if d.pci}
    above = [p for p in facts.root_ports if functions & set(p.downstream)]
    if above or functions:
        return above
    spark = ships_cx7(facts)
    return [p for p in facts.root_ports if not p.downstream or (spark and p.bdf in SPARK_CX7_PORTS)]


@dataclass(frozen=True)
class Missing:
    """Why a node that should have a ConnectX-7 shows none."""

    verdict: str  # HARDWARE, NO_CABLE or UNDETERMINED
    reason: str  # one clause for a summary
    ports: tuple[PciRootPort, ...]  # the root ports where the NIC should be
    lines: tuple[PcieEvent, ...]  # the kernel lines that decided it


def missing_nic(facts: NodeFacts) -> Missing | None:
    """None when the node has its NIC; else the kernel log's and the root ports' reading of why not."""
    if has_nic(facts):
        return None
    ports = tuple(cx7_ports(facts))
    slow = tuple(p for p in ports if downtrained(p))
    messages = facts.kernel_messages
    if isinstance(messages, Unknown):
        why = f"kernel log unread ({messages.reason})"
        if slow:
            return Missing(UNDETERMINED, f"root ports at 2.5 GT/s with nothing below; {why}", ports, ())
        return Missing(UNDETERMINED, why, ports, ())
    found = pcie_log.events(messages)
    retrain = tuple(e for e in found if e.kind == pcie_log.RETRAIN)
    cleanup = tuple(e for e in found if e.kind == pcie_log.ESW_CLEANUP)
    cable = [e for e in found if e.kind in (pcie_log.CABLE_OUT, pcie_log.CABLE_IN)]
    probed = [e for e in kernel_log.events(messages) if e.kind == kernel_log.PROBE]
    if retrain:
        return Missing(HARDWARE, "the root port's link failed to train (the kernel retrained it at 2.5 GT/s and "
                       "failed)", ports, retrain + cleanup)  # fmt: skip
    if cable and cable[-1].kind == pcie_log.CABLE_OUT:
        if any(e.kind == pcie_log.CABLE_IN for e in cable):
            reason = (f"the cable was pulled ({cable[-1].stamp}: the hot-plug driver's 'Cable removal' after a 'Cable "
                      "plugin'): the card stays off the bus until a cable is seated")  # fmt: skip
        else:
            reason = "not enumerated: no cable attached yet? (the hot-plug driver removed the card: 'Cable removal')"
        return Missing(NO_CABLE, reason, ports, (cable[-1], *cleanup))
    if cleanup:
        downtrain = " at 2.5 GT/s" if slow else ""
        return Missing(HARDWARE, f"mlx5 tore the functions down after boot ('E-Switch: cleanup') with no hot-plug "
                       f"removal and the root ports{downtrain} with nothing below", ports, cleanup)  # fmt: skip
    if not probed:
        return Missing(NO_CABLE, "not enumerated: no cable attached yet? (no mlx5 probe in this boot's log)", ports, ())
    return Missing(UNDETERMINED, "probed at boot, gone now, with no teardown or hot-plug line kept", ports, ())


def missing_fix(node: str, found: Missing) -> Fix:
    """The exact next step for a node without its ConnectX-7."""
    ports = [p.bdf for p in found.ports] or list(SPARK_CX7_PORTS)
    lnk = [f"sudo lspci -vv -s {bdf} | grep -E 'LnkCap:|LnkSta:'   # healthy: LnkSta Speed 32GT/s" for bdf in ports]
    if found.verdict == HARDWARE:
        return Fix(
            node,
            "the PCIe path to the ConnectX-7 is failing (hardware: board, retimer or connector), not a missing "
            f"driver: {found.reason}. No software setting brings it back; run {FIELD_DIAG}. A cold power-off of 60 s "
            "or more may bring it back for a while",
            (*lnk, "sudo dmesg | grep -E 'retrain|E-Switch: cleanup|mlx5_core'", NO_RESCAN),
        )
    if found.verdict == NO_CABLE:
        return Fix(
            node,
            f"{found.reason}: the DGX OS hot-plug power management keeps the ConnectX-7 off the PCI bus while no QSFP "
            "cable is seated, so this is not a missing NIC. Seat the cable (a firm push until the latch clicks), "
            "then reboot with it in place. If a cable was seated all along: remove the hot-plug marker and reboot; "
            f"if the card still does not appear, the PCIe path is at fault ({FIELD_DIAG})",
            (
                "sudo dmesg | grep -E 'cx7-pcie-hotplug|mlx5_core'   # 'Cable plugin' then a probe, after seating it",
                "ls /etc/nvidia/cx7-hotplug-enabled && sudo rm /etc/nvidia/cx7-hotplug-enabled   # then reboot",
                "sudo systemctl reboot --no-block",
                *lnk,
            ),
        )
    return Fix(
        node,
        f"no ConnectX-7 and the cause is not readable ({found.reason}): read the kernel log as root; root ports at "
        "2.5 GT/s with 'E-Switch: cleanup' and no 'Cable removal' are the hardware fault, a 'Cable removal' is a "
        "missing cable",
        (
            "sudo dmesg | grep -E 'cx7-pcie-hotplug|retrain|E-Switch: cleanup|mlx5_core'",
            *lnk,
            "wirespeed check --become   # reads the kernel log as root",
        ),
    )


def missing_evidence(node: str, facts: NodeFacts, found: Missing) -> list[Evidence]:
    evidence = [Evidence(node, "DMI", "machine model", model(facts))]
    if isinstance(facts.root_ports, Unknown):
        evidence.append(Evidence(node, "root ports", "PCIe root ports", facts.root_ports.reason))
    evidence += [Evidence(node, p.bdf, "root port link (current of max; below)", link_text(p)) for p in found.ports]
    evidence += [Evidence(node, e.device, f"kernel log, {e.stamp}", e.line) for e in found.lines]
    return evidence


def _judged(data: CheckInput) -> dict[str, NodeFacts]:
    """Nodes that should have a ConnectX-7: their model ships one, or a peer has its NIC."""
    peers_have = any(has_nic(f) for f in data.facts.values())
    return {n: f for n, f in sorted(data.facts.items()) if ships_cx7(f) or (peers_have and not f.emulated)}


@check(BRIDGE, "the PCIe root ports above the ConnectX-7 trained and the NIC stayed on the bus")
def pcie_bridge(data: CheckInput) -> CheckResult:
    judged = _judged(data)
    if not judged:
        return skip(BRIDGE, "no node whose model ships a ConnectX-7 (DMI, GPU) and no RDMA NIC on any node")
    missing = {n: m for n, f in judged.items() if (m := missing_nic(f)) is not None}
    present = [n for n in judged if n not in missing]
    links = sorted({f"{p.bdf} {_speed(p.current_speed_gts)}" for n in present for p in cx7_ports(judged[n])})
    note = f" ({', '.join(links)})" if links else ""
    if not missing:
        return result(BRIDGE, CheckStatus.PASS, f"the NIC is on the PCI bus of {joined(present)}{note}")
    evidence = [e for n, m in missing.items() for e in missing_evidence(n, judged[n], m)]
    fixes = [missing_fix(n, m) for n, m in missing.items()]
    worst = CheckStatus.FAIL if any(m.verdict == HARDWARE for m in missing.values()) else CheckStatus.WARN
    names = "; ".join(
        f"{n}: {'the hardware path, ' if m.verdict == HARDWARE else ''}{m.reason}" for n, m in missing.items()
    )
    return result(BRIDGE, worst, f"no ConnectX-7 on the PCI bus of {names}", evidence, fixes)


# ------------------------------------------------------------------------------------------------------- pcie.aer
def _nic_bdfs(facts: NodeFacts) -> set[str]:
    """The CX-7's functions and the root ports above them (a Spark's known two when none are read)."""
    bdfs = {f.bdf for f in facts.pci if f.driver == "mlx5_core"} | {d.pci for d in facts.rdma if d.pci}
    bdfs |= {p.bdf for p in cx7_ports(facts)}
    if ships_cx7(facts):
        bdfs |= set(SPARK_CX7_PORTS) | {f"{d}:01:00.{fn}" for d in ("0000", "0002") for fn in (0, 1)}
    return bdfs


def _on_nic_path(event: PcieEvent, bdfs: set[str]) -> bool:
    if event.kind == pcie_log.MLX5_RECOVERY:
        return True
    named = set(re.findall(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", event.line.lower()))
    return event.kind == pcie_log.AER_FATAL and (not bdfs or bool(named & bdfs))


def _fatal(messages: tuple[str, ...], bdfs: set[str]) -> list[PcieEvent]:
    found = pcie_log.events(messages)
    fatal = [e for e in found if _on_nic_path(e, bdfs)]
    if not fatal:
        return []
    return [e for e in found if _on_nic_path(e, bdfs) or e.kind == pcie_log.SOFT_LOCKUP]


def _aer_fix(node: str, boots: list[str]) -> Fix:
    now = "this boot" in boots
    return Fix(
        node,
        "a fatal PCIe error on the ConnectX-7's path: the kernel's AER recovery can wedge in mlx5_pci_slot_reset and "
        "soft-lock CPUs for minutes to hours, taking jobs, ssh and the NIC with it until a reboot. "
        + ("Reboot now (a cold power-off clears the link state); " if now else "It happened in the last boot; ")
        + f"if it comes back, the PCIe path is at fault: {FIELD_DIAG}",
        (
            *(["sudo systemctl reboot --no-block"] if now else []),
            "sudo journalctl -k -b -1 -o short-iso | grep -E 'AER|mlx5_pci|soft lockup'   # the last boot",
            "sudo dmesg -T | grep -E 'AER|mlx5_pci|soft lockup'   # this boot",
        ),
    )


@check(AER, "no fatal PCIe error (AER) on the ConnectX-7's path in this boot or the last")
def pcie_aer(data: CheckInput) -> CheckResult:
    seen: dict[str, list[tuple[str, PcieEvent]]] = {}
    unread: list[str] = []
    read = 0
    for node, facts in sorted(data.facts.items()):
        if facts.emulated:  # an emulated node reads its host's kernel log: not its own PCIe path
            unread.append(f"{node} (emulated: the host's kernel)")
            continue
        bdfs = _nic_bdfs(facts)
        logs: Mapping[str, tuple[str, ...] | Unknown] = {
            "this boot": facts.kernel_messages,
            "last boot": facts.kernel_messages_previous,
        }
        for boot, messages in logs.items():
            if isinstance(messages, Unknown):
                unread.append(f"{node} {boot} ({messages.reason})")
                continue
            read += 1
            seen.setdefault(node, []).extend((boot, e) for e in _fatal(messages, bdfs))
    if not read:
        return skip(AER, f"kernel logs unread: {joined(unread, 2)}")
    note = f"; unread: {joined(unread, 2)}" if unread else ""
    hit = {n: events for n, events in seen.items() if events}
    if not hit:
        return result(AER, CheckStatus.PASS, f"no fatal AER or mlx5 error recovery in {read} kernel logs{note}")
    evidence = [Evidence(n, e.device, f"{boot}, {e.stamp}", e.line) for n, events in hit.items() for boot, e in events]
    boots = {n: sorted({boot for boot, _ in events}) for n, events in hit.items()}
    fixes = [_aer_fix(n, b) for n, b in boots.items()]
    status = CheckStatus.FAIL if any("this boot" in b for b in boots.values()) else CheckStatus.WARN
    names = joined([f"{n} ({' and '.join(b)})" for n, b in boots.items()])
    summary = f"fatal PCIe AER on the ConnectX-7's path on {names}: the node can soft-lock{note}"
    return result(AER, status, summary, evidence, fixes)
