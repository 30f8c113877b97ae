"""sockperf (NVIDIA/Mellanox): TCP and UDP ping-pong latency. Pure: argument lists out, text in, figures out.

What the figures mean (sockperf 3.7 `src/client.cpp`, `client_statistics`): every observation is one reply, timed on
the client from sending a message to receiving the server's echo, and stored as `rtt / 2` ("latency", the default)
or as the whole round trip with `--full-rtt` (then sockperf says `avg-rtt` and `Round trip`); percentiles, minimum,
maximum, average and deviation are all of those stored values. The warm-up messages, the first 400 ms and the last
50 ms of the run are left out (`TEST_START_WARMUP_MSEC`, `TEST_END_COOLDOWN_MSEC`: `[Valid Duration]` is the
window kept), and so are lost, duplicated and out-of-order replies, which are only counted.

How it behaves (captured on the testbed, `tests/fixtures/real/sockperf/README.md`): everything, errors included,
goes to stdout, coloured with ANSI escapes even into a file or pipe; the exit status is 0 when the connection is
refused, the source address cannot be bound or the arguments are wrong (it prints its usage), so the text is the
only verdict. sockperf 3.7 speaks IPv4 only, and never prints the message size it was given: the caller states it.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from wirespeed.core.records import figures

NAME = "sockperf"
VERSION_KEY = "sockperf_version"
VERSION_ARGV = ("sockperf", "--version")
INSTALL_HINT = "apt install sockperf on every node"
# `connect()` refused: nothing listens on the server's address and port yet. 3.7 prints
# "ERROR: Can`t connect socket (errno=111 Connection refused)", later versions add ". fd=3" before the errno.
NOT_LISTENING = ("(errno=111 Connection refused)",)

DEFAULT_MESSAGE_BYTES = 64
MIN_MESSAGE_BYTES = 14  # sockperf's own header (MIN_PAYLOAD_SIZE); smaller is refused with its usage text
MAX_MESSAGE_BYTES = 65507  # what a server started without `--msg-size` accepts (its default, the UDP maximum)
MAX_SECONDS = 36_000_000  # sockperf's MAX_DURATION

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_VERSION = re.compile(r"version\s+#?\s*(\d+(?:\.\d+)+)")
_FIXED3 = re.compile(r"-?\d+\.\d{3}")  # sockperf prints every time with %.3lf
_PERCENTILE = re.compile(r"--->\s+percentile\s+(?P<p>\S+)\s*=\s*(?P<v>.*?)\s*$")
_EXTREME = re.compile(r"--->\s+<(?P<which>MAX|MIN)>\s+observation\s*=\s*(?P<v>.*?)\s*$")
_AVG = re.compile(r"====>\s+avg-(?P<kind>latency|rtt)=(?P<avg>[^\s(]*)\s*\(std-dev=(?P<sd>[^,)\s]*)")
_SUMMARY = re.compile(
    r"Summary: (?P<kind>Latency|Round trip)(?: of burst of (?P<burst>\d+) messages)? is (?P<v>\S+) (?P<unit>\S+)\s*$"
)
_TOTAL_OBS = re.compile(r"Total (?P<n>\S+) observations")
_VALID = re.compile(r"\[Valid Duration\] RunTime=(?P<t>\S+) sec; SentMessages=(?P<s>\d+); ReceivedMessages=(?P<r>\d+)")
_TOTAL_RUN = re.compile(r"\[Total Run\] RunTime=(?P<t>\S+) sec; (?:Warm up time=(?P<w>\d+) msec)?")
_COUNTS = re.compile(
    r"# dropped messages = (?P<d>\d+); # duplicated messages = (?P<u>\d+); # out-of-order messages = (?P<o>\d+)"
)
_CONNECTION = re.compile(r"IP = (?P<ip>\S+)\s+PORT =\s*(?P<port>\d+) # (?P<proto>TCP|UDP)")
_SERVER_BLOCK = re.compile(r"Printing statistics for Server No:")
_STOPPED = re.compile(r"Test end \(interrupted by (?P<why>[^)]*)\)")
_ERROR = re.compile(r"ERROR: (?P<msg>.*?)\s*$")
_BAD_ARG = re.compile(r"^sockperf: (?P<msg>'-[^']*' Invalid .*?)\s*$")
_FAILURES = (
    "No messages were received from the server. Is the server down?",
    "No valid observations found",
    "No messages were sent",
)

# sockperf 3.7 prints these percentiles (printPercentiles), highest first; a field per each.
_PERCENTILE_FIELDS = {
    "99.999": "p99999_us",
    "99.990": "p9999_us",
    "99.900": "p999_us",
    "99.000": "p99_us",
    "90.000": "p90_us",
    "75.000": "p75_us",
    "50.000": "p50_us",
    "25.000": "p25_us",
}
_REQUIRED_PERCENTILES = ("99.900", "99.000", "90.000", "50.000")  # in the order printed


@dataclass(frozen=True)
class SockperfLatency:
    """One sockperf ping-pong client run against one server. Every `_us` figure is microseconds, one-way (half the
    round trip) when `one_way` is True, the whole round trip when False (`--full-rtt`). The percentiles are of the
    `observations` replies kept in the `duration_s` window (warm-up and cool-down left out); `p25_us` is None with a
    single observation, `p9999_us` and `p99999_us` where sockperf did not print them. `sent_messages` and
    `received_messages` are that window's; `dropped`, `duplicated` and `out_of_order` replies are not observations.
    `message_bytes` is None unless the caller stated it (sockperf does not print it). `burst_messages` above 1 means
    each observation is a burst's. `stopped_by` is how the test ended ("timer" for a full run; "user" or
    "signal N" for one cut short, whose figures are of a shorter run)."""

    protocol: str
    one_way: bool
    p50_us: float
    p90_us: float
    p99_us: float
    p999_us: float
    p9999_us: float | None
    p99999_us: float | None
    p25_us: float | None
    p75_us: float | None
    min_us: float
    max_us: float
    avg_us: float
    std_dev_us: float
    observations: int
    duration_s: float
    sent_messages: int
    received_messages: int
    dropped: int
    duplicated: int
    out_of_order: int
    message_bytes: int | None
    server_address: str
    server_port: int
    total_run_s: float | None
    warmup_ms: int | None
    burst_messages: int
    stopped_by: str | None
    sockperf_version: str | None


def parse_version(text: str) -> str:
    """The version number from `sockperf --version` ("sockperf, version 3.7-no.git") or a run's banner
    ("== version #3.7-no.git =="): "3.7". ValueError when there is none."""
    match = _VERSION.search(_ANSI.sub("", text))
    if match is None:
        raise ValueError("sockperf printed no version number")
    return match.group(1)


def _ipv4(address: str, what: str) -> str:
    try:
        return str(ipaddress.IPv4Address(address))
    except ValueError:
        raise ValueError(f"sockperf 3.7 takes IPv4 addresses only: {what} {address!r}") from None


def _port(port: int) -> str:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"sockperf port must be 1-65535, not {port!r}")
    return str(port)


def server_argv(address: str, port: int) -> list[str]:
    """A TCP sockperf server listening on `address`:`port` only (it echoes every message; it runs until killed)."""
    return ["sockperf", "server", "--tcp", "--ip", _ipv4(address, "server address"), "--port", _port(port)]


def client_argv(
    address: str,
    port: int,
    *,
    seconds: int,
    message_bytes: int = DEFAULT_MESSAGE_BYTES,
    source_address: str | None = None,
) -> list[str]:
    """A TCP ping-pong client to `address`:`port` for `seconds` (the figures cover `seconds - 0.45`; the command
    takes about 2 s more: warm-up messages, then a 2 s pause), sending `message_bytes` per message, bound to
    `source_address` (`--client_ip`) when given, so the run leaves on that fabric half. One-way figures (no
    `--full-rtt`), perftest's latency convention too; sockperf prints its percentiles by default."""
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= MAX_SECONDS:
        raise ValueError(f"sockperf run time must be 1-{MAX_SECONDS} whole seconds, not {seconds!r}")
    if (
        isinstance(message_bytes, bool)
        or not isinstance(message_bytes, int)
        or not MIN_MESSAGE_BYTES <= message_bytes <= MAX_MESSAGE_BYTES
    ):
        raise ValueError(
            f"sockperf message size must be {MIN_MESSAGE_BYTES}-{MAX_MESSAGE_BYTES} bytes, not {message_bytes!r}"
        )
    argv = ["sockperf", "ping-pong", "--tcp", "--ip", _ipv4(address, "server address"), "--port", _port(port)]
    argv += ["--time", str(seconds), "--msg-size", str(message_bytes)]
    if source_address is not None:
        argv += ["--client_ip", _ipv4(source_address, "source address")]
    return argv


