"""iperf3 output as the bench reads it: the five real outputs (3.6 and 3.9 `-J`, client, server and UDP text), then
the layouts they do not show (`--bidir`, `-V`, `-O`, `--json-stream`, UDP JSON old and new, `--get-server-output`,
`--timestamps`, a server log of two tests) written the way iperf3's `src/iperf_locale.c` formats print them, and the
accidents (cut files, header only, garbage)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.tools import perftest
from wirespeed.core.tools.iperf3 import Iperf3Interval, Iperf3Result, looks_like, parse_json, parse_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real"
REAL = FIXTURES / "iperf3"
CASES = sorted(REAL.glob("*.txt"))
JSON_CASES = [p for p in CASES if p.name.startswith("iperf3_json_")]
TEXT_CASES = [p for p in CASES if not p.name.startswith("iperf3_json_")]


def _expect(name: str) -> dict[str, Any]:
    expect: dict[str, Any] = json.loads((REAL / name).with_suffix(".json").read_text())["expect"]
    return expect


def _read(name: str) -> str:
    return (REAL / name).read_text()


def test_every_real_output_is_covered() -> None:
    assert len(CASES) == 5 and len(JSON_CASES) == 2 and len(TEXT_CASES) == 3
    assert all((p.with_suffix(".json")).exists() for p in CASES)


# ----------------------------------------------------------------------------------------------- real JSON


@pytest.mark.parametrize("path", JSON_CASES, ids=[p.stem for p in JSON_CASES])
def test_real_json_gives_what_a_person_reads(path: Path) -> None:
    expect = _expect(path.name)
    result = parse_json(path.read_text())
    assert result.version == expect["version"]
    assert result.protocol == expect["protocol"] == "TCP"
    assert result.streams == expect["num_streams"] == 1
    assert result.sender_gbps == pytest.approx(expect["sum_sent"]["bits_per_second"] / 1e9)
    assert result.receiver_gbps == pytest.approx(expect["sum_received"]["bits_per_second"] / 1e9)
    assert result.retransmits == expect["sum_sent"]["retransmits"]
    assert result.cpu_local_percent == pytest.approx(expect["cpu_utilization_percent"]["host_total"])
    assert result.cpu_remote_percent == pytest.approx(expect["cpu_utilization_percent"]["remote_total"])
    assert len(result.intervals) == expect["n_intervals"]
    assert result.reverse_sender_gbps is None and result.reverse_receiver_gbps is None
    assert result.error is None and result.jitter_ms is None and result.total_datagrams is None


def test_v36_byte_mode_has_a_fractional_last_interval() -> None:
    result = parse_json(_read("iperf3_json_tcp_1stream_v3.6_bytes_mode_aws_to_gcp.txt"))
    assert result.receiver_gbps == pytest.approx(0.08744352620683172)  # 87.4 Mbit/s
    last = result.intervals[-1]
    assert last.start_s == pytest.approx(18.000071048736572) and last.end_s == pytest.approx(18.982433080673218)
    assert last.bytes == 13107200 and not last.omitted
    assert sum(i.bytes for i in result.intervals) == 211011072  # the intervals add up to sum_sent


def test_v39_omitted_intervals_are_kept_and_marked() -> None:
    result = parse_json(_read("iperf3_json_tcp_1stream_v3.9_gcp_to_ibm_omit3.txt"))
    assert [i.omitted for i in result.intervals] == [True] * 3 + [False] * 10
    assert result.intervals[1] == Iperf3Interval(1.000106, 2.000134, 22282240, 0.17825292638989192, 999, True)
    # the quirk: received bytes exceed sent bytes in this file; reported as printed
    assert result.receiver_gbps is not None and result.sender_gbps is not None
    assert result.receiver_gbps > result.sender_gbps


# ----------------------------------------------------------------------------------------------- real text


def test_real_client_text_with_three_streams() -> None:
    name = "iperf3_tcp_P3_client_loopback_sum.txt"
    expect = _expect(name)
    result = parse_text(_read(name))
    assert result.streams == expect["num_streams"] == 3
    assert result.protocol == "TCP"
    assert result.sender_gbps == pytest.approx(expect["sum_sender"]["bits_per_second"] / 1e9)  # 22.3
    assert result.receiver_gbps == pytest.approx(expect["sum_receiver"]["bits_per_second"] / 1e9)  # 22.2
    assert result.retransmits == expect["sum_sender"]["retransmits"] == 0
    assert len(result.intervals) == expect["interval_sum_lines"] == 10
    first, last = result.intervals[0], result.intervals[-1]
    assert (first.start_s, first.end_s, first.gbps, first.retransmits) == (0.0, 1.0, 25.2, 0)
    assert first.bytes == round(2.93 * 2**30)  # GBytes are binary
    assert (last.start_s, last.end_s, last.gbps) == (9.0, 10.0, 21.5)
    assert result.reverse_receiver_gbps is None and result.error is None and result.version is None
    assert (result.cpu_local_percent, result.jitter_ms) == (None, None)


def test_real_server_text_in_kbits() -> None:
    name = "iperf3_tcp_P3_server_kbits_loopback_sum.txt"
    expect = _expect(name)
    result = parse_text(_read(name))
    assert result.streams == expect["num_streams"] == 3
    assert expect["sum_sender"] is None and result.sender_gbps is None  # a server prints only what it received
    assert result.receiver_gbps == pytest.approx(expect["sum_receiver"]["bits_per_second"] / 1e9)  # 41.7203
    assert result.retransmits is None and result.protocol == "TCP"
    assert len(result.intervals) == 6
    assert result.intervals[-1].end_s == 5.04 and result.intervals[-1].gbps == pytest.approx(43.682969)


def test_real_udp_client_text() -> None:
    name = "iperf3_udp_P2_client_kbits_loopback_sum.txt"
    expect = _expect(name)
    result = parse_text(_read(name))
    assert result.protocol == "UDP" and result.streams == expect["num_streams"] == 2
    assert result.sender_gbps == pytest.approx(expect["sum_sender"]["bits_per_second"] / 1e9)
    assert result.receiver_gbps == pytest.approx(expect["sum_receiver"]["bits_per_second"] / 1e9)
    assert result.jitter_ms == expect["sum_receiver"]["jitter_ms"] == 0.018
    assert result.lost_datagrams == expect["sum_receiver"]["lost"] == 0
    assert result.total_datagrams == expect["sum_receiver"]["total_datagrams"] == 36
    assert result.retransmits is None
    assert [i.bytes for i in result.intervals] == [258 * 1024] * 3  # KBytes are binary
    assert [i.retransmits for i in result.intervals] == [None] * 3  # that column is datagrams, not Retr


# ------------------------------------------------------------------------------------ layouts in the sources

BIDIR_CLIENT = """\
Connecting to host 10.0.0.2, port 5201
[  5] local 10.0.0.1 port 40000 connected to 10.0.0.2 port 5201
[  7] local 10.0.0.1 port 40002 connected to 10.0.0.2 port 5201
[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd
[  5][TX-C]   0.00-1.00   sec  1.10 GBytes  9.42 Gbits/sec    0   1.50 MBytes       
[  7][RX-C]   0.00-1.00   sec  1.09 GBytes  9.38 Gbits/sec                  
- - - - - - - - - - - - - - - - - - - - - - - - -
[ ID][Role] Interval           Transfer     Bitrate         Retr
[  5][TX-C]   0.00-10.00  sec  11.0 GBytes  9.42 Gbits/sec   12            sender
[  5][TX-C]   0.00-10.04  sec  11.0 GBytes  9.41 Gbits/sec                  receiver
[  7][RX-C]   0.00-10.04  sec  10.9 GBytes  9.38 Gbits/sec    3            sender
[  7][RX-C]   0.00-10.00  sec  10.9 GBytes  9.37 Gbits/sec                  receiver

iperf Done.
"""  # noqa: W291  (iperf3 prints the trailing blanks)


def test_bidir_text_splits_the_two_directions() -> None:
    result = parse_text(BIDIR_CLIENT)
    assert (result.sender_gbps, result.receiver_gbps) == (9.42, 9.41)
    assert (result.reverse_sender_gbps, result.reverse_receiver_gbps) == (9.38, 9.37)
    assert result.retransmits == 12 and result.streams == 1
    assert result.intervals == (Iperf3Interval(0.0, 1.0, round(1.10 * 2**30), 9.42, 0),)


VERBOSE_OMIT = """\
iperf 3.16 (cJSON 1.7.15)
Linux spark-a 6.8.0-1015-nvidia #16-Ubuntu SMP PREEMPT_DYNAMIC aarch64
Control connection MSS 8948
Time: Thu, 21 Nov 2024 10:00:00 GMT
Connecting to host 10.0.0.2, port 5201
      Cookie: abcdefghijklmnopqrstuvwxyz234567abcd
      TCP MSS: 8948 (default)
[  5] local 10.0.0.1 port 40000 connected to 10.0.0.2 port 5201
Starting Test: protocol: TCP, 1 streams, 131072 byte blocks, omitting 1 seconds, 2 second test, tos 0
[ ID] Interval           Transfer     Bitrate         Retr  Cwnd
[  5]   0.00-1.00   sec   112 MBytes   941 Mbits/sec    0    395 KBytes       (omitted)
[ ID] Interval           Transfer     Bitrate         Retr  Cwnd
[  5]   0.00-1.00   sec   112 MBytes   940 Mbits/sec    2    395 KBytes       
[  5]   1.00-2.00   sec   112 MBytes   942 Mbits/sec    0    395 KBytes       
- - - - - - - - - - - - - - - - - - - - - - - - -
Test Complete. Summary Results:
[ ID] Interval           Transfer     Bitrate         Retr
[  5]   0.00-2.00   sec   224 MBytes   941 Mbits/sec    2             sender
[  5]   0.00-2.04   sec   223 MBytes   918 Mbits/sec                  receiver
CPU Utilization: local/sender 5.2% (0.3%u/4.9%s), remote/receiver 12.6% (1.9%u/10.7%s)
snd_tcp_congestion cubic
rcv_tcp_congestion cubic

iperf Done.
"""  # noqa: W291


def test_verbose_text_gives_version_cpu_and_omitted_intervals() -> None:
    result = parse_text(VERBOSE_OMIT)
    assert result.version == "iperf 3.16" and result.protocol == "TCP" and result.streams == 1
    assert (result.cpu_local_percent, result.cpu_remote_percent) == (5.2, 12.6)
    assert (result.sender_gbps, result.receiver_gbps, result.retransmits) == (0.941, 0.918, 2)
    assert [(i.omitted, i.retransmits) for i in result.intervals] == [(True, 0), (False, 2), (False, 0)]


def test_timestamps_and_server_output_section() -> None:
    stamped = "".join(f"Thu Nov 21 10:00:{n:02d} 2024 {line}\n" for n, line in enumerate(BIDIR_CLIENT.splitlines()))
    assert parse_text(stamped) == parse_text(BIDIR_CLIENT)
    with_server = VERBOSE_OMIT.replace(
        "\niperf Done.",
        "\nServer output:\n-----------------------------------------------------------\n"
        "Accepted connection from 10.0.0.1, port 39998\n"
        "[  5] local 10.0.0.2 port 5201 connected to 10.0.0.1 port 40000\n"
        "[ ID] Interval           Transfer     Bitrate\n"
        "[  5]   0.00-2.04   sec   223 MBytes   500 Mbits/sec                  receiver\n\n\niperf Done.",
    )
    assert parse_text(with_server) == parse_text(VERBOSE_OMIT)


OLD_UDP_CLIENT = """\
Connecting to host 10.0.0.2, port 5201
[  4] local 10.0.0.1 port 50000 connected to 10.0.0.2 port 5201
[ ID] Interval           Transfer     Bandwidth       Total Datagrams
[  4]   0.00-1.00   sec   120 KBytes   983 Kbits/sec  15  
- - - - - - - - - - - - - - - - - - - - - - - - -
[ ID] Interval           Transfer     Bandwidth       Jitter    Lost/Total Datagrams
[  4]   0.00-10.00  sec  1.17 MBytes   982 Kbits/sec  0.034 ms  2/150 (1.3%)  
[  4] Sent 150 datagrams

iperf Done.
"""  # noqa: W291


def test_old_udp_summary_without_sender_or_receiver_tag() -> None:
    result = parse_text(OLD_UDP_CLIENT)
    assert result.protocol == "UDP" and result.sender_gbps == pytest.approx(0.000982)
    assert (result.jitter_ms, result.lost_datagrams, result.total_datagrams) == (0.034, 2, 150)
    assert result.intervals == (Iperf3Interval(0.0, 1.0, 120 * 1024, 0.000983, None),)


SERVER_TWO_TESTS = """\
-----------------------------------------------------------
Server listening on 5201 (test #1)
-----------------------------------------------------------
Accepted connection from 10.0.0.1, port 39998
[  5] local 10.0.0.2 port 5201 connected to 10.0.0.1 port 40000
[ ID] Interval           Transfer     Bitrate
[  5]   0.00-1.00   sec   107 MBytes   900 Mbits/sec                  
- - - - - - - - - - - - - - - - - - - - - - - - -
[ ID] Interval           Transfer     Bitrate
[  5]   0.00-1.00   sec   107 MBytes   900 Mbits/sec                  receiver
-----------------------------------------------------------
Server listening on 5201 (test #2)
-----------------------------------------------------------
Accepted connection from 10.0.0.3, port 41000
[  5] local 10.0.0.2 port 5201 connected to 10.0.0.3 port 41002
[ ID] Interval           Transfer     Bitrate
[  5]   0.00-1.00   sec   108 MBytes   910 Mbits/sec                  
- - - - - - - - - - - - - - - - - - - - - - - - -
[ ID] Interval           Transfer     Bitrate
[  5]   0.00-1.00   sec   108 MBytes   910 Mbits/sec                  receiver
"""  # noqa: W291


def test_a_server_log_of_two_tests_gives_the_last() -> None:
    result = parse_text(SERVER_TWO_TESTS)
    assert result.receiver_gbps == 0.91 and result.sender_gbps is None and len(result.intervals) == 1
    failed_third = SERVER_TWO_TESTS + (
        "-----------------------------------------------------------\n"
        "Server listening on 5201 (test #3)\n"
        "-----------------------------------------------------------\n"
        "iperf3: error - the client has unexpectedly closed the connection\n"
    )
    last = parse_text(failed_third)
    assert last.error == "the client has unexpectedly closed the connection" and last.receiver_gbps is None


def test_byte_rates_and_tbits() -> None:
    text = (
        "Connecting to host h, port 5201\n[ ID] Interval           Transfer     Bitrate         Retr\n"
        "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
        "[ ID] Interval           Transfer     Bitrate         Retr\n"
        "[  5]   0.00-10.00  sec  1.10 GBytes   113 MBytes/sec    0             sender\n"
        "[  5]   0.00-10.00  sec  1.10 TBytes  1.02 Tbits/sec                  receiver\n"
    )
    result = parse_text(text)
    assert result.sender_gbps == pytest.approx(113 * 2**20 * 8 / 1e9)
    assert result.receiver_gbps == pytest.approx(1020.0)


def test_text_error_is_kept_not_raised() -> None:
    failed = parse_text("Connecting to host 10.0.0.2, port 5201\niperf3: error - unable to connect to server: x\n")
    assert failed.error == "unable to connect to server: x" and failed.receiver_gbps is None
    interrupted = parse_text(BIDIR_CLIENT.replace("iperf Done.", "iperf3: interrupt - the client has terminated"))
    assert interrupted.error == "interrupt - the client has terminated" and interrupted.receiver_gbps == 9.41


# ----------------------------------------------------------------------------------------------- JSON layouts

UDP_JSON = {
    "start": {"version": "iperf 3.16", "connecting_to": {"host": "h", "port": 5201}, "test_start": {"protocol": "UDP"}},
    "intervals": [
        {"streams": [], "sum": {"start": 0, "end": 1.0, "bytes": 131072, "bits_per_second": 1048576.0, "packets": 90}}
    ],
    "end": {
        "sum": {"bits_per_second": 1.0e6, "jitter_ms": 0.05, "lost_packets": 3, "packets": 900},
        "sum_sent": {"bits_per_second": 1.05e6, "jitter_ms": 0, "lost_packets": 0, "packets": 900},
        "sum_received": {"bits_per_second": 1.0e6, "jitter_ms": 0.021, "lost_packets": 3, "packets": 900},
        "cpu_utilization_percent": {"host_total": 1.5, "remote_total": 0.5},
    },
}


def test_udp_json_reads_loss_from_the_receiver() -> None:
    result = parse_json(json.dumps(UDP_JSON, indent="\t"))
    assert (result.protocol, result.sender_gbps, result.receiver_gbps) == ("UDP", 0.00105, 0.001)
    assert (result.jitter_ms, result.lost_datagrams, result.total_datagrams) == (0.021, 3, 900)
    assert result.retransmits is None and result.intervals[0].bytes == 131072


def test_old_udp_json_has_only_the_ambiguous_sum() -> None:
    old = json.loads(json.dumps(UDP_JSON))
    del old["end"]["sum_sent"], old["end"]["sum_received"]
    result = parse_json(json.dumps(old))
    assert (result.sender_gbps, result.receiver_gbps) == (0.001, None)  # a client's sum: its own sent bytes
    assert (result.jitter_ms, result.lost_datagrams, result.total_datagrams) == (0.05, 3, 900)


def test_json_stream_events_are_folded_into_one_result() -> None:
    doc = json.loads(_read("iperf3_json_tcp_1stream_v3.9_gcp_to_ibm_omit3.txt"))
    events = [{"event": "start", "data": doc["start"]}]
    events += [{"event": "interval", "data": item} for item in doc["intervals"]]
    events.append({"event": "end", "data": doc["end"]})
    stream = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events)
    assert parse_json(stream) == parse_json(_read("iperf3_json_tcp_1stream_v3.9_gcp_to_ibm_omit3.txt"))
    assert looks_like(stream) == "json"
    with pytest.raises(ValueError, match="no end event"):
        parse_json("".join(json.dumps(e) + "\n" for e in events[:-1]))
    failed = parse_json(json.dumps(events[0]) + "\n" + json.dumps({"event": "error", "data": "server busy"}) + "\n")
    assert failed.error == "server busy"


def test_bidir_json_and_text_around_the_object() -> None:
    doc = {
        "start": {"test_start": {"protocol": "TCP", "num_streams": 2, "bidir": 1}},
        "end": {
            "sum_sent": {"bits_per_second": 9.5e9, "retransmits": 7},
            "sum_received": {"bits_per_second": 9.4e9},
            "sum_sent_bidir_reverse": {"bits_per_second": 9.3e9, "retransmits": 1},
            "sum_received_bidir_reverse": {"bits_per_second": 9.2e9},
        },
    }
    text = "user@host:~$ iperf3 -c h --bidir -J\n" + json.dumps(doc, indent=2) + "\nuser@host:~$ \n"
    result = parse_json(text)
    assert (result.sender_gbps, result.receiver_gbps) == (9.5, 9.4)
    assert (result.reverse_sender_gbps, result.reverse_receiver_gbps) == (9.3, 9.2)
    assert (result.retransmits, result.streams, result.protocol) == (7, 2, "TCP")


def test_a_failed_json_run_keeps_its_error() -> None:
    result = parse_json('{"start": {"version": "iperf 3.9"}, "intervals": [], "end": {}, "error": "server busy"}')
    assert result == Iperf3Result(None, None, None, None, None, None, None, None, None, (), "iperf 3.9", "server busy")


# ----------------------------------------------------------------------------------------------- bad input

WHOLE = _read("iperf3_json_tcp_1stream_v3.9_gcp_to_ibm_omit3.txt")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no JSON object"),
        ("garbage\n", "no JSON object"),
        (WHOLE[: len(WHOLE) // 2], "cut off"),
        (WHOLE[:1000], "cut off"),
        (WHOLE[: WHOLE.index("bits_per_second") + 5], "cut off"),
        ('{\n\t"start": {,}\n}\n', "not iperf3 JSON"),
        ('{"hello": 1}', "no start, end or error"),
        ("[1, 2]\n{}", "no start, end or error"),
        ('{"start": {}, "intervals": [{"sum": {"start": 0}}], "end": {}}', "interval 0: sum lacks"),
        ("[" * 100000, "no JSON object"),
        ('{"a":' + "[" * 100000, "nested too deeply"),
    ],
)
def test_bad_json_raises_value_error_saying_what(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_json(text)


CLIENT = _read("iperf3_tcp_P3_client_loopback_sum.txt")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not iperf3 output"),
        ("garbage\nnothing here 1.00-2.00 sec\n", "not iperf3 output"),
        ("Connecting to host 127.0.0.1, port 5201\n[ ID] Interval           Transfer     Bitrate\n", "not iperf3"),
        (CLIENT[: CLIENT.rindex("[ ID]")], "no sender/receiver summary"),
        (CLIENT[: CLIENT.index("[SUM]   0.00-10.00  sec  26.0 GBytes")], "no \\[SUM\\] line"),
        (CLIENT[: CLIENT.index("[SUM]   0.00-10.04")], "no receiver summary"),
        (CLIENT[: CLIENT.index("receiver\n\niperf Done") + 6], "unreadable columns .* 'receiv'"),
        (CLIENT[: CLIENT.index("sender\n[SUM]")].rstrip(), "summary line without sender/receiver"),
        (CLIENT.replace("    0    959 KBytes", "    0    959 KByt", 1), "unreadable columns"),
    ],
)
def test_bad_text_raises_value_error_saying_what(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_text(text)


def test_other_tools_output_is_refused() -> None:
    nccl = (FIXTURES / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt").read_text()
    spark = (FIXTURES / "perftest" / "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt").read_text()
    for text in (nccl, spark):
        with pytest.raises(ValueError, match="not iperf3"):
            parse_text(text)
        with pytest.raises(ValueError, match="not iperf3 JSON"):
            parse_json(text)


# ----------------------------------------------------------------------------------------------- recognition


def test_looks_like_tells_json_text_and_other_tools_apart() -> None:
    assert [looks_like(p.read_text()) for p in JSON_CASES] == ["json", "json"]
    assert [looks_like(p.read_text()) for p in TEXT_CASES] == ["text", "text", "text"]
    assert looks_like(BIDIR_CLIENT) == looks_like(OLD_UDP_CLIENT) == looks_like(SERVER_TWO_TESTS) == "text"
    assert looks_like("iperf3: error - unable to connect to server: Connection refused\n") == "text"
    assert looks_like(json.dumps(UDP_JSON)) == "json"
    others = [
        FIXTURES / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt",
        *sorted((FIXTURES / "perftest").glob("*.txt")),
    ]
    assert len(others) == 3
    for path in others:
        assert looks_like(path.read_text()) is None, path.name
    assert looks_like("") is None and looks_like('{"hello": 1}') is None
    # iperf2's interval lines have one decimal, not two
    assert looks_like("[  3]  0.0-10.0 sec  1.10 GBytes   943 Mbits/sec\n") is None
    # and perftest's recogniser does not claim iperf3 output
    assert not any(perftest.looks_like(p.read_text()) for p in CASES)
