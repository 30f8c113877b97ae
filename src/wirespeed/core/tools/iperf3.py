"""iperf3 results, from `-J` JSON (also `--json-stream`) or from the text a person saves: the sender's and receiver's
totals, the reverse direction of `--bidir`, retransmits, CPU, UDP loss and the per-interval sums. Pure: text in,
records out.

Units as iperf3 prints them (`src/units.c`): rates in bits are decimal (`Gbits/sec` = 10^9 bit/s), byte counts are
binary (`GBytes` = 2^30 bytes); every rate here is `_gbps`, 10^9 bit/s. A failed run keeps iperf3's own message in
`error` instead of raising; input that is not iperf3 output, or was cut off before the summary, raises `ValueError`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from wirespeed.core.records import figures
from wirespeed.core.records.results import Direction, Flow, FlowResult


@dataclass(frozen=True)
class Iperf3Interval:
    """One reporting interval, all streams of the forward direction summed (or the only stream).

    `bytes` from text is the printed, rounded transfer; `omitted` marks `-O` warm-up intervals, which iperf3
    leaves out of the end sums.
    """

    start_s: float
    end_s: float
    bytes: int
    gbps: float
    retransmits: int | None
    omitted: bool = False


@dataclass(frozen=True)
class Iperf3Result:
    """One test. `sender_gbps`/`receiver_gbps` are the end sums (all streams) as the sender and the receiver counted
    them; the receiver's is what arrived. The `reverse_` pair is the server-to-client half of `--bidir`, else None.
    `cpu_*` are `host_total`/`remote_total` (text: the `-V` CPU line). The UDP fields come from the receiver's
    summary (jitter as iperf3 averages it over streams). Anything the output did not print is None.
    """

    protocol: str | None
    streams: int | None
    sender_gbps: float | None
    receiver_gbps: float | None
    reverse_sender_gbps: float | None
    reverse_receiver_gbps: float | None
    retransmits: int | None
    cpu_local_percent: float | None
    cpu_remote_percent: float | None
    intervals: tuple[Iperf3Interval, ...]
    version: str | None
    error: str | None
    jitter_ms: float | None = None
    lost_datagrams: int | None = None
    total_datagrams: int | None = None


# --------------------------------------------------------------------------------------------------------- JSON


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _gbps(block: Any, name: str) -> float | None:
    """A sum's rate in Gb/s, checked: a figure outside physical sense, or one its own bytes and seconds do not
    give, raises figures.Untrustworthy (a ValueError) rather than being shown."""
    fields = _obj(block)
    bps = _float(fields.get("bits_per_second"))
    if bps is None:
        return None
    what = f"iperf3 {name} bits_per_second"
    gbps = figures.rate_gbps(bps / 1e9 if math.isfinite(bps) else bps, what)
    size, seconds = _float(fields.get("bytes")), _float(fields.get("seconds"))
    if size is not None and seconds is not None:
        figures.measured(size, f"iperf3 {name} bytes")
        figures.measured(seconds, f"iperf3 {name} seconds")
        figures.consistent_rate(size, seconds, gbps, f"iperf3 {name}", tolerance=0.25)
    return gbps


def _checked(value: float | None, what: str, high: float | None = None) -> float | None:
    return None if value is None else figures.measured(value, what, high=high)


def _count(value: Any, what: str) -> int | None:
    number = _int(value)
    return None if number is None else int(figures.measured(number, what))


_JSON_START = re.compile(r"^[ \t]*\{", re.MULTILINE)
_MAX_CPU_PERCENT = 100.0 * 4096  # iperf3 3.16+ counts every thread's CPU: a few thousand cores at most
_MAX_JITTER_MS = 3_600_000.0


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _json_objects(text: str) -> list[Any]:
    """Every JSON value in `text`, from the first line that opens an object; text around them is ignored
    (a shell prompt before, an `iperf3: interrupt` line after). A value that starts but does not end is an error."""
    first = _JSON_START.search(text)
    if first is None:
        raise ValueError("not iperf3 JSON: no JSON object in the text")
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = _skip_space(text, first.start())
    while pos < len(text) and text[pos] == "{":
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
                raise ValueError(f"iperf3 JSON cut off: the text ends inside an object (line {exc.lineno})") from None
            if not found:
                raise ValueError(f"not iperf3 JSON ({exc.__class__.__name__}: {exc})") from None
            raise ValueError(f"iperf3 JSON malformed after {len(found)} object(s): {exc}") from None
        except RecursionError:
            raise ValueError("not iperf3 JSON: nested too deeply") from None
        found.append(value)
        pos = _skip_space(text, pos)
    return found


def _from_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """`--json-stream` (3.17+) prints one `{"event": ..., "data": ...}` per line: fold them into the `-J` layout."""
    data: dict[str, Any] = {"intervals": []}
    for event in events:
        name, payload = event.get("event"), event.get("data")
        if name == "start":
            data["start"] = payload
        elif name == "interval":
            data["intervals"].append(payload)
        elif name == "end":
            data["end"] = payload
        elif name == "error":
            data["error"] = payload
    if "end" not in data and not data.get("error"):
        raise ValueError("iperf3 --json-stream output has no end event: the test did not finish or the text was cut")
    return data


def _pick_document(values: list[Any]) -> dict[str, Any]:
    """The `-J` document: the last whole one (a server without `-1` prints one per test), else the stream events."""
    documents = [v for v in values if isinstance(v, dict) and "event" not in v]
    events = [v for v in values if isinstance(v, dict) and "event" in v]
    if documents:
        data = documents[-1]
    elif events:
        data = _from_stream(events)
    else:
        raise ValueError("not iperf3 JSON: the JSON holds no object")
    if not ({"start", "end", "error"} & set(data)):
        raise ValueError("not iperf3 JSON: no start, end or error object")
    return data


def _json_interval(index: int, item: Any) -> Iperf3Interval | None:
    total = _obj(item).get("sum")
    if total is None:
        return None
    block = _obj(total)
    start, end = _float(block.get("start")), _float(block.get("end"))
    size, bps = _int(block.get("bytes")), _float(block.get("bits_per_second"))
    if start is None or end is None or size is None or bps is None:
        raise ValueError(f"iperf3 JSON interval {index}: sum lacks start, end, bytes or bits_per_second")
    gbps = _gbps(block, f"interval {index}")
    assert gbps is not None
    figures.measured(size, f"iperf3 interval {index} bytes")
    retransmits = _count(block.get("retransmits"), f"iperf3 interval {index} retransmits")
    return Iperf3Interval(start, end, size, gbps, retransmits, block.get("omitted") is True)


def parse_json(text: str) -> Iperf3Result:
    """iperf3 `-J` (or `--json-stream`) output -> Iperf3Result. A run that failed carries `error` and is returned,
    not raised: the caller decides what a failed flow means."""
    data = _pick_document(_json_objects(text))
    start, end = _obj(data.get("start")), _obj(data.get("end"))
    test = _obj(start.get("test_start"))
    cpu = _obj(end.get("cpu_utilization_percent"))
    protocol = _str(test.get("protocol"))
    udp = protocol == "UDP"
    sent, received = end.get("sum_sent"), end.get("sum_received")
    old_udp_sum = end.get("sum") if udp and sent is None and received is None else None
    if old_udp_sum is not None:
        # iperf3 before sum_sent/sum_received for UDP: one ambiguous `sum`, bytes as the side that wrote it counted.
        if "connecting_to" in start:
            sent = old_udp_sum
        else:
            received = old_udp_sum
    loss = _obj(received if received is not None else old_udp_sum)
    intervals = []
    raw_intervals = data.get("intervals")
    for index, item in enumerate(raw_intervals if isinstance(raw_intervals, list) else []):
        interval = _json_interval(index, item)
        if interval is not None:
            intervals.append(interval)
    error = data.get("error")
    return Iperf3Result(
        protocol=protocol,
        streams=_int(test.get("num_streams")),
        sender_gbps=_gbps(sent, "sum_sent"),
        receiver_gbps=_gbps(received, "sum_received"),
        reverse_sender_gbps=_gbps(end.get("sum_sent_bidir_reverse"), "sum_sent_bidir_reverse"),
        reverse_receiver_gbps=_gbps(end.get("sum_received_bidir_reverse"), "sum_received_bidir_reverse"),
        retransmits=None if udp else _count(_obj(sent).get("retransmits"), "iperf3 sum_sent retransmits"),
        cpu_local_percent=_checked(_float(cpu.get("host_total")), "iperf3 host_total CPU %", _MAX_CPU_PERCENT),
        cpu_remote_percent=_checked(_float(cpu.get("remote_total")), "iperf3 remote_total CPU %", _MAX_CPU_PERCENT),
        intervals=tuple(intervals),
        version=_str(start.get("version")),
        error=str(error) if error else None,
        jitter_ms=_checked(_float(loss.get("jitter_ms")), "iperf3 jitter_ms", _MAX_JITTER_MS) if udp else None,
        lost_datagrams=_count(loss.get("lost_packets"), "iperf3 lost_packets") if udp else None,
        total_datagrams=_count(loss.get("packets"), "iperf3 packets") if udp else None,
    )


# --------------------------------------------------------------------------------------------------------- text

# `[  5]   0.00-1.00   sec  1000 MBytes  8.39 Gbits/sec ...`; `[SUM][TX-C]` under --bidir. Searched, not anchored:
# --timestamps and pasted shell prompts put text before the bracket.
_DATA = re.compile(
    r"\[\s*(?P<id>\d+|SUM)\](?:\[(?P<role>[TR]X-[CS])\])?\s+"
    r"(?P<start>\d+\.\d\d)-\s*(?P<end>\d+\.\d\d)\s+sec\s+"  # %6.2f-%-6.2f: iperf2 prints other widths
    r"(?P<xfer>\d+(?:\.\d+)?)\s+(?P<xunit>[KMGT]?Bytes)\s+"
    r"(?P<rate>\d+(?:\.\d+)?)\s+(?P<runit>[KMGT]?(?:bits|Bytes))/sec(?P<rest>(?:\s.*)?)$"
)
_UDP_REST = re.compile(r"(?P<jitter>\d+(?:\.\d+)?)\s+ms\s+(?P<lost>\d+|Unknown)/(?P<total>\d+)(?:\s+\([^)]*%\))?")
_NUM_REST = re.compile(r"(?P<count>\d+)(?:\s+\d+(?:\.\d+)?\s+[KMGT]?Bytes)?")  # Retr [Cwnd], or UDP Total Datagrams
_HEADER = re.compile(r"\[ ID\](?:\[Role\])?\s+Interval\s")
_SEPARATOR = re.compile(r"(?:- ){10}")
_CPU = re.compile(r"CPU Utilization: local/\w+ (?P<local>\d+(?:\.\d+)?)% .*remote/\w+ (?P<remote>\d+(?:\.\d+)?)%")
_ERROR = re.compile(r"(?:^|\s)iperf3: (?:error - )?(?P<msg>\S.*?)\s*$")
_VERSION = re.compile(r"^\s*(?P<v>iperf \d+\.\d+[\w.+-]*)")
_STARTING = re.compile(r"Starting Test: protocol: (?P<proto>\w+), (?P<streams>\d+) streams")
_NEW_TEST = re.compile(
    r"^(?:.*\s)?(?:Connecting to host \S+, port \d+|Accepted connection from \S+, port \d+|Server listening on \d+)"
)
_END_OF_OWN_OUTPUT = re.compile(r"(?:^|\s)Server output:\s*$")

_BYTES = {"Bytes": 1, "KBytes": 2**10, "MBytes": 2**20, "GBytes": 2**30, "TBytes": 2**40}
_BITS_PER_SEC = {"bits": 1e0, "Kbits": 1e3, "Mbits": 1e6, "Gbits": 1e9, "Tbits": 1e12}
_FORWARD_ROLES = (None, "TX-C", "RX-S")  # client-to-server data; RX-C / TX-S are the --bidir reverse half


@dataclass(frozen=True)
class _Line:
    number: int
    stream: str  # "SUM" or the socket number
    role: str | None
    start_s: float
    end_s: float
    bytes: int
    gbps: float
    tag: str | None  # "sender" | "receiver" | None
    omitted: bool
    count: int | None  # Retr, or UDP Total Datagrams on the sender side
    jitter_ms: float | None
    lost: int | None
    total: int | None
    summary: bool


class _Test:
    """What one test (one `Connecting to` / `Accepted connection`) printed."""

    def __init__(self) -> None:
        self.lines: list[_Line] = []
        self.error: str | None = None
        self.client = False
        self.udp = False
        self.has_retr = False
        self.protocol: str | None = None
        self.streams: int | None = None
        self.cpu: tuple[float, float] | None = None
        self.connected: set[str] = set()


def _rate_gbps(value: float, unit: str) -> float:
    if unit.endswith("Bytes"):
        return value * _BYTES[unit] * 8 / 1e9
    return value * _BITS_PER_SEC[unit] / 1e9


def _data_line(number: int, match: re.Match[str], summary: bool, has_retr: bool, udp: bool) -> _Line:
    rest = match["rest"].strip()
    tag: str | None = None
    for word in ("sender", "receiver"):
        if rest.endswith(word):
            tag, rest = word, rest[: -len(word)].strip()
    omitted = rest.endswith("(omitted)")
    if omitted:
        rest = rest[: -len("(omitted)")].strip()
    count = jitter = lost = total = None
    udp_match = _UDP_REST.fullmatch(rest)
    num_match = _NUM_REST.fullmatch(rest)
    if udp_match:
        jitter = float(udp_match["jitter"])
        lost = None if udp_match["lost"] == "Unknown" else int(udp_match["lost"])
        total = int(udp_match["total"])
    elif num_match:
        count = int(num_match["count"])
        if udp and not has_retr:
            total = count
    elif rest:
        raise ValueError(f"line {number}: unreadable columns after the bitrate: {rest!r} (line cut off?)")
    return _Line(
        number=number,
        stream=match["id"],
        role=match["role"],
        start_s=float(match["start"]),
        end_s=float(match["end"]),
        bytes=round(float(match["xfer"]) * _BYTES[match["xunit"]]),
        gbps=figures.rate_gbps(_rate_gbps(float(match["rate"]), match["runit"]), f"line {number}: iperf3 rate"),
        tag=tag,
        omitted=omitted,
        count=count if has_retr else None,
        jitter_ms=jitter,
        lost=lost,
        total=total,
        summary=summary or tag is not None,
    )


def _split_tests(text: str) -> tuple[list[_Test], str | None]:
    """Walk the lines once: data lines, headers (which columns follow), the summary section, errors, CPU."""
    tests = [_Test()]
    version: str | None = None
    after_separator = in_summary = False
    for number, line in enumerate(text.splitlines(), start=1):
        test = tests[-1]
        if _END_OF_OWN_OUTPUT.search(line):
            break  # --get-server-output: the server's copy of the same test follows
        if _NEW_TEST.match(line):
            if test.lines or test.error:
                tests.append(_Test())
                test = tests[-1]
            test.client = "Connecting to host" in line
            after_separator = in_summary = False
            continue
        data = _DATA.search(line)
        if data:
            test.lines.append(_data_line(number, data, in_summary, test.has_retr, test.udp))
            after_separator = False
            if data["id"] != "SUM" and data["role"] in _FORWARD_ROLES:
                test.connected.add(data["id"])
            continue
        if _HEADER.search(line):
            in_summary = after_separator
            test.has_retr = "Retr" in line
            test.udp = test.udp or "Datagrams" in line or "Jitter" in line
            continue
        if _SEPARATOR.search(line):
            after_separator = True
            continue
        if (cpu := _CPU.search(line)) and test.cpu is None:
            test.cpu = (float(cpu["local"]), float(cpu["remote"]))
        elif starting := _STARTING.search(line):
            test.protocol, test.streams = starting["proto"], int(starting["streams"])
        elif (error := _ERROR.search(line)) and test.error is None:
            test.error = error["msg"]
        elif (found := _VERSION.match(line)) and version is None:
            version = found["v"]
    finished = [test for test in tests if test.lines or test.error]
    return finished or tests[-1:], version


def _direction(test: _Test, roles: tuple[str | None, ...]) -> tuple[_Line | None, _Line | None, _Line | None]:
    """(sender, receiver, untagged) summary lines of one direction: the [SUM] lines, or the only stream's."""
    lines = [line for line in test.lines if line.summary and line.role in roles]
    sums = [line for line in lines if line.stream == "SUM"]
    if not sums:
        streams = {line.stream for line in lines}
        if len(streams) > 1:
            raise ValueError(f"summary lists {len(streams)} streams but no [SUM] line: output cut off?")
        sums = lines

    def last(tag: str | None) -> _Line | None:
        tagged = [line for line in sums if line.tag == tag]
        return tagged[-1] if tagged else None

    return last("sender"), last("receiver"), last(None)


