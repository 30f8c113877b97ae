"""The run directories `wirespeed bench` leaves: find one by the name `runs` prints (or a path, `latest`,
`baseline`), read it into a `Run`, list them, and keep the baseline mark `compare` uses when given one run.

Reading never fails on content: a file that is not UTF-8, not JSON, or not a record of the expected shape is one
line in `Run.problems` naming the file and what is wrong, and the run keeps every other record. Only what is not
a run directory at all is refused. Only regular files are opened (a FIFO would block forever), only inside the run
(a link planted in it that leads out is named, never followed), and JSON nested past wirespeed.core.records.nesting's
limit is refused before it is parsed.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from wirespeed.adapters import files
from wirespeed.core.checks.model import ChecksRecord
from wirespeed.core.errors import UsageError, WirespeedError
from wirespeed.core.fabric.cabling import cabling_from_json
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import NodeFacts, facts_from_json
from wirespeed.core.fabric.meter import NodeSample, read_sample
from wirespeed.core.imports.record import ImportObject
from wirespeed.core.records.decode import Damaged
from wirespeed.core.records.fixrecord import FixRecord, RevertRecord
from wirespeed.core.records.matrix import MatrixResult, matrix_from_json
from wirespeed.core.records.nesting import loads_json
from wirespeed.core.records.results import RungResult
from wirespeed.core.records.run import RUN_FILE, DamagedRecord, ImportedFile, Run, RunRecord, RunStatus
from wirespeed.core.records.tune import TuneResult
from wirespeed.core.toolchain import SetupRecord

BASELINE = "BASELINE"  # a file in the runs folder holding the baseline run's directory name
NOT_RECORDS = frozenset({RUN_FILE, "discovery.json", "takeaway.json", "checks.json", "report.json"})
MAX_RECORD_BYTES = 64 * 2**20  # a record is kilobytes; anything this large is not one of ours
LATEST, BASELINE_NAME = "latest", "baseline"


class Unreadable(ValueError):
    """A file of a run that could not be read; its message is the one line shown for it."""


def _shown(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.relative_to(root))
        except ValueError:
            pass
    return path.name


def read_text(path: Path, root: Path | None = None) -> str:
    """A run file's text; `Unreadable` says why not (not a regular file, too large, not UTF-8, an OS error, a link
    leaving `root`: the run directory, by default the file's own folder)."""
    try:
        return files.read_text(path, MAX_RECORD_BYTES, too_large=" for a record", root=root or path.parent)
    except files.Unreadable as exc:
        raise Unreadable(f"{_shown(path, root)}: {exc}") from None


def read_json(path: Path, root: Path | None = None) -> Any:
    """A run file's JSON value, of any kind (the caller checks its shape); refused past the nesting limit."""
    try:
        return files.load_json(path, MAX_RECORD_BYTES, expect=None, root=root or path.parent)
    except files.Unreadable as exc:
        raise Unreadable(f"{_shown(path, root)}: {exc}") from None


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
    """A run written by bench: it starts with run.json (wirespeed 0.1: with discovery.json). A directory that cannot
    be looked into (mode 000, a name too long) is a run only when its record can be seen."""
    try:
        return path.is_dir() and (os.path.lexists(path / RUN_FILE) or os.path.lexists(path / "discovery.json"))
    except OSError:
        return False


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
    try:
        is_dir = path.is_dir()
    except OSError as exc:
        raise UsageError(f"{_named(path)}: not a run directory ({exc.strerror or exc})") from None
    if not is_dir:
        raise UsageError(f"{path}: no such run directory", hint="`wirespeed runs` lists them")
    try:
        os.listdir(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the run directory: {exc.strerror or exc}",
                         hint="check its permissions") from None  # fmt: skip
    problems: list[str] = []
    record: RunRecord | None = None
    if os.path.lexists(path / RUN_FILE):
        try:
            record = RunRecord.from_json(read_json(path / RUN_FILE, path), RUN_FILE)
            problems.extend(record.damaged)
        except ValueError as exc:
            problems.append(str(exc))
    folders = [path, *(path / phase for phase in (record.phases if record is not None else ()))]
    files = sorted(
        (p for folder in folders for p in _records_in(folder, path, problems) if p.name not in NOT_RECORDS),
        key=lambda p: _order(path, p, record),
    )
    rungs: list[RungResult] = []
    matrices: list[MatrixResult] = []
    tunes: list[TuneResult] = []
    damaged: list[DamagedRecord] = []
    for file in files:
        try:
            found = _measured(read_json(file, path), file.name, str(file.relative_to(path)))
            if isinstance(found, RungResult):
                rungs.append(found)
            elif isinstance(found, MatrixResult):
                matrices.append(found)
            elif isinstance(found, TuneResult):
                tunes.append(found)
        except Damaged as exc:  # read, but a figure in it no measurement can have: named, never shown or compared
            damaged.append(DamagedRecord(str(file.relative_to(path).with_suffix("")), str(exc)))
            problems.append(str(exc))
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
        damaged=tuple(damaged),
    )


