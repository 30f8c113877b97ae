"""Read a run directory back into a `RunReport`: every rung result, the samples recorded while each ran, the
checks, the discovery and what was imported into it. A run cut short still reports what it has; a file that
cannot be read is named in the report, not fatal, unless nothing at all can be read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wirespeed.core.facts import facts_from_json
from wirespeed.core.matrix import MatrixResult, matrix_from_json
from wirespeed.core.meter import layout_from_facts
from wirespeed.core.report import ImportedFile, RunReport
from wirespeed.core.timeline import build_timeline
from wirespeed.engine.runs import load_imported, load_run


def _optional_json(path: Path, problems: list[str]) -> Any:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        problems.append(f"{path.name}: not read ({exc})")
        return None


def _sample_lines(path: Path, problems: list[str]) -> list[Any]:
    """Each line as JSON; a half-written last line (the run was killed) is counted by the timeline, not fatal."""
    if not path.exists():
        return []
    lines: list[Any] = []
    try:
        text = path.read_text()
    except OSError as exc:
        problems.append(f"{path.name}: not read ({exc.strerror or exc})")
        return []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            lines.append(json.loads(line))
        except ValueError:
            lines.append(None)  # build_timeline counts it as unreadable
    return lines


def load_report(path: Path) -> RunReport:
    run = load_run(path)  # refuses what is not a run directory, with a hint
    problems: list[str] = []
    discovery = _optional_json(path / "discovery.json", problems)
    layouts = []
    if isinstance(discovery, dict):
        for name, raw in (discovery.get("nodes") or {}).items():
            try:
                layouts.append(layout_from_facts(facts_from_json(raw)))
            except (KeyError, TypeError, ValueError) as exc:
                problems.append(f"discovery.json: node {name} not read ({exc}); its samples are not plotted")
    else:
        discovery = None
    samples = [
        (name, _sample_lines(path / f"{name}.samples.jsonl", problems))
        for name in run.rungs
        if (path / f"{name}.samples.jsonl").exists()
    ]
    matrices: list[MatrixResult] = []
    for layer, data in run.matrices.items():
        try:
            matrices.append(matrix_from_json(data))
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"matrix-{layer}.json: not read ({exc})")
    takeaway = _optional_json(path / "takeaway.json", problems)
    checks = _optional_json(path / "checks.json", problems)
    return RunReport(
        run=path.name,
        rungs=tuple(run.rungs.values()),
        takeaway=tuple(takeaway) if isinstance(takeaway, list) else None,
        checks=checks if isinstance(checks, dict) else None,
        discovery=discovery,
        timeline=build_timeline(layouts, samples),
        imported=tuple(ImportedFile(stem, obj) for stem, obj in load_imported(path)),
        problems=tuple(problems),
        matrices=tuple(matrices),
    )
