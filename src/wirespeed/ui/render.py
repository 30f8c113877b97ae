"""Rich renderables for results: many nodes, one readable answer (identical outputs folded)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from wirespeed.core.nodeset import fold_names
from wirespeed.core.outcome import CommandResult
from wirespeed.core.run import PhaseRow, TakeawayRow
from wirespeed.core.units import format_rate
from wirespeed.ui import takeaway


def exec_results(results: list[CommandResult]) -> RenderableType:
    """Group nodes whose output is identical under one header; failures get their one-line message."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for result in results:
        key = (result.status.value, result.stdout, result.stderr if not result.ok else "")
        groups.setdefault(key, []).append(result.node)
    parts: list[RenderableType] = []
    by_node = {r.node: r for r in results}
    for (status, stdout, _stderr), names in groups.items():
        first = by_node[names[0]]
        header = Text(f"---- {fold_names(names)} ({len(names)}) ", style="bold")
        header.append(status, style="green" if first.ok else "red")
        parts.append(header)
        if stdout:
            parts.append(Text(stdout.rstrip("\n")))
        if not first.ok:
            message = first.message.split(": ", 1)[1] if ": " in first.message else first.message
            line = Text(message, style="red")
            if first.hint:
                line.append(f"  (hint: {first.hint})", style="dim")
            parts.append(line)
    return Group(*parts)


def testbed_status(status: dict[str, Any]) -> RenderableType:
    """One table per node: interfaces, state, MTU, addresses, shaping and where each cable goes."""
    header = Text()
    header.append(f"testbed {status['prefix']!r}: {status['phase']}", style="bold")
    if status["phase"] == "down":
        leftovers = status.get("leftover_namespaces") or []
        if leftovers:
            header.append(f"  leftover namespaces: {', '.join(leftovers)}", style="red")
        return header
    rate = format_rate(status["half_rate_bps"]) if status["half_rate_bps"] else "not shaped"
    header.append(
        f"  topology {status['topology']}, {status['cables']} cable(s), half rate "
        f"{rate}, MTU {status['mtu']}, management {status['mgmt_subnet']}"
    )
    parts: list[RenderableType] = [header]
    for problem in status["problems"]:
        parts.append(Text(f"problem: {problem}", style="red"))
    for target, fault in status["faults"].items():
        parts.append(Text(f"fault on {target}: {fault}", style="yellow"))
    for node in status["nodes"]:
        parts.append(_iface_table(node["name"], node["interfaces"], with_peer=True))
    if status.get("switch"):
        parts.append(_iface_table(f"switch ({status['switch']['netns']})", status["switch"]["ports"], with_peer=False))
    parts.append(Text(f"cluster file: {status['cluster_file']}", style="dim"))
    if status.get("slurm_conf"):
        parts.append(Text(f"Slurm: SLURM_CONF={status['slurm_conf']} salloc -N <nodes> wirespeed ...", style="dim"))
    return Group(*parts)


def _iface_table(title: str, rows: list[dict[str, Any]], *, with_peer: bool) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", show_edge=False, pad_edge=False)
    for column in ("interface", "state", "mtu", "ipv4", "ipv6", "shaped"):
        table.add_column(column)
    if with_peer:
        table.add_column("cabled to")
    for row in rows:
        state = row["state"]
        if "UP" not in row.get("flags", []):
            state = "ADMIN-DOWN"
        elif "NO-CARRIER" in row.get("flags", []):
            state = "NO-CARRIER"
        style = "green" if state == "UP" else ("dim" if state == "NO-CARRIER" else "red")
        cells = [
            row["iface"],
            Text(state, style=style),
            str(row["mtu"]),
            ", ".join(row["ipv4"]) or "-",
            ", ".join(row["ipv6"]) or "-",
            format_rate(row["rate_bps"]) if row.get("rate_bps") else "-",
        ]
        if with_peer:
            cells.append(row.get("peer") or ("management" if row.get("role") == "management" else "-"))
        table.add_row(*cells)
    return table


def takeaway_table(rows: Sequence[TakeawayRow]) -> Table:
    """The ladder's summary: one line per rung, the ceiling and its first piece of evidence."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for index, column in enumerate(takeaway.COLUMNS):
        table.add_column(column, overflow="fold", no_wrap=index == 0)
    for row in rows:
        table.add_row(*(Text(cell) for cell in takeaway.cells(row)))
    return table


def phase_table(rows: Sequence[PhaseRow]) -> RenderableType:
    """`commission`'s answer: every rung that ran before and after the fixes (a column that says nothing for any
    rung left out), then one line per reason the others could not run here."""
    measured, skipped = takeaway.measured_and_skipped(rows)
    cells = [takeaway.phase_cells(row) for row in measured]
    keep = [i for i, _ in enumerate(takeaway.PHASE_COLUMNS) if i < 3 or any(c[i] not in ("-", "") for c in cells)]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for i in keep:
        table.add_column(takeaway.PHASE_COLUMNS[i], overflow="fold", no_wrap=i == 0)
    for row in cells:
        table.add_row(*(Text(row[i]) for i in keep))
    return Group(table, *(Text(line, style="dim") for line in skipped))
