"""Small inline SVG charts for the HTML report: lines over time or message size, and horizontal bars against a
limit. Hand-written so the report needs nothing from the network and nothing beyond the standard library: the
browser draws them. Every text goes through escaping; every chart says what its axes are, with units.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f")
WIDTH, HEIGHT = 860, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 60
# A line drawn on top of an earlier one (two cables carrying the same traffic) would hide it: it gets its own dash
# pattern and is lifted by a few pixels per line beneath it, so every line stays visible and tells itself apart.
OVERLAP_DASHES = ("2 3", "9 3 2 3", "1 2", "12 4")
OVERLAP_LIFT_PX = 2.5
OVERLAP_PX = 2.0  # points this close (at the same x) lie on top of each other


@dataclass(frozen=True)
class Line:
    label: str
    segments: Sequence[Sequence[tuple[float, float]]]  # drawn unjoined: a gap in the data stays a gap
    color: str
    dashed: bool = False


@dataclass(frozen=True)
class Marker:
    """A vertical band (a rung's span) or, with start == end, a vertical line."""

    label: str
    start: float
    end: float


@dataclass(frozen=True)
class Level:
    """A horizontal reference line: a line rate, a ceiling."""

    label: str
    value: float


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    limit: float | None = None  # drawn as a tick on the bar's track: the line rate


@dataclass(frozen=True)
class Axes:
    x_label: str
    y_label: str
    x_log2: bool = False
    x_format: str = "number"  # "number" or "bytes"
    markers: Sequence[Marker] = field(default_factory=tuple)
    levels: Sequence[Level] = field(default_factory=tuple)


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2 or 5 times a power of ten."""
    if not math.isfinite(low) or not math.isfinite(high):
        return [0.0]
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks: list[float] = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _bytes(value: float) -> str:
    for unit, scale in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if value >= scale:
            return f"{value / scale:g}{unit}"
    return f"{value:g}"


def _number(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.3g}"


def _text(x: float, y: float, text: str, anchor: str = "middle", size: int = 11, extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" {extra}>{escape(text)}</text>'


def line_chart(title: str, lines: Sequence[Line], axes: Axes, width: int = WIDTH, height: int = HEIGHT) -> str:
    """Lines on linear (or log2 x) axes, with rung bands, reference levels and a legend; an empty chart says so."""
    points = [p for line in lines for segment in line.segments for p in segment]
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">']
    parts.append(f"<title>{escape(title)}</title>")
    parts.append(_text(LEFT, 16, title, anchor="start", size=13, extra='font-weight="bold"'))
    if not points:
        parts.append(_text(width / 2, height / 2, "no data", size=13, extra='fill="#888"'))
        parts.append("</svg>")
        return "".join(parts)

    def fx(x: float) -> float:
        return math.log2(x) if axes.x_log2 else x

    xs = [fx(x) for x, _ in points if not axes.x_log2 or x > 0]
    xs += [fx(m.start) for m in axes.markers] + [fx(m.end) for m in axes.markers]
    ys = [y for _, y in points] + [level.value for level in axes.levels] + [0.0]
    x_low, x_high = min(xs), max(xs)
    if x_high <= x_low:
        x_high = x_low + 1.0
    y_ticks = nice_ticks(0.0 if min(ys) >= 0 else min(ys), max(ys) * 1.05 if max(ys) > 0 else 1.0)
    y_low, y_high = y_ticks[0], y_ticks[-1]
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (fx(x) - x_low) / (x_high - x_low) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - (y - y_low) / (y_high - y_low) * plot_h

    for index, marker in enumerate(axes.markers):
        a, b = px(marker.start), px(marker.end)
        fill = "#f3f6fa" if index % 2 == 0 else "#e8eef5"
        parts.append(f'<rect x="{a:.1f}" y="{TOP}" width="{max(b - a, 1.0):.1f}" height="{plot_h}" fill="{fill}"/>')
        parts.append(f'<line x1="{a:.1f}" y1="{TOP}" x2="{a:.1f}" y2="{TOP + plot_h}" stroke="#9aa" stroke-width="1"/>')
        parts.append(_text(a + 3, TOP + 11, marker.label, anchor="start", size=10, extra='fill="#456"'))
    for tick in y_ticks:
        y = py(tick)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(_text(LEFT - 6, y + 4, _number(tick), anchor="end"))
    if axes.x_log2:
        x_ticks = [2.0**e for e in range(math.ceil(x_low), math.floor(x_high) + 1)]
        if len(x_ticks) > 12:
            x_ticks = x_ticks[:: math.ceil(len(x_ticks) / 12)]
    else:
        x_ticks = [t for t in nice_ticks(x_low, x_high, 8) if x_low <= t <= x_high]
    for tick in x_ticks:
        x = px(tick)
        label = _bytes(tick) if axes.x_format == "bytes" else _number(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP + plot_h}" x2="{x:.1f}" y2="{TOP + plot_h + 4}" stroke="#555"/>')
        parts.append(_text(x, TOP + plot_h + 16, label))
    parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#555"/>')
    parts.append(_text(LEFT + plot_w / 2, height - 6, axes.x_label))
    parts.append(_text(14, TOP + plot_h / 2, axes.y_label, extra=f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})"'))
    for level in axes.levels:
        y = py(level.value)
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#333" stroke-dasharray="2 3"/>'
        )
        parts.append(_text(LEFT + plot_w - 4, y - 4, level.label, anchor="end", size=10))
    drawn = [[[(px(x), py(y)) for x, y in segment if not axes.x_log2 or x > 0] for segment in line.segments]
             for line in lines]  # fmt: skip
    beneath = _beneath(drawn)
    dashes: list[str] = []
    for line, segments, under in zip(lines, drawn, beneath, strict=True):
        # a dashed line (a cable's RX) on top of another takes the next pattern: its solid twin (TX) keeps its own
        shift = len(under) - 1 + (1 if line.dashed else 0)
        pattern = OVERLAP_DASHES[shift % len(OVERLAP_DASHES)] if under else "6 3" if line.dashed else ""
        dash = f' stroke-dasharray="{pattern}"' if pattern else ""
        dashes.append(dash)
        lift = OVERLAP_LIFT_PX * len(under)
        title = line.label + (f" (on top of {', '.join(lines[i].label for i in under)}: drawn {lift:g} px higher)"
                              if under else "")  # fmt: skip
        for kept in segments:
            if len(kept) == 1:
                x, y = kept[0]
                parts.append(f'<circle cx="{x:.1f}" cy="{y - lift:.1f}" r="2.5" fill="{line.color}"/>')
            elif kept:
                path = " ".join(f"{x:.1f},{y - lift:.1f}" for x, y in kept)
                parts.append(
                    f'<polyline points="{path}" fill="none" stroke="{line.color}" stroke-width="1.6"{dash}>'
                    f"<title>{escape(title)}</title></polyline>"
                )
    legend_x = LEFT + 8
    legend_y = TOP + plot_h + 34
    for line, dash in zip(lines, dashes, strict=True):
        label_width = 7 * len(line.label) + 34
        if legend_x + label_width > width:
            break  # the rest is in the table beside the chart
        parts.append(
            f'<line x1="{legend_x}" y1="{legend_y - 4}" x2="{legend_x + 22}" y2="{legend_y - 4}" '
            f'stroke="{line.color}" stroke-width="2"{dash}/>'
        )
        parts.append(_text(legend_x + 26, legend_y, line.label, anchor="start", size=10))
        legend_x += label_width
    parts.append("</svg>")
    return "".join(parts)


def _beneath(drawn: Sequence[Sequence[Sequence[tuple[float, float]]]]) -> list[list[int]]:
    """For each line (as pixel points), the earlier lines it lies on top of: most of its points within
    `OVERLAP_PX` of theirs at the same x."""
    found: list[list[int]] = []
    for i, line in enumerate(drawn):
        points = [p for segment in line for p in segment]
        under: list[int] = []
        for j in range(i):
            theirs = {round(x, 1): y for segment in drawn[j] for x, y in segment}
            shared = [(y, theirs[round(x, 1)]) for x, y in points if round(x, 1) in theirs]
            close = sum(1 for mine, other in shared if abs(mine - other) <= OVERLAP_PX)
            if len(shared) >= 2 and close >= 0.8 * len(points):
                under.append(j)
        found.append(under)
    return found


def bar_chart(title: str, bars: Sequence[Bar], unit: str, width: int = WIDTH) -> str:
    """One horizontal bar per item against a common scale; a bar's limit (its line rate) is a dark tick."""
    row, label_w = 22, 330
    height = TOP + row * max(len(bars), 1) + 30
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">']
    parts.append(f"<title>{escape(title)}</title>")
    parts.append(_text(8, 16, title, anchor="start", size=13, extra='font-weight="bold"'))
    values = [v for b in bars for v in (b.value, b.limit) if v is not None]
    if not values:
        parts.append(_text(width / 2, TOP + 14, "no data", size=13, extra='fill="#888"'))
        parts.append("</svg>")
        return "".join(parts)
    ticks = nice_ticks(0.0, max(values))
    top = ticks[-1]
    plot_w = width - label_w - RIGHT - 70
    for index, bar in enumerate(bars):
        y = TOP + index * row
        parts.append(_text(label_w - 6, y + 14, bar.label, anchor="end", size=10))
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{plot_w}" height="{row - 6}" fill="#f0f0f0"/>')
        if bar.value is not None:
            w = max(bar.value, 0.0) / top * plot_w
            parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" fill="{color(0)}"/>')
            parts.append(_text(label_w + plot_w + 6, y + 14, f"{bar.value:.2f} {unit}", anchor="start", size=10))
        else:
            parts.append(_text(label_w + plot_w + 6, y + 14, "no figure", anchor="start", size=10))
        if bar.limit is not None:
            x = label_w + bar.limit / top * plot_w
            parts.append(
                f'<line x1="{x:.1f}" y1="{y + 1}" x2="{x:.1f}" y2="{y + row - 1}" stroke="#222" stroke-width="2"/>'
            )
    axis_y = TOP + row * len(bars) + 4
    for tick in ticks:
        x = label_w + tick / top * plot_w
        parts.append(_text(x, axis_y + 12, _number(tick), size=10))
    parts.append(_text(label_w + plot_w / 2, axis_y + 25, f"{unit} (dark tick: line rate)", size=10))
    parts.append("</svg>")
    return "".join(parts)


def dot_chart(
    title: str,
    rows: Sequence[tuple[str, Sequence[float]]],
    unit: str,
    band: tuple[float, float] | None = None,
    width: int = WIDTH,
) -> str:
    """One row per item, every repetition a dot and the median a dark tick, against a common scale; `band` is the
    reference's range (the defaults' runs: what a gain must clear), shaded across every row."""
    row, label_w = 22, 330
    height = TOP + row * max(len(rows), 1) + 30
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">']
    parts.append(f"<title>{escape(title)}</title>")
    parts.append(_text(8, 16, title, anchor="start", size=13, extra='font-weight="bold"'))
    values = [v for _, runs in rows for v in runs]
    if not values:
        parts.append(_text(width / 2, TOP + 14, "no data", size=13, extra='fill="#888"'))
        parts.append("</svg>")
        return "".join(parts)
    low = min(min(values), band[0] if band else math.inf)
    high = max(max(values), band[1] if band else -math.inf)
    margin = (high - low) * 0.1 or abs(high) * 0.05 or 1.0
    ticks = nice_ticks(max(0.0, low - margin), high + margin)
    left, right = ticks[0], ticks[-1]
    plot_w = width - label_w - RIGHT - 70

    def x_of(value: float) -> float:
        return label_w + (value - left) / (right - left) * plot_w

    if band is not None:
        parts.append(f'<rect x="{x_of(band[0]):.1f}" y="{TOP}" width="{max(x_of(band[1]) - x_of(band[0]), 1.0):.1f}" '
                     f'height="{row * len(rows)}" fill="#e8eef8"/>')  # fmt: skip
    for index, (label, runs) in enumerate(rows):
        y = TOP + index * row
        parts.append(_text(label_w - 6, y + 14, label, anchor="end", size=10))
        parts.append(f'<line x1="{label_w}" y1="{y + 11}" x2="{label_w + plot_w}" y2="{y + 11}" stroke="#ddd"/>')
        for value in runs:
            parts.append(f'<circle cx="{x_of(value):.1f}" cy="{y + 11}" r="3" fill="{color(0)}" fill-opacity="0.7"/>')
        if runs:
            middle = statistics.median(runs)
            x = x_of(middle)
            parts.append(f'<line x1="{x:.1f}" y1="{y + 3}" x2="{x:.1f}" y2="{y + 19}" stroke="#222" stroke-width="2"/>')
            parts.append(_text(label_w + plot_w + 6, y + 14, f"{middle:.3f} {unit}", anchor="start", size=10))
    axis_y = TOP + row * len(rows) + 4
    for tick in ticks:
        parts.append(_text(x_of(tick), axis_y + 12, _number(tick), size=10))
    note = f"{unit}: dots are runs, the dark tick the median" + (", shaded: the defaults' range" if band else "")
    parts.append(_text(label_w + plot_w / 2, axis_y + 25, note, size=10))
    parts.append("</svg>")
    return "".join(parts)


def heatmap(
    title: str,
    rows: Sequence[str],
    columns: Sequence[str],
    values: dict[tuple[str, str], float | None],
    unit: str,
    flagged: frozenset[tuple[str, str]] = frozenset(),
) -> str:
    """A grid of cells (row -> column), shaded from white (0) to blue (the largest value), each labelled with its
    value; flagged cells get a red border. A missing cell is grey; the diagonal is left blank."""
    cell, label_w, label_h = 64, 110, 44
    width = label_w + cell * len(columns) + RIGHT
    height = TOP + label_h + cell * len(rows) + 34
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">']
    parts.append(f"<title>{escape(title)}</title>")
    parts.append(_text(8, 16, title, anchor="start", size=13, extra='font-weight="bold"'))
    known = [v for v in values.values() if v is not None]
    top = max(known) if known else 0.0
    y0 = TOP + label_h
    for j, column in enumerate(columns):
        parts.append(_text(label_w + j * cell + cell / 2, y0 - 8, column, size=10))
    for i, row in enumerate(rows):
        y = y0 + i * cell
        parts.append(_text(label_w - 6, y + cell / 2 + 4, row, anchor="end", size=10))
        for j, column in enumerate(columns):
            x = label_w + j * cell
            if row == column:
                continue
            value = values.get((row, column))
            if value is None:
                fill, text = "#dddddd", "n/a" if (row, column) in values else "-"
            else:
                share = value / top if top > 0 else 0.0
                fill = f"rgb({int(255 - 224 * share)},{int(255 - 136 * share)},{int(255 - 75 * share)})"
                text = f"{value:.2f}"
            stroke = ' stroke="#d62728" stroke-width="3"' if (row, column) in flagged else ' stroke="#ffffff"'
            parts.append(
                f'<rect x="{x + 1}" y="{y + 1}" width="{cell - 2}" height="{cell - 2}" fill="{fill}"{stroke}/>'
            )
            dark = value is not None and top > 0 and value / top > 0.6
            parts.append(_text(x + cell / 2, y + cell / 2 + 4, text, size=11, extra='fill="#fff"' if dark else ""))
    parts.append(_text(label_w, height - 10, f"rows send, columns receive; {unit}; red border: flagged",
                       anchor="start", size=10))  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)
