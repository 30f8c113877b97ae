"""Group logical interfaces into physical ports.

On a multi-host NIC (the DGX Spark's ConnectX-7) one QSFP port is two PCI functions in different PCI domains
with the same bus/device/function: 0000:01:00.0 and 0002:01:00.0 are the two ~100G halves of port 0
(spark-facts 2.1: function = physical port, domain = PCIe half). Elsewhere each interface is its own port.
Interfaces without a PCI device (the emulated cluster's veths) are placed by their systemd name, which
encodes the same address (`enP2p1s0f1np1` = domain 2, bus 1, slot 0, function 1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from wirespeed.core.fabric.facts import PhysicalPort

_BDF_RE = re.compile(r"^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$", re.I)
_SYSTEMD_RE = re.compile(r"^en(?:P(\d+))?p(\d+)s(\d+)(?:f(\d+))?(?:np(\d+))?$")


def pci_address(name: str, bdf: str | None) -> tuple[int, str] | None:
    """(domain, "bus:dev.fn") from a BDF, else from a systemd predictable name; None when neither says."""
    if bdf:
        match = _BDF_RE.fullmatch(bdf)
        if match:
            return int(match.group(1), 16), f"{match.group(2)}:{match.group(3)}.{match.group(4)}".lower()
    match = _SYSTEMD_RE.fullmatch(name)
    if match:
        domain = int(match.group(1) or 0)
        return domain, f"{int(match.group(2)):02x}:{int(match.group(3)):02x}.{int(match.group(4) or 0)}"
    return None


def group_ports(interfaces: Sequence[tuple[str, str | None]]) -> tuple[PhysicalPort, ...]:
    """`interfaces` is (netdev, PCI BDF or None); returns ports in a stable order, halves by PCI domain."""
    grouped: dict[str, list[tuple[int, str]]] = {}
    for name, bdf in interfaces:
        address = pci_address(name, bdf)
        key = address[1] if address else name
        grouped.setdefault(key, []).append((address[0] if address else 0, name))
    buses = {key.rsplit(".", 1)[0] for key in grouped if "." in key and ":" in key}
    ports: list[PhysicalPort] = []
    for key in sorted(grouped):
        halves = tuple(name for _, name in sorted(grouped[key]))
        if ":" in key and "." in key and len(buses) == 1:
            label = f"port {key.rsplit('.', 1)[1]}"
        elif ":" in key and "." in key:
            label = f"port {key}"
        else:
            label = key
        ports.append(PhysicalPort(key=key, label=label, halves=halves))
    return tuple(ports)
