"""What one import kind is: how its output is recognised, read into the public object and summed up. A kind is a
value, not a branch in three functions, so that adding one is a module plus a line in `registry.KINDS`. Pure."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from wirespeed.core.fabric.units import format_size_bytes
from wirespeed.core.imports.body import Body

Table = tuple[list[str], list[list[str]]]  # a summary's columns and rows, every cell text

# How particular a detection mark is; detect() tries the lower rank first, so where two kinds' marks both match, the
# more particular one wins. Each group leaves room for a new kind's mark between the existing ones.
JSON_FORM = 10  # keys only that tool writes, in a JSON document
FIXED_LINES = 20  # line shapes no other tool prints (the RDMA tools)
HEADER = 30  # a header line of the tool's own (`NIC statistics:`)
TABLE = 40  # the tool's result table (perftest)
BANNER = 50  # the tool's banners and summary lines (iperf3)
COMMENTS_AND_ROWS = 60  # comment lines and rows (nccl-tests)
BARE = 70  # a shape that only says something when nothing else matched (headerless `ethtool -S`)


def _never(text: str) -> bool:
    return False


def _no_figures(body: Any) -> dict[str, float]:
    return {}


B = TypeVar("B", bound=Body)


@dataclass(frozen=True)
class ImportKind(Generic[B]):
    """One kind of tool output. `marks` are (rank, predicate) pairs over the head of a file; `read` turns the text into
    the body of the public object, a `body` record (ValueError `line N: why` or a parser's own message when it
    cannot); `body.from_json` reads it back from a run's imported/; `rows` is its summary table; `figures` what
    `compare` sets beside the same file imported into another run (none by default)."""

    tool: str  # the `tool` value of the public format
    names: str  # how the list of known tools names it to a user (KNOWN_TOOLS)
    marks: tuple[tuple[int, Callable[[str], bool]], ...]
    body: type[B]  # the record `read` returns (core/imports/body.py: `to_json`, `from_json`)
    read: Callable[[str], B]
    rows: Callable[[B], Table]
    figures: Callable[[B], dict[str, float]] = _no_figures
    # A text that also splits into several pasted outputs is read as a paste first (ibdev2netdev among other outputs).
    paste_first: Callable[[str], bool] = _never
    # A text this kind recognised but could not read is tried as a paste (an NCCL INFO log under nccl-tests' header).
    paste_on_error: Callable[[str], bool] = _never


# ------------------------------------------------------------------------------------- helpers the kinds share


def line_at(text: str, index: int) -> int:
    """1-based line of `text[index]`, counted as str.splitlines counts (the parsers count so too)."""
    return len((text[:index] + "x").splitlines())


class SizedRow(Protocol):
    @property
    def size_bytes(self) -> int: ...


def sizes(rows: Sequence[SizedRow]) -> str:
    """The message sizes of a table's rows: `8 B .. 8 GiB (33 rows)`."""
    first, last = format_size_bytes(rows[0].size_bytes), format_size_bytes(rows[-1].size_bytes)
    count = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
    return f"{first} ({count})" if first == last else f"{first} .. {last} ({count})"


def num(value: float | None, unit: str, digits: int = 2) -> str:
    """A figure with its unit, or `-` for one the tool did not print."""
    return "-" if value is None else f"{value:.{digits}f} {unit}"


def finite(value: Any) -> bool:
    """A number `compare` can use: an imported object is read back from a file, so nothing about it is assumed."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
