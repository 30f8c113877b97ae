"""The run directories `wirespeed bench` leaves: list them, load one's rung results, and the baseline mark that
`compare` uses when given one run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirespeed.core import imported
from wirespeed.core.errors import UsageError

BASELINE = "BASELINE"  # a file in the runs folder holding the baseline run's directory name
NOT_RUNGS = frozenset({"discovery.json", "takeaway.json", "checks.json"})


@dataclass(frozen=True)
class RunInfo:
    path: Path
    nodes: tuple[str, ...]
    rungs: dict[str, dict[str, Any]]
    matrices: dict[str, dict[str, Any]] = field(default_factory=dict)  # `bench matrix` results by layer


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}", hint="is this a run directory?") from None
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc})", hint="a run cut short writes whole files only") from None


def load_run(path: Path) -> RunInfo:
    """A run's rung results by name, in the order they were written, then those its imported results stand for,
    and the nodes its discovery saw."""
    if not path.is_dir():
        raise UsageError(f"{path}: no such run directory", hint="`wirespeed runs` lists them")
    files = sorted((p for p in path.glob("*.json") if p.name not in NOT_RUNGS), key=lambda p: p.stat().st_mtime_ns)
    rungs: dict[str, dict[str, Any]] = {}
    matrices: dict[str, dict[str, Any]] = {}
    for file in files:
        data = _read_json(file)
        if isinstance(data, dict) and "rung" in data:
            rungs[str(data["rung"])] = data
        elif isinstance(data, dict) and file.name.startswith("matrix-") and "layer" in data:
            matrices[str(data["layer"])] = data
    for stem, obj in load_imported(path):
        rung = imported.as_rung(stem, obj)
        if rung is not None:
            rungs[rung["rung"]] = rung
    if not rungs and not matrices:
        raise UsageError(f"{path}: no rung results in it", hint="`wirespeed runs` lists the runs")
    discovery = path / "discovery.json"
    nodes: tuple[str, ...] = ()
    if discovery.exists():
        found = _read_json(discovery)
        nodes = tuple(sorted(found.get("nodes", {}))) if isinstance(found, dict) else ()
    return RunInfo(path, nodes, rungs, matrices)


def load_imported(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """What `wirespeed import --into` left in the run: (file stem, import object), in name order."""
    found: list[tuple[str, dict[str, Any]]] = []
    for file in sorted((path / "imported").glob("*.json")):
        data = _read_json(file)
        if isinstance(data, dict) and "tool" in data:
            found.append((file.name.removesuffix(".json"), data))
    return found


def list_runs(root: Path) -> list[RunInfo]:
    """Every run under `root`, oldest first; folders that hold no rung result are left out."""
    if not root.is_dir():
        return []
    found: list[RunInfo] = []
    for path in sorted(p for p in root.iterdir() if p.is_dir()):
        try:
            found.append(load_run(path))
        except UsageError:
            continue
    return found


def set_baseline(root: Path, run: Path) -> Path:
    load_run(run)  # refuse what is not a run
    if run.resolve().parent != root.resolve():
        raise UsageError(f"{run}: not a run under {root}", hint=f"--runs {run.parent}")
    marker = root / BASELINE
    marker.write_text(run.name + "\n")
    return marker


def baseline(root: Path) -> Path:
    marker = root / BASELINE
    if not marker.exists():
        raise UsageError(f"no baseline in {root}", hint="wirespeed baseline set RUN, or give two runs to compare")
    return root / marker.read_text().strip()
