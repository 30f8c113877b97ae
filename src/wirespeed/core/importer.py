"""`wirespeed import`: tell which tool wrote a saved output from its content (never its file name: people name logs
`out.txt`) and turn it into the public import format, version 1 (docs/import-format.md). Pure: bytes or text in, one
JSON-ready dict out, or ValueError whose message starts `line N:` so the CLI can say where the file went wrong.

The parsing is the project's parsers' (nccl-tests, perftest, iperf3, ethtool, rdma_tools); this module picks one and
renames their fields into the public, unit-named keys. perftest `--out_json` files are read here: perftest writes them
without saying whether BW is MiB/s or Gb/s (`--report_gbits`), so the unit is told from the numbers themselves.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import math
import re
from dataclasses import asdict
from pathlib import PurePath
from typing import Any

from wirespeed.core import figures, pastes
from wirespeed.core.parsers import ethtool, nccl_info, rdma_tools
from wirespeed.core.parsers.paste import split
from wirespeed.core.tools import iperf3, nccl_tests, perftest

FORMAT_VERSION = 1
# Real tool outputs are kilobytes (the largest in tests/fixtures/real, an NCCL_DEBUG=INFO log of 16 ranks, is 70 KB);
# a file past this is not one output, and reading it would take minutes and gigabytes.
MAX_IMPORT_BYTES = 16 * 2**20
TOO_LARGE_HINT = " for an import: a tool's output is kilobytes; cut out the run to import (e.g. with sed -n)"
# detect() reads the marks of a tool at the start of a file only: enough for any real output's header and first rows.
DETECT_CHARS = 256 * 2**10
# The `tool` values of the public format (detect() documents the order it tries them in).
# What owners paste when asking for help (wirespeed.core.pastes), and `paste`: a file holding several outputs.
PASTE_TOOLS = ("nccl-info", "kernel-log", "lspci", "ip-addr", "ip-brief", "ethtool", "ethtool-fec", "nvidia-smi-topo")
TOOLS = (
    "nccl-tests",
    "perftest",
    "iperf3",
    "ethtool-stats",
    "ibdev2netdev",
    "ibv_devinfo",
    "show_gids",
    "rdma-link",
    *PASTE_TOOLS,
    "paste",
)
KNOWN_TOOLS = (
    "nccl-tests, perftest, iperf3, ethtool -S, ibdev2netdev, ibv_devinfo, show_gids, rdma link, NCCL_DEBUG=INFO logs, "
    "dmesg/journalctl -k, lspci -vv, ip addr, ip -br addr/link, ethtool IFACE, ethtool --show-fec, nvidia-smi topo -m"
)

_JSON_OPEN = re.compile(r"^[ \t]*\{", re.MULTILINE)
# nccl-tests -J (src/util.cu): keys no other tool writes; a file cut early still has `args` naming the binary.
_NCCL_JSON = re.compile(
    r'"(?:nccl_version|minimum_bytes|average_bus_bandwidt?h|out_of_place)"\s*:|"args"\s*:\s*\[\s*"[^"]*_perf'
)
_PERFTEST_JSON = re.compile(r'"test_info"\s*:\s*\{')
_NIC_STATISTICS = re.compile(r"^\s*NIC statistics:\s*$", re.MULTILINE)
_STAT_LINE = re.compile(r"^\s+[^:]+?:\s+-?\d+\s*$")
_LINE_IN = re.compile(r"\bline (\d+)\b")


# ------------------------------------------------------------------------------------------------------ bytes in


def _line_at(text: str, index: int) -> int:
    """1-based line of `text[index]`, counted as str.splitlines counts (the parsers count so too)."""
    return len((text[:index] + "x").splitlines())


def decode(data: bytes) -> str:
    """A file's bytes as text: UTF-8 (a BOM dropped), or UTF-16 with its BOM (PowerShell's `>` writes that).
    Binary data raises ValueError naming the line of the first byte that no log holds."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    data = data.removeprefix(codecs.BOM_UTF8)
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ValueError(f"line {line}: binary data (a NUL byte), not a tool's text output")
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if bad and bad * 20 > len(text):  # a stray Latin-1 byte in a log is fine; mostly undecodable bytes are not text
        raise ValueError(f"line {_line_at(text, text.index(chr(0xFFFD)))}: binary data (not UTF-8 text)")
    return text


