"""perftest output (`ib_write_bw`, `ib_send_lat`, ...), as its printed table or as an `--out_json` file. The text
parsing is wirespeed.core.tools.perftest's; `--out_json` files are read here: perftest writes them without saying
whether BW is MiB/s or Gb/s (`--report_gbits`), so the unit is told from the numbers themselves."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wirespeed.core.fabric.units import format_size_bytes
from wirespeed.core.imports.kind import JSON_FORM, TABLE, ImportKind, Table, finite, line_at, num, sizes
from wirespeed.core.records import figures as checked
from wirespeed.core.records.typed import JsonRecord
from wirespeed.core.tools import perftest

_JSON_OPEN = re.compile(r"^[ \t]*\{", re.MULTILINE)
_PERFTEST_JSON = re.compile(r'"test_info"\s*:\s*\{')
_FORMAT_FACTORS = (("MiB/sec", 2**20), ("Gb/sec", 125_000_000))  # bytes/s per unit of perftest's BW figure
# REPORT_FMT_QOS_JSON writes `sl: %d,` without quotes, and --output=bandwidth leaves a comma before `}`: no JSON
# reader takes either, so both are mended before reading.
_QOS_SL = re.compile(r"^([ \t]*)sl: (\d+),", re.MULTILINE)
_TRAILING_COMMA = re.compile(r",(\s*\})")
# write_test_info_to_file: testsStr[verb] _ [atomic type _] [Bidirectional_] [Post_List_] BW_|Latency_ ... Test
_JSON_TEST = re.compile(
    r"^(?P<verb>Send_imm|Send|RDMA_Write_imm|RDMA_Write|RDMA_Read|Atomic)_(?:(?:CMP_AND_SWAP|FETCH_AND_ADD)_)?"
    r"(?P<bidir>Bidirectional_)?(?:Post_List_)?(?P<kind>BW|Latency)_(?:forwarding_)?(?:Multicast_)?Test$"
)


@dataclass(frozen=True)
class PerftestBwRow(JsonRecord):
    """One message size of a bandwidth table, Gb/s (null where perftest measured no peak, or the unit is unknown)."""

    size_bytes: int
    iterations: int
    bw_peak_gbps: float | None
    bw_avg_gbps: float | None
    msg_rate_mpps: float | None


@dataclass(frozen=True)
class PerftestLatRow(JsonRecord):
    """One message size of a latency table, microseconds one-way."""

    size_bytes: int
    iterations: int
    t_min_us: float | None
    t_max_us: float | None
    t_typical_us: float | None
    t_avg_us: float | None
    t_stdev_us: float | None
    p99_us: float | None
    p999_us: float | None


@dataclass(frozen=True)
class Perftest(JsonRecord):
    """A perftest run (docs/import-format.md, `perftest`): its header and its table, bandwidth or latency rows by
    `kind`."""

    source_format: str | None
    test: str | None
    kind: str | None
    bidirectional: bool
    device: str | None
    link_type: str | None
    mtu_bytes: int | None
    gid_index: int | None
    qps: int | None
    units_printed: str | None
    rows: tuple[PerftestBwRow | PerftestLatRow, ...]

    @classmethod
    def read_as(cls, name: str, hint: Any, data: Mapping[str, Any]) -> Any:
        if name == "rows":
            return tuple[PerftestBwRow, ...] if data.get("kind") == "bw" else tuple[PerftestLatRow, ...]
        return hint


def _is_json(text: str) -> bool:
    return _JSON_OPEN.search(text) is not None and _PERFTEST_JSON.search(text) is not None


def _is_text(text: str) -> bool:
    return perftest.looks_like(text)


def _rows(rows: list[perftest.BwRow] | list[perftest.LatRow]) -> tuple[PerftestBwRow | PerftestLatRow, ...]:
    """The parser's rows as the import format keeps them: the same names, already unit-named."""
    return tuple(
        PerftestBwRow(**dataclasses.asdict(r))
        if isinstance(r, perftest.BwRow)
        else PerftestLatRow(**dataclasses.asdict(r))
        for r in rows
    )


