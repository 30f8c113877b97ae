"""The live dashboard of `wirespeed watch`: per node and cable, TX/RX bars against the line rate, NOW and PEAK,
the halves beneath, CPU busy and the busiest core, error counters that grew. Fits 80 columns; wider terminals
get the per-half split of each direction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from wirespeed.core.counters import CableRate
from wirespeed.core.meter import NodeView, Peak

FULL, EMPTY = "█", "░"


def bar(value: float | None, scale: float | None, width: int) -> Text:
    """A bar of `width` cells for value/scale; scale unknown: an empty bar."""
    if value is None or not scale or scale <= 0:
        return Text(EMPTY * width, style="dim")
    filled = max(0, min(width, round(width * value / scale)))
    style = "green" if value < 0.75 * scale else ("yellow" if value < 0.95 * scale else "bold red")
    return Text(FULL * filled, style=style) + Text(EMPTY * (width - filled), style="dim")


def gb(value: float | None, width: int = 6) -> str:
    """Gb/s with two decimals below 10 (a shaped 1 Gb/s half reads 0.99, not 1.0), one above."""
    if value is None:
        return f"{'-':>{width}}"
    return f"{value:{width}.2f}" if abs(value) < 10 else f"{value:{width}.1f}"


def _direction(label: str, name: str, value: float | None, peak: float, scale: float | None, bar_width: int) -> Text:
    line = Text(f" {label:<10.10} {name} ")
    line += bar(value, scale, bar_width)
    line += Text(f" {gb(value)} Gb/s  peak {gb(peak)}")
    return line


def _cable(cable: CableRate, peak: Peak, width: int) -> list[Text]:
    bar_width = max(10, min(40, width - 46))
    scale = cable.line_rate_gbps
    lines = [
        _direction(cable.label, "TX", cable.tx_gbps, peak.tx_gbps, scale, bar_width),
        _direction("", "RX", cable.rx_gbps, peak.rx_gbps, scale, bar_width),
    ]
    of = f" of {scale:g}" if scale else ""
    shared = "  shared PHY" if cable.shared_phy else ""
    lines.append(
        Text(f" {'':<10} full duplex {gb(cable.duplex_gbps)} Gb/s  peak {gb(peak.duplex_gbps)}{of}{shared}", "cyan")
    )
    if len(cable.halves) > 1 or width >= 100:
        for name, half in cable.halves.items():
            tx, rx = half.tx_gbps, half.rx_gbps
            if cable.shared_phy and half.function_tx_gbps is not None:
                tx, rx = half.function_tx_gbps, half.function_rx_gbps
            text = f"   {name:<16.16} TX {gb(tx)}  RX {gb(rx)} Gb/s"
            if width >= 100 and half.rdma_tx_gbps is not None:
                text += f"   RDMA TX {gb(half.rdma_tx_gbps)}  RX {gb(half.rdma_rx_gbps)}"
            if half.source == "gone":
                text = f"   {name:<16.16} gone (unplugged or renamed)"
            lines.append(Text(text, style="dim" if half.source == "gone" else ""))
    return lines


def _cpu(view: NodeView) -> str:
    average, busiest = view.cpu_average, view.busiest_core
    if average is None or busiest is None:
        return "CPU -"
    return f"CPU {average:3.0f}%  busiest core {busiest[0]} {busiest[1]:3.0f}%"


def node_block(view: NodeView, width: int) -> list[RenderableType]:
    head = Text(f"{view.node}", style="bold")
    cpu = _cpu(view)
    head += Text(" " * max(1, width - len(view.node) - len(cpu) - 1) + cpu)
    lines: list[RenderableType] = [head]
    for cable in view.cables:
        lines += _cable(cable, view.peaks.get(cable.label, Peak()), width)
    for iface, grew in view.errors().items():
        shown = ", ".join(f"{name} +{count}" for name, count in sorted(grew.items()))
        lines.append(Text(f"  errors {iface}: {shown}", style="bold red"))
    for warning in view.warnings:
        lines.append(Text(f"  note: {warning}", style="yellow"))
    if view.missing:
        lines.append(Text(f"  missing: {', '.join(view.missing)}", style="yellow"))
    return lines


def dashboard(
    views: Mapping[str, NodeView],
    waiting: Sequence[str],
    header: str,
    width: int,
    run_tail: Sequence[str] = (),
) -> Group:
    """The whole screen: header, one block per node (in name order), then the tail of a command's output."""
    parts: list[RenderableType] = [Text(header[:width], style="bold")]
    for node in sorted(views):
        parts += node_block(views[node], width)
    for node in waiting:
        parts.append(Text(f"{node}: waiting for samples", style="dim"))
    if run_tail:
        parts.append(Text("─" * min(width, 80), style="dim"))
        parts += [Text(line[:width], style="dim") for line in run_tail]
    return Group(*parts)


def peak_lines(views: Mapping[str, NodeView]) -> list[str]:
    """The peak figures, one line per cable, for the end of a run."""
    lines: list[str] = []
    for node in sorted(views):
        for cable in views[node].cables:
            peak = views[node].peaks.get(cable.label, Peak())
            lines.append(
                f"{node} {cable.label}: peak TX {peak.tx_gbps:.2f}  RX {peak.rx_gbps:.2f}  "
                f"full duplex {peak.duplex_gbps:.2f} Gb/s"
            )
    return lines
