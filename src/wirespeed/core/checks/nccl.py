"""nccl.env: the NCCL variables an ssh session (so mpirun) sets on each node name what exists and use it all.

Wrong NCCL_IB_HCA, NCCL_IB_DISABLE=1 or a net plugin sends NCCL over NET/Socket; an HCA list with one half of a
port runs it at half rate; an empty NCCL_IB_GID_INDEX reads as 0, the fe80 GID (spark-facts 1.5, problems 1-3).
nccl.arch: on the Spark NCCL "must be built targeting Blackwell's compute capability sm_121" (the seeds); a library
without a cubin or PTX for the GPU cannot launch its kernels.
"""

from __future__ import annotations

import posixpath

from wirespeed.core.checks.common import FIND_ENV, NcclList, cabled_ports, count, joined, rdma_devices_of
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.parsers.fatbin import capability_number, decode

ID = "nccl.env"

Finding = tuple[CheckStatus, Evidence, Fix]


def _env_fix(node: str, var: str, why: str, instead: str | None = None) -> Fix:
    commands = [FIND_ENV.format(var=var), instead or f"unset {var}"]
    return Fix(node, why, tuple(commands))


def wanted_hcas(facts: NodeFacts) -> list[str]:
    """Every RDMA device behind the halves of every cabled port, port by port."""
    return [dev for port in cabled_ports(facts) for half in port.halves for dev in rdma_devices_of(facts, half)]


def _hca(facts: NodeFacts, value: str) -> list[Finding]:
    hca = NcclList.parse(value)
    devices = [d.name for d in facts.rdma]
    want = wanted_hcas(facts)
    fix = _env_fix(
        facts.node,
        "NCCL_IB_HCA",
        f"list both halves of every cabled port ({','.join(want)}), or unset NCCL_IB_HCA so NCCL uses every device",
        f"export NCCL_IB_HCA={','.join(want)}" if want else None,
    )
    findings: list[Finding] = []
    if not hca.exclude:
        for item in (i for i in hca.items if not any(hca.item_matches(i, d) for d in devices)):
            what = f"names {item!r}, not an RDMA device here ({', '.join(devices)})"
            findings.append((CheckStatus.FAIL, Evidence(facts.node, "NCCL_IB_HCA", what, value), fix))
    unused = [d for d in want if not hca.selects(d)]
    if unused:
        what = f"leaves out {', '.join(unused)}: a half of a cabled port (the port runs at half rate)"
        findings.append((CheckStatus.FAIL, Evidence(facts.node, "NCCL_IB_HCA", what, value), fix))
    return findings


def _socket_ifname(facts: NodeFacts, value: str) -> list[Finding]:
    names = NcclList.parse(value)
    present = [d.name for d in facts.netdevs]
    missing = [i for i in names.items if not any(names.item_matches(i, n) for n in present)]
    if names.exclude or not missing:
        return []
    target = facts.management if isinstance(facts.management, str) else next(iter(facts.fabric), None)
    what = f"names {', '.join(missing)}: no such interface here"
    fix = _env_fix(
        facts.node,
        "NCCL_SOCKET_IFNAME",
        "name an existing interface for NCCL's bootstrap (NVIDIA's playbooks use the management interface)",
        f"export NCCL_SOCKET_IFNAME={target}" if target else None,
    )
    return [(CheckStatus.FAIL, Evidence(facts.node, "NCCL_SOCKET_IFNAME", what, value), fix)]


def _scalars(facts: NodeFacts) -> list[Finding]:
    env, node = facts.environment, facts.node
    findings: list[Finding] = []
    if env.get("NCCL_IB_DISABLE", "").strip() == "1":
        evidence = Evidence(node, "NCCL_IB_DISABLE", "RDMA off: NCCL falls back to NET/Socket (TCP)", "1")
        findings.append((CheckStatus.FAIL, evidence, _env_fix(node, "NCCL_IB_DISABLE", "let NCCL use RDMA")))
    if "NCCL_IB_GID_INDEX" in env and not env["NCCL_IB_GID_INDEX"].strip():
        evidence = Evidence(node, "NCCL_IB_GID_INDEX", "empty: read as 0, the fe80 GID", "")
        findings.append((CheckStatus.FAIL, evidence, _env_fix(node, "NCCL_IB_GID_INDEX", "never pass it empty")))
    plugin = env.get("NCCL_NET_PLUGIN", "").strip()
    if plugin and plugin.lower() != "none":
        evidence = Evidence(node, "NCCL_NET_PLUGIN", "a net plugin can take over from NET/IB", plugin)
        fix = Fix(node, "use NCCL's own IB transport", ("export NCCL_NET_PLUGIN=none",))
        findings.append((CheckStatus.WARN, evidence, fix))
    return findings


def _node_findings(facts: NodeFacts) -> list[Finding]:
    env = facts.environment
    findings = _scalars(facts)
    if env.get("NCCL_SOCKET_IFNAME", "").strip():
        findings += _socket_ifname(facts, env["NCCL_SOCKET_IFNAME"])
    if env.get("NCCL_IB_HCA", "").strip() and facts.rdma:
        findings += _hca(facts, env["NCCL_IB_HCA"])
    return findings


