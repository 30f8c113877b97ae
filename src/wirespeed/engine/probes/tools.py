"""What the node has to run benchmarks with: the tools' versions, NCCL (its version and the GPU architectures each
library carries), the nccl-tests binaries and what they link, and the packages a check watches."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
from types import ModuleType

from wirespeed.adapters.source import NOT_INSTALLED, NodeSource, Output, run_command
from wirespeed.core import tools as bench_tools
from wirespeed.core.fabric.facts import Tool, Unknown
from wirespeed.core.parsers import fatbin
from wirespeed.core.parsers import ldd as ldd_output
from wirespeed.core.parsers import sysfs_values as sv
from wirespeed.engine.probes.common import command, command_unknown, parsed

# Where nccl-tests are looked for, after NCCL_TESTS_DIR: first what `wirespeed setup` built (a `current` symlink to
# its latest tree), before PATH; then PATH; then the other usual build directories.
NCCL_TESTS_DIRS = (
    "~/.local/share/wirespeed/nccl-tests/current/build",
    "~/nccl-tests/build",
    "/opt/nccl-tests/build",
    "/usr/local/nccl-tests/build",
)
NCCL_TESTS_DIRS_BEFORE_PATH = 1
BUILD_RECORD = "wirespeed-build.json"  # in a tree `wirespeed setup` built: {"library_path": [dir, ...]}
NCCL_TESTS_BINARIES = ("all_reduce_perf", "all_gather_perf", "sendrecv_perf", "reduce_scatter_perf", "alltoall_perf")
NCCL_VENV_GLOBS = (
    "/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
    "~/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    "~/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
)
# Packages whose presence a check judges: mlnx-fw-updater flashes every Mellanox NIC it finds from its postinst, so
# an unrelated `apt install` that pulls or upgrades it can change the CX-7's firmware (field problems 2026-11-26, 4).
WATCHED_PACKAGES = ("mlnx-fw-updater",)


def tool(source: NodeSource, module: ModuleType) -> Tool | None:
    """A tool module's version on this node; None where a snapshot did not record it (made before the tool was)."""
    name, program = module.NAME, module.VERSION_ARGV[0]
    found = source.output(module.VERSION_KEY, command(module.VERSION_ARGV))
    if found.returncode is None:
        return None
    if found.returncode != NOT_INSTALLED and found.stdout.strip():
        try:  # some print their version and exit 1 (perftest): the version is what counts
            version = module.parse_version(found.stdout)
        except ValueError as exc:
            why = Unknown(f"{program}: cannot parse its output ({exc})")
            return Tool(name, why if found.ok else command_unknown(module.VERSION_KEY, found, program))
        detail = module.version_detail(version) if hasattr(module, "version_detail") else None
        return Tool(name, version, detail=detail)
    return Tool(name, command_unknown(module.VERSION_KEY, found, program))


def versions(source: NodeSource) -> tuple[Tool, ...]:
    """Every benchmark tool's version, mpirun's, and each nccl-tests binary found (or why none was)."""
    tools = [t for module in bench_tools.versioned() if (t := tool(source, module)) is not None]
    mpirun = source.output("mpirun_version", command(["mpirun", "--version"]))
    tools.append(Tool("mpirun", parsed("mpirun_version", mpirun, "mpirun", sv.mpirun_version)))
    nccl_tests = source.output("nccl_tests", find_nccl_tests)
    if nccl_tests.ok and nccl_tests.stdout.strip():
        tools += [t for line in nccl_tests.stdout.splitlines() if (t := nccl_tests_tool(line)) is not None]
    else:
        tools.append(
            Tool(
                "nccl-tests",
                command_unknown("nccl_tests", nccl_tests, "nccl-tests")
                if not nccl_tests.ok
                else Unknown(f"no nccl-tests binaries on PATH or in {', '.join(NCCL_TESTS_DIRS)}"),
            )
        )
    return tuple(tools)


