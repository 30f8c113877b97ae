"""The live view, drawn from a `Frame`: the seeds' picture (per cable TX and RX bars toward the line rate, then NOW
and PEAK lines) for every node and for the cluster, with what runs above it. Pure: `render(frame, width, height)`
returns the lines of one screen, `plain_line(frame)` the one line per interval written when the output is not a
terminal. Bars scale with the width (80 columns at least); when the height is short, what matters least goes
first (the halves, the hint, the messages, the step list), so two nodes with two cables fit in 24 rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.text import Text

from wirespeed.core.fabric.board import Frame, NowPeak, Step, counter_source
from wirespeed.core.fabric.counters import CableRate
from wirespeed.core.fabric.meter import NETDEV_WARNING, NodeView, Rates

FULL, EMPTY = "█", "░"
MIN_WIDTH = 80
MARKS = {"ran": "✓", "failed": "✗", "skipped": "-", "interrupted": "!", "running": "▶", "waiting": "·"}

# What goes first when the screen is short: higher numbers first.
MUST, STEPS, MESSAGES, HINT, HALVES = 0, 1, 2, 3, 4


def gb(value: float | None, width: int = 6) -> str:
    """Gb/s with two decimals below 10 (a shaped 1 Gb/s half reads 0.99, not 1.0), one above."""
    if value is None:
        return f"{'-':>{width}}"
    return f"{value:{width}.2f}" if abs(value) < 10 else f"{value:{width}.1f}"


def bar(value: float | None, scale: float | None, width: int) -> Text:
    """`width` cells filled for value/scale, gray to cyan as in the seeds' view; scale unknown: an empty bar."""
    if value is None or not scale or scale <= 0:
        return Text(EMPTY * width, style="grey37")
    filled = max(0, min(width, round(width * value / scale)))
    style = "bold cyan" if value >= 0.95 * scale else "cyan"
    return Text(FULL * filled, style=style) + Text(EMPTY * (width - filled), style="grey37")


def rate_label(line_rate_gbps: float | None) -> str:
    if line_rate_gbps is None:
        return "?"
    return f"{line_rate_gbps:g}G" if line_rate_gbps >= 1 else f"{line_rate_gbps * 1000:g}M"


def rates_line(prefix: str, word: str, rates: Rates, style: str = "") -> Text:
    """`NOW  TX  1.98 Gb/s  RX  0.00 Gb/s  Full-duplex  1.98 Gb/s`: every figure with its unit."""
    return Text(
        f"{prefix:<8.8} {word:<4} TX {gb(rates.tx_gbps)} Gb/s  RX {gb(rates.rx_gbps)} Gb/s  "
        f"Full-duplex {gb(rates.duplex_gbps)} Gb/s",
        style=style,
    )


def _cable_lines(cable: CableRate, label_width: int, width: int, show_halves: bool) -> list[tuple[int, Text]]:
    head = f" {cable.label:<{label_width}.{label_width}} {rate_label(cable.line_rate_gbps):>5} "
    bar_width = max(10, width - len(head) - len("TX ") - len(" 000000 Gb/s") - 1)
    lines: list[tuple[int, Text]] = []
    for word, value in (("TX", cable.tx_gbps), ("RX", cable.rx_gbps)):
        text = Text(head if word == "TX" else " " * len(head)) + Text(f"{word} ")
        text += bar(value, cable.line_rate_gbps, bar_width) + Text(f" {gb(value)} Gb/s")
        lines.append((MUST, text))
    if show_halves and (len(cable.halves) > 1 or cable.label not in cable.halves):
        indent = " " * (len(head) - 2)
        for name, half in cable.halves.items():
            if half.source == "gone":
                lines.append((HALVES, Text(f"{indent}{name:<16.16} gone (unplugged or renamed)", style="yellow")))
                continue
            tx, rx = half.tx_gbps, half.rx_gbps
            if cable.shared_phy and half.function_tx_gbps is not None:
                tx, rx = half.function_tx_gbps, half.function_rx_gbps
            shown = f"{indent}{name:<16.16} TX {gb(tx)}  RX {gb(rx)} Gb/s"
            if half.rdma_tx_gbps is not None:
                shown += f"  RDMA TX {gb(half.rdma_tx_gbps)}  RX {gb(half.rdma_rx_gbps)}"
            lines.append((HALVES, Text(shown, style="dim")))
        if cable.shared_phy:
            lines.append((HALVES, Text(f"{indent}(one PHY behind both halves: the cable counted once)", "dim")))
    return lines


