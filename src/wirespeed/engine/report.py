"""Read a run directory back into a `RunReport`: the run's records, the samples recorded while each rung and matrix
ran, the checks and the discovery. A run cut short still reports what it has; a file that cannot be read is one
line in the report, never the end of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from wirespeed.core.cabling import cabling_from_json
from wirespeed.core.discovery import Discovery
from wirespeed.core.facts import NodeFacts, facts_from_json
from wirespeed.core.meter import layout_from_facts
from wirespeed.core.nesting import loads_json
from wirespeed.core.report import RunReport
from wirespeed.core.timeline import build_timeline
from wirespeed.engine.runs import Unreadable, load_run, read_json, read_text


def _optional_json(path: Path, problems: list[str], run: Path) -> Any:
    if not os.path.lexists(path):
        return None
    try:
        return read_json(path, run)
    except Unreadable as exc:
        problems.append(str(exc))
        return None


def _sample_lines(path: Path, problems: list[str], run: Path) -> list[Any]:
    """Each line as JSON; a half-written last line (the run was killed) is counted by the timeline, not fatal, and
    so is a line nested past the limit."""
    try:
        text = read_text(path, run)
    except Unreadable as exc:
        problems.append(str(exc))
        return []
    lines: list[Any] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            lines.append(loads_json(line, expect=None))
        except ValueError:
            lines.append(None)  # build_timeline counts it as unreadable
    return lines


def _discovery(raw: object, problems: list[str]) -> Discovery | None:
    """discovery.json typed, node by node: a node that cannot be read is one line in `problems` (its samples are
    not plotted) and the others still count; an unreadable cabling map is an empty one, said the same way."""
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


def load_report(path: Path) -> RunReport:
    run = load_run(path)  # refuses what is not a run directory, with a hint
    problems = list(run.problems)
    discovery = _discovery(_optional_json(path / "discovery.json", problems, path), problems)
    layouts = [layout_from_facts(facts) for facts in discovery.facts.values()] if discovery else []
    recorded = [(r.label, r.key) for r in run.rungs] + [
        (f"matrix-{m.layer}", f"matrix-{m.layer}") for m in run.matrices
    ]
    samples = [
        (label, _sample_lines(path / f"{key}.samples.jsonl", problems, path))
        for label, key in recorded
        if os.path.lexists(path / f"{key}.samples.jsonl")
    ]
    checks = _optional_json(path / "checks.json", problems, path) or _optional_json(
        path / "before" / "checks.json", problems, path
    )
    after = _optional_json(path / "after" / "checks.json", problems, path)
    fix = _optional_json(path / "fix.json", problems, path)
    return RunReport(
        run=run,
        checks=checks if isinstance(checks, dict) else None,
        discovery=discovery,
        timeline=build_timeline(layouts, samples),
        problems=tuple(dict.fromkeys(problems)),
        checks_after=after if isinstance(after, dict) else None,
        fix=fix if isinstance(fix, dict) else None,
    )
