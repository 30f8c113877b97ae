"""Read a run directory back into a `RunReport`: the run's records, the samples recorded while each rung and matrix
ran, the checks, the fix and the discovery, each typed (read by wirespeed.engine.runs). A run cut short still
reports what it has; a file that cannot be read is one line in the report, never the end of it."""

from __future__ import annotations

import os
from pathlib import Path

from wirespeed.core.checks.model import ChecksRecord
from wirespeed.core.fabric.meter import layout_from_facts
from wirespeed.core.fabric.timeline import build_timeline
from wirespeed.core.records.fixrecord import FixRecord
from wirespeed.core.records.report import RunReport
from wirespeed.engine.runs import load_discovery, load_optional, load_run, load_samples


def load_report(path: Path) -> RunReport:
    run = load_run(path)  # refuses what is not a run directory, with a hint
    problems = list(run.problems)
    discovery = load_discovery(path, problems)
    layouts = [layout_from_facts(facts) for facts in discovery.facts.values()] if discovery else []
    recorded = [(r.label, r.key) for r in run.rungs] + [
        (f"matrix-{m.layer}", f"matrix-{m.layer}") for m in run.matrices
    ]
    samples = [
        (label, load_samples(path / f"{key}.samples.jsonl", problems, path))
        for label, key in recorded
        if os.path.lexists(path / f"{key}.samples.jsonl")
    ]
    checks = load_optional(path, "checks.json", ChecksRecord.from_json, problems) or load_optional(
        path, "before/checks.json", ChecksRecord.from_json, problems
    )
    after = load_optional(path, "after/checks.json", ChecksRecord.from_json, problems)
    fix = load_optional(path, "fix.json", FixRecord.from_json, problems)
    return RunReport(
        run=run,
        checks=checks,
        discovery=discovery,
        timeline=build_timeline(layouts, samples),
        problems=tuple(dict.fromkeys(problems)),
        checks_after=after,
        fix=fix,
    )
