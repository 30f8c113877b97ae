"""The run directories `wirespeed bench` leaves: find one by the name `runs` prints (or a path, `latest`,
`baseline`), read it into a `Run`, list them, and keep the baseline mark `compare` uses when given one run.

Reading never fails on content: a file that is not UTF-8, not JSON, or not a record of the expected shape is one
line in `Run.problems` naming the file and what is wrong, and the run keeps every other record. Only what is not
a run directory at all is refused. Only regular files are opened (a FIFO would block forever).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from wirespeed.adapters import files
from wirespeed.core.errors import UsageError
from wirespeed.core.matrix import MatrixResult, matrix_from_json
from wirespeed.core.results import RungResult
from wirespeed.core.run import RUN_FILE, ImportedFile, Run, RunRecord, RunStatus
from wirespeed.core.tune import TuneResult

BASELINE = "BASELINE"  # a file in the runs folder holding the baseline run's directory name
NOT_RECORDS = frozenset({RUN_FILE, "discovery.json", "takeaway.json", "checks.json", "report.json"})
MAX_RECORD_BYTES = 64 * 2**20  # a record is kilobytes; anything this large is not one of ours
LATEST, BASELINE_NAME = "latest", "baseline"


class Unreadable(ValueError):
    """A file of a run that could not be read; its message is the one line shown for it."""


def read_text(path: Path) -> str:
    """A run file's text; `Unreadable` says why not (not a regular file, too large, not UTF-8, an OS error)."""
    try:
        return files.read_text(path, MAX_RECORD_BYTES, too_large=" for a record")
    except files.Unreadable as exc:
        raise Unreadable(f"{path.name}: {exc}") from None


def read_json(path: Path) -> Any:
    text = read_text(path)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise Unreadable(f"{path.name}: not valid JSON ({exc})") from None


def _kind(data: Any, name: str) -> str | None:
    """What a top-level JSON file of a run holds: `rung`, `matrix`, `tune`, or None (something else)."""
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    if kind in ("rung", "matrix", "tune"):
        return str(kind)
    if "rung" in data and "status" in data:  # schema 1 (wirespeed 0.1)
        return "rung"
    if name.startswith("matrix-") and "layer" in data:
        return "matrix"
    return None


def is_run_directory(path: Path) -> bool:
    """A run written by bench: it starts with run.json (wirespeed 0.1: with discovery.json)."""
    return path.is_dir() and ((path / RUN_FILE).exists() or (path / "discovery.json").exists())


def _process_gone(record: RunRecord) -> bool:
    """Whether a run that says `running` lost its process: only decidable on the host that ran it."""
    if record.status is not RunStatus.RUNNING or record.pid is None or record.host != socket.gethostname():
        return False
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        return b"wirespeed" not in Path(f"/proc/{record.pid}/cmdline").read_bytes()
    except OSError:
        return False


def load_run(path: Path) -> Run:
    """Every record of a run directory that can be read, and one line per file that cannot."""
    if not path.is_dir():
        raise UsageError(f"{path}: no such run directory", hint="`wirespeed runs` lists them")
    problems: list[str] = []
    record: RunRecord | None = None
    if (path / RUN_FILE).exists():
        try:
            record = RunRecord.from_json(read_json(path / RUN_FILE), RUN_FILE)
        except ValueError as exc:
            problems.append(str(exc))
    folders = [path, *(path / phase for phase in (record.phases if record is not None else ()))]
    files = sorted(
        (p for folder in folders for p in folder.glob("*.json") if p.name not in NOT_RECORDS),
        key=lambda p: _order(path, p, record),
    )
    rungs: list[RungResult] = []
    matrices: list[MatrixResult] = []
    tunes: list[TuneResult] = []
    for file in files:
        try:
            data = read_json(file)
            kind = _kind(data, file.name)
            where = str(file.relative_to(path))
            if kind == "rung":
                rungs.append(RungResult.from_json(data, where))
            elif kind == "matrix":
                matrices.append(matrix_from_json(data, where))
            elif kind == "tune":
                tunes.append(TuneResult.from_json(data, where))
        except ValueError as exc:
            problems.append(str(exc))
    imported, import_problems = load_imported(path)
    nodes = _nodes(path, record, problems)
    return Run(
        name=path.name,
        record=record,
        rungs=tuple(rungs),
        matrices=tuple(matrices),
        tunes=tuple(tunes),
        imported=tuple(imported),
        problems=(*problems, *import_problems),
        nodes=nodes,
        process_gone=record is not None and _process_gone(record),
    )