# ----------------------------------------------------------------------------------------------------- detection


def _looks_ethtool_stats(text: str) -> bool:
    """`ethtool -S` without its header, as `| grep` leaves it: indented `name: integer` lines and little else."""
    lines = [line for line in text.splitlines() if line.strip()]
    stats = sum(1 for line in lines if _STAT_LINE.match(line))
    return stats >= 2 and len(lines) - stats <= 2


def detect(text: str) -> str | None:
    """The `tool` (one of TOOLS) whose output `text` is, told from its content; None when it is none of them.

    Where two could match, the more particular mark wins: JSON forms first, then the RDMA tools' fixed line shapes,
    `NIC statistics:`, perftest's table, iperf3's banners, nccl-tests' comments and rows, and headerless ethtool -S.
    Only the first DETECT_CHARS (to the end of a line) are looked at, so a huge file costs no more to tell.
    """
    if len(text) > DETECT_CHARS:
        end = text.find("\n", DETECT_CHARS)
        text = text[:DETECT_CHARS] if end < 0 else text[: end + 1]
    if text.lstrip().startswith("{") and _NCCL_JSON.search(text):
        return "nccl-tests"
    if _JSON_OPEN.search(text) and _PERFTEST_JSON.search(text):
        return "perftest"
    if iperf3.looks_like(text) == "json":
        return "iperf3"
    rdma = rdma_tools.looks_like(text)
    if rdma is not None:
        return rdma
    if _NIC_STATISTICS.search(text):
        return "ethtool-stats"
    if perftest.looks_like(text):
        return "perftest"
    if iperf3.looks_like(text) == "text":
        return "iperf3"
    if nccl_tests.looks_like(text):
        return "nccl-tests"
    if _looks_ethtool_stats(text):
        return "ethtool-stats"
    return None


# ---------------------------------------------------------------------------------------------------- nccl-tests


def _nccl_measurement(m: nccl_tests.Measurement | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "time_us": m.time_us,
        "algbw_GBps": m.algbw_GBps,
        "busbw_GBps": m.busbw_GBps,
        "wrong": m.wrong,
        "max_error": m.max_error,
    }


def _nccl(text: str) -> dict[str, Any]:
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
                "out_of_place": _nccl_measurement(row.out_of_place),
                "in_place": _nccl_measurement(row.in_place),
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


# ------------------------------------------------------------------------------------------------------ perftest

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


def _rows(rows: list[perftest.BwRow] | list[perftest.LatRow]) -> list[dict[str, Any]]:
    """The parser's rows as the import format keeps them: the same names, already unit-named."""
    return [dataclasses.asdict(r) for r in rows]


def _perftest_text(text: str) -> dict[str, Any]:
    try:
        result = perftest.parse_text(text)
    except ValueError as exc:
        if str(exc).startswith("not perftest output"):  # recognised by its header, so the table is what is missing
            raise ValueError("perftest output without its result table: the run failed or the text was cut") from None
        raise
    bw_rows = [row for row in result.rows if isinstance(row, perftest.BwRow)]
    lat_rows = [row for row in result.rows if isinstance(row, perftest.LatRow)]
    return {
        "source_format": "text",
        "test": result.test,
        "kind": result.kind,
        "bidirectional": result.bidirectional,
        "device": result.device,
        "link_type": result.link_type,
        "mtu_bytes": result.mtu,
        "gid_index": result.gid_index,
        "qps": result.qps,
        "units_printed": result.units,
        "rows": _rows(bw_rows) if result.kind == "bw" else _rows(lat_rows),
    }


def _number(value: Any, where: str, line: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"line {line}: perftest JSON {where} {value!r} is not a number")
    return figures.measured(value, f"line {line}: perftest JSON {where}")


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


