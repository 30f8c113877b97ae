"""nccl-tests output (`all_reduce_perf` and the rest), as text or as `-J` JSON: the parsing is
wirespeed.core.tools.nccl_tests'; this module names its fields as the public format does, sums up the table and offers
busbw per message size to `compare`."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from wirespeed.core.fabric.units import format_size_bytes
from wirespeed.core.imports.kind import COMMENTS_AND_ROWS, JSON_FORM, ImportKind, Table, finite, num, sizes
from wirespeed.core.parsers import nccl_info
from wirespeed.core.records.typed import JsonRecord
from wirespeed.core.tools import nccl_tests

# nccl-tests -J (src/util.cu): keys no other tool writes; a file cut early still has `args` naming the binary.
_NCCL_JSON = re.compile(
    r'"(?:nccl_version|minimum_bytes|average_bus_bandwidt?h|out_of_place)"\s*:|"args"\s*:\s*\[\s*"[^"]*_perf'
)


def _is_json(text: str) -> bool:
    return text.lstrip().startswith("{") and _NCCL_JSON.search(text) is not None


def _is_text(text: str) -> bool:
    return nccl_tests.looks_like(text)  # looked up at each call: tests count what detection hands the parser


@dataclass(frozen=True)
class NcclPlacement(JsonRecord):
    """One half of a row, out-of-place or in-place."""

    time_us: float | None
    algbw_GBps: float | None
    busbw_GBps: float | None
    wrong: int | None
    max_error: float | None


@dataclass(frozen=True)
class NcclTestsRow(JsonRecord):
    """One message size."""

    size_bytes: int
    count: int | None
    type: str | None
    redop: str | None
    root: int | None
    out_of_place: NcclPlacement | None
    in_place: NcclPlacement | None


@dataclass(frozen=True)
class NcclTests(JsonRecord):
    """An nccl-tests run (docs/import-format.md, `nccl-tests`): its table, footer and what INFO lines said."""

    source_format: str | None
    collective: str | None
    ranks: int | None
    rows: tuple[NcclTestsRow, ...]
    avg_busbw_GBps: float | None
    out_of_bounds: int | None
    transport: str | None
    gdr: bool | None
    nccl_version: str | None
    complete: bool
    implausible: tuple[str, ...]


def _finite(value: float | None) -> float | None:
    """nccl-tests writes `nan` where it computed nothing: null in the format, as strict JSON has no NaN."""
    return None if value is None or not math.isfinite(value) else value


def _measurement(m: nccl_tests.Measurement | None) -> NcclPlacement | None:
    if m is None:
        return None
    return NcclPlacement(
        time_us=_finite(m.time_us),
        algbw_GBps=_finite(m.algbw_GBps),
        busbw_GBps=_finite(m.busbw_GBps),
        wrong=m.wrong,
        max_error=_finite(m.max_error),
    )


def read(text: str) -> NcclTests:
    is_json = text.lstrip().startswith("{")
    if is_json:
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:  # the parser's own message has no line: -J files are one long line
            raise ValueError(
                f"line {exc.lineno}: nccl-tests JSON cut off or malformed ({exc.msg} at column {exc.colno})"
            ) from None
        result = nccl_tests.parse_json(text)
    else:
        result = nccl_tests.parse_text(text)
    return NcclTests(
        source_format="json" if is_json else "text",
        collective=result.collective,
        ranks=result.ranks,
        rows=tuple(
            NcclTestsRow(
                size_bytes=row.size_bytes,
                count=row.count,
                type=row.type,
                redop=row.redop,
                root=row.root,
                out_of_place=_measurement(row.out_of_place),
                in_place=_measurement(row.in_place),
            )
            for row in result.rows
        ),
        avg_busbw_GBps=_finite(result.avg_busbw_GBps),
        out_of_bounds=result.out_of_bounds,
        transport=result.transport,
        gdr=result.gdr,
        nccl_version=result.nccl_version,
        complete=result.complete,
        implausible=tuple(result.implausible),
    )


def rows(obj: NcclTests) -> Table:
    table = obj.rows
    placements = [
        (row.size_bytes, name, busbw)
        for row in table
        for name, placement in (("out_of_place", row.out_of_place), ("in_place", row.in_place))
        if placement is not None and (busbw := placement.busbw_GBps) is not None
    ]
    out = [
        ["collective", obj.collective or "-"],
        ["ranks", str(obj.ranks) if obj.ranks is not None else "-"],
        ["transport", obj.transport or "-"],
    ]
    if table:
        out.append(["sizes", sizes(table)])
    if placements:
        size, name, best = max(placements, key=lambda item: item[2])
        out.append(["peak busbw", f"{best:.2f} GB/s at {format_size_bytes(size)} ({name.replace('_', '-')})"])
    out.append(["avg busbw", num(obj.avg_busbw_GBps, "GB/s", 3) if obj.complete else "- (run cut off)"])
    return ["figure", "value"], out


def _busbw(row: NcclTestsRow) -> float | None:
    """The out-of-place half's busbw (what nccl-tests' summary and wirespeed's own rung use), else the in-place
    one's."""
    for half in (row.out_of_place, row.in_place):
        if half is not None and half.busbw_GBps is not None and finite(half.busbw_GBps):
            return half.busbw_GBps
    return None


def figures(obj: NcclTests) -> dict[str, float]:
    """busbw per message size."""
    found: dict[str, float] = {}
    for row in obj.rows:
        busbw = _busbw(row)
        if busbw is not None:
            found[f"busbw_GBps @ {row.size_bytes} B"] = float(busbw)
    return found


KIND = ImportKind(
    tool="nccl-tests",
    names="nccl-tests",
    marks=((JSON_FORM, _is_json), (COMMENTS_AND_ROWS, _is_text)),
    body=NcclTests,
    read=read,
    rows=rows,
    figures=figures,
    paste_on_error=nccl_info.looks_like,  # an NCCL INFO log with nccl-tests' header but no result rows
)