def _intervals(test: _Test) -> tuple[Iperf3Interval, ...]:
    lines = [line for line in test.lines if not line.summary and line.role in _FORWARD_ROLES]
    sums = [line for line in lines if line.stream == "SUM"]
    if not sums and len({line.stream for line in lines}) == 1:
        sums = lines
    return tuple(Iperf3Interval(x.start_s, x.end_s, x.bytes, x.gbps, x.count, x.omitted) for x in sums)


def parse_text(text: str) -> Iperf3Result:
    """iperf3's human output, client or server side -> Iperf3Result.

    The totals are the `[SUM] ... sender/receiver` lines, or the stream's own when there is one stream; `-f k/m/g`
    and byte rates (`-f M`) are converted. A server log holding several tests gives the last one. Text from
    `--get-server-output` after `Server output:` is ignored (it repeats the test as the server saw it).
    """
    tests, version = _split_tests(text)
    test = tests[-1]
    if not test.lines and test.error is None:
        raise ValueError("not iperf3 output: no interval, summary or error lines")
    if not any(line.summary for line in test.lines) and test.error is None:
        raise ValueError("iperf3 output has no sender/receiver summary: the test did not finish or the text was cut")
    sender, receiver, untagged = _direction(test, _FORWARD_ROLES)
    rev_sender, rev_receiver, _ = _direction(test, ("RX-C", "TX-S"))
    udp = test.udp or any(line.jitter_ms is not None for line in test.lines)
    if untagged is not None and not udp:
        raise ValueError(f"line {untagged.number}: summary line without sender/receiver (line cut off?)")
    if untagged is not None:  # iperf3 before 3.2 printed one UDP summary line without a tag
        if test.client:
            sender = sender or untagged
        else:
            receiver = receiver or untagged
    if test.client and test.error is None and (sender is None or receiver is None) and untagged is None:
        missing = "receiver" if receiver is None else "sender"
        raise ValueError(f"client output has no {missing} summary line: the text was cut off")
    loss = receiver if receiver is not None and receiver.total is not None else untagged
    protocol = test.protocol or ("UDP" if udp else "TCP" if test.lines else None)
    return Iperf3Result(
        protocol=protocol,
        streams=test.streams or (len(test.connected) or None),
        sender_gbps=sender.gbps if sender else None,
        receiver_gbps=receiver.gbps if receiver else None,
        reverse_sender_gbps=rev_sender.gbps if rev_sender else None,
        reverse_receiver_gbps=rev_receiver.gbps if rev_receiver else None,
        retransmits=sender.count if sender and not udp else None,
        cpu_local_percent=test.cpu[0] if test.cpu else None,
        cpu_remote_percent=test.cpu[1] if test.cpu else None,
        intervals=_intervals(test),
        version=version,
        error=test.error,
        jitter_ms=loss.jitter_ms if loss else None,
        lost_datagrams=loss.lost if loss else None,
        total_datagrams=loss.total if loss else None,
    )


