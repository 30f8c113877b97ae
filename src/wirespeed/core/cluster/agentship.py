"""The agent the controller ships to its nodes: one zipapp of its own wirespeed, named by version and content.

Pure: the file's name from the version and a digest of what goes into it, the requirement lines that say which
distributions go in, the two fixed scripts that run on a node (argument lists; the file name and paths travel as
positional arguments, never pasted into the script), what their answers mean, and the lines a person reads.
Building the file lives in wirespeed.adapters.agentzip, shipping it in wirespeed.engine.remote.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

MIN_PYTHON = (3, 11)  # the code uses StrEnum and datetime.UTC
NODE_CACHE = "~/.cache/wirespeed"  # where the agent lives on a node, as people read it
# Dependencies only the controller imports: not carried to the nodes. orjson (with a fallback) decodes the agents'
# lines (the agent writes them, it never reads one) and is compiled, so it could not run on every node;
# prometheus-client serves and writes the controller's metrics (watch --serve/--textfile), never a node's.
CONTROLLER_ONLY = frozenset({"orjson", "prometheus-client"})
_NAME_RE = re.compile(r"^agent-[A-Za-z0-9.+_-]+-[0-9a-f]{12}\.pyz$")

# The zipapp's entry point. Children it starts as `sys.executable -m wirespeed` (the rollback timer of
# `agent apply`) find wirespeed in the same archive through PYTHONPATH.
MAIN_PY = '''"""wirespeed's agent: the controller's own wirespeed, shipped as one file."""

import os
import sys

_archive = os.path.dirname(os.path.abspath(__file__))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_archive, os.environ.get("PYTHONPATH")) if p)

from wirespeed.cli.main import main  # noqa: E402

sys.exit(main())
'''

# One round trip: is the file there (its absolute path), and which python runs it. The candidates are tried in
# order; the first at MIN_PYTHON or newer ends the search, older ones are reported so the user hears why. Each is
# named by its sys.executable: the interpreter itself, not a launcher in front of it (a pyenv shim costs 0.1 s a
# start).
_PROBE_SCRIPT = r"""d="${HOME:?HOME is not set}/.cache/wirespeed"
if [ -f "$d/$1" ]; then echo "file=present $d/$1"; else echo "file=missing $d/$1"; fi
for p in python3 python3.14 python3.13 python3.12 python3.11; do
  c=$(command -v "$p" 2>/dev/null) || continue
  v=$("$c" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3], sys.executable or sys.argv[1])' "$c" 2>/dev/null) \
    || continue
  echo "python=$v"
  case "$v" in 3.1[1-9].*|3.[2-9][0-9].*|[4-9].*) break ;; esac
