"""tools.present: the benchmark tools on every node, at one version, new enough to measure 200G.

iperf3 before 3.16 runs every -P stream on one thread, so it measures a CPU core, not the link. nccl-tests built
without MPI=1 cannot span nodes (spark-facts 1.4). nccl-tests link libnccl with no rpath: a rank mpirun starts over
ssh loads whatever its node's loader finds in a non-interactive session (Ubuntu's .bashrc returns before any export),
which for an NCCL built from source is nothing, or another NCCL.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.facts import NodeFacts, Tool, Unknown
from wirespeed.core.parsers.ldd import default_directory
from wirespeed.core.parsers.sysfs_values import nccl_version

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


def _libnccl(tool: Tool) -> str | None:
    """Where a binary's libnccl resolved, with the version its file names: `/x/lib/libnccl.so.2 (NCCL 2.28.9)`."""
    if not isinstance(tool.nccl_library, str):
        return None
    try:
        return f"{tool.nccl_library} (NCCL {nccl_version(tool.nccl_library_file or tool.nccl_library)})"
    except ValueError:
        return tool.nccl_library


def _library_fix(node: str, binary: str, directory: str | None) -> Fix:
    where = directory or "$HOME/nccl/build/lib"  # NVIDIA's playbooks build NCCL there
    return Fix(
        node,
        f"{binary} cannot load libnccl in an ssh session (nccl-tests has no rpath): rebuild with `wirespeed setup "
        "nccl`, which records its library path, or set LD_LIBRARY_PATH where ssh commands see it",
        (
            "wirespeed setup nccl --yes   # builds NCCL and nccl-tests against it, and records its library path",
            f"sed -i '1i export LD_LIBRARY_PATH={where}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}' ~/.bashrc"
            "   # line 1: .bashrc returns early for ssh commands",
        ),
    )


def _check_nccl_libraries(data: CheckInput, out: Findings) -> None:
    """A binary whose libnccl is not found fails (its rank cannot start); nodes that resolve different NCCLs warn."""
    found = {node: tools for node in sorted(data.facts) if isinstance(tools := _nccl_tests(data.facts[node]), list)}
    resolved: dict[str, dict[str, str]] = {}  # node -> resolution as shown -> the path of a binary with it
    for node, tools in found.items():
        for tool in tools:
            if (shown := _libnccl(tool)) is not None:
                resolved.setdefault(node, {}).setdefault(shown, tool.path or tool.name)
    directories = [
        posixpath.dirname(t.nccl_library) for ts in found.values() for t in ts if isinstance(t.nccl_library, str)
    ]
    directory = next((d for d in directories if not default_directory(d)), None)  # a source build another node loads
    for node, tools in found.items():
        missing = [t for t in tools if isinstance(t.nccl_library, Unknown)]
        if missing:
            evidence = [Evidence(node, t.name, f"{t.path} loads", _reason(t.nccl_library)) for t in missing]
            out.add(evidence, _library_fix(node, missing[0].path or missing[0].name, directory), True)
    if len({shown for by_node in resolved.values() for shown in by_node}) > 1:
        evidence = [Evidence(n, "nccl-tests", "libnccl.so.2 =>", shown) for n, by in resolved.items() for shown in by]
        look = [
            f"ldd {path} | grep -E 'libnccl|libcudart'   # on {n}" for n, by in resolved.items() for path in by.values()
        ]
        fix = Fix(
            None,
            "build nccl-tests against one NCCL at one path on every node (`wirespeed setup nccl --yes`): one job "
            "runs one NCCL, and the NCCL rung passes the launcher's library directories to every rank "
            "(-x LD_LIBRARY_PATH)",
            tuple(dict.fromkeys(look)),
        )
        out.add(evidence, fix)


def _reason(value: str | Unknown | None) -> str:
    return value.reason if isinstance(value, Unknown) else str(value)


@check(ID, "iperf3, perftest, mpirun and nccl-tests on every node, at one version")
def tools_present(data: CheckInput) -> CheckResult:
    if not data.facts:
        return skip(ID, "no node was read")
    out = Findings([], [])
    _check_missing(data, out)
    _check_versions(data, out)
    _check_iperf3(data, out)
    _check_nccl_tests(data, out)
    _check_nccl_libraries(data, out)
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
