"""JUnit XML of a check run, for CI systems (Jenkins, GitLab, GitHub's test reporters): one test case per check.

The shape is the one those readers share (junit-10.xsd as Jenkins and junitparser read it): `<testsuites>` holding
one `<testsuite>` with its counts, a `<testcase>` per check named by its id, a failing check a `<failure>` whose
message is the summary and whose text is the evidence and the fix, a skipped one `<skipped>` with the reason. JUnit
has no warning: a warning passes, its summary, evidence and fix in `<system-out>`. A check or node that could not
be read is an `<error>` case of its own. Pure: records in, text out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from xml.etree import ElementTree as ET

from wirespeed.core.checks.model import CheckResult, CheckRun, CheckStatus

CLASSNAME = "wirespeed.check"
UNREAD = "unread"


def _details(result: CheckResult) -> str:
    """The evidence, one line each, then the fix, as `wirespeed check` prints them."""
    lines = []
    for e in result.evidence:
        where = " ".join(part for part in (e.node, e.subject) if part)
        shown = e.value if isinstance(e.value, str) else json.dumps(e.value)
        lines.append(f"{where}: {e.what} = {shown}" if where else f"{e.what} = {shown}")
    for fix in result.fixes:
        lines.append(f"fix{f' on {fix.node}' if fix.node else ''}: {fix.description}")
        lines += [f"  {command}" for command in fix.commands]
        lines += [f"  write {path}" for path, _ in fix.files]
    return "\n".join(lines)


def _case(suite: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", {"classname": CLASSNAME, "name": name, "time": "0"})


def checks_junit(run: CheckRun, suite_name: str = "wirespeed check") -> str:
    """The run as JUnit XML text (UTF-8, with its declaration)."""
    results: Sequence[CheckResult] = run.results
    failures = sum(r.status is CheckStatus.FAIL for r in results)
    skipped = sum(r.status is CheckStatus.SKIP for r in results)
    counts = {"tests": len(results) + len(run.errors), "failures": failures, "errors": len(run.errors),
              "skipped": skipped, "time": "0"}  # fmt: skip
    root = ET.Element("testsuites", {k: str(v) for k, v in counts.items()})
    suite = ET.SubElement(root, "testsuite", {"name": suite_name, **{k: str(v) for k, v in counts.items()}})
    for result in results:
        case = _case(suite, f"{result.id}: {result.title}")
        if result.status is CheckStatus.FAIL:
            failure = ET.SubElement(case, "failure", {"message": result.summary, "type": "fail"})
            failure.text = _details(result)
        elif result.status is CheckStatus.SKIP:
            ET.SubElement(case, "skipped", {"message": result.summary})
        elif result.status is CheckStatus.WARN:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(part for part in (f"warn: {result.summary}", _details(result)) if part)
    for number, error in enumerate(run.errors, start=1):
        case = _case(suite, f"{UNREAD} {number}: {error[:80]}")
        ET.SubElement(case, "error", {"message": error, "type": UNREAD})
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
