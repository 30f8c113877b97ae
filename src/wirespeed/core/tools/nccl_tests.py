"""nccl-tests output (all_reduce_perf, all_gather_perf, sendrecv_perf, ...): the per-size table, the printed average
bus bandwidth, and what `NCCL_DEBUG=INFO` lines mixed into it say about the transport. Pure: text in, records out.

The table is read by its own column header, so the old layout (no `root` column, a float `error` column instead of
`#wrong`), the `-I` per-iteration columns and the `-S` timestamps need no special case. Logs are taken as people
save them: mpirun `[1,0]<stdout>:` tags, shell traces and INFO lines between rows, a file cut at the end.
algbw/busbw are GB/s (10^9 B/s) and time is microseconds, as nccl-tests prints them (nccl-tests `src/util.cu`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.records import figures


@dataclass(frozen=True)
class Measurement:
    """One placement (out-of-place or in-place) of one table row.

    `wrong` counts the elements that failed the check (None when printed `N/A`, i.e. run with `-c 0`, or when the
    table is the old one); nccl-tests before 2.13 printed the largest absolute error instead, kept in `max_error`.
    """

    time_us: float
    algbw_GBps: float
    busbw_GBps: float
    wrong: int | None
    max_error: float | None = None


@dataclass(frozen=True)
class Row:
    """One message size (and type, reduction op and root) of the table.

    `redop` and `root` are as printed (`none` and `-1` where the collective has none); None when the table has no
    such column. `in_place` is None when the line stops after the out-of-place half (a cut file).
    """

    size_bytes: int
    count: int
    type: str
    redop: str | None
    root: int | None
    out_of_place: Measurement
    in_place: Measurement | None


@dataclass(frozen=True)
class NcclTestsResult:
    """What one nccl-tests run printed; fields it did not print are None rather than guessed.

    `ranks` is the size of the communicator the busbw was computed for (the `#  Rank` lines, or NCCL's `nranks`).
    `transport` and `gdr` come from the NCCL INFO lines only. `version` is the nccl-tests version when printed,
    else NCCL's; `nccl_version` is always NCCL's. `complete` is False when the footer never came (a cut file).
    `implausible` names, one line each, the figures left out because no link carries them although nccl-tests
    printed them from its own size and time (an in-place case that moved nothing on one rank): the row, the column,
    the figure and why; the rest of the table stands.
    """

    collective: str | None
    ranks: int | None
    rows: tuple[Row, ...]
    avg_busbw_GBps: float | None
    transport: str | None
    gdr: bool | None
    version: str | None
    complete: bool
    out_of_bounds: int | None = None
    nccl_version: str | None = None
    # What the network plugins said they use: interfaces (`NET/Socket : Using [0]eth0:...`) and HCA ports
    # (`NET/IB : Using [0]mlx5_0:1/RoCE ...`), in the order printed.
    socket_interfaces: tuple[str, ...] = ()
    ib_devices: tuple[str, ...] = ()
    implausible: tuple[str, ...] = ()


# The binaries nccl-tests builds, longest first so `alltoallv` is not read as `alltoall`.
COLLECTIVES = (
    "reduce_scatter",
    "all_reduce",
    "all_gather",
    "alltoallv",
    "hypercube",
    "broadcast",
    "alltoall",
    "sendrecv",
    "scatter",
    "gather",
    "reduce",
)

# busbw = algbw x factor (nccl-tests doc/PERFORMANCE.md and each src/<collective>.cu GetBw).
_FACTOR_N_MINUS_1_OVER_N = frozenset({"all_gather", "reduce_scatter", "alltoall", "alltoallv", "gather", "scatter"})
_FACTOR_ONE = frozenset({"broadcast", "reduce", "sendrecv", "hypercube"})


def busbw_factor(collective: str, ranks: int) -> float:
    """busbw/algbw for `collective` on `ranks` ranks, so a busbw can be compared with a link's rate.

    all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall(v), gather, scatter (n-1)/n; broadcast, reduce,
    sendrecv, hypercube 1. Accepts the binary name too (`all_reduce_perf`).
    """
    if ranks < 1:
        raise ValueError(f"busbw factor needs at least one rank, got {ranks}")
    name = collective.strip().lower().removesuffix("_mpi").removesuffix("_perf")
    if name == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if name in _FACTOR_N_MINUS_1_OVER_N:
        return (ranks - 1) / ranks
    if name in _FACTOR_ONE:
        return 1.0
    raise ValueError(f"unknown nccl-tests collective {collective!r} (known: {', '.join(sorted(COLLECTIVES))})")


# --- line shapes ----------------------------------------------------------------------------------------------------

# Launcher prefixes: OpenMPI --tag-output `[1,0]<stdout>:`, MPICH/Intel MPI -prepend-rank `[0] `, srun --label `0: `.
_TAG = re.compile(r"^(?:\[\d+,\d+\]<(?:stdout|stderr)>:|\[\d+\] |\s*\d+: )")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NCCL_LOG = re.compile(r"\bNCCL (?:INFO|WARN|TRACE)\b ?(?P<msg>.*)$")
_NCCL_VERSION = re.compile(r"\bNCCL version (?P<v>\d+\.\d+\.\d+\S*)")
_TESTS_VERSION = re.compile(r"^#\s*nccl-tests version (?P<v>\S+)(?:.*?\bnccl-library=(?P<lib>\d+))?")
_PROGRAM = re.compile(r"^#\s*Collective test (?:starting|concluded):\s*(?P<prog>\S+)")
_PARAMS = re.compile(r"^#\s*nThread\s+\d+\s+nGpus\s+\d+")
_USING_DEVICES = re.compile(r"^#\s*Using devices\s*$")
_RANK = re.compile(r"^#\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?(?:Pid\s+\d+\s+)?on\s")
_COLUMNS = re.compile(r"^#\s*(?:size|bytes)\s+(?:count|N)\s+type\s")
_UNITS = re.compile(r"^#\s*\(B\)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<v>\S+)(?P<after>\s?)")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)")
_FAILURE = re.compile(r"\bTest (?:NCCL |CUDA )?failure\b")
_BINARY = re.compile(r"\b(?P<name>" + "|".join(COLLECTIVES) + r")_perf\w*")
_ROW = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z_]\w*(?:\s|$)")
_INT = re.compile(r"[+-]?\d+")
_USING_NETWORK = re.compile(r"^Using network (?P<name>.+?)\s*$")
# `Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0(1)/GDRDMA`, `... via P2P/CUMEM/read`, `... via SHM/direct/direct`;
# NCCL 2.9 wrote `Channel 00 : 1[101d0] -> 8[101c0] [send] via NET/AWS Libfabric/1/GDRDMA`, 2.4 `Ring 00 : ...`.
# `NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth1:10.0.0.1<0>`, `NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:...`
_NET_USING = re.compile(r"^NET/(?P<plugin>IB|Socket)\s*: Using (?P<list>[^;]*)")
_NET_ENTRY = re.compile(r"\[\d+\](?P<entry>[^\s;]+)")
_VIA = re.compile(r"->.*?\bvia (?P<kind>[A-Za-z0-9]+)/(?P<name>[^/\s]+(?: [^/\s]+)?)")

_REDUCTION_OPS = frozenset({"sum", "prod", "max", "min", "avg", "mulsum", "premulsum"})
_TYPE_BYTES = {
    "int8": 1,
    "uint8": 1,
    "char": 1,
    "f8e4m3": 1,
    "f8e5m2": 1,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "int": 4,
    "float": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
    "float64": 8,
}


def _clean(line: str) -> str:
    """The line as the program printed it: colour codes and launcher tags removed."""
    line = _ANSI.sub("", line)
    tagged = _TAG.match(line)
    return line[tagged.end() :] if tagged else line


def _decode_nccl_code(code: int) -> str:
    """NCCL_VERSION_CODE to `major.minor.patch`: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z since 2.9 (nccl.h)."""
    if code >= 10000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


# --- the table --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """Where the values sit in a row, read from the column header (defaults: the 2.13+ header)."""

    prefix: tuple[str, ...] = ("size", "count", "type", "redop", "root")
    width: int = 4  # tokens per placement: time algbw busbw #wrong (+ i_min i_max i_p99 i_cv% with -I)
    algbw_at: int = 1
    busbw_at: int = 2
    wrong_at: int | None = 3
    wrong_is_count: bool = True  # `#wrong` counts elements; the old `error` / `res` is the largest error
    time_scale: float = 1.0  # nccl-tests 1.x printed milliseconds


_PREFIX_NAMES = {"size": "size", "bytes": "size", "count": "count", "n": "count", "type": "type"}
_PREFIX_NAMES |= {"redop": "redop", "op": "redop", "root": "root"}
_WRONG_NAMES = {"#wrong": True, "wrong": True, "error": False, "res": False, "delta": False}


def _layout_from_header(line: str) -> _Layout | None:
    names = line.lstrip()[1:].split()
    times = [i for i, name in enumerate(names) if name in ("time", "cputime")]
    if not times:
        return None
    first = times[0]
    prefix = tuple(_PREFIX_NAMES.get(name.lower(), name.lower()) for name in names[:first])
    end = times[1] if len(times) > 1 else len(names)
    group = names[first:end]
    if "algbw" not in group or "busbw" not in group:
        return None
    wrong = next((i for i, name in enumerate(group) if name.lower() in _WRONG_NAMES), None)
    return _Layout(
        prefix=prefix,
        width=len(group),
        algbw_at=group.index("algbw"),
        busbw_at=group.index("busbw"),
        wrong_at=wrong,
        wrong_is_count=_WRONG_NAMES[group[wrong].lower()] if wrong is not None else True,
        time_scale=1000.0 if names[0] == "bytes" else 1.0,
    )


def _guess_layout(tokens: list[str]) -> _Layout:
    """No column header seen (an excerpt): a 5th token that is no integer means the old table without `root`."""
    if len(tokens) > 4 and not _INT.fullmatch(tokens[4]):
        return _Layout(prefix=("size", "count", "type", "redop"))
    return _Layout()


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def _measurement(values: list[str], layout: _Layout) -> Measurement | None:
    """One placement, or None when its values are missing or not numbers (a cut line, a line with noise in it)."""
    needed = max(layout.busbw_at, layout.algbw_at, layout.wrong_at or 0) + 1
    if len(values) < needed:
        return None
    time, algbw, busbw = (_number(values[i]) for i in (0, layout.algbw_at, layout.busbw_at))
    if time is None or algbw is None or busbw is None:
        return None
    wrong: int | None = None
    max_error: float | None = None
    if layout.wrong_at is not None and values[layout.wrong_at] != "N/A":
        value = _number(values[layout.wrong_at])
        if value is None:
            return None
        if not layout.wrong_is_count:
            max_error = value
        elif math.isfinite(value):
            wrong = int(value)  # `%6g`: a count above 999999 prints as 1.23457e+06
    return Measurement(time * layout.time_scale, algbw, busbw, wrong, max_error)


def _row(tokens: list[str], layout: _Layout) -> Row | None:
    if len(tokens) < 3 or not (_INT.fullmatch(tokens[0]) and _INT.fullmatch(tokens[1])):
        return None
    at = 3
    redop: str | None = None
    root: int | None = None
    for name in layout.prefix[3:]:
        if at >= len(tokens):
            return None
        token = tokens[at]
        if name == "redop":
            if _number(token) is not None:
                continue  # hypercube prints an empty redop: the token is already the root
            redop = token
        elif name == "root":
            if not _INT.fullmatch(token):
                return None
            root = int(token)
        at += 1
    values = tokens[at:]
    out_of_place = _measurement(values, layout)
    if out_of_place is None:
        return None
    in_place = _measurement(values[layout.width :], layout)
    return Row(int(tokens[0]), int(tokens[1]), tokens[2], redop, root, out_of_place, in_place)


# --- reading the whole text -------------------------------------------------------------------------------------------


@dataclass
class _Scan:
    """Everything one pass over the lines collects; turned into an NcclTestsResult at the end."""

    markers: int = 0
    rows: list[Row] = field(default_factory=list)
    program: str | None = None
    binary: str | None = None
    rank_groups: dict[int, int | None] = field(default_factory=dict)
    info_nranks: int | None = None
    avg: float | None = None
    out_of_bounds: int | None = None
    tests_version: str | None = None
    library_code: int | None = None
    nccl_version: str | None = None
    info_lines: int = 0
    net_names: Counter[str] = field(default_factory=Counter)
    other_transports: Counter[str] = field(default_factory=Counter)
    net_gdr: bool = False
    using_network: str | None = None
    socket_interfaces: list[str] = field(default_factory=list)
    ib_devices: list[str] = field(default_factory=list)
    first_text_line: int | None = None
    untrustworthy: str | None = None  # the first figure outside physical sense, as one line naming it
    implausible: list[_Implausible] = field(default_factory=list)  # figures left out, the rest kept
    footer: bool = False  # the `# Avg bus bandwidth` line came, whether or not its figure is kept


_MAX_GBYTES = figures.MAX_BUS_GBPS / 8  # GB/s


def _untrustworthy(value: float | None, what: str, unit: str, high: float) -> str | None:
    """Why `value` is no figure to show, or None. nccl-tests' own `nan` is not refused: it is shown as none."""
    if value is None or math.isnan(value):
        return None
    try:
        figures.measured(value, what, unit, high=high)
    except figures.Untrustworthy as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class _Implausible:
    """A placement whose bandwidth no link carries but which nccl-tests computed from its own size and time."""

    where: str
    placement: str
    column: str
    value: float
    size_bytes: int
    time_us: float

    def line(self, ranks: int | None) -> str:
        one_rank = ranks == 1 and self.placement == "in-place"
        nothing_moved = "; on one rank the in-place case moves no data" if one_rank else ""
        return (
            f"{self.where}: {self.placement} {self.column} {self.value:g} GB/s is above {_MAX_GBYTES:g} GB/s: "
            f"{self.size_bytes} B in {self.time_us:g} us, too short for anything to cross a link{nothing_moved}; "
            f"its {self.placement} figures are left out"
        )


def _printed_slack(value: float, width: int) -> float:
    """Half the last digit nccl-tests printed `value` with (src/util.cu getFloatStr: `%.2f`, else `%.1f`, else
    `%.0f`, else `%.1e` (width 7) or `%.0e` (width 6), whichever fits the width). The JSON's doubles are finer."""
    for decimals in (2, 1, 0):
        if len(f"{value:.{decimals}f}") <= width:
            return 0.5 * 10.0**-decimals
    digits = 1 if width >= 7 else 0
    return 0.5 * 10.0 ** (math.floor(math.log10(value)) - digits)


def _from_its_own_time(size_bytes: int, half: Measurement) -> bool:
    """True when `half`'s bandwidths are what nccl-tests computes from the row's size and time (algbw = size/time,
    busbw = algbw x a factor below 2; src/*.cu GetBw), within the digits it printed: a real figure from a time too
    short for data to have moved, not a damaged one."""
    time, algbw, busbw = half.time_us, half.algbw_GBps, half.busbw_GBps
    if not (math.isfinite(time) and math.isfinite(algbw) and math.isfinite(busbw)) or algbw <= 0:
        return False
    algbw_slack = _printed_slack(algbw, 6)
    if busbw > 2 * (algbw + algbw_slack) + _printed_slack(busbw, 6):
        return False
    time_slack = _printed_slack(time, 7) if time > 0 else 0.005
    if time <= time_slack:
        return True  # printed as 0.00: any rate follows from it
    fastest = size_bytes / ((time - time_slack) * 1e3)
    slowest = size_bytes / ((time + time_slack) * 1e3)
    return slowest * 0.99 - algbw_slack <= algbw <= fastest * 1.01 + algbw_slack


def _judge_row(row: Row, where: str) -> tuple[Row | None, str | None, list[_Implausible]]:
    """`row` with its implausible placements left out (None when its out-of-place one is), the first damaged
    figure (the whole output is refused for it), and what was left out."""
    left_out: list[_Implausible] = []
    kept: dict[str, Measurement | None] = {}
    for half, name in ((row.out_of_place, "out-of-place"), (row.in_place, "in-place")):
        kept[name] = half
        if half is None:
            continue
        time_why = _untrustworthy(half.time_us, f"{where}: {name} time", "us", figures.MAX_LATENCY_US)
        if time_why is not None:
            return None, time_why, left_out
        for column, value in (("algbw", half.algbw_GBps), ("busbw", half.busbw_GBps)):
            why = _untrustworthy(value, f"{where}: {name} {column}", "GB/s", _MAX_GBYTES)
            if why is None:
                continue
            if value < 0 or not math.isfinite(value) or not _from_its_own_time(row.size_bytes, half):
                return None, why, left_out
            left_out.append(_Implausible(where, name, column, value, row.size_bytes, half.time_us))
            kept[name] = None
            break
    out_of_place = kept["out-of-place"]
    if out_of_place is None:
        return None, None, left_out
    if kept["in-place"] is not row.in_place:
        row = dataclasses.replace(row, in_place=None)
    return row, None, left_out


_NRANKS = re.compile(r"\bnranks (?P<n>\d+)\b", re.IGNORECASE)


def _read_info(scan: _Scan, message: str) -> None:
    scan.info_lines += 1
    via = _VIA.search(message)
    if via:
        kind, name = via.group("kind"), via.group("name").strip()
        if kind == "NET":
            scan.net_names[f"NET/{name}"] += 1
            scan.net_gdr = scan.net_gdr or "GDRDMA" in message
        else:
            scan.other_transports[f"{kind}/{name}"] += 1
        return
    net = _NET_USING.match(message)
    if net:
        for entry in _NET_ENTRY.finditer(net.group("list")):
            if net.group("plugin") == "Socket":
                name = entry.group("entry").split(":", 1)[0]  # `lo:127.0.0.1<0>`
                if name not in scan.socket_interfaces:
                    scan.socket_interfaces.append(name)
            elif entry.group("entry") not in scan.ib_devices:
                scan.ib_devices.append(entry.group("entry"))  # `mlx5_0:1/RoCE`
        return
    using = _USING_NETWORK.match(message)
    if using and scan.using_network is None:
        scan.using_network = using.group("name")
    nranks = _NRANKS.search(message) if " rank " in message else None
    if nranks:
        scan.info_nranks = max(scan.info_nranks or 0, int(nranks.group("n")))


def _scan(text: str) -> _Scan:
    scan = _Scan()
    layout: _Layout | None = None
    lines = text.splitlines()
    cut_at_end = bool(text) and not text.endswith(("\n", "\r"))
    for number, raw in enumerate(lines, start=1):
        line = _clean(raw)
        last_and_cut = cut_at_end and number == len(lines)
        if scan.first_text_line is None and line.strip():
            scan.first_text_line = number
        version = _NCCL_VERSION.search(line)
        if version and scan.nccl_version is None:
            scan.nccl_version = version.group("v")
        log = _NCCL_LOG.search(line)
        if log:
            _read_info(scan, log.group("msg"))
            continue
        stripped = line.lstrip()
        if stripped.startswith("#"):
            scan.markers += _read_comment(scan, stripped, last_and_cut)
            if _COLUMNS.match(stripped):
                layout = _layout_from_header(stripped) or layout
            continue
        if _ROW.match(line):
            tokens = line.split()
            if last_and_cut:
                tokens = tokens[:-1]  # the last value may itself be cut short (`9.68` -> `9.6`)
            row = _row(tokens, layout or _guess_layout(tokens))
            if row is not None:
                sound, damaged, left_out = _judge_row(row, f"line {number}")
                scan.untrustworthy = scan.untrustworthy or damaged
                scan.implausible += left_out
                scan.markers += sound is None  # a row left out is still nccl-tests' own line
                if sound is not None:
                    scan.rows.append(sound)
            continue
        if _FAILURE.search(line):
            scan.markers += 1
        binary = _BINARY.search(line)
        if binary and scan.binary is None:
            scan.binary = binary.group("name")
    return scan


def _read_comment(scan: _Scan, line: str, last_and_cut: bool) -> int:
    """Read one `#` line into `scan`; 1 when it is one nccl-tests prints, else 0."""
    rank = _RANK.match(line)
    if rank:
        group = rank.group("group")
        scan.rank_groups[int(rank.group("rank"))] = int(group) if group is not None else None
        return 1
    avg = _AVG.match(line)
    if avg:
        value = _number(avg.group("v"))
        # `%g ` then OK/FAILED/nothing: a last line with no blank after the number may have lost digits.
        if value is not None and not (last_and_cut and not avg.group("after")):
            scan.avg = value
            scan.footer = True
        return 1
    oob = _OOB.match(line)
    if oob:
        scan.out_of_bounds = int(oob.group("n"))
        return 1
    tests_version = _TESTS_VERSION.match(line)
    if tests_version:
        scan.tests_version = tests_version.group("v")
        if tests_version.group("lib"):
            scan.library_code = int(tests_version.group("lib"))
        return 1
    program = _PROGRAM.match(line)
    if program:
        binary = _BINARY.search(program.group("prog"))
        if binary and scan.program is None:
            scan.program = binary.group("name")
        return 1
    if _PARAMS.match(line) or _USING_DEVICES.match(line) or _COLUMNS.match(line) or _UNITS.match(line):
        return 1
    return 0


def _ranks(scan: _Scan) -> int | None:
    """Communicator size: rank numbers run 0..n-1, and NCCL_TESTS_SPLIT puts each `Group` in its own communicator."""
    groups = scan.rank_groups
    if groups:
        if len(set(groups.values())) > 1:
            first_group = groups[min(groups)]
            return sum(1 for group in groups.values() if group == first_group)
        return max(groups) + 1
    return scan.info_nranks


def _infer_collective(rows: list[Row]) -> str | None:
    """The collective from the table alone, only where the numbers leave no doubt.

    Only all_reduce has busbw > algbw (2(n-1)/n for n >= 3); a reduction with a root is a reduce; a reduction whose
    size is n x count elements is a reduce_scatter; no op, a root and size = count elements is a broadcast.
    """
    placements = [m for row in rows for m in (row.out_of_place, row.in_place) if m is not None]
    measured = [m for m in placements if m.algbw_GBps >= 1.0]
    if measured:
        best = max(measured, key=lambda m: m.algbw_GBps)
        if best.busbw_GBps / best.algbw_GBps > 1.02:
            return "all_reduce"
    if not rows:
        return None
    row = rows[-1]
    element = _TYPE_BYTES.get(row.type)
    reduction = row.redop in _REDUCTION_OPS
    has_root = row.root is not None and row.root >= 0
    if reduction and has_root:
        return "reduce"
    if element is None or row.count <= 0:
        return None
    elements = row.size_bytes // element
    if reduction and elements > row.count and elements % row.count == 0:
        return "reduce_scatter"
    if has_root and row.redop in (None, "none") and elements == row.count:
        return "broadcast"
    return None


def _transport(scan: _Scan) -> tuple[str | None, bool | None]:
    """The inter-node transport if any channel used the network, else the intra-node one, else `Using network`."""
    if not scan.info_lines:
        return None, None
    if scan.net_names:
        return scan.net_names.most_common(1)[0][0], scan.net_gdr
    if scan.other_transports:
        return scan.other_transports.most_common(1)[0][0], None
    if scan.using_network:
        return f"NET/{scan.using_network}", None
    return None, None


def parse_text(text: str) -> NcclTestsResult:
    """Read the stdout of one nccl-tests run (with or without NCCL_DEBUG=INFO, mpirun tags, a cut end).

    Raises ValueError, naming the first line, only when nothing in the text is nccl-tests output.
    """
    scan = _scan(text)
    rows = scan.rows
    if not scan.markers and not rows:
        if scan.first_text_line is None:
            raise ValueError("not nccl-tests output: line 1: the text is empty")
        line = _clean(text.splitlines()[scan.first_text_line - 1]).strip()
        shown = line if len(line) <= 60 else line[:57] + "..."
        raise ValueError(
            f"not nccl-tests output: line {scan.first_text_line} ({shown!r}) and the rest hold no nccl-tests "
            "header, table row or footer"
        )
    if scan.untrustworthy:
        raise figures.Untrustworthy(scan.untrustworthy)
    ranks = _ranks(scan)
    implausible = [item.line(ranks) for item in scan.implausible]
    if implausible and not rows:
        raise figures.Untrustworthy(f"{implausible[0]}; no row is left: untrustworthy output")
    avg = scan.avg
    avg_why = _untrustworthy(avg, "the average bus bandwidth", "GB/s", _MAX_GBYTES)
    if avg_why and not implausible:
        raise figures.Untrustworthy(avg_why)
    if avg_why:  # the average over every placement, the left-out ones too
        implausible.append(f"the average bus bandwidth ({avg:g} GB/s) counts the figures left out; it is left out")
        avg = None
    transport, gdr = _transport(scan)
    nccl_version = scan.nccl_version
    if nccl_version is None and scan.library_code:
        nccl_version = _decode_nccl_code(scan.library_code)
    return NcclTestsResult(
        collective=scan.program or scan.binary or _infer_collective(rows),
        ranks=ranks,
        rows=tuple(rows),
        avg_busbw_GBps=avg,
        transport=transport,
        gdr=gdr,
        version=scan.tests_version or nccl_version,
        complete=scan.footer,
        out_of_bounds=scan.out_of_bounds,
        nccl_version=nccl_version,
        socket_interfaces=tuple(scan.socket_interfaces),
        ib_devices=tuple(scan.ib_devices),
        implausible=tuple(implausible),
    )


def looks_like(text: str) -> bool:
    """True when `parse_text` finds nccl-tests output in `text` (a header, a table row or a footer), whether or not
    its figures can be trusted (parse_text says when they cannot)."""
    scan = _scan(text)
    return bool(scan.markers or scan.rows)


# --- the -J JSON file (nccl-tests 2.17.6+, JSON_FILE_VERSION 1 to 3, schema read from src/util.cu) --------------------


def _json_float(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return float("nan") if value == "nan" else None  # NaN is written as the string "nan"


def _json_measurement(block: Any) -> Measurement | None:
    if not isinstance(block, dict):
        return None
    time = _json_float(block.get("time", block.get("cpu_time")))  # `cpu_time` with -C
    algbw, busbw = _json_float(block.get("alg_bw")), _json_float(block.get("bus_bw"))
    if time is None or algbw is None or busbw is None:
        return None
    nwrong = _json_float(block.get("nwrong"))  # null without validation, like the text's N/A
    wrong = int(nwrong) if nwrong is not None and math.isfinite(nwrong) else None
    return Measurement(time, algbw, busbw, wrong)


def _json_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INT.fullmatch(value.strip()):
        return int(value.strip())  # `root` is written as the printed `%6i` string
    return None


def parse_json(text: str) -> NcclTestsResult:
    """Read the `-J file.json` nccl-tests writes. It has no INFO lines, so transport and gdr are None.

    A file cut by a killed run is not valid JSON and raises ValueError: read the run's stdout with parse_text.
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not nccl-tests JSON (line {getattr(exc, 'lineno', 1)}: {exc.__class__.__name__})") from None
    if not isinstance(data, dict) or not ({"results", "config"} & set(data)):
        raise ValueError("not nccl-tests JSON: no results or config object (line 1)")
    results = data.get("results") or []
    if not isinstance(results, list):
        raise ValueError("not nccl-tests JSON: `results` is not a list (line 1)")
    rows: list[Row] = []
    left_out: list[_Implausible] = []
    for index, item in enumerate(results):
        if not isinstance(item, dict):
            continue
        size, count = _json_int(item.get("size")), _json_int(item.get("count"))
        out_of_place = _json_measurement(item.get("out_of_place"))
        in_place = _json_measurement(item.get("in_place"))
        if size is None or count is None or out_of_place is None:
            continue  # trace-replay rows carry only an in-place half
        redop = item.get("redop")
        row = Row(
            size,
            count,
            str(item.get("type", "")),
            redop.strip() or None if isinstance(redop, str) else None,
            _json_int(item.get("root")),
            out_of_place,
            in_place,
        )
        sound, why, implausible_here = _judge_row(row, f"results[{index}]")
        if why is not None:
            raise figures.Untrustworthy(f"nccl-tests JSON {why}")
        left_out += implausible_here
        if sound is not None:
            rows.append(sound)
    args = data.get("args") or []
    if not isinstance(args, list):
        args = [args] if isinstance(args, str) else []
    binary = _BINARY.search(str(args[0]).rsplit("/", 1)[-1]) if args else None
    config = data.get("config")
    config = config if isinstance(config, dict) else {}
    listed = config.get("devices")
    devices = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    per_process = (_json_int(config.get("nthreads")) or 1) * (_json_int(config.get("ngpus")) or 1)
    groups = [d.get("group") for d in devices]
    ranks = None
    if devices:  # one entry per process (its first GPU), grouped like the text's `Group` column
        ranks = per_process * sum(1 for group in groups if group == groups[0])
    average = data.get("average_bus_bandwidth", data.get("average_bus_bandwidith"))  # 2.17 spelled it so
    avg = None
    if isinstance(average, dict):
        avg = _json_float(average.get("bandwidth", average.get("bandwidith")))
    implausible = [f"nccl-tests JSON {item.line(ranks)}" for item in left_out]
    if implausible and not rows:
        raise figures.Untrustworthy(f"{implausible[0]}; no result is left: untrustworthy output")
    complete = avg is not None
    why = _untrustworthy(avg, "nccl-tests JSON average_bus_bandwidth", "GB/s", _MAX_GBYTES)
    if why is not None and not implausible:
        raise figures.Untrustworthy(why)
    if why is not None:  # the average over every placement, the left-out ones too
        implausible.append(
            f"nccl-tests JSON average_bus_bandwidth ({avg:g} GB/s) counts the figures left out; it is left out"
        )
        avg = None
    oob = data.get("out_of_bounds")
    code = _json_int(data.get("nccl_version"))
    nccl_version = _decode_nccl_code(code) if code else None
    return NcclTestsResult(
        collective=binary.group("name") if binary else _infer_collective(rows),
        ranks=ranks,
        rows=tuple(rows),
        avg_busbw_GBps=avg,
        transport=None,
        gdr=None,
        version=nccl_version,
        complete=complete,
        out_of_bounds=_json_int(oob.get("count")) if isinstance(oob, dict) else None,
        nccl_version=nccl_version,
        implausible=tuple(implausible),
    )


# ---------------------------------------------------------------------------------------------------- the runner
# nccl-tests runs under mpirun (`wirespeed.core.nccl` plans the ranks and NCCL's environment); here is the
# binary's own command line. Discovery finds the binaries on disk (PATH, NCCL_TESTS_DIR) rather than by a version.

NAME = "nccl-tests"
INSTALL_HINT = "build nccl-tests with MPI=1 (NVIDIA's playbook) and put it on PATH or set NCCL_TESTS_DIR"


def binary_argv(
    binary: str, *, min_bytes: int, max_bytes: int, iterations: int, warmup: int, json_path: str | None
) -> list[str]:
    """Identical for every rank: sizes doubling from `min_bytes` to `max_bytes`, one GPU per rank, `-J` when the
    binary writes its own JSON (the figure of record)."""
    argv = [binary, "-b", str(min_bytes), "-e", str(max_bytes), "-f", "2", "-g", "1"]
    argv += ["-n", str(iterations), "-w", str(warmup)]
    return [*argv, "-J", json_path] if json_path is not None else argv


def supports_json_output(help_text: str) -> bool:
    """nccl-tests 2.17.6+ lists `-J,--output_file` in its usage."""
    return "output_file" in help_text