@check(ID, "NCCL environment names existing devices and uses both halves")
def nccl_env(data: CheckInput) -> CheckResult:
    if not data.facts:
        return skip(ID, "no node was read")
    with_vars = {n: f for n, f in sorted(data.facts.items()) if any(k.startswith("NCCL_") for k in f.environment)}
    if not with_vars:
        return result(
            ID, CheckStatus.PASS, "no NCCL_* set in an ssh session: NCCL picks HCAs, GID index and interfaces"
        )
    findings = [finding for facts in with_vars.values() for finding in _node_findings(facts)]
    no_rdma = [n for n, f in with_vars.items() if f.environment.get("NCCL_IB_HCA") and not f.rdma]
    note = f"; NCCL_IB_HCA not checked on {joined(no_rdma)} (no RDMA devices)" if no_rdma else ""
    if not findings:
        return result(ID, CheckStatus.PASS, f"NCCL_* on {joined(list(with_vars))} name what exists{note}")
    status = CheckStatus.FAIL if any(s is CheckStatus.FAIL for s, _, _ in findings) else CheckStatus.WARN
    evidence = [e for _, e, _ in findings]
    fixes = list(dict.fromkeys(f for _, _, f in findings))
    names = joined(sorted({f"{e.node} {e.subject}" for e in evidence}))
    return result(ID, status, f"NCCL environment problems: {names}{note}", evidence, fixes)


# ------------------------------------------------------------------------------------------------------ nccl.arch
ARCH = "nccl.arch"


def _capabilities(facts: NodeFacts) -> list[tuple[str, int]]:
    """(GPU name, compute capability as 121) for every GPU whose capability nvidia-smi gave."""
    if isinstance(facts.gpus, Unknown):
        return []
    found = []
    for gpu in facts.gpus:
        number = capability_number(gpu.compute_capability) if isinstance(gpu.compute_capability, str) else None
        if number is not None:
            found.append((gpu.name, number))
    return list(dict.fromkeys(found))


def _arch_fix(node: str, capability: int) -> Fix:
    return Fix(
        node,
        f"use an NCCL built for sm_{capability} (NVIDIA's Spark playbook builds v2.28.9-1 from source) and put its "
        "lib/ first in LD_LIBRARY_PATH (or NCCL_HOME for nccl-tests)",
        (
            "git clone -b v2.28.9-1 https://github.com/NVIDIA/nccl.git ~/nccl && cd ~/nccl",
            f'make -j src.build NVCC_GENCODE="-gencode=arch=compute_{capability},code=sm_{capability}"',
            'export NCCL_HOME="$HOME/nccl/build" LD_LIBRARY_PATH="$HOME/nccl/build/lib:$LD_LIBRARY_PATH"',
        ),
    )


def _loaded_by_tests(facts: NodeFacts) -> set[str]:
    """The libnccl files the node's nccl-tests binaries load (as ldd resolved them), real paths."""
    return {
        posixpath.normpath(path)
        for tool in facts.tools
        for path in (tool.nccl_library, tool.nccl_library_file)
        if isinstance(path, str) and path.startswith("/")
    }


def _library_findings(
    node: str, path: str, line: str, gpus: list[tuple[str, int]], tests_load: set[str]
) -> list[Finding]:
    """One finding per GPU for one library. Where nccl-tests is known to load another library, this one lacking
    code is a warning (a framework that loads it would fail), not the measured path's failure."""
    try:
        archs = decode(line)
    except ValueError:
        return [(CheckStatus.SKIP, Evidence(node, path, "NCCL library not read", line), Fix(node, ""))]
    elsewhere = bool(tests_load) and posixpath.normpath(path) not in tests_load
    findings: list[Finding] = []
    for name, capability in gpus:
        how = archs.runs_on(capability)
        if how == "sm":
            exact = capability in archs.elf
            what = f"{name} (sm_{capability}): {'its own cubin' if exact else 'a binary-compatible cubin'}"
            findings.append((CheckStatus.PASS, Evidence(node, path, what, archs.describe()), Fix(node, "")))
        else:
            status, what = (
                (CheckStatus.WARN, "PTX only, JIT-compiled by the driver on first use (slow start)")
                if how == "ptx"
                else (CheckStatus.FAIL, "no code for it (NCCL kernels cannot launch)")
            )
            if elsewhere:
                status = CheckStatus.WARN
                what += f"; nccl-tests loads {joined(sorted(tests_load))}, not this one"
            evidence = Evidence(node, path, f"{name} (sm_{capability}): {what}", archs.describe())
            findings.append((status, evidence, _arch_fix(node, capability)))
    return findings


@check(ARCH, "the NCCL library carries code for the GPU's compute capability")
def nccl_arch(data: CheckInput) -> CheckResult:
    with_gpus = {n: gpus for n, f in sorted(data.facts.items()) if (gpus := _capabilities(f))}
    if not with_gpus:
        return skip(ARCH, "no GPU with a known compute capability (nvidia-smi) on any node")
    findings: list[Finding] = []
    unread: list[str] = []
    for node, gpus in with_gpus.items():
        libraries = data.facts[node].nccl_archs
        if isinstance(libraries, Unknown) or not libraries:
            unread.append(node)
            continue
        for path, line in sorted(libraries.items()):
            findings += _library_findings(node, path, line, gpus, _loaded_by_tests(data.facts[node]))
    note = f"; no NCCL library found on {joined(unread)}" if unread else ""
    if not findings:
        return skip(ARCH, f"no NCCL library found on {joined(unread)} (ldconfig, NCCL_HOME, LD_LIBRARY_PATH, venvs)")
    bad = [(s, e, f) for s, e, f in findings if s in (CheckStatus.FAIL, CheckStatus.WARN)]
    evidence = [e for _, e, _ in (bad or findings)]
    if not bad:
        return result(ARCH, CheckStatus.PASS, f"{count(len(findings), 'NCCL library/GPU pair')} fit{note}", evidence)
    status = CheckStatus.FAIL if any(s is CheckStatus.FAIL for s, _, _ in bad) else CheckStatus.WARN
    fixes = list(dict.fromkeys(f for _, _, f in bad))
    names = joined(sorted({f"{e.node} {e.subject}" for e in evidence}))
    return result(ARCH, status, f"NCCL without code for the GPU: {names}{note}", evidence, fixes)