def _order(run: Path, path: Path, record: RunRecord | None) -> tuple[int, int, str]:
    """The run's planned order (`tcp-single`, `before/tcp-single`); what it did not plan (a 0.1 run) in the order
    written, then by name."""
    planned = list(record.planned) if record is not None else []
    key = str(path.relative_to(run).with_suffix(""))
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = 0
    return (planned.index(key) if key in planned else len(planned), mtime, key)


def run_order(path: Path) -> tuple[str, int]:
    """Runs by start time, and runs of the same second by their suffix (`...Z`, `...Z-2`, ..., `...Z-10`)."""
    stamp, _, suffix = path.name.partition("-")
    return (stamp, int(suffix) if suffix.isdigit() else 1 if not suffix else 0)


def _nodes(path: Path, record: RunRecord | None, problems: list[str]) -> tuple[str, ...]:
    """The run's nodes, from its record (a 0.1 run: from its discovery); an unreadable discovery is named."""
    found: Any = None
    discovery = path / "discovery.json"
    if discovery.exists():
        try:
            found = read_json(discovery)
        except ValueError as exc:
            problems.append(str(exc))
    if record is not None and record.nodes:
        return tuple(sorted(n.name for n in record.nodes))
    nodes = found.get("nodes") if isinstance(found, dict) else None
    return tuple(sorted(nodes)) if isinstance(nodes, dict) else ()


def load_imported(path: Path) -> tuple[list[ImportedFile], list[str]]:
    """What `wirespeed import --into` left in the run, in name order, and one line per file not read."""
    found: list[ImportedFile] = []
    problems: list[str] = []
    for file in sorted((path / "imported").glob("*.json")):
        try:
            data = read_json(file)
        except ValueError as exc:
            problems.append(f"imported/{exc}")
            continue
        if isinstance(data, dict) and "tool" in data:
            found.append(ImportedFile(file.name.removesuffix(".json"), data))
        else:
            problems.append(f"imported/{file.name}: not an import object (no `tool`)")
    return found, problems


def list_runs(root: Path) -> list[Run]:
    """Every run under `root`, oldest first (by name: the UTC start time)."""
    if not root.is_dir():
        return []
    return [load_run(path) for path in sorted((p for p in root.iterdir() if is_run_directory(p)), key=run_order)]


def resolve_run(root: Path, name: str) -> Path:
    """A run by the name `runs` prints, a path to its directory, `latest` (the newest) or `baseline`."""
    if name == LATEST:
        runs = sorted((p for p in root.iterdir() if is_run_directory(p)), key=run_order) if root.is_dir() else []
        if not runs:
            raise UsageError(f"no runs in {root}", hint="wirespeed bench writes them; --runs DIR looks elsewhere")
        return runs[-1]
    if name == BASELINE_NAME:
        return baseline(root)
    given = Path(name)
    for candidate in (given, root / name):
        if candidate.is_dir():
            if not is_run_directory(candidate):
                raise UsageError(f"{candidate}: not a run directory", hint="`wirespeed runs` lists them")
            return candidate
    raise UsageError(f"{name}: no such run in {root}", hint="give a name `wirespeed runs` prints, a path, or latest")


def set_baseline(root: Path, run: Path) -> Path:
    if not is_run_directory(run):
        raise UsageError(f"{run}: not a run directory", hint="`wirespeed runs` lists them")
    if run.resolve().parent != root.resolve():
        raise UsageError(f"{run}: not a run under {root}", hint=f"--runs {run.parent}")
    marker = root / BASELINE
    marker.write_text(run.name + "\n")
    return marker


def baseline_name(root: Path) -> str | None:
    marker = root / BASELINE
    try:
        return read_text(marker).strip() or None if marker.exists() else None
    except Unreadable:
        return None


def baseline(root: Path) -> Path:
    name = baseline_name(root)
    if name is None:
        raise UsageError(f"no baseline in {root}", hint="wirespeed baseline set RUN, or give two runs to compare")
    path = root / name
    if not path.is_dir():
        raise UsageError(f"the baseline {name} is no longer in {root}", hint="wirespeed baseline set RUN")
    return path
