"""The takeaway table's words, once: its columns and how each figure is written, for the terminal, Markdown and
HTML alike. Units are always shown: Gb/s per direction, busbw in GB/s, latency in microseconds; the peak at the
wire is the busiest node's one sample interval, all its halves added."""

from __future__ import annotations

import re
from collections.abc import Sequence

from wirespeed.core.records import spread as spreads
from wirespeed.core.records.run import PhaseRow, TakeawayRow

PEAK = "wire peak TX / TX+RX"
COLUMNS = ("rung", "result", "full duplex", PEAK, "busiest core", "ceiling", "why")
PHASE_COLUMNS = ("rung", "before", "after", "change", "full duplex", PEAK, "busiest core", "ceiling", "why")
# The terminal's closing table: what fits 80 columns; each ceiling's why is a numbered note below it.
FINAL_COLUMNS = ("rung", "before", "after", "change", "ceiling")


def spread_text(row: TakeawayRow) -> str:
    """The compared figure's range, in its unit: `(9.10-9.62)`; empty where the run gave none."""
    spread = row.spread
    if spread is None:
        return ""
    digits = 2 if row.forward_gbps is not None else 1
    return f"({spread.low:.{digits}f}-{spread.high:.{digits}f})"


def result_text(row: TakeawayRow) -> str:
    parts = []
    spread = spread_text(row)
    if row.forward_gbps is not None:
        parts.append(f"{row.forward_gbps:.2f} Gb/s")
        parts += [spread] if spread else []
    if row.busbw_GBps is not None:
        parts.append(f"(busbw {row.busbw_GBps:.2f} GB/s)")
    if row.p50_us is not None:
        tail = f", p99 {row.p99_us:.1f} us" if row.p99_us is not None else ""
        middle = f" {spread}" if spread and row.forward_gbps is None else ""
        parts.append(f"p50 {row.p50_us:.1f} us{middle}{tail}")
    return " ".join(parts) or "-"


def short_result(row: TakeawayRow | None) -> str:
    """The compared figure and its range alone (the final table's cell): per direction, else the p50 latency."""
    if row is None:
        return "-"
    spread = spread_text(row)
    if row.forward_gbps is not None:
        return " ".join(x for x in (f"{row.forward_gbps:.2f} Gb/s", spread) if x)
    if row.p50_us is not None:
        return " ".join(x for x in (f"p50 {row.p50_us:.1f} us", spread) if x)
    return row.status.value if row.status != "ran" else "-"


def _duplex(row: TakeawayRow | None) -> str:
    return "-" if row is None or row.full_duplex_gbps is None else f"{row.full_duplex_gbps:.2f} Gb/s"


def _peak(row: TakeawayRow | None) -> str:
    if row is None or row.peak_tx_gbps is None:
        return "-"
    return f"{row.peak_tx_gbps:.2f} / {row.peak_duplex_gbps or 0.0:.2f} Gb/s"


def _cpu(row: TakeawayRow | None) -> str:
    if row is None:
        return "-"
    return ", ".join(f"{node} {busy:.0f}%" for node, busy in row.busiest_core_percent.items()) or "-"


def _ceiling(row: TakeawayRow | None) -> str:
    if row is None:
        return "-"
    return row.ceiling or (row.status.value if row.status != "ran" else "-")


def cells(row: TakeawayRow) -> list[str]:
    """One row as text, in `COLUMNS` order."""
    return [row.rung, result_text(row), _duplex(row), _peak(row), _cpu(row), _ceiling(row), row.why]


def change_text(row: PhaseRow) -> str:
    """`+65%`, or `within noise` where the change is not more than either phase's spread."""
    change = row.change_percent
    if change is None:
        return "-"
    if row.changed is False:
        return spreads.NOISE
    return "0%" if abs(change) < 0.5 else f"{change:+.0f}%"


def ceiling_text(row: PhaseRow) -> str:
    """`cpu -> wire` where the ceiling moved with the figure; the after side's alone where it flipped on noise."""
    was, now = _ceiling(row.before), _ceiling(row.after)
    if row.after is None:
        return was
    return f"{was} -> {now}" if row.ceiling_moved else now


def phase_cells(row: PhaseRow) -> list[str]:
    """One rung before and after the fixes, in `PHASE_COLUMNS` order; the rest is the after side's."""
    shown = change_text(row)
    before = result_text(row.before) if row.before else "-"
    after = result_text(row.after) if row.after else "not measured again"
    ceilings = ceiling_text(row)
    final = row.after or row.before
    return [row.rung, before, after, shown, _duplex(final), _peak(final), _cpu(final), ceilings,
            final.why if final else ""]  # fmt: skip


def measured_and_skipped(rows: Sequence[PhaseRow]) -> tuple[list[PhaseRow], list[str]]:
    """The rows of rungs that ran in either phase, and one line per reason for the ones skipped in both (the same
    reason, such as no RDMA device, would otherwise fill the table once per rung)."""
    measured: list[PhaseRow] = []
    skipped: dict[str, list[str]] = {}
    for row in rows:
        sides = [side for side in (row.before, row.after) if side is not None]
        if sides and all(side.status == "skipped" for side in sides):
            skipped.setdefault(sides[0].why, []).append(row.rung)
        else:
            measured.append(row)
    return measured, [f"not measured here: {', '.join(names)}: {why}" for why, names in skipped.items()]


