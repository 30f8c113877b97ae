"""The check report: a table grouped by severity, every line that does not pass followed by its fix."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from wirespeed.core.checks.model import CheckRun, CheckStatus

STYLE = {CheckStatus.FAIL: "bold red", CheckStatus.WARN: "yellow", CheckStatus.SKIP: "dim", CheckStatus.PASS: "green"}


def check_report(run: CheckRun) -> RenderableType:
    table = Table(show_edge=False, pad_edge=False, show_header=True)
    table.add_column("status")
    table.add_column("check")
    table.add_column("what was seen")
    for item in run.results:
        table.add_row(Text(item.status.value.upper(), style=STYLE[item.status]), item.id, item.summary)
    parts: list[RenderableType] = [table]
    for item in run.results:
        if item.status not in (CheckStatus.FAIL, CheckStatus.WARN):
            continue
        text = Text()
        text.append(f"\n{item.status.value.upper()} {item.id}: {item.title}\n", style=STYLE[item.status])
        for evidence in item.evidence[:12]:
            where = " ".join(x for x in (evidence.node, evidence.subject) if x)
            text.append(f"  seen: {where}: {evidence.what} = {evidence.value}\n", style="dim")
        if len(item.evidence) > 12:
            text.append(f"  ... and {len(item.evidence) - 12} more (see --json)\n", style="dim")
        for fix in item.fixes:
            text.append(f"  fix{' on ' + fix.node if fix.node else ''}: {fix.description}\n")
            for command in fix.commands:
                text.append(f"    $ {command}\n", style="cyan")
            for path, content in fix.files:
                text.append(f"    file {path}:\n", style="cyan")
                for line in content.rstrip("\n").splitlines():
                    text.append(f"      {line}\n", style="cyan")
        parts.append(text)
    counts = {s: sum(r.status is s for r in run.results) for s in CheckStatus}
    summary = Text(
        f"\n{counts[CheckStatus.FAIL]} fail, {counts[CheckStatus.WARN]} warn, "
        f"{counts[CheckStatus.PASS]} pass, {counts[CheckStatus.SKIP]} skip"
    )
    for error in run.errors:
        summary.append(f"\nerror: {error}", style="red")
    parts.append(summary)
    return Group(*parts)