# One line per nccl-tests binary in a snapshot's nccl_tests.txt: `PATH mpi=yes|no|unknown`, then (since wirespeed
# read them) ` nccl=PATH|not-found nccl_file=PATH cudart=PATH|not-found library_path=DIR:DIR`, each only when known.
NOT_FOUND = "not-found"
_LINE_FIELD = re.compile(r"(?:^| )(\w+)=(.*?)(?= \w+=|$)")


def nccl_tests_line(binary: str, ldd: Output, library_path: list[str]) -> str:
    """The line for one binary; paths may hold spaces (a field ends where the next ` name=` begins)."""
    line = f"{binary} mpi={'yes' if 'libmpi' in ldd.stdout else ('no' if ldd.ok else 'unknown')}"
    if ldd.ok:
        libraries = ldd_output.resolved(ldd.stdout)
        for key, name in (("nccl", "libnccl"), ("cudart", "libcudart")):
            linked = ldd_output.library(libraries, name)
            if linked is not None:
                line += f" {key}={linked[1] or NOT_FOUND}"
                if key == "nccl" and linked[1]:
                    line += f" nccl_file={os.path.realpath(linked[1])}"
    if library_path:
        line += f" library_path={':'.join(library_path)}"
    return line


def _linked(value: str | None, soname: str) -> str | Unknown | None:
    if value is None:
        return None
    return Unknown(f"{soname} => not found") if value == NOT_FOUND else value


def nccl_tests_tool(line: str) -> Tool | None:
    """A binary's line read back; a line from before the library fields still reads (they stay None)."""
    path, _, flags = line.rstrip().partition(" mpi=")
    path = path.strip()
    if not path:
        return None
    fields = dict(_LINE_FIELD.findall("mpi=" + flags))
    return Tool(
        os.path.basename(path),
        "present",
        path=path,
        detail=f"mpi={fields['mpi']}",
        nccl_library=_linked(fields.get("nccl"), "libnccl.so.2"),
        nccl_library_file=fields.get("nccl_file") or None,
        cudart_library=_linked(fields.get("cudart"), "libcudart.so"),
        library_path=tuple(d for d in fields.get("library_path", "").split(":") if d),
    )


def build_library_path(binary: str) -> list[str]:
    """The library directories a tree `wirespeed setup` built names in its wirespeed-build.json, for a binary in
    `<tree>/build/`: the environment it is meant to run in. Empty where there is no such file or it is unreadable
    or malformed."""
    build = os.path.dirname(binary)
    if os.path.basename(build) != "build":
        return []
    try:
        with open(os.path.join(os.path.dirname(build), BUILD_RECORD)) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    dirs = data.get("library_path") if isinstance(data, dict) else None
    if not isinstance(dirs, list) or not all(isinstance(d, str) and d.startswith("/") for d in dirs):
        return []
    return list(dirs)


def _executable_in(dirs: list[str], binary: str) -> str | None:
    return next((path for d in dirs if os.access(path := os.path.join(d, binary), os.X_OK)), None)


def _nccl_tests_binary(binary: str) -> str | None:
    """NCCL_TESTS_DIR first, then `wirespeed setup`'s build, then PATH, then the usual build directories."""
    first = [os.environ["NCCL_TESTS_DIR"]] if os.environ.get("NCCL_TESTS_DIR") else []
    first += [os.path.expanduser(d) for d in NCCL_TESTS_DIRS[:NCCL_TESTS_DIRS_BEFORE_PATH]]
    rest = [os.path.expanduser(d) for d in NCCL_TESTS_DIRS[NCCL_TESTS_DIRS_BEFORE_PATH:]]
    return _executable_in(first, binary) or shutil.which(binary) or _executable_in(rest, binary)


def find_nccl_tests() -> Output:
    """Where the nccl-tests binaries are, whether each was built with MPI (links libmpi), and the libnccl and
    libcudart ldd resolves for it: with its build tree's library path when `wirespeed setup` recorded one, else in
    this session's environment, which is what ranks that mpirun starts over ssh get too."""
    lines: list[str] = []
    for binary in NCCL_TESTS_BINARIES:
        found = _nccl_tests_binary(binary)
        if found:
            library_path = build_library_path(found)
            env = ["env", f"LD_LIBRARY_PATH={':'.join(library_path)}"] if library_path else []
            lines.append(nccl_tests_line(found, run_command([*env, "ldd", found]), library_path))
    return Output(0, "\n".join(lines) + ("\n" if lines else ""))


