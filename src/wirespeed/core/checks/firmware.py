"""nic.firmware: every node's ConnectX runs the same firmware, and no package flashes it behind the owner's back.

mlnx-fw-updater (MLNX_OFED/DOCA) burns the firmware it carries into every Mellanox NIC from its maintainer script,
so an unrelated `apt install` that pulls or upgrades it reflashes the NIC: one report has an ASUS GX10's CX-7 taken
from 28.45.4028 to 28.47.1088 that way, both ports then stuck in `pre-init` with error -110 (field problems
2026-11-26, 4). Nodes on different firmware also behave differently under the same test. The version is the RDMA
device's sysfs fw_ver (mlx5: "%d.%d.%04d"), else `ethtool -i`'s firmware-version ("%d.%d.%04d (PSID)"); its first
number names the product family, so only versions of one family are compared.
"""

from __future__ import annotations

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.parsers.hoststate import dpkg_status, firmware_version

ID = "nic.firmware"
UPDATER = "mlnx-fw-updater"
# The first number of a Mellanox/NVIDIA firmware version is the device family's.
FAMILIES = {"16": "ConnectX-5", "20": "ConnectX-6", "22": "ConnectX-6 Dx", "26": "ConnectX-6 Lx", "28": "ConnectX-7"}


def node_firmware(facts: NodeFacts) -> dict[str, list[str]]:
    """Firmware version -> the devices that run it: every RDMA device, and every fabric interface of a Mellanox
    driver that has none (its RDMA side missing)."""
    found: dict[str, list[str]] = {}
    behind_rdma = {n for d in facts.rdma for n in d.netdevs}
    for device in facts.rdma:
        version = firmware_version(device.fw_ver) if isinstance(device.fw_ver, str) else None
        if version is None:
            texts = [n.firmware for name in device.netdevs if (n := facts.netdev(name)) and isinstance(n.firmware, str)]
            version = next((v for t in texts if (v := firmware_version(t))), None)
        if version is not None:
            found.setdefault(version, []).append(device.name)
    for name in facts.fabric:
        netdev = facts.netdev(name)
        if netdev is None or name in behind_rdma or not str(netdev.driver).startswith("mlx"):
            continue
        version = firmware_version(netdev.firmware) if isinstance(netdev.firmware, str) else None
        if version is not None:
            found.setdefault(version, []).append(name)
    return found


def family(version: str) -> str:
    major = version.split(".")[0]
    return FAMILIES.get(major, f"firmware family {major}")


def _differences(data: CheckInput) -> tuple[list[Evidence], list[Fix], list[str]]:
    """Evidence per node where one family's firmware differs across nodes; also what every family runs."""
    by_family: dict[str, dict[str, dict[str, list[str]]]] = {}
    for node in sorted(data.facts):
        for version, devices in node_firmware(data.facts[node]).items():
            by_family.setdefault(family(version), {}).setdefault(version, {})[node] = devices
    evidence: list[Evidence] = []
    fixes: list[Fix] = []
    same: list[str] = []
    for name, versions in sorted(by_family.items()):
        if len(versions) == 1:
            (version, nodes), = versions.items()  # fmt: skip
            same.append(f"{name} {version} on {joined(sorted(nodes), 3)}")
            continue
        for version, nodes in sorted(versions.items()):
            for node, devices in sorted(nodes.items()):
                evidence.append(Evidence(node, ", ".join(devices), f"{name} firmware (differs across nodes)", version))
        seen = "; ".join(f"{v} on {', '.join(sorted(n))}" for v, n in sorted(versions.items()))
        fixes.append(
            Fix(
                None,
                f"{name} firmware differs ({seen}): bring every node to one version deliberately, one node at a time, "
                "from the image for the NIC's PSID (on a DGX Spark or GX10, the vendor's platform update), with a "
                "cold power cycle after; never through a package during an unrelated install",
                (
                    "sudo mlxfwmanager --query   # on each node: every Mellanox NIC's PSID and firmware",
                    "sudo flint -d 0000:01:00.0 query   # one function's running and flashed versions",
                ),
            )
        )
    return evidence, fixes, same


def _updater(facts: NodeFacts) -> tuple[str, Evidence | None, Fix | None]:
    """What dpkg says of mlnx-fw-updater on this node: a note, and evidence and a fix when it is installed, unheld."""
    packages = facts.packages
    if isinstance(packages, Unknown):
        return f"{UPDATER}: {packages.reason}", None, None
    raw = packages.get(UPDATER)
    if raw is None:
        return f"no {UPDATER}", None, None
    try:
        status = dpkg_status(raw)
    except ValueError as exc:
        return f"{UPDATER} unreadable ({exc})", None, None
    if not status.installed:
        return f"{UPDATER} {status.state}", None, None
    if status.held:
        return f"{UPDATER} {status.version} held", None, None
    what = (
        f"{UPDATER} {status.version} installed: when apt installs or upgrades it, it flashes every Mellanox NIC it "
        "finds (one GX10 went 28.45.4028 -> 28.47.1088 during an unrelated apt install, both ports then pre-init)"
    )
    fix = Fix(
        facts.node,
        f"stop {UPDATER} from flashing on its own: hold it (apt no longer upgrades it) or remove it (the firmware on "
        "the NIC stays as it is)",
        (f"sudo apt-mark hold {UPDATER}", f"sudo apt-get remove {UPDATER}   # instead of holding it"),
    )
    return f"{UPDATER} installed", Evidence(facts.node, UPDATER, what, raw), fix


@check(ID, "NIC firmware is the same on every node, and no package flashes it on its own")
def nic_firmware(data: CheckInput) -> CheckResult:
    if not data.facts:
        return skip(ID, "no node was read")
    evidence, fixes, same = _differences(data)
    notes: list[str] = []
    for node in sorted(data.facts):
        note, found, fix = _updater(data.facts[node])
        notes.append(f"{node}: {note}")
        if found is not None and fix is not None:
            evidence.append(found)
            fixes.append(fix)
    packages_read = any(not isinstance(f.packages, Unknown) for f in data.facts.values())
    if not same and not evidence and not packages_read:
        return skip(ID, f"no NIC firmware version and no package list read ({joined(notes, 2)})")
    summary_notes = sorted(set(n.split(": ", 1)[1] for n in notes))
    package_note = summary_notes[0] if len(summary_notes) == 1 else joined(notes, 3)
    if not evidence:
        firmware = "; ".join(same) if same else "no NIC firmware version read"
        return result(ID, CheckStatus.PASS, f"{firmware}; {package_note}")
    problems = [e for e in evidence if e.subject == UPDATER]
    parts = []
    if len(problems) < len(evidence):
        parts.append("firmware differs across nodes")
    if problems:
        parts.append(f"{UPDATER} installed on {joined([str(e.node) for e in problems], 3)}")
    return result(ID, CheckStatus.WARN, "; ".join(parts), evidence, list(dict.fromkeys(fixes)))
