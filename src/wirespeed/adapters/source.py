"""Where a node's facts are read from: the live system, a snapshot directory, or the live system while
recording a snapshot. Discovery and the checks read only through this, so all three are one code path.

Paths are absolute system paths ("/sys/class/net"); a source maps them under its root. A snapshot is someone
else's files: what it holds is read only inside its root (its links that mirror sysfs, `sys/class/net/X ->
../../devices/...`, resolve inside it and are followed; a link that leaves it is refused and named, never read
through), and everything a snapshot is written with goes through wirespeed.adapters.files (new files renamed into
place, never through a link).
"""

from __future__ import annotations

import errno
import json
import os
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from wirespeed.adapters import files
from wirespeed.adapters.configroot import system_path
from wirespeed.adapters.process import run_process

SNAPSHOT_FORMAT = "wirespeed-snapshot/1"
READ_ERRORS = "read_errors.json"  # path -> [errno, strerror] for files that exist but could not be read
NOT_INSTALLED = 127
MAX_SNAPSHOT_FILE_BYTES = 16 * 2**20  # a sysfs value or a command's output; a file this large is not one of ours


@dataclass(frozen=True)
class Output:
    """A command's exit status and stdout (127: not installed; None: not recorded in a snapshot)."""

    returncode: int | None
    stdout: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class NodeSource(Protocol):
    description: str
    emulated: bool

    def read(self, path: str) -> str: ...

    def read_exact(self, path: str) -> str: ...

    def listdir(self, path: str) -> list[str]: ...

    def realpath(self, path: str) -> str: ...

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def output(self, name: str, produce: Callable[[], Output]) -> Output: ...


def run_command(argv: Sequence[str], timeout_s: float = 20.0) -> Output:
    """Run a local command for discovery; a missing program is exit status 127, as a shell would say."""
    outcome = run_process(argv, timeout_s=timeout_s)
    if outcome.spawn_error is not None:
        return Output(NOT_INSTALLED, "")
    if outcome.timed_out:
        return Output(124, outcome.stdout)
    return Output(outcome.returncode, outcome.stdout)


class RootedSource:
    """Files under a root directory: `/` for the live system, a snapshot's directory otherwise."""

    def __init__(self, root: Path, description: str, emulated: bool = False) -> None:
        self.root = root
        self.description = description
        self.emulated = emulated

    def _host(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def read(self, path: str) -> str:
        return self.read_exact(path).strip()

    def read_exact(self, path: str) -> str:
        """The whole text, leading and trailing lines kept (a configuration file's line numbers count)."""
        return self._host(path).read_text(errors="replace")

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(self._host(path)))

    def realpath(self, path: str) -> str:
        resolved = Path(os.path.realpath(self._host(path)))
        try:
            return "/" + str(resolved.relative_to(self.root.resolve()))
        except ValueError:
            return str(resolved)

    def exists(self, path: str) -> bool:
        return os.path.lexists(self._host(path))

    def is_dir(self, path: str) -> bool:
        """A directory, or a link to one (every /sys/class/net/NAME of a net device is such a link; the bonding
        driver's `bonding_masters` beside them is a plain file)."""
        return os.path.isdir(self._host(path))


class LiveSource(RootedSource):
    """This machine, now."""

    def __init__(self, emulated: bool | None = None) -> None:
        flag = os.environ.get("WIRESPEED_EMULATED") == "1" if emulated is None else emulated
        super().__init__(Path("/"), "live", flag)

    def _host(self, path: str) -> Path:
        # An emulated node's /etc is its own directory (WIRESPEED_CONFIG_ROOT); the host's is shared.
        return system_path(path) if path.startswith("/etc/") else super()._host(path)

    def output(self, name: str, produce: Callable[[], Output]) -> Output:
        return produce()