def _cpu(view: NodeView) -> str:
    average, busiest = view.cpu_average, view.busiest_core
    if average is None or busiest is None:
        return "CPU -"
    return f"CPU all {average:3.0f}% · core {busiest[0]} {busiest[1]:3.0f}%"


def _node_lines(frame: Frame, view: NodeView, width: int) -> list[tuple[int, Text]]:
    source = counter_source(view)
    cpu = _cpu(view)
    head = Text(view.node, style="bold") + Text(f" · {source}", style="dim")
    head += Text(" " * max(2, width - len(view.node) - len(source) - len(cpu) - 4) + cpu)
    lines: list[tuple[int, Text]] = [(MUST, head)]
    label_width = min(16, max((len(c.label) for c in view.cables), default=6))
    for cable in view.cables:
        lines += _cable_lines(cable, label_width, width, frame.show_halves)
    figures = frame.nodes.get(view.node, NowPeak())
    lines.append((MUST, rates_line("", "NOW", figures.now, "bold")))
    lines.append((MUST, rates_line("", "PEAK", figures.peak)))
    for iface, grew in sorted(frame.errors.get(view.node, {}).items()):
        shown = ", ".join(f"{name} +{count}" for name, count in sorted(grew.items()))
        lines.append((MUST, Text(f"  errors grew on {iface}: {shown}", style="bold red")))
    for warning in view.warnings:
        if not warning.startswith(NETDEV_WARNING.split("{", 1)[0]):  # said once in the node's head instead
            lines.append((MESSAGES, Text(f"  note: {warning}", style="yellow")))
    if view.missing:
        lines.append((MUST, Text(f"  missing: {', '.join(view.missing)}", style="yellow")))
    return lines


def _header(frame: Frame) -> Text:
    parts = [f"wirespeed {frame.title}"]
    position = frame.position
    if frame.running is not None:
        parts.append(f"{frame.running} ({position[0]} of {position[1]})" if position else frame.running)
        if frame.detail:
            parts.append(frame.detail)
        if frame.elapsed_s is not None:
            left = frame.seconds_left
            timing = f"{frame.elapsed_s:.0f} s"
            timing += f", about {left:.0f} s left" if left is not None and left > 0 else ""
            parts.append(timing)
    return Text(" · ".join(parts), style="bold")


def _steps(steps: Sequence[Step], width: int) -> list[Text]:
    """The step list in as few lines as fit: figures in full, then their numbers only, then over two lines."""
    style = {"running": "bold", "failed": "red", "interrupted": "yellow", "waiting": "dim", "skipped": "dim"}
    if not steps:
        return []

    def items(short: bool) -> list[Text]:
        shown = []
        for step in steps:
            figure = step.figure.split(" ")[0] if short and step.figure else step.figure
            words = f"{MARKS.get(step.state, '?')} {step.name}" + (f" {figure}" if figure else "")
            shown.append(Text(words, style=style.get(step.state, "")))
        return shown

    for short in (False, True):
        parts = items(short)
        if sum(p.cell_len + 2 for p in parts) <= width:
            return [Text("  ").join(parts)]
    lines: list[Text] = [Text()]
    for part in items(short=True):
        if lines[-1].cell_len and lines[-1].cell_len + 2 + part.cell_len > width - 1:
            lines.append(Text())
        lines[-1] += (Text("  ") if lines[-1].cell_len else Text()) + part
    return lines


