"""The node's hardware as sysfs and nvidia-smi show it: PCI functions and their links, PCIe root ports, the
machine model (DMI) and the GPUs."""

from __future__ import annotations

import os
import re

from wirespeed.adapters.source import NodeSource
from wirespeed.core.fabric.facts import Gpu, PciFunction, PciRootPort, Unknown
from wirespeed.core.parsers import sysfs_values as sv
from wirespeed.engine.probes.common import command, listdir, parsed, read, text

PCI_DEVICES = "/sys/bus/pci/devices"
_HOST_BRIDGE = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
DMI = "/sys/class/dmi/id"
DMI_FIELDS = ("sys_vendor", "product_name", "board_name")
NVIDIA_SMI = ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version,memory.free", "--format=csv,noheader"]


def bdf_of(source: NodeSource, device_link: str) -> str | None:
    """The PCI address a `device` link resolves to; None for a device that is not on PCI (or no link)."""
    if not source.exists(device_link):
        return None
    resolved = source.realpath(device_link)
    name = os.path.basename(resolved)
    return name if "/devices/pci" in resolved and ":" in name else None


def pci_function(source: NodeSource, bdf: str) -> PciFunction:
    """One PCI function: its driver, NUMA node and link, current and maximum."""
    base = f"{PCI_DEVICES}/{bdf}"
    driver: str | Unknown = (
        os.path.basename(source.realpath(f"{base}/driver"))
        if source.exists(f"{base}/driver")
        else Unknown("no driver bound")
    )
    return PciFunction(
        bdf=bdf,
        driver=driver,
        numa_node=read(source, f"{base}/numa_node", int, "NUMA node"),
        current_speed_gts=read(source, f"{base}/current_link_speed", sv.pcie_speed_gts, "PCIe speed"),
        current_width=read(source, f"{base}/current_link_width", int, "PCIe width"),
        max_speed_gts=read(source, f"{base}/max_link_speed", sv.pcie_speed_gts, "PCIe max speed"),
        max_width=read(source, f"{base}/max_link_width", int, "PCIe max width"),
    )


def root_ports(source: NodeSource) -> tuple[PciRootPort, ...] | Unknown:
    """Every PCIe root port: a PCI bridge (class 0x0604xx) whose parent in sysfs is a host bridge (pciDDDD:BB),
    with its link (pci-sysfs.c: "32.0 GT/s PCIe" as drivers/pci/probe.c spells each speed) and what sits below."""
    try:
        names = source.listdir(PCI_DEVICES)
    except OSError as exc:
        return Unknown(f"{PCI_DEVICES}: {exc.strerror or exc}")
    ports: list[PciRootPort] = []
    for bdf in names:
        base = f"{PCI_DEVICES}/{bdf}"
        resolved = source.realpath(base)
        if not _HOST_BRIDGE.match(os.path.basename(os.path.dirname(resolved))):
            continue
        pci_class = read(source, f"{base}/class", text, "PCI class")
        if isinstance(pci_class, Unknown) or not pci_class.lower().startswith("0x0604"):
            continue
        ports.append(
            PciRootPort(
                bdf=bdf,
                current_speed_gts=read(source, f"{base}/current_link_speed", sv.pcie_speed_gts, "PCIe speed"),
                current_width=read(source, f"{base}/current_link_width", int, "PCIe width"),
                max_speed_gts=read(source, f"{base}/max_link_speed", sv.pcie_speed_gts, "PCIe max speed"),
                max_width=read(source, f"{base}/max_link_width", int, "PCIe max width"),
                downstream=tuple(n for n in listdir(source, resolved) if _BDF.match(n)),
            )
        )
    return tuple(ports)


def dmi(source: NodeSource) -> dict[str, str]:
    """The machine model from DMI (absent fields: unreadable, as on boards without SMBIOS)."""
    found: dict[str, str] = {}
    for name in DMI_FIELDS:
        value = read(source, f"{DMI}/{name}", text, f"DMI {name}")
        if not isinstance(value, Unknown):
            found[name] = value.strip()
    return found


def gpus(source: NodeSource) -> tuple[Gpu, ...] | Unknown:
    """The GPUs nvidia-smi lists; a field it left empty (or an older snapshot did not ask for) says so."""
    smi = source.output("nvidia_smi", command(NVIDIA_SMI))
    rows = parsed("nvidia_smi", smi, "nvidia-smi", sv.nvidia_smi_csv)
    if isinstance(rows, Unknown):
        return rows
    return tuple(
        Gpu(
            r.name,
            r.compute_capability or Unknown("nvidia-smi did not say"),
            r.driver or Unknown("nvidia-smi did not say"),
            r.memory_free_mib if r.memory_read else Unknown("not read (an older snapshot)"),
        )
        for r in rows
    )
