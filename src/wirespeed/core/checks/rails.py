"""nccl.rails: the RDMA devices NCCL_IB_HCA selects span every PCIe domain that carries a cabled half.

A Spark's ConnectX-7 reaches the SoC through two PCIe Gen5 x4 links, one per PCI domain (0000 and 0002); each
QSFP port has one half on each, so both ports' halves on one domain share that domain's ~100 Gb/s. An HCA list of
devices on one domain (rocep1s0f0,rocep1s0f1: one half of each port, both on 0000) caps the node near one x4 link
however many halves are cabled: a second cable then adds almost nothing (public notes: each of four paths fell from
109 to 54.6 Gb/s; field problems 2026-11-26, 5). NCCL matches the list as net_ib.cc does (`^` excludes, `=` matches
whole names, else prefixes; `:port` ignored here), from the ssh session's environment, NCCL's configuration files
(when the environment leaves it unset) and the cluster file's `[nccl.env]` (wirespeed's own runs pass it with -x).
nccl.env says which names do not exist or leave out a half of a cabled port; this check names the PCIe domains.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from wirespeed.core.checks import ncclconf
from wirespeed.core.checks.common import FIND_ENV, NcclList, any_rdma, cabled, joined, no_rdma_reason, rdma_device
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.checks.nccl import wanted_hcas
from wirespeed.core.fabric.facts import PCIE_PAYLOAD_EFFICIENCY, NodeFacts, RdmaDevice

ID = "nccl.rails"
VAR = "NCCL_IB_HCA"
CLUSTER_FILE = "the cluster file's [nccl.env]"


@dataclass(frozen=True)
class Selection:
    """One place that sets NCCL_IB_HCA for a node's jobs."""

    where: str  # evidence subject: NCCL_IB_HCA, /etc/nccl.conf:2 NCCL_IB_HCA, the cluster file's [nccl.env] ...
    value: str
    path: str | None = None  # a configuration file's, with its line
    line: int = 0
    cluster: bool = False


def selections(facts: NodeFacts, cluster_env: tuple[tuple[str, str], ...]) -> list[Selection]:
    """Where NCCL_IB_HCA is set for this node: the session's environment, else a configuration file; and the
    cluster file's [nccl.env] for wirespeed's own runs."""
    found: list[Selection] = []
    if VAR in facts.environment:
        found.append(Selection(VAR, facts.environment[VAR]))
    elif (setting := ncclconf.from_files(facts).get(VAR)) is not None:
        found.append(Selection(f"{setting.where} {VAR}", setting.value, setting.path, setting.line))
    cluster = dict(cluster_env)
    if VAR in cluster:
        found.append(Selection(f"{CLUSTER_FILE} {VAR}", cluster[VAR], cluster=True))
    return found


def link_key(bdf: str) -> str:
    """The PCIe link a function sits behind: its domain and bus (0000:01). The two functions of one device share
    it; on a Spark each domain holds one such link."""
    domain, bus = bdf.split(":")[:2]
    return f"{domain}:{bus}"


def _label(key: str, keys: set[str]) -> str:
    """`PCIe domain 0002` where every link is its own domain (a Spark), else `PCIe link 0000:3b`."""
    domains = {k.split(":")[0] for k in keys}
    return f"PCIe domain {key.split(':')[0]}" if len(domains) == len(keys) else f"PCIe link {key}"


def _cabled_devices(facts: NodeFacts) -> list[RdmaDevice]:
    """RDMA devices behind an interface with carrier, with a PCI address, in discovery's order."""
    names = dict.fromkeys(d for n in cabled(facts) for d in n.rdma_devices)
    names.update(dict.fromkeys(d.name for d in facts.rdma for n in cabled(facts) if n.name in d.netdevs))
    return [d for name in names if (d := rdma_device(facts, name)) is not None and d.pci]


def _selects(hca: NcclList, name: str) -> bool:
    if not hca.items:  # NCCL: an empty list matches every device, and `^` of it none
        return not hca.exclude
    return hca.selects(name)


def _link_gbps(facts: NodeFacts, devices: list[RdmaDevice]) -> float | None:
    """What one PCIe link carries after protocol overhead, from any function on it (they share it)."""
    rates = [r for d in devices for n in d.netdevs if (r := facts.pcie_gbps(n)) is not None]
    return max(rates) * PCIE_PAYLOAD_EFFICIENCY if rates else None


