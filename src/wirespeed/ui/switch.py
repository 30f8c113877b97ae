"""The switch's fabric ports as tables: status (one row per port), the apply diff, the verify problems."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from wirespeed.core.cluster.routeros import SwitchConfig
from wirespeed.core.cluster.switchstate import Change, PortProblem, SwitchState, wanted_ports


def status_table(state: SwitchState, config: SwitchConfig) -> RenderableType:
    head = Text(
        f"switch {state.address}: {state.board_name or 'board unknown'}, RouterOS {state.version or 'unknown'}",
        style="bold",
    )
    table = Table(show_edge=False, pad_edge=False)
    for column in ("node", "port", "link", "rate", "speed", "autoneg", "FEC", "MTU", "L2MTU", "bridge", "errors"):
        table.add_column(column)
    for node, name in wanted_ports(config):
        port = state.port(name)
        if port is None:
            table.add_row(node, name, Text("no such port", style="red"), *[""] * 8)
            continue
        errors = ", ".join(f"{c} {n}" for c, n in sorted(port.counters.items()) if n) or "0"
        link = "disabled" if port.disabled else (port.status or "?")
        table.add_row(
            node,
            port.name if port.name == port.default_name else f"{port.name} ({port.default_name})",
            Text(link, style="green" if port.link_up else "red"),
            port.rate or "-",
            port.speed,
            port.setting("auto-negotiation") or "?",
            port.fec_mode,
            str(port.mtu) if port.mtu is not None else "?",
            str(port.l2mtu) if port.l2mtu is not None else "?",
            port.bridge or "-",
            Text(errors, style="yellow" if errors != "0" else ""),
        )
    return Group(head, table)


def diff_table(changes: Sequence[Change]) -> RenderableType:
    table = Table(show_edge=False, pad_edge=False)
    for column in ("node", "port", "setting", "now", "after"):
        table.add_column(column)
    for change in changes:
        table.add_row(
            change.node, change.port, change.prop, Text(change.old or "-", style="red"), Text(change.new, style="green")
        )
    return table


def problems_text(problems: Sequence[PortProblem]) -> RenderableType:
    text = Text()
    for problem in problems:
        style = "bold red" if problem.severity == "fail" else "yellow"
        text.append(f"{problem.severity.upper()} ", style=style)
        text.append(f"{problem.port} ({problem.node}) {problem.what}: {problem.found}, expected {problem.expected}\n")
        if problem.fix:
            text.append(f"    {problem.fix}\n", style="cyan")
    return text