def render(frame: Frame, width: int, height: int, hint: str | None = None) -> Group:
    """One screen of the live view in `width` x `height` (80 columns at least; lines never wrap)."""
    width = max(MIN_WIDTH, width)
    lines: list[tuple[int, Text]] = [(MUST, _header(frame))]
    lines += [(STEPS, line) for line in _steps(frame.steps, width)]
    for node in sorted(frame.views):
        lines += _node_lines(frame, frame.views[node], width)
    for node in frame.waiting:
        lines.append((MUST, Text(f"{node}: waiting for samples", style="dim")))
    if len(frame.views) > 1:
        lines.append((MUST, rates_line("cluster", "NOW", frame.cluster.now, "bold cyan")))
        lines.append((MUST, rates_line("", "PEAK", frame.cluster.peak, "cyan")))
    for message in frame.messages:
        lines.append((MESSAGES, Text(message, style="dim")))
    if frame.tail:
        lines.append((MESSAGES, Text("─" * min(width, 80), style="dim")))
        lines += [(MESSAGES, Text(line, style="dim")) for line in frame.tail]
    unit = f"Gb/s per direction, every {frame.interval_s:g} s"
    lines.append((HINT, Text(f"{hint} · {unit}" if hint else unit, style="dim")))
    for drop in (HALVES, HINT, MESSAGES, STEPS):
        if len(lines) <= height:
            break
        lines = [(p, t) for p, t in lines if p != drop]
    if len(lines) > height:
        kept = max(1, height - 1)
        more = Text(f"... {len(lines) - kept} more line(s): enlarge the terminal", style="yellow")
        lines = [*lines[:kept], (MUST, more)]
    for _, text in lines:
        text.no_wrap = True
        text.overflow = "crop"
        text.truncate(width - 1)
    return Group(*(t for _, t in lines))


def plain_line(frame: Frame) -> str:
    """One line per interval for a pipe or a log: the step, each node's TX and RX, the cluster, CPU, errors."""
    parts: list[str] = []
    position = frame.position
    if frame.running is not None:
        where = f" {position[0]}/{position[1]}" if position else ""
        elapsed = f" {frame.elapsed_s:.0f}s" if frame.elapsed_s is not None else ""
        detail = f" {frame.detail}" if frame.detail else ""
        parts.append(f"{frame.running}{where}{elapsed}{detail}")
    for node, figures in sorted(frame.nodes.items()):
        view = frame.views[node]
        busiest = view.busiest_core
        cpu = f" cpu {busiest[1]:.0f}%" if busiest else ""
        parts.append(f"{node} TX {figures.now.tx_gbps:.2f} RX {figures.now.rx_gbps:.2f} Gb/s{cpu}")
    if len(frame.nodes) > 1:
        now, peak = frame.cluster.now, frame.cluster.peak
        parts.append(
            f"cluster TX {now.tx_gbps:.2f} RX {now.rx_gbps:.2f} full-duplex {now.duplex_gbps:.2f} "
            f"Gb/s (peak {peak.duplex_gbps:.2f})"
        )
    for node, found in sorted(frame.errors.items()):
        for iface, grew in sorted(found.items()):
            parts.append(f"errors {node} {iface} " + ",".join(f"{k}+{v}" for k, v in sorted(grew.items())))
    if frame.waiting:
        parts.append(f"waiting: {', '.join(frame.waiting)}")
    return " | ".join(parts) if parts else "no samples yet"


def final_lines(frame: Frame) -> list[str]:
    """The NOW/PEAK figures in words, for the end of a run (after the live view is gone)."""
    lines = []
    for node, figures in sorted(frame.nodes.items()):
        peak = figures.peak
        lines.append(
            f"{node}: peak TX {peak.tx_gbps:.2f} Gb/s  RX {peak.rx_gbps:.2f} Gb/s  "
            f"full duplex {peak.duplex_gbps:.2f} Gb/s"
        )
    if len(frame.nodes) > 1:
        peak = frame.cluster.peak
        lines.append(
            f"cluster: peak TX {peak.tx_gbps:.2f} Gb/s  RX {peak.rx_gbps:.2f} Gb/s  "
            f"full duplex {peak.duplex_gbps:.2f} Gb/s (what the fabric carried)"
        )
    return lines
