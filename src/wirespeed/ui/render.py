"""Rich renderables for results: many nodes, one readable answer (identical outputs folded)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from wirespeed.core.cluster.nodeset import fold_names
from wirespeed.core.fabric.units import format_rate
from wirespeed.core.outcome import CommandResult
from wirespeed.core.records.run import PhaseRow, TakeawayRow
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


def takeaway_table(rows: Sequence[TakeawayRow], *, fold: bool = True) -> RenderableType:
    """The ladder's summary: one line per rung that ran with its figure, range and ceiling (a column that says
    nothing for every rung left out); the ceiling's why a numbered note below the table (wrapped at the width,
    interface lists folded unless `fold` is False: piped output), then one line per reason rungs were skipped."""
    measured = [row for row in rows if row.status != "skipped"]
    skipped: dict[str, list[str]] = {}
    for row in rows:
        if row.status == "skipped":
            skipped.setdefault(row.why, []).append(row.rung)
    shown, notes = takeaway.summary_rows(measured, fold=fold)
    columns = takeaway.COLUMNS[:-1]  # the why: a note below
    keep = [i for i in range(len(columns)) if i < 2 or i == len(columns) - 1 or any(c[i] != "-" for c in shown)]
    # the figure and the ceiling keep their words whole first; the wire peak, busiest core and full duplex give way
    table = FittedTable([columns[i] for i in keep], [[c[i] for i in keep] for c in shown],
                        yield_first=[keep.index(i) for i in (4, 3, 2) if i in keep])  # fmt: skip
    lines = [f"not measured here: {', '.join(names)}: {why}" for why, names in skipped.items()]
    phase = takeaway.shared_phase(measured)
    title = [Text(f"measured {phase} the fixes" if phase in ("before", "after") else f"measured: {phase}",
                  style="bold")] if phase else []  # fmt: skip
    return Group(*title, table, *(Text(line) for line in notes), *(Text(line, style="dim") for line in lines))


def phase_table(rows: Sequence[PhaseRow], *, fold: bool = True) -> RenderableType:
    """`commission`'s answer, narrow enough for 80 columns: every rung that ran, before and after the fixes, with
    the change (or `within noise`) and the ceiling; each ceiling's why as a numbered note below, then how the spread
    was taken and one line per reason the other rungs could not run here. `fold` folds long interface lists in the
    notes (a terminal); piped output passes False and prints with soft wrap, keeping every line whole."""
    measured, skipped = takeaway.measured_and_skipped(rows)
    cells, notes = takeaway.final_rows(measured, fold=fold)
    table = FittedTable(list(takeaway.FINAL_COLUMNS), cells, yield_first=[3])
    lines = [*notes, *takeaway.spread_notes(measured)]
    return Group(table, *(Text(line) for line in lines), *(Text(line, style="dim") for line in skipped))


class FittedTable:
    """A table of text that fits the width it is given: the first column never wraps, every other one wraps at
    spaces and folds (never crops) a word longer than it is wide. Where the widths allow, no column is narrower than
    its longest word (a range such as `(10.88-11.04)` broken mid-number reads wrong); where they do not, the columns
    in `yield_first` give up that floor first, then the others."""

    def __init__(self, columns: Sequence[str], rows: Sequence[Sequence[str]], yield_first: Sequence[int] = ()):
        self.columns, self.rows, self.yield_first = list(columns), [list(r) for r in rows], list(yield_first)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        count = len(self.columns)
        cells = [[name, *(row[i] for row in self.rows)] for i, name in enumerate(self.columns)]
        floors = [max((cell_len(w) for cell in column for w in cell.split()), default=1) for column in cells]
        widths = [max([floors[i], *(cell_len(cell) for cell in column[1:])]) for i, column in enumerate(cells)]
        budget = options.max_width - 3 * (count - 1)  # between two columns: a space, the rule's gap, a space
        order = [*self.yield_first, *(i for i in range(count - 1, 0, -1) if i not in self.yield_first)]
        while sum(widths) > budget:  # narrow the widest column still above its floor, as Rich would, one at a time
            above = [i for i in range(1, count) if widths[i] > floors[i]]
            if above:
                widest = max(above, key=lambda i: widths[i])
                widths[widest] -= 1
            elif order:
                shed = order.pop(0)
                floors[shed] = min(floors[shed], 4)  # this column's words may fold now
            else:
                break
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for i, name in enumerate(self.columns):
            table.add_column(name, overflow="fold", no_wrap=i == 0, width=widths[i])
        for row in self.rows:
            table.add_row(*(Text(cell) for cell in row))
        yield table