done
"""

# Written under a temporary name, run once (`--version` must print this version), then renamed: a cut or
# broken copy never carries the agent's name. $4 is _UNPACK_PY.
_SHIP_SCRIPT = r"""set -e
d="${HOME:?HOME is not set}/.cache/wirespeed"
mkdir -p "$d"
t="$d/.$1.$$.part"
trap 'rm -f "$t"' EXIT
"$2" -c "$4" "$t" "$d/$1"
v=$("$2" "$t" --version 2>&1) || { echo "the copy does not run: $v" >&2; exit 1; }
if [ "$v" != "$3" ]; then echo "the copy answered '$v' to --version, not '$3'" >&2; exit 1; fi
mv -f "$t" "$d/$1"
echo "$d/$1"
"""

# Run by the node's python at the copy: the base64 zipapp on stdin is written to argv[1] with every module's
# bytecode compiled there, for that very interpreter, beside its source (unchecked hash-based .pyc, PEP 552,
# which zipimport reads first): Python never caches bytecode of a zip itself, and compiling every module at each
# start would cost about half a second per agent command. Another python later (another magic number) falls back
# to the sources. argv[2] is the final path, named in tracebacks.
_UNPACK_PY = r"""import base64, importlib.util, io, marshal, sys, zipfile
data = base64.b64decode(b"".join(sys.stdin.buffer.read().split()), validate=True)
with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as out:
    for info in src.infolist():
        body = src.read(info)
        out.writestr(info, body)
        if not info.filename.endswith(".py"):
            continue
        try:
            code = compile(body, sys.argv[2] + "/" + info.filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        pyc = zipfile.ZipInfo(info.filename + "c", info.date_time)
        pyc.external_attr = info.external_attr
        header = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + importlib.util.source_hash(body)
        out.writestr(pyc, header + marshal.dumps(code), zipfile.ZIP_DEFLATED)
"""


class AgentSource(StrEnum):
    """How wirespeed starts on a node."""

    CONFIGURED = "configured"  # the cluster file's agent = [...]
    LOCAL = "local"  # this controller's own interpreter
    SHIPPED = "shipped"  # the zipapp, copied there by this command
    PRESENT = "present"  # the zipapp, already there from an earlier command
    FAILED = "failed"  # none: the node cannot run the zipapp (see the message)


@dataclass(frozen=True)
class AgentInfo:
    """What a node runs as its agent, and how it came to be."""

    node: str
    source: AgentSource
    argv: tuple[str, ...]
    file: str | None = None  # the zipapp's absolute path on the node
    python: str | None = None  # the node's python version that runs it
    size_bytes: int | None = None  # when shipped: bytes sent, and how long it took
    seconds: float | None = None
    message: str | None = None  # when failed: one line naming the node
    hint: str | None = None
    reached: bool = True  # False: the node did not answer at all (its own commands will say why)

    def describe(self) -> str:
        """The agent in use, for `agent check`."""
        where = f"{self.file}, python {self.python}"
        if self.source is AgentSource.SHIPPED:
            return f"shipped now: {where}"
        if self.source is AgentSource.PRESENT:
            return f"already there: {where}"
        if self.source is AgentSource.LOCAL:
            return f"this interpreter: {shlex.join(self.argv)}"
        if self.source is AgentSource.CONFIGURED:
            return f"configured: {shlex.join(self.argv)}"
        return "none"


@dataclass(frozen=True)
class ProbeReply:
    """A node's answer to `probe_argv`."""

    present: bool
    path: str
    pythons: tuple[tuple[str, tuple[int, ...]], ...]  # (path, version) in the order tried

    def python(self) -> tuple[str, tuple[int, ...]] | None:
        """The interpreter to run the agent with: the first one new enough."""
        for path, version in self.pythons:
            if version[:2] >= MIN_PYTHON:
                return path, version
        return None


def content_digest(entries: Iterable[tuple[str, bytes]]) -> str:
    """A digest of a file tree (archive name and bytes of each file), independent of the order given."""
    digest = hashlib.sha256()
    for name, data in sorted(entries, key=lambda entry: entry[0]):
        encoded = name.encode()
        digest.update(len(encoded).to_bytes(4, "big") + encoded + len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def agent_file_name(version: str, digest: str) -> str:
    """`agent-<version>-<first 12 hex digits>.pyz`: another source tree is another agent."""
    name = f"agent-{version}-{digest[:12]}.pyz"
    if not _NAME_RE.fullmatch(name):
        raise ValueError(f"not a usable agent file name: {name!r}")
    return name


def version_line(version: str) -> str:
    """What `wirespeed --version` prints."""
    return f"wirespeed {version}"


_REQ_NAME_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def requirement_name(requirement: str) -> tuple[str, bool] | None:
    """The distribution a `Requires-Dist` line names, and whether it carries an environment marker; None for
    an extra's requirement (the agent installs no extras)."""
    spec, _, marker = requirement.partition(";")
    if re.search(r"\bextra\s*==", marker):
        return None
    match = _REQ_NAME_RE.match(spec)
    if not match:
        return None
    return normalize_name(match.group(1)), bool(marker.strip())


def normalize_name(name: str) -> str:
    """PEP 503: one spelling per distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def probe_argv(file_name: str) -> list[str]:
    """Is `~/.cache/wirespeed/<file_name>` on the node, and which python3 does it have."""
    return ["sh", "-c", _PROBE_SCRIPT, "wirespeed-probe", file_name]


def ship_argv(file_name: str, python: str, version: str) -> list[str]:
    """Write the base64 zipapp on stdin to `~/.cache/wirespeed/<file_name>`, its bytecode compiled there by
    `python`, checked with `python FILE --version` before it takes its name."""
    return ["sh", "-c", _SHIP_SCRIPT, "wirespeed-ship", file_name, python, version_line(version), _UNPACK_PY]


def _version_tuple(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    if not parts or not all(part.isdigit() for part in parts):
        return None
    return tuple(int(part) for part in parts)


def parse_probe(stdout: str) -> ProbeReply:
    """Read `probe_argv`'s answer; ValueError when it is not one."""
    present: bool | None = None
    path = ""
    pythons: list[tuple[str, tuple[int, ...]]] = []
    for line in stdout.splitlines():
        key, _, value = line.partition("=")
        if key == "file":
            state, _, path = value.partition(" ")
            present = state == "present"
        elif key == "python":
            text, _, where = value.partition(" ")
            version = _version_tuple(text)
            if version is not None and where:
                pythons.append((where, version))
    if present is None or not path:
        raise ValueError(f"unexpected answer to the agent probe: {stdout.strip()[:200]!r}")
    return ProbeReply(present, path, tuple(pythons))


def format_version(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def format_megabytes(size_bytes: int) -> str:
    return f"{size_bytes / 1e6:.1f} MB"


def shipped_line(file_name: str, node: str, size_bytes: int, seconds: float) -> str:
    """The one line said per node the agent was copied to."""
    return f"shipped {file_name} to {node} ({format_megabytes(size_bytes)}, {seconds:.1f} s)"


def no_python_failure(node: str, reply: ProbeReply) -> tuple[str, str]:
    """(message, hint) for a node without a python3 new enough to run the agent."""
    need = format_version(MIN_PYTHON)
    fix = (
        f"make python3 {need} or newer available there (Ubuntu 24.04 and DGX OS have it: apt install python3), "
        f"or set agent = [...] for {node} in the cluster file"
    )
    if not reply.pythons:
        return f"{node}: no python3 there to run wirespeed's agent ({need} or newer needed)", fix
    found = ", ".join(f"{path} is {format_version(version)}" for path, version in reply.pythons)
    return f"{node}: python3 too old for wirespeed's agent ({found}; {need} or newer needed)", fix
