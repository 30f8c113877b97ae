"""The takeaway table's words, once: its columns and how each figure is written, for the terminal, Markdown and
HTML alike. Units are always shown: Gb/s per direction, busbw in GB/s, latency in microseconds; the peak at the
wire is the busiest node's one sample interval, all its halves added."""

from __future__ import annotations

from collections.abc import Sequence

from wirespeed.core.run import PhaseRow, TakeawayRow

PEAK = "wire peak TX / TX+RX"
COLUMNS = ("rung", "result", "full duplex", PEAK, "busiest core", "ceiling", "why")
PHASE_COLUMNS = ("rung", "before", "after", "change", "full duplex", PEAK, "busiest core", "ceiling", "why")


def result_text(row: TakeawayRow) -> str:
    parts = []
    if row.forward_gbps is not None:
        parts.append(f"{row.forward_gbps:.2f} Gb/s")
    if row.busbw_GBps is not None:
        parts.append(f"(busbw {row.busbw_GBps:.2f} GB/s)")
    if row.p50_us is not None:
        tail = f", p99 {row.p99_us:.1f} us" if row.p99_us is not None else ""
        parts.append(f"p50 {row.p50_us:.1f} us{tail}")
    return " ".join(parts) or "-"


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


def phase_cells(row: PhaseRow) -> list[str]:
    """One rung before and after the fixes, in `PHASE_COLUMNS` order; the rest is the after side's."""
    change = row.change_percent
    shown = "-" if change is None else "0%" if abs(change) < 0.5 else f"{change:+.0f}%"
    before = result_text(row.before) if row.before else "-"
    after = result_text(row.after) if row.after else "not measured again"
    was, now = _ceiling(row.before), _ceiling(row.after)
    ceilings = was if row.after is None or was == now else f"{was} -> {now}"
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
