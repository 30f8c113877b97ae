"""tools.present: the benchmark tools on every node, at one version, new enough to measure 200G.

iperf3 before 3.16 runs every -P stream on one thread, so it measures a CPU core, not the link. nccl-tests built
without MPI=1 cannot span nodes (spark-facts 1.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.facts import NodeFacts, Tool, Unknown

ID = "tools.present"
REQUIRED = {"iperf3": "iperf3", "perftest": "perftest", "mpirun": "openmpi-bin"}  # tool -> Debian/Ubuntu package
VERSION_COMMANDS = {"iperf3": "iperf3 --version", "perftest": "ib_write_bw --version", "mpirun": "mpirun --version"}
IPERF3_MULTITHREADED = (3, 16)
NCCL_TESTS_BUILD = (
    "sudo apt-get install -y libopenmpi-dev",
    "git clone https://github.com/NVIDIA/nccl-tests.git ~/nccl-tests",
    "cd ~/nccl-tests && make MPI=1 MPI_HOME=/usr/lib/$(uname -m)-linux-gnu/openmpi   # NCCL_HOME=... for a source NCCL",
)
IPERF3_BUILD = (
    "git clone --depth 1 https://github.com/esnet/iperf.git ~/iperf",
    "cd ~/iperf && ./configure && make -j && sudo make install && sudo ldconfig",
)


@dataclass
class Findings:
    evidence: list[Evidence]
    fixes: list[Fix]
    failed: bool = False

    def add(self, evidence: list[Evidence], fix: Fix, failed: bool = False) -> None:
        self.evidence += evidence
        self.fixes.append(fix)
        self.failed = self.failed or failed


def _tool(facts: NodeFacts, name: str) -> Tool | None:
    return next((t for t in facts.tools if t.name == name), None)


def _missing(tool: Tool | None) -> bool:
    return tool is not None and isinstance(tool.version, Unknown) and "not installed" in tool.version.reason


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.split("."):
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _nccl_tests(facts: NodeFacts) -> list[Tool] | Unknown | None:
    """The nccl-tests binaries found; None when none were found; Unknown when that was not recorded."""
    found = [t for t in facts.tools if t.name.endswith("_perf") and t.version == "present"]
    if found:
        return found
    marker = _tool(facts, "nccl-tests")
    if marker is not None and isinstance(marker.version, Unknown) and "not recorded" in marker.version.reason:
        return marker.version
    return None if marker is not None else Unknown("nccl-tests not looked for")


def _check_missing(data: CheckInput, out: Findings) -> None:
    for node in sorted(data.facts):
        missing = [name for name in REQUIRED if _missing(_tool(data.facts[node], name))]
        if missing:
            packages = " ".join(REQUIRED[name] for name in missing)
            evidence = [Evidence(node, name, "installed", "no") for name in missing]
            out.add(
                evidence, Fix(node, f"install {', '.join(missing)}", (f"sudo apt-get install -y {packages}",)), True
            )


def _check_versions(data: CheckInput, out: Findings) -> None:
    for name in REQUIRED:
        versions = {
            node: tool.version
            for node in sorted(data.facts)
            if (tool := _tool(data.facts[node], name)) and isinstance(tool.version, str)
        }
        if len(set(versions.values())) > 1:
            evidence = [Evidence(node, name, "version", version) for node, version in versions.items()]
            fix = Fix(
                None, f"install one {name} version on every node", (f"{VERSION_COMMANDS[name]}   # on each node",)
            )
            out.add(evidence, fix)


def _check_iperf3(data: CheckInput, out: Findings) -> None:
    for node in sorted(data.facts):
        tool = _tool(data.facts[node], "iperf3")
        if tool and isinstance(tool.version, str) and _version_tuple(tool.version) < IPERF3_MULTITHREADED:
            evidence = [Evidence(node, "iperf3", "version (3.16+ runs one thread per stream)", tool.version)]
            description = (
                f"iperf3 {tool.version} is single-threaded: -P streams share one core and cap below the link; "
                "install 3.16 or newer (Ubuntu 24.04's package) or build it"
            )
            out.add(evidence, Fix(node, description, IPERF3_BUILD))


def _check_nccl_tests(data: CheckInput, out: Findings) -> None:
    for node in sorted(data.facts):
        found = _nccl_tests(data.facts[node])
        if found is None:
            evidence = [Evidence(node, "nccl-tests", "binaries (all_reduce_perf, ...)", "not found")]
            out.add(
                evidence,
                Fix(node, "build nccl-tests with MPI (set NCCL_TESTS_DIR if it lives elsewhere)", NCCL_TESTS_BUILD),
            )
        elif isinstance(found, list) and (no_mpi := [t for t in found if t.detail == "mpi=no"]):
            evidence = [Evidence(node, t.name, "built with MPI", t.detail) for t in no_mpi]
            out.add(
                evidence,
                Fix(node, "rebuild nccl-tests with MPI=1: without it they cannot span nodes", NCCL_TESTS_BUILD),
            )


@check(ID, "iperf3, perftest, mpirun and nccl-tests on every node, at one version")
def tools_present(data: CheckInput) -> CheckResult:
    if not data.facts:
        return skip(ID, "no node was read")
    out = Findings([], [])
    _check_missing(data, out)
    _check_versions(data, out)
    _check_iperf3(data, out)
    _check_nccl_tests(data, out)
    unread = [
        f"{node} {name}"
        for node in sorted(data.facts)
        for name in REQUIRED
        if (tool := _tool(data.facts[node], name)) is None or (isinstance(tool.version, Unknown) and not _missing(tool))
    ]
    note = f"; version unreadable: {joined(unread, 3)}" if unread else ""
    if not out.evidence:
        summary = f"iperf3, perftest, mpirun and nccl-tests present on {len(data.facts)} nodes{note}"
        return result(ID, CheckStatus.PASS, summary)
    status = CheckStatus.FAIL if out.failed else CheckStatus.WARN
    names = joined(sorted({f"{e.node} {e.subject}" if e.node else str(e.subject) for e in out.evidence}))
    return result(ID, status, f"tools missing, old or mismatched: {names}{note}", out.evidence, out.fixes)