class SnapshotSource(RootedSource):
    """A snapshot directory written by `RecordingSource` (docs/snapshot-format.md)."""

    def __init__(self, root: Path) -> None:
        meta_path = root / "meta.json"
        try:
            meta = files.load_json(meta_path, MAX_SNAPSHOT_FILE_BYTES, expect=dict, root=root)
        except files.Unreadable as exc:
            if str(exc) == "no such file":
                raise ValueError(f"{root}: not a wirespeed snapshot (no meta.json)") from None
            raise ValueError(f"{meta_path}: unreadable: {exc}") from None
        if meta.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(f"{meta_path}: format {meta.get('format')!r}, expected {SNAPSHOT_FORMAT!r}")
        super().__init__(root, f"snapshot {root}", bool(meta.get("emulated", False)))
        self.meta = meta
        self.node = str(meta.get("node") or root.name)
        self.refused: list[str] = []  # one line per file of the snapshot not read: a link that leaves it
        self._errors = _read_errors(root)

    def _inside(self, path: str) -> Path:
        """The snapshot's file for system path `path`, resolved inside the snapshot; a link leaving it is refused
        (named once in `refused`) as an OSError, which discovery shows as that value unreadable."""
        try:
            return files.inside(self.root, self._host(path))
        except files.Unreadable as exc:
            line = f"snapshot {self.root}: {path.lstrip('/')}: {exc}"
            if line not in self.refused:
                self.refused.append(line)
            raise OSError(errno.ELOOP, str(exc)) from None

    def read(self, path: str) -> str:
        return self.read_exact(path).strip()

    def read_exact(self, path: str) -> str:
        if path in self._errors:
            code, message = self._errors[path]
            raise OSError(code, message)
        return _snapshot_text(self._inside(path), self.root)

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(self._inside(path)))

    def is_dir(self, path: str) -> bool:
        try:
            return os.path.isdir(self._inside(path))
        except OSError:
            return False

    def realpath(self, path: str) -> str:
        try:
            resolved = self._inside(path)
        except OSError:
            return os.path.normpath(path)  # a link that leaves the snapshot is not followed, even by name
        return "/" + str(resolved.relative_to(os.path.realpath(self.root))).removeprefix(".")

    def output(self, name: str, produce: Callable[[], Output]) -> Output:
        text_path = self.root / "commands" / f"{name}.txt"
        rc_path = self.root / "commands" / f"{name}.rc"
        if not os.path.lexists(rc_path):
            return Output(None, "")
        try:
            returncode = int(_snapshot_text(rc_path, self.root).strip())
            return Output(returncode, _snapshot_text(text_path, self.root) if os.path.lexists(text_path) else "")
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                line = f"snapshot {self.root}: commands/{name}: {exc.strerror}"
                if line not in self.refused:
                    self.refused.append(line)
            return Output(None, "")
        except ValueError:
            return Output(None, "")


def _snapshot_text(path: Path, root: Path) -> str:
    """A snapshot file's text (bytes that are not UTF-8 replaced), read only inside `root`; OSError otherwise
    (FileNotFoundError when it is not there; ELOOP for a link that leaves the snapshot)."""
    try:
        return files.read_bytes(path, MAX_SNAPSHOT_FILE_BYTES, root=root).decode("utf-8", errors="replace")
    except files.Unreadable as exc:
        if str(exc) == "no such file":
            raise FileNotFoundError(errno.ENOENT, str(exc)) from None
        raise OSError(errno.ELOOP if "not followed" in str(exc) else errno.EIO, str(exc)) from None


def _read_errors(root: Path) -> dict[str, tuple[int, str]]:
    """read_errors.json: system path -> [errno, strerror] of files the live system failed to read; ValueError
    naming the file when it is not that shape."""
    path = root / READ_ERRORS
    if not os.path.lexists(path):
        return {}
    try:
        data = files.load_json(path, MAX_SNAPSHOT_FILE_BYTES, expect=dict, root=root)
    except files.Unreadable as exc:
        raise ValueError(f"{path}: unreadable: {exc}") from None
    found: dict[str, tuple[int, str]] = {}
    for key, value in data.items():
        if not (
            isinstance(value, list) and len(value) == 2 and isinstance(value[0], int) and not isinstance(value[0], bool)
        ):
            raise ValueError(f"{path}: {key!r}: expected [errno, message], found {json.dumps(value)[:60]}")
        found[key] = (value[0], str(value[1]))
    return found


