"""nccl.conf: what /etc/nccl.conf and ~/.nccl.conf set for every NCCL job on a node, judged as nccl.env judges.

NCCL reads `$NCCL_CONF_FILE` (else `~/.nccl.conf`) and `/etc/nccl.conf` at init; a variable already set wins, so
the environment beats the user's file, which beats /etc (core/parsers/jobconf.py). A file left by an old setup or
a container image silently sets HCAs that do not exist here, a GID index, a socket interface, or knobs that froze
a warm-up (`NCCL_IB_USE_INLINE=1`, `NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS=1`: spark-facts problem 14).
"""

from __future__ import annotations

import dataclasses
import shlex

from wirespeed.core.checks import nccl, rdma
from wirespeed.core.checks.bootstrap import nccl_paths, suspects
from wirespeed.core.checks.common import NcclList, joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result
from wirespeed.core.fabric.facts import NodeFacts
from wirespeed.core.parsers import jobconf
from wirespeed.core.parsers.jobconf import Setting

ID = "nccl.conf"
# Variables a stale file set that froze NCCL's warm-up on a Spark ring (luxingcom/aicad-nccl-optimization#1).
FROZE = {
    "NCCL_IB_USE_INLINE": "froze a 4-byte warm-up (PyNccl) on DGX Spark; NCCL's default is 0",
    "NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS": "froze a 4-byte warm-up (PyNccl) on DGX Spark; NCCL's default is 0",
}


def from_files(facts: NodeFacts) -> dict[str, Setting]:
    """Every variable NCCL takes from a configuration file on this node (the environment sets the others)."""
    layers = [jobconf.nccl_conf(facts.job_files[p], p) for p in nccl_paths(facts) if p in facts.job_files]
    return jobconf.merged(facts.environment, layers)


def _line_fix(facts: NodeFacts, setting: Setting, why: str, value: str | None = None) -> Fix:
    sudo = "sudo " if setting.path.startswith("/etc/") else ""
    path = shlex.quote(setting.path)
    if value is None:
        edit = f"{sudo}sed -i '{setting.line}s/^/# /' {path}   # line {setting.line}: {setting.name}={setting.value}"
    else:
        line = f"{setting.name}={value}".replace("|", r"\|")
        edit = f"{sudo}sed -i '{setting.line}s|.*|{line}|' {path}   # was {setting.name}={setting.value}"
    return Fix(facts.node, f"{setting.where} sets {setting.name}={setting.value}: {why}", (edit,))


def _instead(fix: Fix, name: str) -> str | None:
    """The value nccl.env's fix would export instead, if it names one."""
    last = fix.commands[-1] if fix.commands else ""
    prefix = f"export {name}="
    return last.removeprefix(prefix) if last.startswith(prefix) else None


def _node(data: CheckInput, facts: NodeFacts, bad: dict[tuple[str, str], str]) -> list[nccl.Finding]:
    settings = from_files(facts)
    if not settings:
        return []
    view = dataclasses.replace(facts, environment={**{n: s.value for n, s in settings.items()}, **facts.environment})
    findings: list[nccl.Finding] = []
    for status, evidence, fix in nccl._node_findings(view):
        setting = settings.get(str(evidence.subject))
        if setting is None:
            continue  # the environment sets it: nccl.env's to judge
        moved = Evidence(facts.node, f"{setting.where} {setting.name}", evidence.what, evidence.value)
        findings.append((status, moved, _line_fix(facts, setting, fix.description, _instead(fix, setting.name))))
    judged = {str(e.subject).rsplit(" ", 1)[-1] for _, e, _ in findings}
    if (setting := settings.get("NCCL_IB_GID_INDEX")) is not None and "NCCL_IB_GID_INDEX" not in judged:
        pinned = rdma._pin_problem(view, rdma.active_roce_ports(view))
        if pinned is not None:
            shown, _ = pinned
            indices = ", ".join(f"{e.subject} {e.value}" for e in shown[1:])
            what = f"the RoCE v2 IPv4 GID index is {indices}" if indices else "empty: read as 0, the fe80 GID"
            evidence = Evidence(facts.node, f"{setting.where} NCCL_IB_GID_INDEX", what, setting.value)
            why = "a pinned GID index must match every device's RoCE v2 IPv4 GID (it differs per device and drifts)"
            findings.append((CheckStatus.FAIL, evidence, _line_fix(facts, setting, why)))
    if (setting := settings.get("NCCL_SOCKET_IFNAME")) is not None:
        names = NcclList.parse(setting.value)
        hit = [i for (n, i) in bad if n == facts.node and not names.exclude and names.selects(i)]
        if hit:
            what = f"selects {', '.join(hit)}: {bad[(facts.node, hit[0])]}"
            evidence = Evidence(facts.node, f"{setting.where} NCCL_SOCKET_IFNAME", what, setting.value)
            why = "NCCL's bootstrap would run off the fabric; see bootstrap.iface for what to pin"
            findings.append((CheckStatus.WARN, evidence, _line_fix(facts, setting, why)))
    for name, why in FROZE.items():
        if (setting := settings.get(name)) is not None and setting.value.strip() not in ("", "0"):
            evidence = Evidence(facts.node, f"{setting.where} {name}", why, setting.value)
            findings.append((CheckStatus.WARN, evidence, _line_fix(facts, setting, why)))
    return findings


@check(ID, "NCCL configuration files (/etc/nccl.conf, ~/.nccl.conf) set nothing stale")
def nccl_conf(data: CheckInput) -> CheckResult:
    bad = suspects(data.facts) if len(data.facts) > 1 else {}
    findings = [f for node in sorted(data.facts) for f in _node(data, data.facts[node], bad)]
    found = {n: from_files(f) for n, f in sorted(data.facts.items())}
    used = [f"{n} {s.where} {s.name}" for n, settings in found.items() for s in settings.values()]
    unread = [f"{n} {p} ({why})" for n, f in sorted(data.facts.items()) for p, why in f.job_file_errors.items()]
    unread += [
        f"{n} ~/.nccl.conf ({f.home.reason})" for n, f in sorted(data.facts.items()) if not isinstance(f.home, str)
    ]
    note = f"; not read: {joined(unread, 2)}" if unread else ""
    if not findings:
        if used:
            shown = [Evidence(n, s.where, s.name, s.value) for n, settings in found.items() for s in settings.values()]
            summary = f"set by a file, judged fine: {joined(used, 3)}{note}"
            return result(ID, CheckStatus.PASS, summary, shown)
        return result(ID, CheckStatus.PASS, f"no NCCL variable set by /etc/nccl.conf or ~/.nccl.conf{note}")
    status = CheckStatus.FAIL if any(s is CheckStatus.FAIL for s, _, _ in findings) else CheckStatus.WARN
    evidence = [e for _, e, _ in findings]
    fixes = list(dict.fromkeys(f for _, _, f in findings))
    names = joined(sorted({str(e.subject) for e in evidence}), 3)
    return result(ID, status, f"NCCL configuration files set stale values: {names}{note}", evidence, fixes)
