"""pcie.width and power.slot: the PCIe link behind every fabric half, and the Spark's slot-power message.

Each Spark half is a PCIe Gen5 x4 link (~100 Gb/s); the ASUS GX10's second function pair trains at x2, which
halves that half (spark-facts 2.2, problem 16). mlx5 logs "Detected insufficient power on the PCIe slot (27W)"
on every Spark boot, healthy ones included (2.2, problem 10): worth showing, never a failure by itself.
"""

from __future__ import annotations

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import NodeFacts, PciFunction, Unknown

PCIE = "pcie.width"
POWER = "power.slot"
POWER_PATTERN = "insufficient power"


def fabric_functions(facts: NodeFacts) -> list[PciFunction]:
    """PCI functions behind a fabric interface or an RDMA device."""
    bdfs = {d.pci for name in facts.fabric if (d := facts.netdev(name)) and d.pci} | {
        r.pci for r in facts.rdma if r.pci
    }
    return [f for f in facts.pci if f.bdf in bdfs]


def _link(speed: float | Unknown, width: int | Unknown) -> str:
    shown_speed = f"{speed:g} GT/s" if isinstance(speed, float | int) else "? GT/s"
    shown_width = f"x{width}" if isinstance(width, int) else "x?"
    return f"{shown_speed} {shown_width}"


def degraded(function: PciFunction) -> bool | None:
    """True when the link trained below its maximum width or speed; None when that cannot be read."""
    pairs = ((function.current_width, function.max_width), (function.current_speed_gts, function.max_speed_gts))
    known = [(c, m) for c, m in pairs if not isinstance(c, Unknown) and not isinstance(m, Unknown)]
    if not known:
        return None
    return any(current < maximum for current, maximum in known)


def _pcie_fix(node: str, functions: list[PciFunction]) -> Fix:
    return Fix(
        node,
        "the NIC trained a narrower or slower PCIe link than it can: its half is capped near the link's rate. "
        "Reseat or power-cycle (full drain) first; on an ASUS GX10 the x2 is the board's own, so ask the vendor "
        "(firmware/BIOS) and expect that half at ~50 Gb/s meanwhile",
        tuple(f"sudo lspci -vv -s {f.bdf} | grep -E 'LnkCap|LnkSta'   # LnkSta should match LnkCap" for f in functions),
    )


@check(PCIE, "every fabric PCI function runs its full PCIe width and speed")
def pcie_width(data: CheckInput) -> CheckResult:
    functions = [(node, f) for node in sorted(data.facts) for f in fabric_functions(data.facts[node])]
    if not functions:
        return skip(PCIE, "no PCI functions behind the fabric interfaces (emulated or virtual interfaces)")
    verdicts = [(node, f, degraded(f)) for node, f in functions]
    if all(v is None for _, _, v in verdicts):
        return skip(PCIE, f"PCIe link width and speed unreadable on {len(functions)} fabric functions")
    slow = [(node, f) for node, f, v in verdicts if v]
    unread = [f"{node} {f.bdf}" for node, f, v in verdicts if v is None]
    note = f"; unreadable on {joined(unread)}" if unread else ""
    if not slow:
        links = sorted({_link(f.current_speed_gts, f.current_width) for _, f in functions})
        return result(
            PCIE, CheckStatus.PASS, f"{len(functions)} fabric PCI functions at full link ({', '.join(links)}){note}"
        )
    evidence = [
        Evidence(
            node,
            f.bdf,
            "PCIe link (current, max)",
            f"{_link(f.current_speed_gts, f.current_width)} of {_link(f.max_speed_gts, f.max_width)}",
        )
        for node, f in slow
    ]
    nodes = sorted({node for node, _ in slow})
    fixes = [_pcie_fix(node, [f for n, f in slow if n == node]) for node in nodes]
    names = joined([f"{node} {f.bdf} {_link(f.current_speed_gts, f.current_width)}" for node, f in slow])
    return result(PCIE, CheckStatus.FAIL, f"PCIe link below its maximum: {names}{note}", evidence, fixes)


@check(POWER, "PCIe slot power messages (informational)")
def power_slot(data: CheckInput) -> CheckResult:
    seen: list[Evidence] = []
    unread: list[str] = []
    for node in sorted(data.facts):
        messages = data.facts[node].kernel_messages
        if isinstance(messages, Unknown):
            unread.append(f"{node} ({messages.reason})")
            continue
        seen += [Evidence(node, None, "kernel message", line) for line in messages if POWER_PATTERN in line.lower()]
    if len(unread) == len(data.facts):
        return skip(POWER, f"kernel messages unreadable: {joined(unread, 2)}")
    note = f"; unreadable on {joined(unread, 2)}" if unread else ""
    if not seen:
        return result(POWER, CheckStatus.PASS, f"no insufficient-power message in the kernel log{note}")
    nodes = joined(sorted({e.node or "" for e in seen}))
    summary = (
        f"'insufficient power on the PCIe slot' seen on {nodes}; informational: it appears on healthy Sparks "
        f"(a real cap shows as ~13 Gb/s per link in the benchmarks){note}"
    )
    return result(POWER, CheckStatus.PASS, summary, seen)