def _read_text(text: str) -> Perftest:
    try:
        result = perftest.parse_text(text)
    except ValueError as exc:
        if str(exc).startswith("not perftest output"):  # recognised by its header, so the table is what is missing
            raise ValueError("perftest output without its result table: the run failed or the text was cut") from None
        raise
    bw_rows = [row for row in result.rows if isinstance(row, perftest.BwRow)]
    lat_rows = [row for row in result.rows if isinstance(row, perftest.LatRow)]
    return Perftest(
        source_format="text",
        test=result.test,
        kind=result.kind,
        bidirectional=result.bidirectional,
        device=result.device,
        link_type=result.link_type,
        mtu_bytes=result.mtu,
        gid_index=result.gid_index,
        qps=result.qps,
        units_printed=result.units,
        rows=_rows(bw_rows) if result.kind == "bw" else _rows(lat_rows),
    )


def _number(value: Any, where: str, line: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"line {line}: perftest JSON {where} {value!r} is not a number")
    return checked.measured(value, f"line {line}: perftest JSON {where}")


def _optional_number(results: dict[str, Any], key: str, line: int) -> float | None:
    return _number(results[key], key, line) if key in results else None


def _json_bw_unit(size_bytes: float, bw_avg: float, rate_mpps: float) -> str | None:
    """perftest's JSON BW unit from its own arithmetic: BW x format_factor = size x MsgRate x 10^6 (print_report_bw),
    and the two factors (2^20 for MiB/s, 1.25 x 10^8 for Gb/s) are 119 times apart. None when nothing moved."""
    if size_bytes <= 0 or bw_avg <= 0 or rate_mpps <= 0:
        return None
    factor = size_bytes * rate_mpps * 1e6 / bw_avg
    for unit, scale in _FORMAT_FACTORS:
        if 0.8 < factor / scale < 1.25:
            return unit
    return None


def _read_json(text: str) -> Perftest:
    """A `--out_json` file (perftest_parameters.c write_test_info_to_file and write_*_report_to_file)."""
    fixed = _TRAILING_COMMA.sub(r"\1", _QOS_SL.sub(r'\1"sl": \2,', text))
    opening = _JSON_OPEN.search(fixed)
    if opening is None:
        raise ValueError("line 1: perftest JSON has no opening `{`")
    try:
        data, _ = json.JSONDecoder().raw_decode(fixed, opening.end() - 1)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {exc.lineno}: perftest JSON cut off or malformed ({exc.msg})") from None
    info = data.get("test_info") if isinstance(data, dict) else None
    results = data.get("results") if isinstance(data, dict) else None
    results_line = line_at(fixed, max(fixed.find('"results"'), 0))
    if not isinstance(info, dict) or not isinstance(results, dict):
        raise ValueError(f"line {results_line}: perftest JSON lacks its test_info or results object")
    name = _JSON_TEST.match(str(info.get("test", "")))
    test = None
    if name is not None:
        prefix = "raw_ethernet" if info.get("Connection_type") == "RawEth" else perftest.VERB_PREFIX[name["verb"]]
        test = f"{prefix}_{'bw' if name['kind'] == 'BW' else 'lat'}"
    if "MsgSize" not in results or "n_iterations" not in results:
        raise ValueError(
            f"line {results_line}: perftest JSON of a run with --output=bandwidth/latency/message_rate holds one "
            "figure and no message size: run without --output to import it"
        )
    size = int(_number(results["MsgSize"], "MsgSize", results_line))
    iterations = int(_number(results["n_iterations"], "n_iterations", results_line))
    is_bw = "BW_average" in results
    units: str | None
    if is_bw:
        avg = _number(results["BW_average"], "BW_average", results_line)
        peak = _number(results.get("BW_peak", 0.0), "BW_peak", results_line)
        rate = _number(results.get("MsgRate", 0.0), "MsgRate", results_line)
        units = _json_bw_unit(size, avg, rate)
        scale = None if units is None else (perftest.MIB_PER_S_TO_GBPS if units == "MiB/sec" else 1.0)
        row: PerftestBwRow | PerftestLatRow = PerftestBwRow(
            size_bytes=size,
            iterations=iterations,
            bw_peak_gbps=None
            if scale is None or (peak == 0.0 and avg > 0.0)
            else checked.rate_gbps(peak * scale, f"line {results_line}: perftest JSON BW_peak"),
            bw_avg_gbps=None
            if scale is None
            else checked.rate_gbps(avg * scale, f"line {results_line}: perftest JSON BW_average"),
            msg_rate_mpps=rate,
        )
    else:
        units = "usec"
        row = PerftestLatRow(
            size_bytes=size,
            iterations=iterations,
            t_min_us=_optional_number(results, "t_min", results_line),
            t_max_us=_optional_number(results, "t_max", results_line),
            t_typical_us=_optional_number(results, "t_typical", results_line),
            t_avg_us=_optional_number(results, "t_avg", results_line),
            t_stdev_us=_optional_number(results, "t_stdev", results_line),
            p99_us=_optional_number(results, "percentile_99", results_line),
            p999_us=_optional_number(results, "percentile_99.9", results_line),
        )

    def info_int(key: str) -> int | None:
        value = info.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return Perftest(
        source_format="json",
        test=test,
        kind="bw" if is_bw else "lat",
        bidirectional=name is not None and name["bidir"] is not None,
        device=info.get("Device") if isinstance(info.get("Device"), str) else None,
        link_type=info.get("Link_type") if isinstance(info.get("Link_type"), str) else None,
        mtu_bytes=info_int("Mtu"),
        gid_index=info_int("GID_index"),
        qps=info_int("Number_of_qps"),
        units_printed=units,
        rows=(row,),
    )


