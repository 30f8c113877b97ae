"""nic.reprobe and mem.cma: what the kernel did to the NIC after boot, and the contiguous memory RDMA needs.

nic.reprobe: re-seating or changing a QSFP cable with a Spark running makes `cx7-pcie-hotplug` remove and re-add
the ConnectX-7; mlx5 probes it again (and logs the slot-power line again). The link trains, pings and carries
traffic, at ~13 Gb/s per half (21.4 -> 2.8 GB/s busbw), until the machine boots with the cable in place (field
problems 7). The same lines at boot are normal, so only events stamped well after boot count.
mem.cma: GB10 kernel 7.0.0-1019-nvidia reserved no contiguous memory (`CmaTotal: 0 kB`, CmaFree non-zero), and
NCCL's memory registrations failed (`ibv_reg_mr_iova2` ENOMEM, `ibv_modify_qp` errors) until the kernel command
line changed (`kho=off`, NVIDIA's nvidia-spark-grub-kho package) or the node went back to 6.17.0-1031/1032
(field problems 14; spark-facts problem 14).
"""

from __future__ import annotations

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.parsers.kernel_log import BOOT_GRACE_S, KernelEvent, after_boot, events

REPROBE = "nic.reprobe"
CMA = "mem.cma"
REBOOT = "sudo systemctl reboot --no-block   # with every cable in place (the blocking form can return and do nothing)"


def _stamp(seconds: float | None) -> str:
    if seconds is None:
        return "no timestamp"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{seconds:.6f} s after boot ({hours}h{minutes:02d}m{secs:02d}s)"


def _reprobe_fix(node: str, first: float | None) -> Fix:
    return Fix(
        node,
        f"the ConnectX-7 was hot-plugged or probed again {_stamp(first)}, long after boot: a re-enumerated card "
        "keeps a fraction of its throughput (~13 Gb/s per half) until it boots with the cable in place. Reboot (or "
        "power-drain) after final cabling, every node whose cable changed, then measure both halves again",
        (
            REBOOT,
            "# or a full power drain: shut down, unplug the power for 30 s, power on",
            "wirespeed bench rdma   # afterwards: ~90+ Gb/s per half, not ~13",
        ),
    )


@check(REPROBE, "no NIC hot-plug or re-probe long after boot (a re-seated cable: reboot after final cabling)")
def nic_reprobe(data: CheckInput) -> CheckResult:
    late: dict[str, list[KernelEvent]] = {}
    unread: list[str] = []
    unstamped: list[str] = []
    seen = 0
    for node in sorted(data.facts):
        messages = data.facts[node].kernel_messages
        if isinstance(messages, Unknown):
            unread.append(f"{node} ({messages.reason})")
            continue
        found = events(messages)
        seen += len(found)
        if found and all(e.seconds is None for e in found):
            unstamped.append(node)
        if after := after_boot(found):
            late[node] = after
    if len(unread) == len(data.facts):
        return skip(REPROBE, f"kernel log unreadable: {joined(unread, 2)}")
    note = f"; unreadable on {joined(unread, 2)}" if unread else ""
    note += f"; no timestamps in the kernel log of {joined(unstamped)}" if unstamped else ""
    if not late:
        return result(
            REPROBE,
            CheckStatus.PASS,
            f"{seen} NIC hot-plug/probe/slot-power messages, none later than {BOOT_GRACE_S:g} s after boot{note}",
        )
    evidence = [Evidence(node, e.kind, _stamp(e.seconds), e.line) for node in sorted(late) for e in late[node]]
    fixes = [_reprobe_fix(node, found[0].seconds) for node, found in sorted(late.items())]
    names = joined([f"{node} ({len(found)} from {found[0].seconds:.0f} s after boot)" for node, found in late.items()])
    return result(REPROBE, CheckStatus.WARN, f"NIC re-enumerated after boot on {names}{note}", evidence, fixes)


# ------------------------------------------------------------------------------------------------------- mem.cma
def _gb10(facts: NodeFacts) -> bool:
    return not isinstance(facts.gpus, Unknown) and any("GB10" in g.name for g in facts.gpus)


def _cmdline_note(facts: NodeFacts) -> str:
    if isinstance(facts.kernel_cmdline, Unknown):
        return facts.kernel_cmdline.reason
    words = [w for w in facts.kernel_cmdline.split() if w.startswith(("cma=", "kho="))]
    return " ".join(words) if words else "no cma= and no kho= on it"


def _cma_fix(node: str, healthy: list[tuple[str, int]]) -> Fix:
    size = [
        f"# or size it as {peer} has it (CmaTotal {kb} kB): add cma={kb // 1024}M to GRUB_CMDLINE_LINUX_DEFAULT"
        for peer, kb in healthy[:1]
    ]
    return Fix(
        node,
        "the kernel reserved no contiguous memory (CMA): RDMA memory registration fails under NCCL on GB10 "
        "kernels (ibv_reg_mr ENOMEM, ibv_modify_qp errors). The kernel command line sets it: `cma=SIZE` sizes the "
        "area; on 7.0.0-1019-nvidia NVIDIA's fix is `kho=off` (package nvidia-spark-grub-kho), else boot "
        "6.17.0-1031/1032-nvidia",
        (
            "sudo apt update && sudo apt install nvidia-spark-grub-kho   # adds kho=off to the kernel command line",
            *size,
            "sudo update-grub && " + REBOOT,
            "grep -E 'CmaTotal|CmaFree' /proc/meminfo; cat /proc/cmdline   # afterwards: CmaTotal above 0 kB",
        ),
    )


@check(CMA, "the kernel reserved contiguous memory (CmaTotal above 0) on GB10 nodes")
def mem_cma(data: CheckInput) -> CheckResult:
    read = {n: f for n, f in sorted(data.facts.items()) if not isinstance(f.cma_total_kb, Unknown)}
    if not read:
        reasons = sorted({f.cma_total_kb.reason for f in data.facts.values() if isinstance(f.cma_total_kb, Unknown)})
        return skip(CMA, f"/proc/meminfo not read: {joined(reasons, 2) or 'no node'}")
    off = [n for n, f in read.items() if not f.cma_total_kb and _gb10(f)]
    other = [n for n, f in read.items() if not f.cma_total_kb and not _gb10(f)]
    healthy = [(n, f.cma_total_kb) for n, f in read.items() if isinstance(f.cma_total_kb, int) and f.cma_total_kb]
    note = f"; CmaTotal 0 on {joined(other)}, not a GB10: not judged" if other else ""
    if not off:
        shown = ", ".join(f"{n} {kb} kB" for n, kb in healthy) or "none above 0"
        return result(CMA, CheckStatus.PASS, f"CmaTotal: {shown}{note}")
    evidence: list[Evidence] = []
    for node in off:
        facts = read[node]
        total = "no CmaTotal line (kernel without CMA)" if facts.cma_total_kb is None else f"{facts.cma_total_kb} kB"
        free = facts.cma_free_kb
        evidence += [
            Evidence(node, "/proc/meminfo", "CmaTotal", total),
            Evidence(node, "/proc/meminfo", "CmaFree", free.reason if isinstance(free, Unknown) else f"{free} kB"),
            Evidence(node, "/proc/cmdline", "cma= / kho= on the kernel command line", _cmdline_note(facts)),
        ]
    fixes = [_cma_fix(node, healthy) for node in off]
    return result(
        CMA, CheckStatus.WARN, f"no contiguous memory (CmaTotal 0 kB) on {joined(off)}{note}", evidence, fixes
    )