def _named(path: Path) -> str:
    """A path for a one-line message: long names (a 5,000-character argument) cut to their first 60 characters."""
    text = str(path)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _records_in(folder: Path, run: Path, problems: list[str]) -> list[Path]:
    """A folder's `*.json`; a phase folder that cannot be listed (or leaves the run through a link) is a problem."""
    try:
        if folder != run:
            files.inside(run, folder)
        return list(folder.glob("*.json"))
    except files.Unreadable as exc:
        problems.append(f"{folder.name}/: {exc}")
    except OSError as exc:
        problems.append(f"{folder.name}/: cannot list it: {exc.strerror or exc}")
    return []


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
    if os.path.lexists(discovery):
        try:
            found = read_json(discovery, path)
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
    for file in _records_in(path / "imported", path, problems) if os.path.lexists(path / "imported") else []:
        try:
            found.append(_imported_record(read_json(file, path), f"imported/{file.name}"))
        except ValueError as exc:
            problems.append(str(exc))
    return found, problems


def list_runs(root: Path) -> list[Run]:
    """Every run under `root`, oldest first (by name: the UTC start time). No folder there is no runs yet; anything
    else that is not a directory (a file, a FIFO, /dev/zero) is refused."""
    return [load_run(path) for path in sorted((p for p in _entries(root) if is_run_directory(p)), key=run_order)]