def read(text: str) -> Perftest:
    return _read_json(text) if _is_json(text) else _read_text(text)


def rows(obj: Perftest) -> Table:
    table = obj.rows
    out = [
        ["test", obj.test or "-"],
        ["device", f"{obj.device or '-'} ({obj.link_type or '?'}, MTU {obj.mtu_bytes or '?'} B)"],
        ["sizes", sizes(table)],
    ]
    if obj.kind == "bw":
        bw = [row for row in table if isinstance(row, PerftestBwRow)]
        averages = [(row.bw_avg_gbps, row.size_bytes) for row in bw if row.bw_avg_gbps is not None]
        if averages:
            best, at = max(averages, key=lambda row: row[0])
            out.append(["BW average", f"{best:.2f} Gb/s at {format_size_bytes(at)}"])
        else:
            out.append(["BW average", "- (unit not known: perftest JSON without a message rate)"])
        peaks = [row.bw_peak_gbps for row in bw if row.bw_peak_gbps is not None]
        out.append(["BW peak", f"{max(peaks):.2f} Gb/s" if peaks else "- (not measured)"])
        out.append(["bidirectional", "yes" if obj.bidirectional else "no"])
    else:
        first = table[0]
        size = format_size_bytes(first.size_bytes)
        lat = first if isinstance(first, PerftestLatRow) else PerftestLatRow(first.size_bytes, 0, *[None] * 7)
        out.append([f"t_typical at {size}", num(lat.t_typical_us, "us")])
        out.append([f"t_avg at {size}", num(lat.t_avg_us, "us")])
        out.append([f"99.9% at {size}", num(lat.p999_us, "us")])
    return ["figure", "value"], out


def figures(obj: Perftest) -> dict[str, float]:
    """The largest message's rate of a bandwidth test; `-b` is both directions added, named so."""
    found: dict[str, float] = {}
    if obj.kind == "bw":
        table = [
            (r.size_bytes, r.bw_avg_gbps) for r in obj.rows if isinstance(r, PerftestBwRow) and finite(r.bw_avg_gbps)
        ]
        if table:
            _, largest = max(table, key=lambda r: r[0])
            name = "full_duplex_gbps" if obj.bidirectional else "forward_gbps"
            found[name] = float(largest or 0.0)
    return found


KIND = ImportKind(
    tool="perftest",
    names="perftest",
    marks=((JSON_FORM + 1, _is_json), (TABLE, _is_text)),
    body=Perftest,
    read=read,
    rows=rows,
    figures=figures,
)