# ------------------------------------------------------------------------------------------------- recognition

_JSON_OPENING = re.compile(r'^[ \t]*\{\s*"(?:start|event|error|intervals|end)"\s*:', re.MULTILINE)
_JSON_MARK = re.compile(r'"(?:test_start|connecting_to|error)"\s*:|"version"\s*:\s*"iperf |"event"\s*:\s*"start"')
_TEXT_MARK = re.compile(
    r"^(?:.*\s)?(?:Connecting to host \S+, port \d+|Server listening on \d+|iperf Done\.|iperf3: error - )",
    re.MULTILINE,
)


def looks_like(text: str) -> str | None:
    """Whether `text` is iperf3 output, told from its content (a file name says nothing): "json", "text" or None."""
    if _JSON_OPENING.search(text) and _JSON_MARK.search(text):
        return "json"
    if _TEXT_MARK.search(text) or any(_DATA.search(line) for line in text.splitlines()):
        return "text"
    return None


# ---------------------------------------------------------------------------------------------------- the runner
# What wirespeed needs to run iperf3 on the nodes: its version probe, its command lines, and its output turned
# into flow results. The rungs that use it (tcp-single, tcp-multi, tcp-halves, matrix) build nothing themselves.

NAME = "iperf3"
VERSION_KEY = "iperf3_version"
VERSION_ARGV = ("iperf3", "--version")
INSTALL_HINT = "apt install iperf3 on every node"
NOT_LISTENING = ("Connection refused",)  # the server is still starting: try again