def _entries(root: Path) -> list[Path]:
    """What the runs folder holds; [] when it does not exist yet; UsageError when it is not a folder to read."""
    try:
        mode = os.stat(root).st_mode
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UsageError(f"--runs {_named(root)}: cannot use it: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(mode):
        kind = next((name for test, name in files.KINDS if test(mode)), "a file")
        raise UsageError(f"--runs {_named(root)}: not a directory ({kind})",
                         hint="--runs names the folder that holds the run directories")  # fmt: skip
    try:
        return list(root.iterdir())
    except OSError as exc:
        raise UsageError(f"--runs {_named(root)}: cannot read it: {exc.strerror or exc}") from None


def resolve_run(root: Path, name: str) -> Path:
    """A run by the name `runs` prints, a path to its directory, `latest` (the newest) or `baseline`."""
    if name == LATEST:
        runs = sorted((p for p in _entries(root) if is_run_directory(p)), key=run_order)
        if not runs:
            raise UsageError(f"no runs in {root}", hint="wirespeed bench writes them; --runs DIR looks elsewhere")
        return runs[-1]
    if name == BASELINE_NAME:
        return baseline(root)
    given = Path(name)
    for candidate in (given, root / name):
        try:
            found = candidate.is_dir()
        except OSError as exc:  # a name longer than the file system takes, say
            raise UsageError(f"{_named(given)}: not a run ({exc.strerror or exc})",
                             hint="give a name `wirespeed runs` prints, a path, or latest") from None  # fmt: skip
        if found:
            if not is_run_directory(candidate):
                raise UsageError(f"{candidate}: not a run directory", hint="`wirespeed runs` lists them")
            return candidate
    raise UsageError(f"{_named(given)}: no such run in {root}",
                     hint="give a name `wirespeed runs` prints, a path, or latest")  # fmt: skip


def set_baseline(root: Path, run: Path) -> Path:
    if not is_run_directory(run):
        raise UsageError(f"{run}: not a run directory", hint="`wirespeed runs` lists them")
    if run.resolve().parent != root.resolve():
        raise UsageError(f"{run}: not a run under {root}", hint=f"--runs {run.parent}")
    return files.write_atomic(root / BASELINE, run.name + "\n")  # never through a link planted at BASELINE


def baseline_name(root: Path) -> str | None:
    marker = root / BASELINE
    try:
        return read_text(marker, root).strip() or None if os.path.lexists(marker) else None
    except (Unreadable, OSError):
        return None


def baseline(root: Path) -> Path:
    name = baseline_name(root)
    if name is None:
        raise UsageError(f"no baseline in {root}", hint="wirespeed baseline set RUN, or give two runs to compare")
    if "/" in name or name in (".", "..") or not name.isprintable():
        raise UsageError(f"{root / BASELINE}: names no run of {root}", hint="wirespeed baseline set RUN")
    path = root / name
    if not path.is_dir():
        raise UsageError(f"the baseline {name} is no longer in {root}", hint="wirespeed baseline set RUN")
    return path


T = TypeVar("T")


def load_optional(run: Path, name: str, read: Callable[[Any, str], T], problems: list[str]) -> T | None:
    """A record of the run that it may not have (`checks.json`, `after/checks.json`, `fix.json`), typed by `read`
    (a record's `from_json`): None when absent; a file that cannot be read, or is not that record, is one line in
    `problems` naming it, and None."""
    path = run / name
    if not os.path.lexists(path):
        return None
    try:
        return read(read_json(path, run), name)
    except ValueError as exc:  # Unreadable, or a field not of the record's shape: its message names the file
        problems.append(str(exc))
    return None


def load_discovery(run: Path, problems: list[str]) -> Discovery | None:
    """discovery.json typed, node by node: a node that cannot be read is one line in `problems` (its samples are
    not plotted) and the others still count; an unreadable cabling map is an empty one, said the same way."""
    path = run / "discovery.json"
    if not os.path.lexists(path):
        return None
    try:
        raw = read_json(path, run)
    except Unreadable as exc:
        problems.append(str(exc))
        return None
    if not isinstance(raw, dict):
        return None
    facts: dict[str, NodeFacts] = {}
    for name, node in (raw.get("nodes") or {}).items():
        try:
            facts[name] = facts_from_json(node)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            problems.append(f"discovery.json: node {name} not read ({exc}); its samples are not plotted")
    try:
        found = Discovery.from_json({**raw, "nodes": {}})
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        problems.append(f"discovery.json: the cabling map not read ({exc})")
        found = Discovery(facts={}, cabling=cabling_from_json({}))
    found.facts = facts
    return found


def load_samples(path: Path, problems: list[str], run: Path) -> list[NodeSample | None]:
    """A rung's samples, typed; a line that is no sample (a half-written last line: the run was killed; a line
    nested past the limit) is None, which the timeline counts, not fatal."""
    try:
        text = read_text(path, run)
    except Unreadable as exc:
        problems.append(str(exc))
        return []
    samples: list[NodeSample | None] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            samples.append(read_sample(loads_json(line, expect=None)))
        except ValueError:
            samples.append(None)
    return samples


def load_revert_record(path: Path) -> RevertRecord:
    """What `fix --revert` restores: `--record` (a commission's fix-record.json, or last-fix.json in the state
    directory), typed; one line naming the file when there is none or it is not one."""
    try:
        data = files.load_json(path, MAX_RECORD_BYTES, expect=dict)
    except files.Unreadable as exc:
        if str(exc) == "no such file":
            raise WirespeedError(f"{path}: no fix to revert", hint="`wirespeed fix --yes` writes it") from None
        raise WirespeedError(f"{path}: unreadable fix record: {exc}") from None
    try:
        return RevertRecord.from_json(data, str(path))
    except ValueError as exc:
        raise WirespeedError(f"unreadable fix record: {exc}") from None


def _discovery_record(data: Any, where: str) -> Discovery:
    try:
        return Discovery.from_json(data)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{where}: not a discovery ({exc})") from None


def _imported_record(data: Any, where: str) -> ImportedFile:
    """An import object (`ImportObject.from_json`: ValueError naming the file and the field)."""
    return ImportedFile(Path(where).name.removesuffix(".json"), ImportObject.from_json(data, where))


# Every file a run keeps beside its rung, matrix and tune records, by name, with the record that reads it.
RECORD_FILES: dict[str, Callable[[Any, str], object]] = {
    RUN_FILE: RunRecord.from_json,
    "discovery.json": _discovery_record,
    "checks.json": ChecksRecord.from_json,
    "fix.json": FixRecord.from_json,
    "fix-record.json": RevertRecord.from_json,
    "setup.json": SetupRecord.from_json,
}


def record_files(run: Path) -> list[Path]:
    """Every record file of a run: the JSON files at its top, in its phase folders and in imported/ (not the tools'
    raw outputs, which sit in a folder per rung)."""
    folders = [run, run / "imported", *(p for p in (run / "before", run / "after") if p.is_dir())]
    return sorted(p for folder in folders if folder.is_dir() for p in folder.glob("*.json"))


def read_record(run: Path, path: Path) -> object:
    """One record file of a run, typed: by its name (run.json, discovery.json, checks.json, fix.json, ...), as an
    import (imported/), or by the kind it says it is (a rung, a matrix, a tune). `ValueError` names the file and
    what is wrong; `Damaged` a figure no measurement can have."""
    where = str(path.relative_to(run))
    data = read_json(path, run)
    if path.parent.name == "imported":
        return _imported_record(data, where)
    reader = RECORD_FILES.get(path.name)
    if reader is not None:
        return reader(data, where)
    found = _measured(data, path.name, where)
    if found is None:
        raise ValueError(f"{where}: not a record of a run")
    return found


def _measured(data: Any, name: str, where: str) -> RungResult | MatrixResult | TuneResult | None:
    """A rung, matrix or tune record, by the kind it says it is (or its shape, written before kinds); None: none."""
    kind = _kind(data, name)
    if kind == "rung":
        return RungResult.from_json(data, where)
    if kind == "matrix":
        return matrix_from_json(data, where)
    if kind == "tune":
        return TuneResult.from_json(data, where)
    return None
