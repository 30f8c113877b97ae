"""The sockperf tool module: argument lists, the version, and the client's output parsed from real captured runs
(tests/fixtures/real/sockperf, captured on the emulated cluster; README.md there says how)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirespeed.core.tools import sockperf
from wirespeed.core.tools.sockperf import SockperfLatency

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "sockperf"


def real(name: str) -> str:
    return (REAL / name).read_text()


TCP = "pingpong_tcp_v3.7_testbed.txt"
FULL_RTT = "pingpong_tcp_full_rtt_v3.7_testbed.txt"
TCP_1024 = "pingpong_tcp_1024B_half1_v3.7_testbed.txt"
UDP = "pingpong_udp_v3.7_testbed.txt"
NOT_LISTENING = "pingpong_tcp_not_listening_v3.7_testbed.txt"
BIND_FAILED = "pingpong_tcp_bind_failed_v3.7_testbed.txt"
SERVER_KILLED = "pingpong_tcp_server_killed_v3.7_testbed.txt"
UDP_NO_SERVER = "pingpong_udp_no_server_v3.7_testbed.txt"
BAD_MSG_SIZE = "pingpong_tcp_bad_msg_size_v3.7_testbed.txt"
SERVER = "server_tcp_v3.7_testbed.txt"
VERSION = "version_v3.7.txt"
RESULTS = (TCP, FULL_RTT, TCP_1024, UDP)
FAILURES = (NOT_LISTENING, BIND_FAILED, SERVER_KILLED, UDP_NO_SERVER, BAD_MSG_SIZE)


def test_every_fixture_is_covered() -> None:
    assert {p.name for p in REAL.glob("*.txt")} == {*RESULTS, *FAILURES, SERVER, VERSION}


# ----------------------------------------------------------------------------------------------- the contract


def test_contract_constants() -> None:
    assert sockperf.NAME == "sockperf"
    assert sockperf.VERSION_KEY == "sockperf_version"
    assert sockperf.VERSION_ARGV == ("sockperf", "--version")
    assert sockperf.INSTALL_HINT == "apt install sockperf on every node"
    assert isinstance(sockperf.NOT_LISTENING, tuple) and all(sockperf.NOT_LISTENING)


# ----------------------------------------------------------------------------------------------- version


def test_version_from_version_output() -> None:
    assert sockperf.parse_version(real(VERSION)) == "3.7"


def test_version_from_a_runs_coloured_banner() -> None:
    assert sockperf.parse_version(real(TCP)) == "3.7"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sockperf, version 3.10-0.git8a8e6b2b4f\n   compiled Jan  1 2024", "3.10"),
        ("sockperf: == version #3.8-0.gitd3a5e1ba == ", "3.8"),
    ],
)
def test_version_other_builds(text: str, expected: str) -> None:
    assert sockperf.parse_version(text) == expected


@pytest.mark.parametrize("text", ["", "sockperf, version unknown", "command not found: sockperf", "\x1b[0m"])
def test_version_missing(text: str) -> None:
    with pytest.raises(ValueError, match="no version"):
        sockperf.parse_version(text)


# ----------------------------------------------------------------------------------------------- argv


def test_server_argv() -> None:
    assert sockperf.server_argv("198.19.2.2", 11111) == [
        "sockperf", "server", "--tcp", "--ip", "198.19.2.2", "--port", "11111",
    ]  # fmt: skip


def test_client_argv_bound_to_the_source_half() -> None:
    argv = sockperf.client_argv("198.19.2.2", 11111, seconds=5, source_address="198.19.2.1")
    assert argv == [
        "sockperf", "ping-pong", "--tcp", "--ip", "198.19.2.2", "--port", "11111",
        "--time", "5", "--msg-size", "64", "--client_ip", "198.19.2.1",
    ]  # fmt: skip
    assert all(isinstance(arg, str) for arg in argv)


def test_client_argv_unbound_with_a_message_size() -> None:
    assert sockperf.client_argv("198.19.3.2", 11112, seconds=10, message_bytes=1024) == [
        "sockperf", "ping-pong", "--tcp", "--ip", "198.19.3.2", "--port", "11112",
        "--time", "10", "--msg-size", "1024",
    ]  # fmt: skip


def test_client_argv_never_asks_for_round_trips() -> None:
    assert "--full-rtt" not in sockperf.client_argv("198.19.2.2", 11111, seconds=1)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"port": 0}, "port"),
        ({"port": 65536}, "port"),
        ({"port": True}, "port"),
        ({"seconds": 0}, "run time"),
        ({"seconds": 36_000_001}, "run time"),
        ({"seconds": 1.5}, "run time"),
        ({"message_bytes": 13}, "message size"),
        ({"message_bytes": 65508}, "message size"),
        ({"address": "fe80::1"}, "IPv4"),
        ({"address": "spark-2"}, "IPv4"),
        ({"source_address": "198.19.2"}, "IPv4"),
    ],
)
def test_client_argv_refuses_what_sockperf_would(kwargs: dict[str, object], reason: str) -> None:
    args: dict[str, object] = {"address": "198.19.2.2", "port": 11111, "seconds": 5, **kwargs}
    with pytest.raises(ValueError, match=reason):
        sockperf.client_argv(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("address", "port"), [("198.19.2.2", 0), ("::1", 11111)])
def test_server_argv_refuses_what_sockperf_would(address: str, port: int) -> None:
    with pytest.raises(ValueError, match=r"port|IPv4"):
        sockperf.server_argv(address, port)


# ----------------------------------------------------------------------------------------------- real results


def test_tcp_pingpong() -> None:
    result = sockperf.parse(real(TCP), message_bytes=64)
    assert result == SockperfLatency(
        protocol="tcp",
        one_way=True,
        p50_us=4.778,
        p90_us=6.211,
        p99_us=10.349,
        p999_us=68.603,
        p9999_us=329.039,
        p99999_us=1839.117,
        p25_us=4.658,
        p75_us=5.059,
        min_us=4.468,
        max_us=2458.118,
        avg_us=5.363,
        std_dev_us=11.340,
        observations=422647,
        duration_s=4.550,
        sent_messages=422647,
        received_messages=422647,
        dropped=0,
        duplicated=0,
        out_of_order=0,
        message_bytes=64,
        server_address="198.19.2.2",
        server_port=11111,
        total_run_s=5.000,
        warmup_ms=400,
        burst_messages=1,
        stopped_by="timer",
        sockperf_version="3.7",
    )


def test_full_rtt_is_round_trip() -> None:
    result = sockperf.parse(real(FULL_RTT))
    assert result.one_way is False
    assert (result.p50_us, result.p90_us, result.p99_us, result.p999_us) == (9.407, 12.202, 25.968, 323.554)
    assert (result.p9999_us, result.p99999_us, result.p25_us, result.p75_us) == (4004.842, 11430.256, 9.197, 9.948)
    assert (result.min_us, result.max_us, result.avg_us, result.std_dev_us) == (8.666, 15808.747, 12.434, 84.539)
    assert (result.observations, result.sent_messages, result.received_messages) == (364616, 364616, 364616)
    assert (result.duration_s, result.total_run_s, result.warmup_ms) == (4.550, 5.000, 400)
    assert (result.protocol, result.server_address, result.server_port) == ("tcp", "198.19.2.2", 11111)
    assert result.message_bytes is None  # sockperf does not print it


def test_tcp_1024_bytes_on_the_other_half() -> None:
    result = sockperf.parse(real(TCP_1024), message_bytes=1024)
    assert result.one_way is True
    assert (result.p50_us, result.p90_us, result.p99_us, result.p999_us) == (6.106, 6.361, 10.669, 40.886)
    assert (result.p9999_us, result.p99999_us, result.p25_us, result.p75_us) == (287.101, 1619.591, 4.768, 6.256)
    assert (result.min_us, result.max_us, result.avg_us, result.std_dev_us) == (4.553, 4490.857, 5.844, 12.477)
    assert result.observations == 387998
    assert (result.server_address, result.server_port, result.message_bytes) == ("198.19.3.2", 11112, 1024)


def test_udp_pingpong() -> None:
    result = sockperf.parse(real(UDP))
    assert (result.protocol, result.one_way) == ("udp", True)
    assert (result.p50_us, result.p90_us, result.p99_us, result.p999_us) == (5.565, 5.750, 9.778, 26.318)
    assert (result.p9999_us, result.p99999_us, result.p25_us, result.p75_us) == (220.772, 1150.315, 4.082, 5.660)
    assert (result.min_us, result.max_us, result.avg_us, result.std_dev_us) == (3.887, 3373.976, 5.191, 8.386)
    assert (result.observations, result.dropped, result.duplicated, result.out_of_order) == (436619, 0, 0, 0)
    assert result.server_port == 11113


@pytest.mark.parametrize("name", RESULTS)
def test_results_are_ordered_and_consistent(name: str) -> None:
    r = sockperf.parse(real(name))
    assert r.min_us <= r.p25_us <= r.p50_us <= r.p75_us <= r.p90_us <= r.p99_us <= r.p999_us  # type: ignore[operator]
    assert r.p999_us <= r.p9999_us <= r.p99999_us <= r.max_us  # type: ignore[operator]
    assert r.observations == r.received_messages
    assert r.duration_s == pytest.approx(r.total_run_s - 0.45)  # type: ignore[operator]


@pytest.mark.parametrize("name", RESULTS)
def test_parse_does_not_depend_on_colour_or_line_endings(name: str) -> None:
    text = real(name)
    plain = text.replace("\x1b[2;35m", "").replace("\x1b[0m", "")
    assert "\x1b" in text and "\x1b" not in plain
    assert sockperf.parse(plain) == sockperf.parse(text) == sockperf.parse(text.replace("\n", "\r\n"))


# ----------------------------------------------------------------------------------------------- real failures


def test_not_listening_is_recognised() -> None:
    text = real(NOT_LISTENING)
    assert any(marker in text for marker in sockperf.NOT_LISTENING)
    with pytest.raises(ValueError, match=r"^sockperf failed: Can`t connect socket \(errno=111 Connection refused\)$"):
        sockperf.parse(text)


def test_not_listening_also_as_later_versions_print_it() -> None:
    text = "sockperf: ERROR: Can`t connect socket. fd=3 (errno=111 Connection refused)\n"
    assert any(marker in text for marker in sockperf.NOT_LISTENING)


@pytest.mark.parametrize("name", [*RESULTS, BIND_FAILED, SERVER_KILLED, UDP_NO_SERVER, BAD_MSG_SIZE, SERVER])
def test_nothing_else_reads_as_not_listening(name: str) -> None:
    assert not any(marker in real(name) for marker in sockperf.NOT_LISTENING)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (BIND_FAILED, r"\[fd=3\] Can`t bind socket 198\.19\.3\.9:0 \(errno=99 Cannot assign requested address\)"),
        (SERVER_KILLED, r"A connection was forcibly closed by a peer"),
        (UDP_NO_SERVER, r"No messages were received from the server\. Is the server down\?"),
        (BAD_MSG_SIZE, r"'-m' Invalid message size: 10 \(min: 14\)"),
    ],
)
def test_failed_runs_raise_with_sockperfs_reason(name: str, reason: str) -> None:
    with pytest.raises(ValueError, match="^sockperf failed: " + reason) as caught:
        sockperf.parse(real(name))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", [SERVER, VERSION])
def test_other_outputs_hold_no_result(name: str) -> None:
    with pytest.raises(ValueError, match=r"^sockperf printed no percentiles$"):
        sockperf.parse(real(name))


# ----------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("text", ["", "\n\n", "   \n"])
def test_empty(text: str) -> None:
    with pytest.raises(ValueError, match=r"^sockperf printed nothing$"):
        sockperf.parse(text)


def test_not_sockperf_at_all() -> None:
    with pytest.raises(ValueError, match=r"^sockperf printed no percentiles$"):
        sockperf.parse("Connecting to host 198.19.2.2, port 5201\n[  5] local 198.19.2.1 port 40000\n")


def test_every_truncation_raises_value_error() -> None:
    """Cut the whole run at every character: anything short of the last figure is refused, never misread."""
    text = real(TCP)
    whole = len(text.rstrip("\n"))
    for cut in range(whole):
        with pytest.raises(ValueError, match=r"^sockperf "):
            sockperf.parse(text[:cut])
    assert sockperf.parse(text[:whole]) == sockperf.parse(text)


def test_truncated_before_the_median_names_it() -> None:
    text = real(TCP)
    cut = text[: text.index("sockperf: ---> percentile 90.000")]
    with pytest.raises(ValueError, match=r"^sockperf printed no 90\.000 percentile \(output cut short\?\)$"):
        sockperf.parse(cut)


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("percentile 99.000 =   10.349", "percentile 99.000 =   abc", r"percentile 99\.000 is not a number"),
        ("percentile 50.000 =    4.778", "percentile 50.000 =    nan", r"percentile 50\.000 is not a number"),
        ("percentile 50.000 =    4.778", "percentile 50.000 =    4.7", r"percentile 50\.000 is not a number"),
        ("percentile 50.000 =    4.778", "percentile 50.000 =", r"percentile 50\.000 is not a number"),
        ("percentile 99.900 =   68.603", "percentile 99.95 =   68.603", "percentile line not understood"),
        ("percentile 90.000 =    6.211", "percentile =    6.211", "percentile line not understood"),
        ("<MAX> observation = 2458.118", "<MAX> observation = inf", r"<MAX> observation is not a number"),
        ("avg-latency=5.363", "avg-latency=five", "average is not a number"),
        ("std-dev=11.340", "std-dev=-", "std-dev is not a number"),
        ("Summary: Latency is 5.363 usec", "Summary: Latency is 5.363 msec", "summary in 'msec', not usec"),
        ("Summary: Latency is", "Summary: Round trip is", "disagree on latency against round trip"),
        ("Total 422647 observations", "Total many observations", "observation count is not a number"),
        ("[Valid Duration] RunTime=4.550 sec", "[Valid Duration] RunTime=4.5 sec", "valid run time is not a number"),
        ("# dropped messages = 0", "# dropped messages = ?", "no dropped, duplicated and out-of-order counts"),
        ("====> avg-latency", "====> mean-latency", r"no average line"),
        ("IP = 198.19.2.2      PORT = 11111 # TCP", "198.19.2.2 11111", "no connection line"),
    ],
)
def test_malformed_lines_raise_a_clear_value_error(old: str, new: str, reason: str) -> None:
    text = real(TCP)
    assert old in text
    with pytest.raises(ValueError, match=reason) as caught:
        sockperf.parse(text.replace(old, new, 1))
    assert str(caught.value).startswith("sockperf ") and "\n" not in str(caught.value)


def test_statistics_for_several_servers_are_refused() -> None:
    text = real(TCP)
    block = text[text.index("sockperf: ========= Printing") :]
    with pytest.raises(ValueError, match="statistics for 2 servers; one was expected"):
        sockperf.parse(text + block.replace("Server No: 0", "Server No: 1"))


def test_a_run_cut_short_by_the_user_says_so() -> None:
    text = real(TCP).replace("interrupted by timer", "interrupted by user")
    assert sockperf.parse(text).stopped_by == "user"


def test_a_burst_summary_and_a_missing_summary() -> None:
    text = real(TCP)
    burst = text.replace("Summary: Latency is", "Summary: Latency of burst of 4 messages is")
    assert sockperf.parse(burst).burst_messages == 4
    no_summary = "".join(line for line in text.splitlines(keepends=True) if "Summary:" not in line)
    assert sockperf.parse(no_summary) == sockperf.parse(text)


def test_a_single_observation_has_no_25th_percentile() -> None:
    """sockperf skips a percentile whose index falls below 0 (one observation: the 25th)."""
    lines = [line for line in real(TCP).splitlines(keepends=True) if "percentile 25.000" not in line]
    assert sockperf.parse("".join(lines)).p25_us is None


def test_later_versions_average_line_with_more_statistics() -> None:
    text = real(TCP).replace(
        "(std-dev=11.340)",
        "(std-dev=11.340, mean-ad=1.100, median-ad=0.300, siqr=0.200, cv=2.114, std-error=0.017, 99.0% ci=[5.3, 5.4])",
    )
    result = sockperf.parse(text)
    assert (result.avg_us, result.std_dev_us) == (5.363, 11.340)


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("sockperf:-> percentile=0123456789.<MAXIN>#TCPUDP()\n\x1b[m")), max_size=400)
)
def test_any_text_is_a_result_or_a_value_error(text: str) -> None:
    try:
        sockperf.parse(text)
    except ValueError as error:
        assert str(error).startswith("sockperf ")
