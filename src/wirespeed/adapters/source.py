"""Where a node's facts are read from: the live system, a snapshot directory, or the live system while
recording a snapshot. Discovery and the checks read only through this, so all three are one code path.

Paths are absolute system paths ("/sys/class/net"); a source maps them under its root.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from wirespeed.adapters.configroot import system_path
from wirespeed.adapters.process import run_process

SNAPSHOT_FORMAT = "wirespeed-snapshot/1"
READ_ERRORS = "read_errors.json"  # path -> [errno, strerror] for files that exist but could not be read
NOT_INSTALLED = 127


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
            meta = json.loads(meta_path.read_text())
        except FileNotFoundError:
            raise ValueError(f"{root}: not a wirespeed snapshot (no meta.json)") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"{meta_path}: unreadable: {exc}") from None
        if meta.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(f"{meta_path}: format {meta.get('format')!r}, expected {SNAPSHOT_FORMAT!r}")
        super().__init__(root, f"snapshot {root}", bool(meta.get("emulated", False)))
        self.meta = meta
        self.node = str(meta.get("node") or root.name)
        errors_path = root / READ_ERRORS
        self._errors: dict[str, list[object]] = json.loads(errors_path.read_text()) if errors_path.exists() else {}

    def read(self, path: str) -> str:
        return self.read_exact(path).strip()

    def read_exact(self, path: str) -> str:
        if path in self._errors:
            code, message = self._errors[path]
            raise OSError(int(str(code)), str(message))
        return super().read_exact(path)

    def output(self, name: str, produce: Callable[[], Output]) -> Output:
        text_path = self.root / "commands" / f"{name}.txt"
        rc_path = self.root / "commands" / f"{name}.rc"
        if not rc_path.exists():
            return Output(None, "")
        try:
            return Output(int(rc_path.read_text().strip()), text_path.read_text() if text_path.exists() else "")
        except ValueError:
            return Output(None, "")


class RecordingSource:
    """Reads the live system and copies everything it reads into a snapshot directory as it goes."""

    def __init__(self, live: LiveSource, out: Path, node: str, captured_at: str, version: str) -> None:
        self.live = live
        self.out = out
        self.description = f"live, recording to {out}"
        self.emulated = live.emulated
        self._errors: dict[str, list[object]] = {}
        out.mkdir(parents=True, exist_ok=True)
        (out / "meta.json").write_text(
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
            + "\n"
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
                (self.out / READ_ERRORS).write_text(json.dumps(self._errors, indent=1, sort_keys=True) + "\n")
            raise
        finally:
            resolved = self._mirror_path(path)
        target = self.out / resolved.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text if exact else text + "\n")
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
        commands = self.out / "commands"
        commands.mkdir(parents=True, exist_ok=True)
        (commands / f"{name}.txt").write_text(result.stdout)
        (commands / f"{name}.rc").write_text(f"{result.returncode}\n")
        return result


def archive(directory: Path, tar_path: Path) -> Path:
    """Pack a snapshot directory as NODE.tar.gz (symlinks kept as symlinks)."""
    base = str(tar_path).removesuffix(".tar.gz")
    return Path(shutil.make_archive(base, "gztar", root_dir=directory.parent, base_dir=directory.name))
