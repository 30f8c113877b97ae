"""The takeaway table's words, once: its columns and how each figure is written, for the terminal, Markdown and
HTML alike. Units are always shown: Gb/s per direction, busbw in GB/s, latency in microseconds."""

from __future__ import annotations

from wirespeed.core.run import TakeawayRow

COLUMNS = ("rung", "result", "full duplex", "busiest core", "ceiling", "why")


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


def cells(row: TakeawayRow) -> list[str]:
    """One row as text, in `COLUMNS` order."""
    cpu = ", ".join(f"{node} {busy:.0f}%" for node, busy in row.busiest_core_percent.items()) or "-"
    duplex = "-" if row.full_duplex_gbps is None else f"{row.full_duplex_gbps:.2f} Gb/s"
    ceiling = row.ceiling or (row.status.value if row.status != "ran" else "-")
    return [row.rung, result_text(row), duplex, cpu, ceiling, row.why]
