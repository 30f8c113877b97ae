"""`ethtool -S IFACE` counters, with or without the `NIC statistics:` header that `| grep` drops. The parsing is
wirespeed.core.parsers.ethtool's; the summary names the error counters above zero."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from wirespeed.core.imports.kind import BARE, HEADER, ImportKind, Table
from wirespeed.core.parsers import ethtool
from wirespeed.core.records.typed import JsonRecord

_NIC_STATISTICS = re.compile(r"^\s*NIC statistics:\s*$", re.MULTILINE)
_STAT_LINE = re.compile(r"^\s+[^:]+?:\s+-?\d+\s*$")


def _has_header(text: str) -> bool:
    return _NIC_STATISTICS.search(text) is not None


def _looks_headerless(text: str) -> bool:
    """`ethtool -S` without its header, as `| grep` leaves it: indented `name: integer` lines and little else."""
    lines = [line for line in text.splitlines() if line.strip()]
    stats = sum(1 for line in lines if _STAT_LINE.match(line))
    return stats >= 2 and len(lines) - stats <= 2


@dataclass(frozen=True)
class EthtoolStats(JsonRecord):
    """`ethtool -S`: every counter by the driver's name."""

    source_format: str | None
    counters: Mapping[str, int]


def read(text: str) -> EthtoolStats:
    counters = ethtool.parse_stats(text)
    if not counters:
        raise ValueError("ethtool -S output without a single `name: value` counter line")
    return EthtoolStats("text", counters)


def rows(obj: EthtoolStats) -> Table:
    counters = obj.counters
    errors = [f"{name} {counters[name]}" for name in ethtool.ERROR_COUNTERS if counters.get(name)]
    return ["figure", "value"], [
        ["counters", str(len(counters))],
        ["error counters above 0", ", ".join(errors) or "none"],
    ]


KIND = ImportKind(
    tool="ethtool-stats",
    names="ethtool -S",
    marks=((HEADER, _has_header), (BARE, _looks_headerless)),
    body=EthtoolStats,
    read=read,
    rows=rows,
)
