"""perftest text output (ib_write_bw, ib_send_bw, ib_read_bw, ib_write_lat, ...), server or client side: the test
header and the result table. Pure: text in, records out.

The table is read by its own column header (perftest `src/perftest_parameters.h`), so the QoS `#sl` column, the
`--report_per_port` and `--cpu_util` columns and the old three-column latency table need no special case.
Bandwidth is converted to `_gbps` (10^9 bit/s): perftest's `MB/sec` (`MiB/sec` since 2024) is 2^20 bytes/s,
`Gb/sec` (`--report_gbits`) is already 10^9 bit/s. Latencies stay microseconds, as printed (one-way: perftest halves
the round trip itself). Every number is checked against the printf format it came from (`%.2f`, `%.6f`), which is
how a row cut in the middle is told from a whole one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wirespeed.core.records import figures
from wirespeed.core.records.results import Direction, Flow, FlowResult, Latency


@dataclass(frozen=True)
class BwRow:
    """One message size. `bw_peak_gbps` is None when perftest did not measure it (`-D`, `--run_infinitely`, `-N`,
    a server of a send test): it prints 0.00 there, which is not a rate."""

    size_bytes: int
    iterations: int
    bw_peak_gbps: float | None
    bw_avg_gbps: float
    msg_rate_mpps: float | None


@dataclass(frozen=True)
class LatRow:
    """One message size of a latency table, microseconds. The averages, deviation and percentiles are None in
    tables from perftest versions that did not print them."""

    size_bytes: int
    iterations: int
    t_min_us: float
    t_max_us: float
    t_typical_us: float
    t_avg_us: float | None
    t_stdev_us: float | None
    p99_us: float | None
    p999_us: float | None


@dataclass(frozen=True)
class PerftestResult:
    """What one perftest side printed. `test` is the binary's name told from the header title (None when the header
    is missing); `bidirectional` is True for `-b`, whose BW is both directions added. `units` is the table's own
    unit (`MB/sec`, `MiB/sec`, `Gb/sec`, or `usec` for latency); the rows are converted already. `warnings` are
    perftest's warning lines (`BW peak won't be measured`, `Conflicting CPU frequency values`), each once."""

    test: str | None
    kind: str
    device: str | None
    gid_index: int | None
    qps: int | None
    mtu: int | None
    link_type: str | None
    rows: tuple[BwRow, ...] | tuple[LatRow, ...]
    units: str
    warnings: tuple[str, ...]
    bidirectional: bool = False


# Column names as perftest prints them, longest alternatives first; the header must be made of these only.
_COLUMN = re.compile(
    r"#bytes|#sl|#iterations|BW peak\[(?P<peak>[^\]]+)\]|BW average\[(?P<avg>[^\]]+)\]|MsgRate\[Mpps\]"
    r"|BW Port[12]\[[^\]]+\]|MsgRate Port[12]\[Mpps\]|CPU_Util\[%\]"
    r"|t_(?:min|max|typical|avg|stdev)\[(?P<lat>\w+)\]|99(?:\.9)?% percentile\[\w+\]|tps average"
)
_TABLE_HEADER = re.compile(r"#bytes\s+(?:#sl\s+)?#iterations\s")
_TITLE = re.compile(
    r"^\s*(?P<verb>Send|Send_imm|RDMA_Write|RDMA_Write_imm|RDMA_Read|Atomic)\s+"
    r"(?:(?:CMP_AND_SWAP|FETCH_AND_ADD)\s+)?(?P<bidir>Bidirectional\s+)?(?:Post List\s+)?"
    r"(?P<kind>BW|Latency)\s+(?:forwarding\s+)?(?:Multicast\s+)?Test\s*$"
)
_FIELD = re.compile(r"(?P<key>[A-Za-z][\w*.\- ]*?)\s*:\s*(?P<value>\S+)")
_WARNING = re.compile(r"\bwarning\b|Conflicting CPU frequency", re.IGNORECASE)
_DASHES = re.compile(r"^\s*-{20,}\s*$")
_HISTOGRAM = re.compile(r"^\s*(?:#, (?:usec|cycles)|\d+, \S+)\s*$")  # -H / -U latency lists
_OTHER_TABLE = re.compile(r"^\s*(?:Local|Remote) results:\s*$")  # --report-both: the parts of the sum above
_INT = re.compile(r"\d+")
VERB_PREFIX = {  # test_info / title verb -> the binary's name stem
    "Send": "ib_send",
    "Send_imm": "ib_send",
    "RDMA_Write": "ib_write",
    "RDMA_Write_imm": "ib_write",
    "RDMA_Read": "ib_read",
    "Atomic": "ib_atomic",
}
_MIB_UNITS = ("MB/sec", "MiB/sec")  # both 2^20 bytes/s (perftest's format_factor 0x100000)
_GB_UNITS = ("Gb/sec",)  # 10^9 bit/s (format_factor 125000000 bytes)
MIB_PER_S_TO_GBPS = 2**20 * 8 / 1e9  # what one MB/sec (MiB/sec) of perftest is in Gb/s


def _decimals(token: str) -> int | None:
    """Digits after the point of a plain decimal number, None if `token` is not one."""
    whole, dot, frac = token.removeprefix("-").partition(".")
    if not dot or not whole.isdigit() or not frac.isdigit():
        return None
    return len(frac)


def _columns(header: str, number: int) -> tuple[list[str], str]:
    """Column names of the table header, and its unit."""
    names: list[str] = []
    units: set[str] = set()
    pos = 0
    text = header.rstrip()
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        match = _COLUMN.match(text, pos)
        if match is None:
            raise ValueError(f"line {number}: unknown perftest column at {text[pos : pos + 24]!r}")
        names.append(re.sub(r"\[[^\]]*\]$", "", match.group(0)))
        units.update(u for u in (match["peak"], match["avg"], match["lat"]) if u)
        pos = match.end()
    if len(units) != 1:
        raise ValueError(f"line {number}: perftest header names no single unit ({sorted(units)})")
    unit = units.pop()
    if unit == "cycles":
        raise ValueError(f"line {number}: latency printed in CPU cycles (-C), not usec")
    if unit not in (*_MIB_UNITS, *_GB_UNITS, "usec"):
        raise ValueError(f"line {number}: unknown perftest unit {unit!r}")
    return names, unit


def _row_values(line: str, number: int, names: list[str]) -> dict[str, str]:
    tokens = line.split()
    if len(tokens) != len(names):
        raise ValueError(f"line {number}: perftest row has {len(tokens)} columns, the header {len(names)} (cut off?)")
    values = dict(zip(names, tokens, strict=True))
    for name, token in values.items():
        if name.startswith("#"):
            ok = _INT.fullmatch(token) is not None
        elif name.startswith("MsgRate"):
            ok = _decimals(token) == 6
        elif name.startswith("BW"):
            ok = _decimals(token) in (2, 6)  # %.2f, or %.6f below 0.1 Gb/s
        else:
            ok = _decimals(token) == 2
        if not ok:
            raise ValueError(f"line {number}: {name} {token!r} is not a number as perftest prints it (cut off?)")
        if token.startswith("-"):
            raise ValueError(f"line {number}: negative {name} {token}: perftest's clock arithmetic went wrong")
    return values


def _gbps(token: str, unit: str) -> float:
    value = float(token)
    return value * MIB_PER_S_TO_GBPS if unit in _MIB_UNITS else value


def _bw_row(values: dict[str, str], unit: str, number: int) -> BwRow:
    avg = figures.rate_gbps(_gbps(values["BW average"], unit), f"line {number}: BW average")
    peak = figures.rate_gbps(_gbps(values["BW peak"], unit), f"line {number}: BW peak")
    rate = values.get("MsgRate")
    return BwRow(
        size_bytes=int(values["#bytes"]),
        iterations=int(values["#iterations"]),
        bw_peak_gbps=None if peak == 0.0 and avg > 0.0 else peak,
        bw_avg_gbps=avg,
        msg_rate_mpps=float(rate) if rate is not None else None,
    )


def _lat_row(values: dict[str, str], number: int) -> LatRow:
    if "t_min" not in values:
        raise ValueError(f"line {number}: latency table of a -D run (t_avg only): run without -D for t_min/t_typical")

    def latency(name: str) -> float:
        return figures.measured(float(values[name]), f"line {number}: {name}", "us", high=figures.MAX_LATENCY_US)

    def optional(name: str) -> float | None:
        return latency(name) if name in values else None

    return LatRow(
        size_bytes=int(values["#bytes"]),
        iterations=int(values["#iterations"]),
        t_min_us=latency("t_min"),
        t_max_us=latency("t_max"),
        t_typical_us=latency("t_typical"),
        t_avg_us=optional("t_avg"),
        t_stdev_us=optional("t_stdev"),
        p99_us=optional("99% percentile"),
        p999_us=optional("99.9% percentile"),
    )


def _header_fields(lines: list[str]) -> tuple[dict[str, str], re.Match[str] | None]:
    fields: dict[str, str] = {}
    title = None
    for line in lines:
        if title is None:
            title = _TITLE.match(line)
        for match in _FIELD.finditer(line):
            fields.setdefault(match["key"].strip(), match["value"])
    return fields, title


def _int_field(fields: dict[str, str], key: str) -> int | None:
    match = re.match(r"\d+", fields.get(key, ""))
    return int(match.group(0)) if match else None


def parse_text(text: str) -> PerftestResult:
    """perftest output -> PerftestResult; the rows of the first table (`--report-both` adds local and remote
    tables after it, whose sum the first one is). Rows of `--run_infinitely` are kept in order, one per period."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _TABLE_HEADER.search(line)), None)
    if start is None:
        raise ValueError("not perftest output: no '#bytes #iterations' result table")
    names, unit = _columns(lines[start], start + 1)
    kind = "lat" if unit == "usec" else "bw"
    needed = {"#bytes", "#iterations"} | ({"BW peak", "BW average"} if kind == "bw" else set())
    if not needed <= set(names):
        raise ValueError(f"line {start + 1}: perftest table header lacks {sorted(needed - set(names))}")
    warnings: list[str] = []
    for line in lines:
        if _WARNING.search(line) and line.strip() not in warnings:
            warnings.append(line.strip())
    bw_rows: list[BwRow] = []
    lat_rows: list[LatRow] = []
    for index in range(start + 1, len(lines)):
        line, number = lines[index], index + 1
        stripped = line.strip()
        if _OTHER_TABLE.match(line) or _TITLE.match(line):
            break  # the --report-both parts, or a second run pasted after this one
        if not stripped or _DASHES.match(line) or _HISTOGRAM.match(line) or _TABLE_HEADER.search(line):
            continue
        if not stripped[0].isdigit():
            continue  # a warning, a counter dump, a shell prompt
        values = _row_values(line, number, names)
        if kind == "bw":
            bw_rows.append(_bw_row(values, unit, number))
        else:
            lat_rows.append(_lat_row(values, number))
    if not bw_rows and not lat_rows:
        raise ValueError("perftest table has a header but no result rows: the run failed or the text was cut")
    fields, title = _header_fields(lines[:start])
    test = None
    if title is not None:
        raw = fields.get("Connection type") == "RawEth"
        prefix = "raw_ethernet" if raw else VERB_PREFIX[title["verb"]]
        test = f"{prefix}_{'bw' if title['kind'] == 'BW' else 'lat'}"
    return PerftestResult(
        test=test,
        kind=kind,
        device=fields.get("Device"),
        gid_index=_int_field(fields, "GID index"),
        qps=_int_field(fields, "Number of qps"),
        mtu=_int_field(fields, "Mtu"),
        link_type=fields.get("Link type"),
        rows=tuple(bw_rows) if kind == "bw" else tuple(lat_rows),
        units=unit,
        warnings=tuple(warnings),
        bidirectional=title is not None and title["bidir"] is not None,
    )


def looks_like(text: str) -> bool:
    """True when `text` is perftest output: its result table header, or its test title with the header block."""
    if any(_TABLE_HEADER.search(line) for line in text.splitlines()):
        return True
    return any(_TITLE.match(line) for line in text.splitlines()) and "Number of qps" in text


# ---------------------------------------------------------------------------------------------------- the runner
# One perftest pair per half. `-d` (device), `-i` (port) and `-x` (GID index) are local to the side that reads them,
# so each side names its own; every test parameter (`-q`, `-s`, `-D`, `-n`, `-b`) must be the same on both sides,
# or perftest refuses or hangs. InfiniBand needs no `-x`.

NAME = "perftest"
VERSION_KEY = "ib_write_bw_version"
VERSION_ARGV = ("ib_write_bw", "--version")
INSTALL_HINT = "apt install perftest on every node (`wirespeed check --only tools.present`)"
# What a client prints while its server is not listening yet: worth another try.
NOT_LISTENING = ("Couldn't connect", "Unable to open file descriptor for socket connection", "Connection refused")
TESTS = ("write", "send")
_SECTION = re.compile(r"^\s*(?P<side>Local|Remote) results:\s*$", re.MULTILINE)  # --report-both's tables


def parse_version(text: str) -> str:
    """`ib_write_bw --version` prints `Version: 6.22` (older: ` Version: 5.60`); it exits 1 after printing it."""
    match = re.search(r"Version:?\s*(\d+(?:\.\d+)+)", text)
    if not match:
        raise ValueError("no perftest version")
    return match.group(1)


def _side(test: str, lat: bool, device: str, ib_port: int, gid_index: int | None) -> list[str]:
    argv = [f"ib_{test}_{'lat' if lat else 'bw'}", "-d", device, "-i", str(ib_port)]
    return argv if gid_index is None else [*argv, "-x", str(gid_index)]


def bw_argv(
    *, test: str, device: str, ib_port: int, gid_index: int | None, tcp_port: int, qps: int, size_bytes: int,
    seconds: int, bidir: bool,
) -> list[str]:  # fmt: skip
    """`ib_<test>_bw` for `seconds` with `qps` queue pairs, in Gb/s; with `bidir`, both directions and each one."""
    argv = _side(test, False, device, ib_port, gid_index)
    argv += ["-q", str(qps), "-s", str(size_bytes), "-D", str(seconds), "-F", "--report_gbits", "-p", str(tcp_port)]
    if bidir:
        argv += ["-b", "--report-both"]  # --report-both: each direction's own figure besides their sum
    return argv


def lat_argv(
    *, test: str, device: str, ib_port: int, gid_index: int | None, tcp_port: int, size_bytes: int, iterations: int
) -> list[str]:
    """`ib_<test>_lat`: `iterations` round trips of `size_bytes`, one-way latency in microseconds."""
    argv = _side(test, True, device, ib_port, gid_index)
    return [*argv, "-s", str(size_bytes), "-n", str(iterations), "-F", "-p", str(tcp_port)]


def _bw_gbps(parsed: PerftestResult) -> float | None:
    """The rate of the largest message size: the mean of its rows (several only with --run_infinitely)."""
    rows = [r for r in parsed.rows if isinstance(r, BwRow)]
    if not rows:
        return None
    largest = max(r.size_bytes for r in rows)
    rates = [r.bw_avg_gbps for r in rows if r.size_bytes == largest]
    return sum(rates) / len(rates)


def _sections(stdout: str) -> dict[str, float]:
    """--report-both's "Local results" and "Remote results" tables, each read by the parser."""
    found: dict[str, float] = {}
    for match in _SECTION.finditer(stdout):
        try:
            rate = _bw_gbps(parse_text(stdout[match.end() :]))
        except ValueError:
            continue
        if rate is not None:
            found.setdefault(match["side"], rate)
    return found


def flow_results(flow: Flow, client_stdout: str, error: str | None = None) -> list[FlowResult]:
    """The client's bandwidth in Gb/s: one forward result, or with `-b` a forward (the client's own sending rate)
    and a reverse one (the server's), read from `--report-both`'s tables. A sum without them is reported as what
    it is, with no per-direction figure: halving it would invent one. `error` is the run's own failure, if any."""
    try:
        parsed = parse_text(client_stdout)
    except ValueError as exc:
        return [FlowResult(flow, Direction.FORWARD, None, error or f"perftest output unreadable: {exc}")]
    total = _bw_gbps(parsed)
    if total is None:
        return [FlowResult(flow, Direction.FORWARD, None, error or "perftest printed a latency table, not bandwidth")]
    if not parsed.bidirectional:
        return [FlowResult(flow, Direction.FORWARD, total, error)]
    sides = _sections(client_stdout)
    if "Local" not in sides or "Remote" not in sides:
        why = f"perftest printed both directions added ({total:.2f} Gb/s) without each one (--report-both)"
        return [FlowResult(flow, Direction.FORWARD, None, f"{error}; {why}" if error else why)]
    return [
        FlowResult(flow, Direction.FORWARD, sides["Local"], error),
        FlowResult(flow.reversed(), Direction.REVERSE, sides["Remote"], error),
    ]


def latency(flow: Flow, client_stdout: str) -> Latency:
    """The one-way latency of the smallest message in the client's table (t_typical is perftest's median);
    ValueError says why there is none."""
    parsed = parse_text(client_stdout)
    rows = [r for r in parsed.rows if isinstance(r, LatRow)]
    if not rows:
        raise ValueError("perftest printed a bandwidth table, not latency")
    row = min(rows, key=lambda r: r.size_bytes)
    return Latency(
        flow=flow, tool=NAME, message_bytes=row.size_bytes, p50_us=row.t_typical_us, p99_us=row.p99_us,
        p999_us=row.p999_us, min_us=row.t_min_us, max_us=row.t_max_us, avg_us=row.t_avg_us, samples=row.iterations,
    )  # fmt: skip
