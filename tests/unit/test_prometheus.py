"""The samples as Prometheus metrics (wirespeed.core.metrics, wirespeed.adapters.prometheus): names, labels and
types from constructed samples, served over HTTP and read back by a real client, the textfile format, a bench run's
figures, and `--serve` arguments that cannot be used, each refused in one line (exit 2)."""

from __future__ import annotations

import io
import socket
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from wirespeed.adapters import prometheus
from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.errors import UsageError
from wirespeed.core.fabric.counters import IfaceReading
from wirespeed.core.fabric.meter import Cable, Meter, NodeLayout, NodeSample
from wirespeed.core.metrics import Family, WatchMetrics, bench_families, parse_listen
from wirespeed.core.records.results import (
    Ceiling,
    CollectiveSummary,
    Direction,
    Flow,
    FlowResult,
    RungResult,
    RungStatus,
    SizeFigures,
    WireFigures,
)

A, B = "enp1s0f1np1", "enP2p1s0f1np1"
NODE = "spark-a"
GB = 1_000_000_000
LAYOUT = NodeLayout(NODE, (Cable("port 1", (A, B), 200.0),))


def reading(tx: int, rx: int, crc: int = 0, pause: int = 0) -> IfaceReading:
    stats = {"tx_bytes_phy": tx, "rx_bytes_phy": rx, "tx_packets_phy": 1, "rx_packets_phy": 1,
             "rx_crc_errors_phy": crc, "rx_pause_ctrl_phy": pause}  # fmt: skip
    return IfaceReading(stats=stats, pci="0000:01:00.1", speed_mbps=200000)


def sample(t: float, a: IfaceReading, b: IfaceReading | None = None, step: int = 0) -> NodeSample:
    """CPU: between step 0 and 1, core 0 was 50% busy and core 1 10%."""
    ifaces = {A: a} | ({B: b} if b is not None else {})
    cores = [(50 * step, 0, 0, 50 * step, 0, 0, 0, 0), (10 * step, 0, 0, 90 * step, 0, 0, 0, 0)]
    return NodeSample(NODE, t, ifaces, cores, wall=1.7e9 + t)


def fed(metrics: WatchMetrics | prometheus.WatchCollector) -> None:
    """Two samples 0.5 s apart: A sent 1 GB (16 Gb/s), B was idle but for a netdev-only reading; CPU moved."""
    meter = Meter([LAYOUT])
    netdev_b = IfaceReading(netdev={"tx_bytes": 5, "rx_bytes": 7, "tx_packets": 0, "rx_packets": 0})
    for s in (sample(10.0, reading(10 * GB, 2 * GB), netdev_b, step=0),
              sample(10.5, reading(11 * GB, 2 * GB, crc=3, pause=9), netdev_b, step=1)):  # fmt: skip
        metrics.add(s, meter.add(s))


def by_name(families: list[Family]) -> dict[str, Family]:
    return {f.name: f for f in families}