def parse_version(text: str) -> str:
    """`iperf 3.16 (cJSON 1.7.15)` -> `3.16`."""
    match = re.search(r"iperf\s+(\d+\.\d+(?:\.\d+)?)", text)
    if not match:
        raise ValueError("no iperf3 version")
    return match.group(1)


def version_detail(version: str) -> str:
    """What a reader of the figures needs to know about this version: before 3.16, `-P` streams share one core."""
    major_minor = tuple(int(x) for x in version.split(".")[:2])
    return "one thread per stream" if major_minor >= (3, 16) else "single-threaded: -P streams share one core"


def server_argv(address: str, port: int) -> list[str]:
    """One test, then exit (`-1`), on the half's own address, JSON out."""
    return ["iperf3", "-s", "-1", "-B", address, "-p", str(port), "-J"]


def client_argv(
    source_address: str,
    target_address: str,
    port: int,
    *,
    seconds: int,
    streams: int = 1,
    bidir: bool = False,
    core: int | None = None,
) -> list[str]:
    """From one half's address to the other's; the first second is omitted from the figures (`-O 1`: TCP's ramp)."""
    argv = ["iperf3", "-c", target_address, "-B", source_address, "-p", str(port), "-t", str(seconds), "-O", "1", "-J"]
    if streams > 1:
        argv += ["-P", str(streams)]
    if bidir:
        argv.append("--bidir")
    if core is not None:
        argv += ["-A", str(core)]  # disjoint cores per half on the client (and the same index on the server)
    return argv


def flow_results(flow: Flow, stdout: str, error: str | None) -> list[FlowResult]:
    """The receiver's figure for the flow, and with `--bidir` the reverse one; a failure says iperf3's own words."""
    try:
        parsed = parse_json(stdout)
    except ValueError as exc:
        return [FlowResult(flow, Direction.FORWARD, None, error or f"iperf3 output unreadable: {exc}")]
    if parsed.error:
        return [FlowResult(flow, Direction.FORWARD, None, f"iperf3: {parsed.error}")]
    seconds = tuple(i.gbps for i in parsed.intervals if not i.omitted)  # the figure's spread (core.spread)
    found = [FlowResult(flow, Direction.FORWARD, parsed.receiver_gbps, error, seconds)]
    if parsed.reverse_receiver_gbps is not None:
        found.append(FlowResult(flow.reversed(), Direction.REVERSE, parsed.reverse_receiver_gbps))
    return found
