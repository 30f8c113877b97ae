"""Node sets both ways, as ClusterShell's NodeSet and Slurm's hostlists write them: fold names for display
(spark-1, spark-2, spark-3 -> spark-[1-3]) and expand what a user or Slurm types (spark-[1-4,7] -> five names)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import product

from wirespeed.core.errors import InventoryError

_NAME_RE = re.compile(r"^(.*?)(\d+)$")
MAX_EXPANDED = 65536  # a typo such as spark-[1-1000000] must not eat the controller's memory
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")
_RANGE_GROUP_RE = re.compile(r"\[[\d,\s-]+\]")  # [1-4,7]; an IPv6 address in brackets has colons


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


def split_top_level(spec: str, source: str) -> list[str]:
    """Split on commas outside brackets: `a[1,3],b` -> ['a[1,3]', 'b']."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in spec:
        if char == "[":
            depth += 1
            if depth > 1:
                raise InventoryError(f"{source}: nested brackets in {spec!r}", hint="write spark-[1-3],gpu-[1-2]")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise InventoryError(f"{source}: unbalanced ']' in {spec!r}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    if depth != 0:
        raise InventoryError(f"{source}: unbalanced '[' in {spec!r}")
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _expand_range(body: str, source: str, spec: str) -> list[str]:
    """`1-3,07` -> ['1', '2', '3', '07']; a zero-padded start keeps its width (`[01-10]` -> 01..10)."""
    numbers: list[str] = []
    for item in body.split(","):
        match = _RANGE_RE.fullmatch(item.strip())
        if not match:
            raise InventoryError(f"{source}: {item!r} is not a number or range in {spec!r}", hint="write [1-4,7]")
        start_text, end_text = match.group(1), match.group(2)
        if end_text is None:
            numbers.append(start_text)
            continue
        start, end = int(start_text), int(end_text)
        if end < start:
            raise InventoryError(f"{source}: range {item!r} runs backwards in {spec!r}")
        if end - start >= MAX_EXPANDED:
            raise InventoryError(f"{source}: range {item!r} names more than {MAX_EXPANDED} nodes")
        width = len(start_text) if start_text.startswith("0") else 0
        numbers += [str(n).zfill(width) for n in range(start, end + 1)]
    return numbers


def expand_names(spec: str, source: str = "SLURM_JOB_NODELIST") -> list[str]:
    """A node set (Slurm's hostlist expression, ClusterShell's NodeSet) as node names, in its order:
    `spark-[1-2],gpu[01-02]-ib` -> spark-1, spark-2, gpu01-ib, gpu02-ib. Several bracket groups in one name multiply
    (`r[1-2]n[1-2]`)."""
    names: list[str] = []
    for part in split_top_level(spec, source):
        pieces = re.split(r"(\[[^\]]*\])", part)
        choices: list[list[str]] = []
        for piece in pieces:
            if piece.startswith("[") and piece.endswith("]"):
                choices.append(_expand_range(piece[1:-1], source, spec))
            elif "[" in piece or "]" in piece:
                raise InventoryError(f"{source}: unbalanced brackets in {spec!r}")
            elif piece:
                choices.append([piece])
        for combo in product(*choices):
            names.append("".join(combo))
            if len(names) > MAX_EXPANDED:
                raise InventoryError(f"{source}: {spec!r} names more than {MAX_EXPANDED} nodes")
    if not names:
        raise InventoryError(f"{source}: no nodes in {spec!r}")
    return list(dict.fromkeys(names))  # a node named twice is one node


def expand_hosts(spec: str, source: str = "--hosts") -> list[str]:
    """What a user types for hosts, each item expanded where it holds a range (`alice@spark-[1-4]:2222`), an IPv6
    address in brackets (`[fe80::1]:22`) and plain names kept as written."""
    items: list[str] = []
    for part in split_top_level(spec, source):
        items += expand_names(part, source) if _RANGE_GROUP_RE.search(part) else [part]
    return items