def _perftest_json(text: str) -> dict[str, Any]:
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
    results_line = _line_at(fixed, max(fixed.find('"results"'), 0))
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
        rows: list[dict[str, Any]] = [
            {
                "size_bytes": size,
                "iterations": iterations,
                "bw_peak_gbps": None
                if scale is None or (peak == 0.0 and avg > 0.0)
                else figures.rate_gbps(peak * scale, f"line {results_line}: perftest JSON BW_peak"),
                "bw_avg_gbps": None
                if scale is None
                else figures.rate_gbps(avg * scale, f"line {results_line}: perftest JSON BW_average"),
                "msg_rate_mpps": rate,
            }
        ]
    else:
        units = "usec"
        rows = [
            {
                "size_bytes": size,
                "iterations": iterations,
                "t_min_us": _optional_number(results, "t_min", results_line),
                "t_max_us": _optional_number(results, "t_max", results_line),
                "t_typical_us": _optional_number(results, "t_typical", results_line),
                "t_avg_us": _optional_number(results, "t_avg", results_line),
                "t_stdev_us": _optional_number(results, "t_stdev", results_line),
                "p99_us": _optional_number(results, "percentile_99", results_line),
                "p999_us": _optional_number(results, "percentile_99.9", results_line),
            }
        ]

    def info_int(key: str) -> int | None:
        value = info.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return {
        "source_format": "json",
        "test": test,
        "kind": "bw" if is_bw else "lat",
        "bidirectional": name is not None and name["bidir"] is not None,
        "device": info.get("Device") if isinstance(info.get("Device"), str) else None,
        "link_type": info.get("Link_type") if isinstance(info.get("Link_type"), str) else None,
        "mtu_bytes": info_int("Mtu"),
        "gid_index": info_int("GID_index"),
        "qps": info_int("Number_of_qps"),
        "units_printed": units,
        "rows": rows,
    }


def _perftest(text: str) -> dict[str, Any]:
    if _JSON_OPEN.search(text) and _PERFTEST_JSON.search(text):
        return _perftest_json(text)
    return _perftest_text(text)


# -------------------------------------------------------------------------------------------- iperf3 and ethtool


def _bps(gbps: float | None) -> float | None:
    return None if gbps is None else round(gbps * 1e9, 3)


def _iperf3(text: str) -> dict[str, Any]:
    kind = iperf3.looks_like(text)
    try:
        result = iperf3.parse_json(text) if kind == "json" else iperf3.parse_text(text)
    except ValueError as exc:
        if str(exc).startswith("not iperf3 output"):  # recognised by its banner, so the results are what is missing
            raise ValueError("iperf3 output without interval, summary or error lines: the text was cut") from None
        raise
    return {
        "source_format": "json" if kind == "json" else "text",
        "protocol": result.protocol,
        "streams": result.streams,
        "sent_bps": _bps(result.sender_gbps),
        "received_bps": _bps(result.receiver_gbps),
        "reverse_sent_bps": _bps(result.reverse_sender_gbps),
        "reverse_received_bps": _bps(result.reverse_receiver_gbps),
        "retransmits": result.retransmits,
        "cpu_host_pct": result.cpu_local_percent,
        "cpu_remote_pct": result.cpu_remote_percent,
        "jitter_ms": result.jitter_ms,
        "lost_datagrams": result.lost_datagrams,
        "total_datagrams": result.total_datagrams,
        "error": result.error,
    }


def _ethtool(text: str) -> dict[str, Any]:
    counters = ethtool.parse_stats(text)
    if not counters:
        raise ValueError("ethtool -S output without a single `name: value` counter line")
    return {"source_format": "text", "counters": counters}


# ------------------------------------------------------------------------------------------------- RDMA tools


def _ibdev2netdev(text: str) -> dict[str, Any]:
    """The mappings, and the non-blank lines that hold none (prompts, comments, notes), so what was read past is
    said rather than silently dropped."""
    listing = rdma_tools.read_ibdev2netdev(text)
    return {
        "source_format": "text",
        "devices": [asdict(m) for m in listing.mappings],
        "skipped_lines": [asdict(s) for s in listing.skipped],
    }


def _ibv_devinfo(text: str) -> dict[str, Any]:
    return {"source_format": "text", "devices": [asdict(d) for d in rdma_tools.parse_ibv_devinfo(text)]}


def _show_gids(text: str) -> dict[str, Any]:
    rows, total = rdma_tools.parse_show_gids(text)
    return {"source_format": "text", "gids": [asdict(row) for row in rows], "n_gids_found": total}


