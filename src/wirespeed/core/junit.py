"""JUnit XML of a check run or a commission, for CI systems (Jenkins, GitLab, GitHub's test reporters).

The shape is the one those readers share (junit-10.xsd as Jenkins and junitparser read it): `<testsuites>` holding
one `<testsuite>` with its counts and one `<testcase>` per check or rung.
- A failing check is a `<failure>`: its summary is the message, its evidence and fix are the text.
- A skipped one is `<skipped>`, with the reason.
- JUnit has no warning: a warning passes, with its summary, evidence and fix in `<system-out>`.
- A check or node that could not be read, or a run that stopped, is an `<error>`.
- A rung that ran passes, with its figure and ceiling in `<system-out>`; one that failed is a failure.
Pure: records in, text out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from xml.etree import ElementTree as ET

from wirespeed.core.checks.model import CheckResult, ChecksRecord, CheckStatus, Evidence
from wirespeed.core.records.results import RungResult, RungStatus

PASS, FAIL, SKIP, ERROR = "pass", "fail", "skip", "error"


@dataclass(frozen=True)
class Case:
    classname: str  # wirespeed.check, wirespeed.rung, wirespeed.commission
    name: str
    outcome: str  # PASS, FAIL, SKIP or ERROR
    message: str = ""
    text: str = ""  # the failure's or error's text; a passing case's system-out


def _evidence_line(e: Evidence) -> str:
    where = " ".join(str(part) for part in (e.node, e.subject) if part)
    shown = e.value if isinstance(e.value, str) else json.dumps(e.value)
    return f"{where}: {e.what} = {shown}" if where else f"{e.what} = {shown}"


def _check_text(result: CheckResult) -> str:
    """The evidence, one line each, then each fix with its commands, as `wirespeed check` prints them."""
    lines = [_evidence_line(e) for e in result.evidence]
    for fix in result.fixes:
        lines.append(f"fix{f' on {fix.node}' if fix.node else ''}: {fix.description}")
        lines += [f"  {command}" for command in fix.commands]
        lines += [f"  write {path}" for path, _ in fix.files]
    return "\n".join(lines)


def check_cases(checks: ChecksRecord) -> list[Case]:
    """One case per check, and one error case per check or node that could not be read."""
    cases = []
    for r in checks.results:
        name, summary = f"{r.id}: {r.title}", r.summary
        if r.status is CheckStatus.FAIL:
            cases.append(Case("wirespeed.check", name, FAIL, summary, _check_text(r)))
        elif r.status is CheckStatus.SKIP:
            cases.append(Case("wirespeed.check", name, SKIP, summary))
        elif r.status is CheckStatus.WARN:
            text = "\n".join(part for part in (f"warn: {summary}", _check_text(r)) if part)
            cases.append(Case("wirespeed.check", name, PASS, text=text))
        else:
            cases.append(Case("wirespeed.check", name, PASS, text=summary))
    errors = checks.errors
    cases += [Case("wirespeed.check", f"unread {n}: {e[:80]}", ERROR, e) for n, e in enumerate(errors, start=1)]
    return cases


def rung_cases(rungs: Sequence[RungResult]) -> list[Case]:
    """One case per rung: ran (its ceiling and first evidence as output), skipped (why, and the fix), failed or
    interrupted (why)."""
    cases = []
    for r in rungs:
        name = r.label
        if r.status is RungStatus.RAN:
            ceiling = f"ceiling {r.ceiling.name}: {'; '.join(r.ceiling.evidence[:2])}" if r.ceiling else ""
            cases.append(Case("wirespeed.rung", name, PASS, text=ceiling))
        elif r.status is RungStatus.SKIPPED:
            why = f"{r.reason or 'skipped'}" + (f" (fix: {r.fix})" if r.fix else "")
            cases.append(Case("wirespeed.rung", name, SKIP, why))
        elif r.status is RungStatus.FAILED:
            cases.append(Case("wirespeed.rung", name, FAIL, r.reason or "failed"))
        else:
            cases.append(Case("wirespeed.rung", name, ERROR, f"{r.status.value}: {r.reason or ''}".rstrip(": ")))
    return cases


def junit_xml(suite_name: str, cases: Sequence[Case]) -> str:
    """The cases as JUnit XML text, with its declaration."""
    counts = {
        "tests": len(cases),
        "failures": sum(c.outcome == FAIL for c in cases),
        "errors": sum(c.outcome == ERROR for c in cases),
        "skipped": sum(c.outcome == SKIP for c in cases),
        "time": "0",
    }
    shown = {k: str(v) for k, v in counts.items()}
    # junit-10.xsd gives <testsuites> no `skipped` (Jenkins' xunit refuses it there); <testsuite> has it
    root = ET.Element("testsuites", {k: v for k, v in shown.items() if k != "skipped"})
    suite = ET.SubElement(root, "testsuite", {"name": suite_name, **shown})
    for c in cases:
        case = ET.SubElement(suite, "testcase", {"classname": c.classname, "name": c.name, "time": "0"})
        if c.outcome in (FAIL, ERROR):
            tag = "failure" if c.outcome == FAIL else "error"
            element = ET.SubElement(case, tag, {"message": c.message, "type": c.outcome})
            element.text = c.text or None
        elif c.outcome == SKIP:
            ET.SubElement(case, "skipped", {"message": c.message})
        elif c.text:
            ET.SubElement(case, "system-out").text = c.text
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def checks_junit(checks: ChecksRecord) -> str:
    return junit_xml("wirespeed check", check_cases(checks))


def commission_junit(checks: ChecksRecord | None, rungs: Sequence[RungResult], status: str, reason: str | None) -> str:
    """The commission as CI reads it: the checks as the run left the cluster (after the fixes where they ran), the
    rungs of the last phase measured, and an error case when the run did not complete."""
    cases = check_cases(checks or ChecksRecord(()))
    cases += rung_cases(rungs)
    if status != "complete":
        cases.append(Case("wirespeed.commission", "commission", ERROR, f"{status}: {reason or ''}".rstrip(": ")))
    return junit_xml("wirespeed commission", cases)