def spread_notes(rows: Sequence[PhaseRow]) -> list[str]:
    """How the ranges beside the figures were taken, and the rule a change is held to: printed under the table."""
    sides = [side.spread for row in rows for side in (row.before, row.after) if side is not None]
    how = spreads.methods(sides)
    rule = (f"a change is shown only where it exceeds both phases' spread and {spreads.FLOOR_PERCENT:g}%, their "
            f"ranges apart, else '{spreads.NOISE}'")  # fmt: skip
    if not how:
        return [f"spread: none recorded for these figures, so each change is shown as measured ({rule})"]
    unjudged = [row.rung for row in rows if row.change_percent is not None and row.changed is None]
    alone = [f"  no spread for {', '.join(unjudged)} (one figure per run): its change is shown as measured"]
    return [f"spread: {rule}; each range is", *(f"  {line}" for line in how), *(alone if unjudged else [])]


# A list of three or more names with a digit in each (interfaces, RDMA devices): `enp1s0f0np0, enP2p1s0f0np0, ...`.
_NAME = r"[A-Za-z][\w.-]*\d\w*"  # ends in a letter or digit: a colon or full stop after the list stays
_NAME_LIST = re.compile(rf"\b{_NAME}(?:, {_NAME}){{2,}}")


def fold_lists(text: str) -> str:
    """`enp1s0f0np0, enP2p1s0f0np0, enp1s0f1np1, enP2p1s0f1np1` -> `enp1s0f0np0 +3`: the terminal's notes; the
    report and piped output keep every name."""

    def fold(match: re.Match[str]) -> str:
        names = match.group(0).split(", ")
        return f"{names[0]} +{len(names) - 1}"

    return _NAME_LIST.sub(fold, text)


def final_rows(rows: Sequence[PhaseRow], *, fold: bool = True) -> tuple[list[list[str]], list[str]]:
    """The terminal's closing table in `FINAL_COLUMNS` order, and its notes: each ceiling's why, numbered as its
    ceiling cell refers to it (`wire [1]`), interface lists folded unless `fold` is False (piped output)."""
    table: list[list[str]] = []
    notes: list[str] = []
    for row in rows:
        final = row.after or row.before
        why = final.why if final is not None else ""
        if row.before is not None and row.after is not None and not row.ceiling_moved:
            was, now = _ceiling(row.before), _ceiling(row.after)
            if was != now:
                why = f"{why} (before: {was}, with the figure {spreads.NOISE})" if why else f"before: {was}"
        why = _with_figures(final, why)
        ceiling = ceiling_text(row)
        if why:
            notes.append(f"[{len(notes) + 1}] {row.rung}: {fold_lists(why) if fold else why}")
            ceiling = f"{ceiling} [{len(notes)}]"
        after = short_result(row.after) if row.after is not None else "not measured again"
        table.append([row.rung, short_result(row.before), after, change_text(row), ceiling])
    return table, notes


def _with_figures(row: TakeawayRow | None, why: str) -> str:
    """The note's text: the figures the narrow table leaves out of its cell (p99, busbw), then the why."""
    if row is not None and row.busbw_GBps is not None and "busbw" not in why:
        why = f"busbw {row.busbw_GBps:.2f} GB/s; {why}" if why else f"busbw {row.busbw_GBps:.2f} GB/s"
    if row is not None and row.p99_us is not None:
        why = f"p99 {row.p99_us:.1f} us; {why}" if why else f"p99 {row.p99_us:.1f} us"
    return why


def summary_rows(rows: Sequence[TakeawayRow], *, fold: bool = True) -> tuple[list[list[str]], list[str]]:
    """The one-phase table for a terminal, in `COLUMNS` order less the why: the figure and its range alone in the
    result cell, and each ceiling's why (with p99 and busbw) a numbered note, as `final_rows` does for two phases.
    Rung names lose a phase suffix all of them share (`tcp-single (before)`): the caller says the phase once."""
    phase = shared_phase(rows)
    shared = f" ({phase})" if phase else ""
    table: list[list[str]] = []
    notes: list[str] = []
    for row in rows:
        name = row.rung.removesuffix(shared) if shared else row.rung
        why = _with_figures(row, row.why)
        ceiling = _ceiling(row)
        if why:
            notes.append(f"[{len(notes) + 1}] {name}: {fold_lists(why) if fold else why}")
            ceiling = f"{ceiling} [{len(notes)}]"
        table.append([name, short_result(row), _duplex(row), _peak(row), _cpu(row), ceiling])
    return table, notes


def shared_phase(rows: Sequence[TakeawayRow]) -> str:
    """The phase every row names (`before` of `tcp-single (before)`), or empty."""
    phases = {row.rung[row.rung.find(" (") + 2 : -1] if row.rung.endswith(")") and " (" in row.rung else ""
              for row in rows}  # fmt: skip
    return next(iter(phases)) if len(phases) == 1 else ""