def _rdma_link(text: str) -> dict[str, Any]:
    links = rdma_tools.parse_rdma_link(text)
    source = "json" if rdma_tools.looks_like_json(text) else "text"
    return {"source_format": source, "links": [{**asdict(link), "caps": list(link.caps)} for link in links]}


_IMPORTERS = {
    "nccl-tests": _nccl,
    "perftest": _perftest,
    "iperf3": _iperf3,
    "ethtool-stats": _ethtool,
    "ibdev2netdev": _ibdev2netdev,
    "ibv_devinfo": _ibv_devinfo,
    "show_gids": _show_gids,
    "rdma-link": _rdma_link,
}


# ------------------------------------------------------------------------------------------------------- public


def _with_line(message: str, text: str) -> str:
    """`line N: message`. A parser that names no line was stopped by what is missing, so the last line is meant."""
    if re.match(r"line \d+:", message):
        return message
    named = _LINE_IN.search(message)
    if named is None:
        return f"line {max(len(text.splitlines()), 1)}: {message}"
    return f"line {named.group(1)}: " + message.replace(f" (line {named.group(1)})", "")


def _jsonable(value: Any) -> Any:
    """Tuples become lists and non-finite floats (nccl-tests writes `nan`) null, so the object is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value


def _pasted(text: str, file_name: str) -> dict[str, Any] | None:
    """What owners paste (wirespeed.core.pastes): one output of a kind in PASTE_TOOLS, as that tool; several outputs
    in one file (prompts, `$ ` lines) as `paste`, one section per output. Every line read past is in
    `skipped_lines`, with why. None when the file holds none of these outputs."""
    readings, between = pastes.read_text(text, file_name)
    known = [r for r in readings if r.kind is not None]
    if not known or (len(known) == 1 and known[0].kind == "ibdev2netdev"):
        return None  # ibdev2netdev alone keeps its own object (above)
    skipped = pastes.skipped_json([*between, *(s for r in readings for s in r.skipped)])
    if len(known) == 1:
        reading = known[0]
        head = {"source_format": "text", "command": reading.command, "host": reading.host}
        return {"tool": reading.kind, **head, **pastes.body(reading), "skipped_lines": skipped}
    sections = [
        {"line": r.first_line, "kind": r.kind, "command": r.command, "host": r.host, **pastes.body(r)} for r in known
    ]
    return {"tool": "paste", "source_format": "text", "sections": sections, "skipped_lines": skipped}


def import_text(text: str, file_name: str) -> dict[str, Any]:
    """The public object (format_version 1) for one file's text; ValueError `line N: why` when it is no known tool's
    output, or is one but cut off or broken where it can be told."""
    if not text.strip():
        raise ValueError("line 1: the file is empty" if not text else "line 1: the file holds only blank lines")
    tool = detect(text)
    if tool is None or (tool == "ibdev2netdev" and len(split(text).sections) > 1):
        pasted = _pasted(text, file_name)
        if pasted is not None:
            return {"format_version": FORMAT_VERSION, "file": file_name, **_jsonable(pasted)}
    if tool is None:
        first = next(number for number, line in enumerate(text.splitlines(), start=1) if line.strip())
        raise ValueError(f"line {first}: not output of a known tool ({KNOWN_TOOLS})")
    try:
        body = _IMPORTERS[tool](text)
    except ValueError as exc:
        pasted = _pasted(text, file_name) if tool == "nccl-tests" and nccl_info.looks_like(text) else None
        if pasted is not None:  # an NCCL INFO log with nccl-tests' header but no result rows
            return {"format_version": FORMAT_VERSION, "file": file_name, **_jsonable(pasted)}
        raise ValueError(_with_line(str(exc), text)) from None
    except RecursionError:
        raise ValueError(f"line 1: {tool} JSON nested too deeply to read") from None
    return {"format_version": FORMAT_VERSION, "tool": tool, "file": file_name, **_jsonable(body)}


def output_name(file_name: str, tool: str) -> str:
    """Where `--into RUN_DIR` puts a file's object, under RUN_DIR/imported/: `<file stem>.<tool>.json`."""
    return f"{PurePath(file_name).stem or 'stdin'}.{tool}.json"
