"""Fold node names for display: spark-1, spark-2, spark-3 -> spark-[1-3] (ClusterShell's NodeSet idea)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_NAME_RE = re.compile(r"^(.*?)(\d+)$")


def fold_names(names: Iterable[str]) -> str:
    """Fold names that share a prefix and end in numbers into ranges; others are listed as they are."""
    numbered: dict[str, list[int]] = {}
    widths: dict[tuple[str, int], str] = {}
    plain: list[str] = []
    order: list[str] = []
    for name in names:
        match = _NAME_RE.match(name)
        if not match or (match.group(2).startswith("0") and len(match.group(2)) > 1):
            plain.append(name)
            order.append(name)
            continue
        prefix, number = match.group(1), int(match.group(2))
        if prefix not in numbered:
            numbered[prefix] = []
            order.append("\0" + prefix)
        numbered[prefix].append(number)
        widths[(prefix, number)] = match.group(2)
    parts: list[str] = []
    for key in order:
        if not key.startswith("\0"):
            parts.append(key)
            continue
        prefix = key[1:]
        numbers = sorted(set(numbered[prefix]))
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]}")
            continue
        ranges: list[str] = []
        start = prev = numbers[0]
        for number in numbers[1:]:
            if number == prev + 1:
                prev = number
                continue
            ranges.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = number
        ranges.append(str(start) if start == prev else f"{start}-{prev}")
        parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)
