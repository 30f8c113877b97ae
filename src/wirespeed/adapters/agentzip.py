"""Build the agent zipapp from what this interpreter has installed: wirespeed itself and, following the
installed metadata's requirements, every distribution it needs at runtime (pure Python only, so that one file
runs on any node's CPU). No network: nothing is downloaded, only installed files are read.

The file is built once per content into the controller's cache (`$XDG_CACHE_HOME/wirespeed/`, else
`~/.cache/wirespeed/`) and reused after; its name carries the version and a digest of its content.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import os
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

import wirespeed
from wirespeed import __version__
from wirespeed.core.cluster.agentship import (
    CONTROLLER_ONLY,
    MAIN_PY,
    agent_file_name,
    content_digest,
    requirement_name,
)
from wirespeed.core.errors import WirespeedError

_COMPILED = (".so", ".pyd", ".dylib", ".dll")
# Install bookkeeping that says nothing at runtime (and RECORD's hashes would not match a zip anyway).
_SKIPPED_METADATA = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed: the same content gives the same bytes
_build_lock = threading.Lock()


@dataclass(frozen=True)
class AgentContent:
    """What goes into the agent: each archive name with the bytes read (and hashed) once, so the file built
    holds exactly what its name says even if the tree changes while this process runs."""

    name: str  # agent-<version>-<hash12>.pyz
    files: tuple[tuple[str, bytes], ...]
    distributions: tuple[str, ...]


@dataclass(frozen=True)
class AgentFile:
    path: Path
    size_bytes: int


def cache_dir() -> Path:
    """The controller's cache: $XDG_CACHE_HOME/wirespeed, else ~/.cache/wirespeed."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "wirespeed"


def _package_files() -> list[tuple[str, Path]]:
    """wirespeed's own package, from where it is imported (a source tree or site-packages alike)."""
    root = Path(wirespeed.__file__).resolve().parent
    files: list[tuple[str, Path]] = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if "__pycache__" in relative.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        if path.suffix in _COMPILED:
            raise WirespeedError(f"{path}: wirespeed has a compiled file, its agent cannot run on every node")
        files.append((f"wirespeed/{relative.as_posix()}", path))
    return files


def _requirements(dist: metadata.Distribution) -> list[tuple[str, bool]]:
    found = [requirement_name(line) for line in dist.requires or []]
    return [item for item in found if item is not None]


def _distribution_files(dist: metadata.Distribution, label: str) -> list[tuple[str, Path]]:
    """A dependency's installed files, as they sit in site-packages (scripts outside it left out)."""
    if dist.files is None:
        raise WirespeedError(
            f"{label}: installed without a file list (RECORD), so it cannot go into the agent",
            hint=f"reinstall it with pip (pip install --force-reinstall {label})",
        )
    files: list[tuple[str, Path]] = []
    for item in dist.files:
        parts = item.parts
        if not parts or parts[0] == ".." or "__pycache__" in parts or item.suffix == ".pyc":
            continue
        if parts[0].endswith(".dist-info") and item.name in _SKIPPED_METADATA:
            continue
        if item.suffix in _COMPILED:
            raise WirespeedError(
                f"{label} is not pure Python ({item.as_posix()}): the agent cannot carry it to other CPUs",
                hint="install its pure-Python build here, or set agent = [...] for the nodes in the cluster file",
            )
        path = Path(str(dist.locate_file(item)))
        if path.is_file():
            files.append((item.as_posix(), path))
    return files


def _dependencies() -> tuple[list[tuple[str, Path]], list[str]]:
    """Every distribution wirespeed needs at runtime, following installed metadata from wirespeed's own."""
    try:
        ours = metadata.distribution("wirespeed")
    except metadata.PackageNotFoundError:
        raise WirespeedError(
            "wirespeed's metadata is not installed here, so its dependencies are unknown",
            hint="install wirespeed with pip (pip install -e . in a checkout)",
        ) from None
    todo = _requirements(ours)
    seen: set[str] = {"wirespeed"}
    files: list[tuple[str, Path]] = []
    names: list[str] = []
    while todo:
        name, conditional = todo.pop(0)
        if name in seen or name in CONTROLLER_ONLY:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if conditional:  # its marker does not hold for this interpreter
                continue
            raise WirespeedError(
                f"{name}, which wirespeed needs, is not installed here", hint=f"pip install {name}"
            ) from None
        names.append(f"{dist.metadata['Name']} {dist.version}")
        files += _distribution_files(dist, name)
        todo += _requirements(dist)
    return files, names


@functools.cache
def agent_content() -> AgentContent:
    """What the agent holds and its name (read once per process: the source tree does not change under us)."""
    files: list[tuple[str, Path | None]] = [("__main__.py", None)]
    package = _package_files()
    deps, names = _dependencies()
    files += package
    files += [(name, path) for name, path in deps if not name.startswith("wirespeed/")]
    seen: set[str] = set()
    unique: list[tuple[str, Path | None]] = []
    for name, path in files:
        if name not in seen:
            seen.add(name)
            unique.append((name, path))
    unique.sort(key=lambda entry: entry[0])
    try:
        read = tuple((name, MAIN_PY.encode() if path is None else path.read_bytes()) for name, path in unique)
    except OSError as exc:
        raise WirespeedError(f"cannot read what goes into the agent: {exc}") from None
    return AgentContent(agent_file_name(__version__, content_digest(read)), read, tuple(sorted(names)))


def write_zipapp(content: AgentContent, target: Path) -> int:
    """Write the zipapp to `target` (not atomic: see `build_agent`); returns its size."""
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in content.files:
            info = zipfile.ZipInfo(name, _ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return target.stat().st_size


def build_agent(directory: Path | None = None) -> AgentFile:
    """The agent zipapp in the cache, built there first if it is not yet (written aside, then renamed)."""
    content = agent_content()
    where = directory if directory is not None else cache_dir()
    target = where / content.name
    with _build_lock:
        try:
            if target.is_file():
                return AgentFile(target, target.stat().st_size)
            where.mkdir(parents=True, exist_ok=True)
            partial = where / f".{content.name}.{os.getpid()}.part"
            try:
                write_zipapp(content, partial)
                partial.replace(target)
            finally:
                partial.unlink(missing_ok=True)
            return AgentFile(target, target.stat().st_size)
        except OSError as exc:
            raise WirespeedError(
                f"cannot write wirespeed's agent to {where}: {exc.strerror or exc}",
                hint="set XDG_CACHE_HOME to a writable directory, or set agent = [...] for the nodes",
            ) from None