class RecordingSource:
    """Reads the live system and copies everything it reads into a snapshot directory as it goes."""

    def __init__(self, live: LiveSource, out: Path, node: str, captured_at: str, version: str) -> None:
        self.live = live
        self.out = out
        self.description = f"live, recording to {out}"
        self.emulated = live.emulated
        self._errors: dict[str, list[object]] = {}
        files.ensure_dir(out)
        files.write_atomic(
            out / "meta.json",
            json.dumps(
                {
                    "format": SNAPSHOT_FORMAT,
                    "node": node,
                    "captured_at": captured_at,
                    "wirespeed_version": version,
                    "emulated": live.emulated,
                },
                indent=2,
            )
            + "\n",
        )

    def _mirror_path(self, path: str) -> str:
        """Recreate every symlink along `path` in the snapshot; returns the resolved system path."""
        current = "/"
        for part in [p for p in path.split("/") if p]:
            candidate = os.path.join(current, part)
            if os.path.islink(candidate):
                target = os.readlink(candidate)
                mirror = self.out / candidate.lstrip("/")
                mirror.parent.mkdir(parents=True, exist_ok=True)
                if not os.path.lexists(mirror):
                    mirror.symlink_to(target)
                current = os.path.normpath(os.path.join(current, target))
            else:
                current = candidate
        return current

    def read(self, path: str) -> str:
        return self._record(path, exact=False)

    def read_exact(self, path: str) -> str:
        return self._record(path, exact=True)

    def _record(self, path: str, exact: bool) -> str:
        try:
            text = self.live.read_exact(path) if exact else self.live.read(path)
        except OSError as exc:
            # Kept so that the snapshot fails the same way (an EINVAL speed of a down link, say).
            if exc.errno is not None and exc.errno != errno.ENOENT:
                self._errors[path] = [exc.errno, exc.strerror or str(exc)]
                files.write_atomic(self.out / READ_ERRORS, json.dumps(self._errors, indent=1, sort_keys=True) + "\n")
            raise
        finally:
            resolved = self._mirror_path(path)
        target = self.out / resolved.lstrip("/")
        files.write_atomic(files.ensure_dir(target.parent, self.out) / target.name, text if exact else text + "\n")
        return text

    def listdir(self, path: str) -> list[str]:
        names = self.live.listdir(path)
        resolved = self._mirror_path(path)
        (self.out / resolved.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for name in names:
            entry = os.path.join(resolved, name)
            mirror = self.out / entry.lstrip("/")
            if os.path.islink(entry):
                if not os.path.lexists(mirror):
                    mirror.symlink_to(os.readlink(entry))
            elif os.path.isdir(entry):
                mirror.mkdir(parents=True, exist_ok=True)
            elif not mirror.exists():
                mirror.touch()  # a placeholder keeps the listing (device nodes, files not read)
        return names

    def realpath(self, path: str) -> str:
        self._mirror_path(path)
        resolved = self.live.realpath(path)
        if os.path.isdir(resolved):
            (self.out / resolved.lstrip("/")).mkdir(parents=True, exist_ok=True)
        return resolved

    def is_dir(self, path: str) -> bool:
        found = self.live.is_dir(path)
        if found:
            self.realpath(path)  # the links along it and the directory it leads to, as the system has them
        return found

    def exists(self, path: str) -> bool:
        found = self.live.exists(path)
        if found:
            resolved = self._mirror_path(path)
            mirror = self.out / resolved.lstrip("/")
            if os.path.isdir(resolved):
                mirror.mkdir(parents=True, exist_ok=True)
            elif not os.path.lexists(mirror):
                mirror.parent.mkdir(parents=True, exist_ok=True)
                mirror.touch()  # only its existence was asked for
        return found

    def output(self, name: str, produce: Callable[[], Output]) -> Output:
        result = produce()
        commands = files.ensure_dir(self.out / "commands", self.out)
        files.write_atomic(commands / f"{name}.txt", result.stdout)
        files.write_atomic(commands / f"{name}.rc", f"{result.returncode}\n")
        return result


def archive(directory: Path, tar_path: Path) -> Path:
    """Pack a snapshot directory as NODE.tar.gz (symlinks kept as symlinks), written new and renamed into place:
    a link planted at NODE.tar.gz is refused, never written through."""
    with files.replacing(tar_path) as handle, tarfile.open(fileobj=handle, mode="w:gz") as packed:
        packed.add(directory, arcname=directory.name)
    return tar_path
