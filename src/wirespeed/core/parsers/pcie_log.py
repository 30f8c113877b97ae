"""Kernel-log lines about the NIC's PCIe path: a link that trained at 2.5 GT/s, a ConnectX-7 torn down after boot,
the hot-plug driver's cable events, fatal AER and mlx5's error recovery. Each line keeps its own timestamp.

The texts, from the kernel sources:
- drivers/pci/quirks.c `pcie_failed_link_retrain`: "broken device, retraining non-functional downstream link at
  2.5GT/s" and "retraining failed" (forum threads 363193 and 362667 quote both on 0000:00:00.0 of a DGX Spark).
- drivers/pci/pcie/aer.c `aer_print_source`: "%s%s error message received from %04x:%02x:%02x.%d" with the
  severity strings "Uncorrectable (Non-Fatal)", "Uncorrectable (Fatal)", "Correctable" (kernels before 6.x spell
  them "Uncorrected (Fatal)"), and `aer_print_error`: "PCIe Bus Error: severity=%s, type=%s, (%s)".
- drivers/net/ethernet/mellanox/mlx5/core/main.c: "%s Device state = %d ... Enter" from `mlx5_pci_err_detected`
  and `mlx5_pci_slot_reset` (the AER recovery callbacks), eswitch.c's "E-Switch: cleanup" when a function is
  unloaded, and the module events "Port module event: module %d, Cable plugged/unplugged".
- kernel/watchdog.c: "watchdog: BUG: soft lockup - CPU#%d stuck for %us!".
- cx7-pcie-hotplug (DGX OS): "Cable removal" / "Cable plugin" (captures of Sparks in field-problems 7).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RETRAIN, AER_FATAL, AER_OTHER, MLX5_RECOVERY, ESW_CLEANUP = "retrain", "aer fatal", "aer", "mlx5 recovery", "cleanup"
CABLE_OUT, CABLE_IN, MODULE_OUT, MODULE_IN = "cable removal", "cable plugin", "unplugged", "plugged"
SOFT_LOCKUP = "soft lockup"

_BDF = re.compile(r"\b([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\b", re.IGNORECASE)
# journalctl -o short-iso: "2026-08-26T06:38:10+0000 host kernel: text"; dmesg: "[ 8431.907512] text".
_DMESG = re.compile(r"^\[\s*(\d+(?:\.\d+)?)\]\s?")
_JOURNAL = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d{2}:?\d{2}|Z)?)\s+\S+\s+kernel:\s?")
_FATAL = re.compile(r"Uncorrect(?:able|ed) \(Fatal\)")


@dataclass(frozen=True)
class PcieEvent:
    kind: str
    device: str | None  # the BDF the line is about (its first BDF): the port, or the function
    stamp: str  # "8431.907512 s after boot", an ISO time from the journal, or "no timestamp"
    line: str


def kind_of(text: str) -> str | None:
    """Which PCIe-path event a kernel message is, or None."""
    lower = text.lower()
    if "retraining non-functional downstream link" in lower or "retraining failed" in lower:
        return RETRAIN
    if "aer:" in lower or "pcie bus error" in lower:
        return AER_FATAL if _FATAL.search(text) else AER_OTHER
    if "mlx5_pci_slot_reset" in lower or "mlx5_pci_err_detected" in lower:
        return MLX5_RECOVERY
    if "mlx5_core" in lower and "e-switch: cleanup" in lower:
        return ESW_CLEANUP
    if "cx7-pcie-hotplug" in lower and "cable removal" in lower:
        return CABLE_OUT
    if "cx7-pcie-hotplug" in lower and "cable plugin" in lower:
        return CABLE_IN
    if "port module event" in lower and "cable unplugged" in lower:
        return MODULE_OUT
    if "port module event" in lower and "cable plugged" in lower:
        return MODULE_IN
    if "soft lockup" in lower:
        return SOFT_LOCKUP
    return None


def wanted(line: str) -> bool:
    """Whether discovery keeps this kernel-log line (with the NIC events of `kernel_log`). Of AER it keeps only the
    uncorrectable: correctable errors can repeat thousands of times a minute, and the checks do not judge them."""
    kind = kind_of(line)
    return kind is not None and (kind != AER_OTHER or "uncorrect" in line.lower())


def stamp_of(line: str) -> str:
    """When the line was logged, as its source stamped it."""
    if match := _DMESG.match(line.strip()):
        return f"{float(match.group(1)):.6f} s after boot"
    if match := _JOURNAL.match(line.strip()):
        return match.group(1)
    return "no timestamp"


def events(lines: tuple[str, ...] | list[str]) -> list[PcieEvent]:
    found = []
    for line in lines:
        kind = kind_of(line)
        if kind is None:
            continue
        device = _BDF.search(line)
        found.append(PcieEvent(kind, device.group(1).lower() if device else None, stamp_of(line), line.strip()))
    return found
