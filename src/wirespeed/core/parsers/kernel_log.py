"""The kernel-log lines that tell a NIC was hot-plugged or probed again after boot, with their boot-relative time.

On a DGX Spark the `cx7-pcie-hotplug` platform driver (ACPI `MTKP0001:00`) removes the ConnectX-7 from the PCI bus
when no QSFP cable is in and brings it back when one is plugged ("Cable removal", "Cable plugin"); mlx5 then probes
the functions again ("firmware version: ...", "... available PCIe bandwidth ...") and logs "Detected insufficient
power on the PCIe slot (27W)" once more. At boot all of this is normal; long after boot it means the card was
re-enumerated with the machine running, and owners measure ~13 Gb/s per half until a reboot with the cable in place
(field problems 7; public write-ups of the 13 Gb/s link: "reboot both machines with the cable attached").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# After this many seconds since boot an event is no longer part of booting: the hot-plug driver removes an
# uncabled card ~15-20 s after boot, and mlx5 probes within the first seconds.
BOOT_GRACE_S = 300.0
_STAMP = re.compile(r"^\[\s*(\d+(?:\.\d+)?)\]\s?(.*)$")

HOTPLUG, PROBE, POWER = "hot-plug", "probe", "slot power"


@dataclass(frozen=True)
class KernelEvent:
    seconds: float | None  # since boot, as dmesg stamps it; None when the line carries no [seconds] stamp
    kind: str  # HOTPLUG, PROBE or POWER
    line: str  # the line as dmesg printed it


def split_stamp(line: str) -> tuple[float | None, str]:
    """`[ 8431.907512] text` -> (8431.907512, "text"); a line without the stamp -> (None, line)."""
    match = _STAMP.match(line.strip())
    if match is None:
        return None, line.strip()
    return float(match.group(1)), match.group(2)


def kind_of(text: str) -> str | None:
    """Which NIC event a kernel message is, or None for anything else."""
    lower = text.lower()
    if "cx7-pcie-hotplug" in lower:
        return HOTPLUG
    if "insufficient power" in lower:
        return POWER
    if "mlx5_core" in lower and ("firmware version:" in lower or "available pcie bandwidth" in lower):
        return PROBE
    return None


def wanted(line: str) -> bool:
    """Whether discovery keeps this dmesg line (it keeps only the NIC events, never the whole log)."""
    return kind_of(split_stamp(line)[1]) is not None


def events(lines: list[str] | tuple[str, ...]) -> list[KernelEvent]:
    found = []
    for line in lines:
        seconds, text = split_stamp(line)
        kind = kind_of(text)
        if kind is not None:
            found.append(KernelEvent(seconds, kind, line.strip()))
    return found


def after_boot(found: list[KernelEvent], grace_s: float = BOOT_GRACE_S) -> list[KernelEvent]:
    """The events stamped later than `grace_s` seconds after boot."""
    return [e for e in found if e.seconds is not None and e.seconds > grace_s]
