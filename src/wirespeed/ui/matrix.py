"""The all-pairs matrix in the terminal: senders down, receivers across, Gb/s per direction, outliers in red."""

from __future__ import annotations

import textwrap

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from wirespeed.core.records.matrix import MatrixResult, relayed_lines

WIDTH = 120  # a note's lines wrap here


def matrix_view(result: MatrixResult) -> RenderableType:
    title = (
        f"{result.layer.upper()} all pairs: {result.pairs} pairs in {len(result.rounds)} rounds, "
        f"{sum(result.round_seconds):.1f} s; Gb/s per direction"
        + (" (both directions at once)" if result.bidir else "")
    )
    if result.status == "skipped":
        return Text(f"{result.layer.upper()} all pairs: skipped: {result.reason} ({result.fix})", style="dim")
    flagged = {(o.node, o.subject) for o in result.outliers if o.kind in ("cell", "expected", "relay")}
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("from \\ to")
    for node in result.nodes:
        table.add_column(node, justify="right")
    for source in result.nodes:
        row: list[Text | str] = [source]
        for target in result.nodes:
            cell = result.cell(source, target)
            if source == target:
                row.append(Text("-", style="dim"))
            elif cell is None:
                row.append(Text("no link", style="dim"))
            elif cell.tool_gbps is None:
                row.append(Text("failed", style="bold red"))
            else:
                style = "bold red" if (source, target) in flagged else ""
                hops = f" ({cell.hops})" if cell.relays else ""  # the cables crossed, through relays
                row.append(Text(f"{cell.tool_gbps:.2f}{hops}", style=style))
        table.add_row(*row)
    notes = Text()
    relayed = relayed_lines(result)
    if relayed:
        notes.append("  (n): n hops, through the ring's relays; cells through relays or sharing a cable half:\n")
    for line in relayed:
        notes.append(_wrapped(f"  {line}"), style="dim")
    for outlier in result.outliers:
        style = "red" if outlier.kind != "expected" else "yellow"
        text = f"  {outlier.kind}: {outlier.text}"
        notes.append(_wrapped(text) if outlier.kind == "relay" else f"{text}\n", style=style)
    if not result.outliers and result.cells:
        notes.append("  no outlier: every pair within 75% of the median\n", style="green")
    return Group(table, notes)


def _wrapped(line: str) -> str:
    return "\n".join(textwrap.wrap(line, WIDTH, subsequent_indent="      ", break_on_hyphens=False)) + "\n"