def _fixed(value: str, what: str) -> float:
    """A %.3lf figure; anything else (a word, a number cut short) is a ValueError naming what it was."""
    if _FIXED3.fullmatch(value) is None:
        raise ValueError(f"sockperf {what} is not a number with 3 decimals: {value!r}")
    return figures.measured(float(value), f"sockperf {what}", high=figures.MAX_LATENCY_US)


def _failure(lines: list[str]) -> str | None:
    """Why sockperf produced no figures, in its own words, or None."""
    for line in lines:
        if (error := _ERROR.search(line)) is not None:
            return error.group("msg")
        if (bad := _BAD_ARG.search(line)) is not None:
            return f"{bad.group('msg')} (sockperf refused its arguments)"
        for failure in _FAILURES:
            if failure in line:
                return failure
    if any(line.startswith("Usage: sockperf") for line in lines):
        return "sockperf printed its usage (it refused its arguments)"
    return None


def parse(text: str, *, message_bytes: int | None = None) -> SockperfLatency:
    """The figures of one ping-pong client's output (stdout; sockperf writes nothing to stderr). `message_bytes` is
    the size the caller asked for, recorded as given. ValueError with a one-line reason when the output holds no
    whole result: sockperf's own error ("sockperf failed: Can`t connect socket (errno=111 Connection refused)"),
    or the first piece missing or malformed ("sockperf printed no percentiles")."""
    lines = _ANSI.sub("", text).replace("\r", "").splitlines()
    if not any(line.strip() for line in lines):
        raise ValueError("sockperf printed nothing")
    try:
        return _parse(lines, message_bytes)
    except ValueError:
        failure = _failure(lines)
        if failure is not None:
            raise ValueError(f"sockperf failed: {failure}") from None
        raise