def _find_nccl() -> Output:
    """`ldconfig -p` lines for libnccl, each followed by the file its link resolves to (which carries the
    version: libnccl.so.2 -> libnccl.so.2.28.9)."""
    listing = run_command(["ldconfig", "-p"])
    if not listing.ok:
        return listing
    lines: list[str] = []
    for line in listing.stdout.splitlines():
        if "libnccl" in line:
            lines.append(line.strip())
            path = line.rpartition("=>")[2].strip()
            if path:
                lines.append(f"=> {os.path.realpath(path)}")
    return Output(0, "\n".join(lines) + ("\n" if lines else ""))


def nccl_version(source: NodeSource) -> str | Unknown:
    """The NCCL version the ldconfig cache resolves libnccl to."""
    result = source.output("nccl_version", _find_nccl)
    if result.ok and "libnccl" not in result.stdout:
        return Unknown("no libnccl in the ldconfig cache (NCCL inside a Python venv or container is not seen here)")
    return parsed("nccl_version", result, "NCCL (ldconfig -p)", sv.nccl_version)


def nccl_libraries() -> list[str]:
    """libnccl files: the ldconfig cache, NCCL_HOME, LD_LIBRARY_PATH, the build nccl-tests runs with and the usual
    Python venvs (PyTorch's)."""
    found: list[str] = []
    listing = run_command(["ldconfig", "-p"])
    found += [line.rpartition("=>")[2].strip() for line in listing.stdout.splitlines() if "libnccl.so" in line]
    dirs = [os.path.join(os.environ["NCCL_HOME"], "lib")] if os.environ.get("NCCL_HOME") else []
    dirs += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    tests = _nccl_tests_binary("all_reduce_perf")
    dirs += build_library_path(tests) if tests else []  # the NCCL `wirespeed setup` built nccl-tests against
    found += [p for d in dirs for p in sorted(glob.glob(os.path.join(d, "libnccl.so*")))]
    found += [p for pattern in NCCL_VENV_GLOBS for p in sorted(glob.glob(os.path.expanduser(pattern)))]
    unique: dict[str, str] = {}
    for path in found:
        real = os.path.realpath(path)
        if os.path.isfile(real):
            unique.setdefault(real, path)
    return sorted(unique)


def _nccl_archs() -> Output:
    """Per NCCL library: the GPU architectures it carries code for (`cuobjdump --list-elf`, in Python)."""
    lines: list[str] = []
    for path in nccl_libraries():
        try:
            with open(path, "rb") as handle:
                archs = fatbin.architectures(handle.read())
            lines.append(f"{path}\t{fatbin.encode(archs)}")
        except (OSError, ValueError) as exc:
            lines.append(f"{path}\terror: {getattr(exc, 'strerror', None) or exc}")
    return Output(0, "".join(f"{line}\n" for line in lines))


def nccl_archs(source: NodeSource) -> dict[str, str] | Unknown:
    """Per NCCL library found, the GPU architectures it carries code for: "elf=75,80,90 ptx=120" or "error: why"."""
    result = source.output("nccl_archs", _nccl_archs)
    if not result.ok:
        return command_unknown("nccl_archs", result, "wirespeed")
    return dict(line.split("\t", 1) for line in result.stdout.splitlines() if "\t" in line)


def packages(source: NodeSource) -> dict[str, str] | Unknown:
    """dpkg's `${Status} ${Version}` for each watched package; a package dpkg knows nothing of is left out (it says
    "no packages found matching NAME" on stderr and exits 1)."""
    found: dict[str, str] = {}
    for name in WATCHED_PACKAGES:
        key, argv = f"dpkg_{name.replace('-', '_')}", ["dpkg-query", "-W", "-f", "${Status} ${Version}", name]
        result = source.output(key, command(argv))
        if result.ok and result.stdout.strip():
            found[name] = result.stdout.strip()
        elif result.returncode != 1:
            return command_unknown(key, result, "dpkg-query")
    return found