def test_families_are_counters_of_bytes_and_gauges_with_the_unit_in_the_name() -> None:
    metrics = WatchMetrics([LAYOUT])
    fed(metrics)
    found = by_name(metrics.families())
    tx = found["wirespeed_phy_transmit_bytes_total"]
    assert tx.kind == "counter" and tx.labels == ("node", "interface", "port", "half")
    assert dict(tx.samples) == {(NODE, A, "port 1", "0"): 11 * GB, (NODE, B, "port 1", "1"): 5}  # raw counters
    assert dict(found["wirespeed_phy_receive_bytes_total"].samples)[(NODE, A, "port 1", "0")] == 2 * GB
    assert dict(found["wirespeed_counter_source_info"].samples) == {(NODE, A, "phy"): 1, (NODE, B, "netdev"): 1}
    cable = found["wirespeed_cable_transmit_bytes_total"]
    assert cable.kind == "counter" and dict(cable.samples)[(NODE, "port 1")] == pytest.approx(1 * GB)
    assert dict(found["wirespeed_cable_line_rate_bits_per_second"].samples) == {(NODE, "port 1"): 200e9}
    peaks = dict(found["wirespeed_cable_peak_bits_per_second"].samples)
    assert peaks[(NODE, "port 1", "transmit")] == pytest.approx(16e9)
    errors = dict(found["wirespeed_nic_errors_total"].samples)
    assert errors[(NODE, A, "rx_crc_errors_phy", "false")] == 3
    assert errors[(NODE, A, "rx_pause_ctrl_phy", "true")] == 9  # congestion, told apart by a label
    cpu = dict(found["wirespeed_cpu_busy_ratio"].samples)
    assert cpu == {(NODE, "busiest"): pytest.approx(0.5), (NODE, "all"): pytest.approx(0.3)}
    assert dict(found["wirespeed_samples_total"].samples) == {(NODE,): 2}
    assert dict(found["wirespeed_sample_timestamp_seconds"].samples) == {(NODE,): 1.7e9 + 10.5}
    for family in found.values():
        assert family.name.startswith("wirespeed_")
        assert family.name.endswith("_total") == (family.kind == "counter")
        assert not family.name.endswith(("_gbps", "_GBps"))  # base units only


def test_every_family_is_served_before_any_sample_without_series() -> None:
    families = WatchMetrics([LAYOUT]).families()
    assert "wirespeed_phy_transmit_bytes_total" in by_name(families)
    assert [f.name for f in families if f.samples and f.name != "wirespeed_cable_line_rate_bits_per_second"] == []


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(url, timeout=10) as response:  # loopback, a URL we made
        assert response.status == 200
        text = response.read().decode()
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found.setdefault(s.name, []).append((s.labels, s.value))
    return found


def test_the_server_on_port_zero_serves_the_collector_to_a_real_client() -> None:
    collector = prometheus.WatchCollector([LAYOUT])
    server = prometheus.serve(collector, "127.0.0.1", 0)
    try:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}/metrics"
        assert scrape(server.url)["wirespeed_cable_line_rate_bits_per_second"] == [
            ({"node": NODE, "port": "port 1"}, 200e9)
        ]
        fed(collector)
        found = scrape(server.url)
        tx = {s[0]["interface"]: s[1] for s in found["wirespeed_phy_transmit_bytes_total"]}
        assert tx[A] == 11 * GB
        assert not [name for name in found if name.startswith(("process_", "python_"))]  # a registry of its own
    finally:
        server.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()  # closed: the port is free


def test_a_port_in_use_is_one_usage_line() -> None:
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(UsageError, match=f"127.0.0.1:{port}: address already in use") as raised:
            prometheus.serve(prometheus.WatchCollector(), "127.0.0.1", port)
        assert raised.value.hint and "another port" in raised.value.hint
    finally:
        holder.close()


def test_the_textfile_is_the_text_format_renamed_into_place(tmp_path: Path) -> None:
    collector = prometheus.WatchCollector([LAYOUT])
    writer = prometheus.TextfileWriter(collector, tmp_path / "textfile", interval_s=0.5)
    fed(writer)  # the first sample has no view: nothing written; the second is
    path = tmp_path / "textfile" / "wirespeed.prom"
    assert writer.written == 1 and [p.name for p in path.parent.iterdir()] == ["wirespeed.prom"]  # no temporary
    text = path.read_text()
    assert "# TYPE wirespeed_phy_transmit_bytes_total counter" in text
    assert f'wirespeed_phy_transmit_bytes_total{{half="0",interface="{A}",node="{NODE}",port="port 1"}}' in text
    names = {f.name for f in text_string_to_metric_families(text)}
    assert {"wirespeed_phy_transmit_bytes", "wirespeed_cpu_busy_ratio", "wirespeed_counter_source_info"} <= names


