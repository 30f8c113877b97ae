"""`lspci -vv` (pciutils lspci.c show_device and ls-caps.c cap_express_link: `LnkCap: Port #0, Speed 32GT/s, Width
x16`, `LnkSta: Speed 16GT/s (downgraded), Width x8 (downgraded)`), whole or cut down with `| grep LnkSta`. Pure: text
in, one record per PCI function out.

A function's header is `[DOMAIN:]BUS:DEV.FN CLASS: NAME`; lspci leaves the domain out when every device is in 0000,
so a header without one is in 0000. Lines after a `| grep` have no header: the caller gives the BDF its `-s` named.
`Speed unknown` (a function whose link is down) is no speed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADER = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{4}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])\s+"
    r"(?P<cls>[^:]+?):\s+(?P<name>.*?)\s*$"
)
_LNK = re.compile(r"^\s*(?P<which>LnkCap|LnkSta):\s*(?P<value>.*)$")
_SPEED = re.compile(r"Speed (?P<speed>[\d.]+GT/s|unknown)(?P<down> \((?:downgraded|ok)\))?", re.IGNORECASE)
_WIDTH = re.compile(r"Width x(?P<width>\d+)(?P<down> \((?:downgraded|ok)\))?")
_NUMA = re.compile(r"^\s*NUMA node:\s*(?P<node>-?\d+)\s*$")
_DRIVER = re.compile(r"^\s*Kernel driver in use:\s*(?P<driver>\S+)\s*$")
_SLOT_POWER = re.compile(r"SlotPowerLimit (?P<watts>[\d.]+)W")


@dataclass
class PciDevice:
    bdf: str | None  # 0000:b1:00.1; None for a `| grep` paste without header or `-s`
    device_class: str | None = None  # Ethernet controller, PCI bridge, ...
    name: str | None = None
    numa_node: int | None = None
    driver: str | None = None
    cap_speed_gts: float | None = None
    cap_width: int | None = None
    sta_speed_gts: float | None = None
    sta_width: int | None = None
    downgraded: bool = False  # lspci said `(downgraded)` on the speed or the width
    slot_power_w: float | None = None


@dataclass(frozen=True)
class Lspci:
    devices: tuple[PciDevice, ...]
    read: frozenset[int]


def _speed(value: str) -> tuple[float | None, bool]:
    match = _SPEED.search(value)
    if match is None or match["speed"].lower() == "unknown":
        return None, bool(match and match["down"] and "downgraded" in match["down"])
    return float(match["speed"][:-4]), bool(match["down"] and "downgraded" in match["down"])


def _width(value: str) -> tuple[int | None, bool]:
    match = _WIDTH.search(value)
    if match is None:
        return None, False
    return int(match["width"]), bool(match["down"] and "downgraded" in match["down"])


def parse(text: str, bdf: str | None = None) -> Lspci:
    devices: list[PciDevice] = []
    read: set[int] = set()
    current: PciDevice | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            domain = (header["domain"] or "0000").lower()
            current = PciDevice(
                f"{domain}:{header['bus']}:{header['dev']}.{header['fn']}".lower(), header["cls"], header["name"]
            )
            devices.append(current)
            read.add(number)
            continue
        if current is None and _LNK.match(line):
            current = PciDevice(bdf)
            devices.append(current)
        if current is None:
            continue
        if not line[:1].isspace() and line.strip():
            current = None  # a line of something else between devices
            continue
        lnk = _LNK.match(line)
        if lnk:
            speed, slow = _speed(lnk["value"])
            width, narrow = _width(lnk["value"])
            if lnk["which"] == "LnkCap":
                current.cap_speed_gts, current.cap_width = speed, width
            else:
                current.sta_speed_gts, current.sta_width = speed, width
                current.downgraded = slow or narrow
            read.add(number)
        elif numa := _NUMA.match(line):
            current.numa_node = int(numa["node"])
            read.add(number)
        elif driver := _DRIVER.match(line):
            current.driver = driver["driver"]
            read.add(number)
        elif power := _SLOT_POWER.search(line):
            current.slot_power_w = float(power["watts"])
            read.add(number)
        elif line.strip():
            read.add(number)  # the rest of the device's block: capabilities wirespeed does not use
    return Lspci(tuple(devices), frozenset(read))


def looks_like(text: str) -> bool:
    lines = text.splitlines()
    return any(_LNK.match(line) for line in lines) or (
        any(_HEADER.match(line) for line in lines) and any(line.startswith("\t") for line in lines)
    )