def _parse(lines: list[str], message_bytes: int | None) -> SockperfLatency:
    blocks = sum(1 for line in lines if _SERVER_BLOCK.search(line))
    if blocks > 1:
        raise ValueError(f"sockperf printed statistics for {blocks} servers; one was expected")

    percentiles: dict[str, float] = {}
    extremes: dict[str, float] = {}
    for line in lines:
        if "---> percentile" in line:
            match = _PERCENTILE.search(line)
            if match is None or match.group("p") not in _PERCENTILE_FIELDS:
                raise ValueError(f"sockperf percentile line not understood: {line.strip()!r}")
            percentiles[match.group("p")] = _fixed(match.group("v"), f"percentile {match.group('p')}")
        elif "observation =" in line and "--->" in line:
            match = _EXTREME.search(line)
            if match is None:
                raise ValueError(f"sockperf observation line not understood: {line.strip()!r}")
            extremes[match.group("which")] = _fixed(match.group("v"), f"<{match.group('which')}> observation")
    if not percentiles:
        raise ValueError("sockperf printed no percentiles")
    for key in _REQUIRED_PERCENTILES:
        if key not in percentiles:
            raise ValueError(f"sockperf printed no {key} percentile (output cut short?)")
    for which in ("MAX", "MIN"):
        if which not in extremes:
            raise ValueError(f"sockperf printed no <{which}> observation (output cut short?)")

    avg = _search(lines, _AVG, "average line (====> avg-latency=...)")
    one_way = avg.group("kind") == "latency"
    avg_us = _fixed(avg.group("avg"), "average")
    std_dev_us = _fixed(avg.group("sd"), "std-dev")

    burst = 1
    summary = _find(lines, _SUMMARY)
    if summary is not None:  # absent when the average is exactly 0
        if summary.group("unit") != "usec":
            raise ValueError(f"sockperf printed its summary in {summary.group('unit')!r}, not usec")
        if (summary.group("kind") == "Latency") != one_way:
            raise ValueError("sockperf summary and average disagree on latency against round trip")
        if summary.group("burst") is not None:
            burst = int(summary.group("burst"))

    total_obs = _search(lines, _TOTAL_OBS, "observation count (Total N observations)").group("n")
    if not total_obs.isdigit():
        raise ValueError(f"sockperf observation count is not a number: {total_obs!r}")
    valid = _search(lines, _VALID, "valid duration ([Valid Duration] RunTime=...)")
    counts = _search(lines, _COUNTS, "dropped, duplicated and out-of-order counts")
    connection = _find(lines, _CONNECTION)
    if connection is None:
        raise ValueError("sockperf printed no connection line (IP = ... PORT = ... # TCP)")
    total_run = _find(lines, _TOTAL_RUN)
    stopped = _find(lines, _STOPPED)
    version = None
    banner = next((line for line in lines if "== version #" in line), None)
    if banner is not None and (number := _VERSION.search(banner)) is not None:
        version = number.group(1)

    return SockperfLatency(
        protocol=connection.group("proto").lower(),
        one_way=one_way,
        p50_us=percentiles["50.000"],
        p90_us=percentiles["90.000"],
        p99_us=percentiles["99.000"],
        p999_us=percentiles["99.900"],
        p9999_us=percentiles.get("99.990"),
        p99999_us=percentiles.get("99.999"),
        p25_us=percentiles.get("25.000"),
        p75_us=percentiles.get("75.000"),
        min_us=extremes["MIN"],
        max_us=extremes["MAX"],
        avg_us=avg_us,
        std_dev_us=std_dev_us,
        observations=int(total_obs),
        duration_s=_fixed(valid.group("t"), "valid run time"),
        sent_messages=int(valid.group("s")),
        received_messages=int(valid.group("r")),
        dropped=int(counts.group("d")),
        duplicated=int(counts.group("u")),
        out_of_order=int(counts.group("o")),
        message_bytes=message_bytes,
        server_address=connection.group("ip"),
        server_port=int(connection.group("port")),
        total_run_s=_fixed(total_run.group("t"), "total run time") if total_run is not None else None,
        warmup_ms=int(total_run.group("w")) if total_run is not None and total_run.group("w") else None,
        burst_messages=burst,
        stopped_by=stopped.group("why") if stopped is not None else None,
        sockperf_version=version,
    )


def _find(lines: list[str], pattern: re.Pattern[str]) -> re.Match[str] | None:
    for line in lines:
        if (match := pattern.search(line)) is not None:
            return match
    return None


def _search(lines: list[str], pattern: re.Pattern[str], what: str) -> re.Match[str]:
    match = _find(lines, pattern)
    if match is None:
        raise ValueError(f"sockperf printed no {what}")
    return match