def test_the_textfile_is_written_at_most_once_an_interval(tmp_path: Path) -> None:
    writer = prometheus.TextfileWriter(prometheus.WatchCollector([LAYOUT]), tmp_path, interval_s=60)
    fed(writer)
    fed(writer)
    assert writer.written == 1


def test_bench_families_keep_gbps_and_gbytes_apart(tmp_path: Path) -> None:
    flow = Flow(("a", A), ("b", A), "10.0.0.1", "10.0.0.2", 200.0)
    tcp = RungResult(
        "tcp-halves", RungStatus.RAN,
        flows=(FlowResult(flow, Direction.FORWARD, 190.0), FlowResult(flow.reversed(), Direction.REVERSE, 180.0)),
        wire=WireFigures(peak_tx_gbps={"a": 195.0}, peak_rx_gbps={"a": 185.0}, peak_duplex_gbps={"a": 380.0}),
        ceiling=Ceiling("wire", ("190 Gb/s of 200",)),
    )  # fmt: skip
    nccl = RungResult(
        "nccl-all_reduce", RungStatus.RAN, phase="after",
        collective=CollectiveSummary("all_reduce", 2, (SizeFigures(1 << 30, 20.0, 23.5, 1000.0),), 22.0, "NET/IB",
                                     True),
    )  # fmt: skip
    skipped = RungResult("rdma-bw", RungStatus.SKIPPED, "no RDMA devices", "load mlx5_ib")
    found = by_name(bench_families([tcp, nccl, skipped], run="20261126T170000Z", nodes=["a", "b"], finished_s=5.0))
    assert dict(found["wirespeed_bench_throughput_bits_per_second"].samples) == {
        ("tcp-halves", "", "forward"): 190e9, ("tcp-halves", "", "reverse"): 180e9, ("tcp-halves", "", "duplex"): 370e9,
    }  # fmt: skip
    assert dict(found["wirespeed_bench_nccl_busbw_bytes_per_second"].samples) == {
        ("nccl-all_reduce", "after", "all_reduce"): 23.5e9
    }  # GB/s as bytes, never mixed with the bits above
    assert dict(found["wirespeed_bench_ceiling_info"].samples) == {("tcp-halves", "", "wire"): 1.0}
    assert dict(found["wirespeed_bench_wire_peak_bits_per_second"].samples)[("tcp-halves", "", "duplex")] == 380e9
    assert ("rdma-bw", "", "skipped") in dict(found["wirespeed_bench_rung_info"].samples)
    assert dict(found["wirespeed_bench_timestamp_seconds"].samples) == {(): 5.0}
    path = prometheus.write_families(tmp_path, prometheus.BENCH_TEXTFILE_NAME, list(found.values()))
    parsed = {f.name: f for f in text_string_to_metric_families(path.read_text())}
    assert parsed["wirespeed_bench_ceiling_info"].samples[0].labels == {"rung": "tcp-halves", "phase": "",
                                                                         "ceiling": "wire"}  # fmt: skip


def test_bench_families_carry_each_matrix_cell_with_what_it_should_have_carried(tmp_path: Path) -> None:
    from wirespeed.core.records.matrix import MatrixCell, MatrixResult

    cells = (
        MatrixCell("a", "b", 1, 1.9, 2.0),
        MatrixCell("b", "a", 1, None, 2.0, error="b -> a: refused"),
        MatrixCell("a", "c", 2, 0.9, 1.0, hops=2, relays=("b",)),
    )
    matrix = MatrixResult("tcp", RungStatus.FAILED, ("a", "b", "c"), ((("a", "b"),), (("a", "c"),)), cells)
    found = by_name(bench_families([], run="r", nodes=["a", "b", "c"], finished_s=1.0, matrices=[matrix]))
    assert dict(found["wirespeed_bench_matrix_throughput_bits_per_second"].samples) == {
        ("tcp", "a", "b"): 1.9e9, ("tcp", "a", "c"): 0.9e9,
    }  # fmt: skip  # the failed cell has no figure, never a zero
    assert dict(found["wirespeed_bench_matrix_expected_bits_per_second"].samples) == {
        ("tcp", "a", "b"): 2.0e9, ("tcp", "b", "a"): 2.0e9, ("tcp", "a", "c"): 1.0e9,
    }  # fmt: skip
    assert dict(found["wirespeed_bench_matrix_hops"].samples)[("tcp", "a", "c")] == 2.0
    path = prometheus.write_families(tmp_path, prometheus.BENCH_TEXTFILE_NAME, list(found.values()))
    parsed = {f.name: f for f in text_string_to_metric_families(path.read_text())}
    [sample, _] = parsed["wirespeed_bench_matrix_throughput_bits_per_second"].samples
    assert sample.labels == {"layer": "tcp", "source": "a", "target": "b"} and sample.value == 1.9e9


