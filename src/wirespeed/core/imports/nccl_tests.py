"""nccl-tests output (`all_reduce_perf` and the rest), as text or as `-J` JSON: the parsing is
wirespeed.core.tools.nccl_tests'; this module names its fields as the public format does, sums up the table and offers
busbw per message size to `compare`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from wirespeed.core.fabric.units import format_size_bytes
from wirespeed.core.imports.kind import COMMENTS_AND_ROWS, JSON_FORM, ImportKind, Table, finite, num, sizes
from wirespeed.core.parsers import nccl_info
from wirespeed.core.tools import nccl_tests

# nccl-tests -J (src/util.cu): keys no other tool writes; a file cut early still has `args` naming the binary.
_NCCL_JSON = re.compile(
    r'"(?:nccl_version|minimum_bytes|average_bus_bandwidt?h|out_of_place)"\s*:|"args"\s*:\s*\[\s*"[^"]*_perf'
)


def _is_json(text: str) -> bool:
    return text.lstrip().startswith("{") and _NCCL_JSON.search(text) is not None


def _is_text(text: str) -> bool:
    return nccl_tests.looks_like(text)  # looked up at each call: tests count what detection hands the parser


def _measurement(m: nccl_tests.Measurement | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "time_us": m.time_us,
        "algbw_GBps": m.algbw_GBps,
        "busbw_GBps": m.busbw_GBps,
        "wrong": m.wrong,
        "max_error": m.max_error,
    }


def read(text: str) -> dict[str, Any]:
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
    return {
        "source_format": "json" if is_json else "text",
        "collective": result.collective,
        "ranks": result.ranks,
        "rows": [
            {
                "size_bytes": row.size_bytes,
                "count": row.count,
                "type": row.type,
                "redop": row.redop,
                "root": row.root,
                "out_of_place": _measurement(row.out_of_place),
                "in_place": _measurement(row.in_place),
            }
            for row in result.rows
        ],
        "avg_busbw_GBps": result.avg_busbw_GBps,
        "out_of_bounds": result.out_of_bounds,
        "transport": result.transport,
        "gdr": result.gdr,
        "nccl_version": result.nccl_version,
        "complete": result.complete,
        "implausible": list(result.implausible),
    }


def rows(obj: Mapping[str, Any]) -> Table:
    table = obj["rows"]
    placements = [
        (row["size_bytes"], name, placement)
        for row in table
        for name in ("out_of_place", "in_place")
        if (placement := row[name]) is not None and placement["busbw_GBps"] is not None
    ]
    out = [
        ["collective", obj["collective"] or "-"],
        ["ranks", str(obj["ranks"]) if obj["ranks"] is not None else "-"],
        ["transport", obj["transport"] or "-"],
    ]
    if table:
        out.append(["sizes", sizes(table)])
    if placements:
        size, name, best = max(placements, key=lambda item: item[2]["busbw_GBps"])
        out.append(
            ["peak busbw", f"{best['busbw_GBps']:.2f} GB/s at {format_size_bytes(size)} ({name.replace('_', '-')})"]
        )
    out.append(["avg busbw", num(obj["avg_busbw_GBps"], "GB/s", 3) if obj["complete"] else "- (run cut off)"])
    return ["figure", "value"], out


def _placement(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The out-of-place half (what nccl-tests' summary and wirespeed's own rung use), else the in-place one."""
    for name in ("out_of_place", "in_place"):
        half = row.get(name)
        if isinstance(half, Mapping) and finite(half.get("busbw_GBps")):
            return half
    return None


def figures(obj: Mapping[str, Any]) -> dict[str, float]:
    """busbw per message size."""
    found: dict[str, float] = {}
    for row in obj.get("rows") or []:
        half = _placement(row) if isinstance(row, Mapping) else None
        if half is not None and isinstance(row.get("size_bytes"), int):
            found[f"busbw_GBps @ {row['size_bytes']} B"] = float(half["busbw_GBps"])
    return found


KIND = ImportKind(
    tool="nccl-tests",
    names="nccl-tests",
    marks=((JSON_FORM, _is_json), (COMMENTS_AND_ROWS, _is_text)),
    read=read,
    rows=rows,
    figures=figures,
    paste_on_error=nccl_info.looks_like,  # an NCCL INFO log with nccl-tests' header but no result rows
)