def _fix(facts: NodeFacts, selection: Selection, one_per_link: list[str], every: list[str]) -> Fix:
    why = (
        f"{VAR} must reach every PCIe domain: each is one x4 link that the halves of both ports on it share. Give one "
        f"rail per domain ({','.join(one_per_link)}) or every cabled half ({','.join(every)})"
    )
    value = ",".join(every)
    if selection.cluster:
        line = f'{VAR} = "{value}"'
        return Fix(None, f"{why}; in {CLUSTER_FILE} (wirespeed's own NCCL runs pass it to every rank)",
                   (f"# in [nccl.env] of the cluster file (~/.config/wirespeed/cluster.toml): {line}",))  # fmt: skip
    if selection.path is not None:
        sudo = "sudo " if selection.path.startswith("/etc/") else ""
        edit = f"{sudo}sed -i '{selection.line}s|.*|{VAR}={value}|' {shlex.quote(selection.path)}"
        return Fix(facts.node, f"{why}; {selection.where} sets it for every NCCL job on {facts.node}",
                   (f"{edit}   # was {VAR}={selection.value}",))  # fmt: skip
    commands = (FIND_ENV.format(var=VAR), f"export {VAR}={value}   # or {','.join(one_per_link)}: one rail per domain")
    return Fix(facts.node, f"{why}; or unset {VAR} so that NCCL uses every device", commands)


def _judge(facts: NodeFacts, selection: Selection) -> tuple[list[Evidence], Fix] | None:
    """Evidence and fix when the selection leaves a cabled PCIe link unused; None when it spans them all (or selects
    no cabled device at all: nccl.env and nccl.conf say so)."""
    devices = _cabled_devices(facts)
    by_link: dict[str, list[RdmaDevice]] = {}
    for device in sorted(devices, key=lambda d: str(d.pci)):
        by_link.setdefault(link_key(str(device.pci)), []).append(device)
    hca = NcclList.parse(selection.value)
    used = [d for d in devices if _selects(hca, d.name)]
    used_links = {link_key(str(d.pci)) for d in used}
    missing = [k for k in by_link if k not in used_links]
    if len(by_link) < 2 or not used or not missing:
        return None
    keys = set(by_link)
    used_labels = [_label(k, keys) for k in by_link if k in used_links]
    rates = [_link_gbps(facts, by_link[k]) for k in by_link if k in used_links]
    full = [_link_gbps(facts, by_link[k]) for k in by_link]
    cap = (
        f"near {sum(r for r in rates if r):.0f} Gb/s of the {sum(r for r in full if r):.0f} its cabled links carry"
        if all(rates) and all(full)
        else f"near {len(used_links)} of its {len(by_link)} PCIe links"
    )
    what = (
        f"selects {', '.join(d.name for d in used)}: only {' and '.join(used_labels)}; "
        f"{' and '.join(_label(k, keys) for k in missing)} unused, so NCCL on {facts.node} tops out {cap}"
    )
    evidence = [Evidence(facts.node, selection.where, what, selection.value)]
    for key, on_link in by_link.items():
        state = "selected" if key in used_links else "left out"
        names = ", ".join(f"{d.name} ({d.pci})" for d in on_link)
        evidence.append(Evidence(facts.node, _label(key, keys), f"cabled RDMA devices, {state} by {VAR}", names))
    link_of = {d.name: link_key(str(d.pci)) for d in devices}
    every = [name for name in wanted_hcas(facts) if name in link_of] or list(link_of)
    one: dict[str, str] = {}
    for name in every:
        one.setdefault(link_of[name], name)
    return evidence, _fix(facts, selection, list(one.values()), every)


@check(ID, "NCCL_IB_HCA spreads the rails over every PCIe domain")
def nccl_rails(data: CheckInput) -> CheckResult:
    if not any_rdma(data.facts):
        return skip(ID, no_rdma_reason(data.facts))
    evidence: list[Evidence] = []
    fixes: list[Fix] = []
    judged: list[str] = []
    for node in sorted(data.facts):
        facts = data.facts[node]
        for selection in selections(facts, data.cluster_nccl_env) if facts.rdma else []:
            judged.append(f"{node} {selection.where}")
            found = _judge(facts, selection)
            if found is not None:
                evidence += found[0]
                fixes.append(found[1])
    if not judged:
        return result(ID, CheckStatus.PASS, f"{VAR} unset: NCCL uses every RDMA device, on every PCIe domain")
    if not evidence:
        return result(ID, CheckStatus.PASS, f"{VAR} reaches every cabled PCIe domain ({joined(judged, 3)})")
    names = joined(sorted({f"{e.node} {e.subject}" for e in evidence if e.subject and VAR in e.subject}), 3)
    summary = f"{VAR} keeps NCCL on one PCIe domain (one x4 link, ~100 Gb/s on a Spark): {names}"
    return result(ID, CheckStatus.FAIL, summary, evidence, list(dict.fromkeys(fixes)))