@pytest.mark.parametrize(
    ("text", "expected"),
    [("127.0.0.1:9810", ("127.0.0.1", 9810)), ("[::1]:0", ("::1", 0)), ("0.0.0.0:9100", ("0.0.0.0", 9100))],
)
def test_listen_addresses_that_are_taken(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("localhost:9810", "'localhost' is not an IP address"),
        ("9810", "not ADDR:PORT"),
        ("127.0.0.1:", "not ADDR:PORT"),
        ("127.0.0.1:70000", "'70000' is not a port"),
        ("127.0.0.1:http", "'http' is not a port"),
        ("::1:9810", "an IPv6 address goes in brackets"),
    ],
)
def test_a_bad_serve_argument_is_one_line_and_exit_2(value: str, said: str) -> None:
    code, out, err = cli("watch", "--hosts", "localhost", "--once", "--serve", value)
    assert code == 2
    assert err.count("\n") == 1 and said in err and "hint: ADDR:PORT" in err, err
    assert "Traceback" not in err and out == ""


def test_serve_needs_its_address() -> None:
    code, _, err = cli("watch", "--hosts", "localhost", "--serve")
    assert code == 2 and "--serve" in err and "Traceback" not in err


def test_bench_textfile_writes_the_runs_rungs_and_says_where(tmp_path: Path) -> None:
    from wirespeed.cli.bench import write_bench_textfile
    from wirespeed.cli.output import Output
    from wirespeed.core.records.run import Run

    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    rung = RungResult("tcp-single", RungStatus.RAN, ceiling=Ceiling("single-flow", ("one core at 100%",)))
    run = Run("20261126T170000Z", None, rungs=(rung,), nodes=("spark-1", "spark-2"))
    write_bench_textfile(Output(env, False), run, tmp_path / "textfile")
    path = tmp_path / "textfile" / "wirespeed_bench.prom"
    assert f"Prometheus textfile {path}" in env.stderr.getvalue()  # type: ignore[attr-defined]
    samples = {s.name: s for f in text_string_to_metric_families(path.read_text()) for s in f.samples}
    assert samples["wirespeed_bench_ceiling_info"].labels == {
        "rung": "tcp-single",
        "phase": "",
        "ceiling": "single-flow",
    }
    assert samples["wirespeed_bench_run_info"].labels == {"run": "20261126T170000Z", "nodes": "spark-1,spark-2"}
    assert samples["wirespeed_bench_timestamp_seconds"].value > 1.7e9


@pytest.mark.parametrize("address", ["in use", "192.0.2.1"])
def test_a_serve_address_that_cannot_be_bound_is_one_line_before_any_node_is_read(address: str) -> None:
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        where = f"127.0.0.1:{holder.getsockname()[1]}" if address == "in use" else "192.0.2.1:9810"  # TEST-NET-1
        code, out, err = cli("watch", "--hosts", "localhost", "--once", "--serve", where)
    finally:
        holder.close()
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and f"--serve {where}: " in err and "(hint: " in err, err
    assert ("address already in use" if address == "in use" else "not an address of this machine") in err
