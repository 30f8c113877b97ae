"""The node side of the sampler without root: `NodeSampler.line()` (the JSON line `agent sample` streams, laid
out once per string set) against `sample()` and `sample_to_json`, on a fake driver and a fake /proc/net/dev; and
`stream_samples`' flushing and stopping."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from wirespeed.adapters import nicsampler
from wirespeed.core.fabric.meter import sample_from_json, sample_to_json
from wirespeed.engine import sampling

NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier
    lo:  123456     100    0    0    0     0          0         0   123456     100    0    0    0     0       0  0
  eth9: 9000000000 7000000 1 2 3 4 0 5 8000000000 6000000 6 7 8 9 10 0
"""
# A driver's set with the wire, the per-function split, errors, names that need escaping, and noise.
NAMES = (
    "rx_packets",
    "tx_bytes_phy",
    "rx_bytes_phy",
    "tx_packets_phy",
    "rx_packets_phy",
    "rx_discards_phy",
    "tx_vport_unicast_bytes",
    "rx_vport_unicast_bytes",
    "tx_vport_rdma_unicast_bytes",
    "rx_vport_rdma_unicast_bytes",
    "rx_prio3_discards",
    "ch0_arm",
)


class FakeReader:
    """The ioctl reader's surface: a fixed string set (per interface), values that grow on every read."""

    sets: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init__(self, iface: str) -> None:
        self.iface = iface
        self.names = self.sets.get(iface, ())
        self.reads = 0

    def values(self) -> tuple[int, ...]:
        self.reads += 1
        return tuple(1000 * (i + 1) + self.reads for i in range(len(self.names)))

    values_view = values

    def close(self) -> None:
        pass


@pytest.fixture
def fake_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    net = tmp_path / "net"
    for name in ("mlx0", "eth9"):
        (net / name).mkdir(parents=True)
        (net / name / "speed").write_text("200000\n" if name == "mlx0" else "-1\n")
    proc = tmp_path / "net_dev"
    proc.write_text(NET_DEV)
    monkeypatch.setattr(nicsampler, "NET", net)
    monkeypatch.setattr(nicsampler, "StatsReader", FakeReader)
    monkeypatch.setattr(FakeReader, "sets", {"mlx0": NAMES, "eth9": ("rx_queue_0_xdp_drops",)})
    real = nicsampler.ProcFile

    def proc_file(path: str) -> nicsampler.ProcFile:
        return real(str(proc) if path == "/proc/net/dev" else path)

    monkeypatch.setattr(nicsampler, "ProcFile", proc_file)
    yield net


def _without_clocks(data: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in data.items() if k not in ("t", "wall", "cpu")}


def test_the_line_is_the_sample_as_json(fake_node: Path) -> None:
    sampler = nicsampler.NodeSampler("spark-1", ["mlx0", "eth9", "gone0"])
    try:
        line = sampler.line()
        sample = sampler.sample()
    finally:
        sampler.close()
    data = json.loads(line)
    assert set(data) == {"node", "t", "wall", "ifaces", "cpu", "missing", "renamed"}
    # The driver's values grew by one between the two reads; everything else is the same.
    for reading in data["ifaces"].values():
        reading["stats"] = {k: v + 1 for k, v in reading["stats"].items()}
    assert _without_clocks(data) == _without_clocks(sample_to_json(sample))
    mlx0 = data["ifaces"]["mlx0"]
    assert set(mlx0["stats"]) == set(NAMES) - {"rx_packets", "ch0_arm"}
    assert mlx0["netdev"] == {}  # PHY counters: /proc/net/dev is not needed
    assert mlx0["speed_mbps"] == 200000
    eth9 = data["ifaces"]["eth9"]
    assert eth9["stats"] == {} and eth9["speed_mbps"] is None
    assert eth9["netdev"] == {
        "rx_bytes": 9000000000, "rx_packets": 7000000, "rx_errors": 1, "rx_dropped": 2, "rx_fifo_errors": 3,
        "rx_frame_errors": 4, "tx_bytes": 8000000000, "tx_packets": 6000000, "tx_errors": 6, "tx_dropped": 7,
        "tx_fifo_errors": 8, "tx_carrier_errors": 10,
    }  # fmt: skip
    assert data["missing"] == ["gone0"]
    parsed = sample_from_json(json.loads(line), line)  # the controller reads it as any other line
    assert parsed.ifaces["eth9"].wire() == (
        "netdev", {"tx_bytes": 8000000000, "rx_bytes": 9000000000, "tx_packets": 6000000, "rx_packets": 7000000}
    )  # fmt: skip
    assert parsed.ifaces["mlx0"].wire()[0] == "phy"


def test_names_that_need_escaping_and_a_single_counter(fake_node: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    odd = ('tx_"quoted"_errors_phy', "tx_bytes_phy", "rx_bytes_phy", "tx_packets_phy", "rx_packets_phy")
    monkeypatch.setattr(FakeReader, "sets", {"mlx0": odd, "eth9": ("rx_errors_%d",)})
    monkeypatch.setattr(nicsampler, "select_counters", lambda names: list(names))
    sampler = nicsampler.NodeSampler('n"1', ["mlx0", "eth9"])
    try:
        data = json.loads(sampler.line())
    finally:
        sampler.close()
    assert data["node"] == 'n"1'
    assert data["ifaces"]["mlx0"]["stats"] == {name: 1000 * (i + 1) + 1 for i, name in enumerate(odd)}
    assert data["ifaces"]["eth9"]["stats"] == {"rx_errors_%d": 1001}


def test_a_string_set_that_changes_is_laid_out_again(fake_node: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sampler = nicsampler.NodeSampler("n1", ["mlx0"])
    try:
        assert "rx_prio3_discards" in json.loads(sampler.line())["ifaces"]["mlx0"]["stats"]
        reader = sampler._ifaces[0].reader
        assert isinstance(reader, FakeReader)
        reader.names = (*NAMES[:5], "rx_prio7_discards")  # PFC turned on: another set, another tuple
        stats = json.loads(sampler.line())["ifaces"]["mlx0"]["stats"]
    finally:
        sampler.close()
    assert set(stats) == {*NAMES[1:5], "rx_prio7_discards"}
    assert stats["rx_prio7_discards"] == 6000 + reader.reads


def test_proc_net_dev_fields_are_the_kernel_digits() -> None:
    fields = nicsampler.proc_net_dev_fields(NET_DEV, {"eth9"})
    assert fields == {"eth9": ("9000000000", "7000000", "1", "2", "3", "4", "8000000000", "6000000", "6", "7", "8",
                               "10")}  # fmt: skip
    lo = ("123456", "100", "0", "0", "0", "0")
    assert nicsampler.proc_net_dev_fields(NET_DEV.replace("7000000", "7e6")) == {
        "lo": lo + lo
    }  # not a number: left out
    assert parse_proc_net_dev(NET_DEV)["eth9"]["tx_carrier_errors"] == 10


class Clock:
    """The sampler's clocks, moved by hand: lines made at the same times from the same counters are the same."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now + 1.7e9


@pytest.fixture
def steady_node(fake_node: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Clock]:
    """The fake node with fixed clocks, a fixed /proc/stat and RDMA port counters on mlx0."""
    clock = Clock()
    monkeypatch.setattr(nicsampler, "time", clock)
    stat = tmp_path / "stat"
    stat.write_text(
        "cpu  11 22 33 44 55 66 77 88 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 10 20 30 40 50 60 70 80 0 0\n"
        "intr 12345 0 0 7\nctxt 99\nsoftirq 1 2 3\n"
    )  # as the kernel lays it out: 10 fields, then intr
    net_dev = tmp_path / "net_dev"
    real = nicsampler.ProcFile
    files = {"/proc/net/dev": net_dev, "/proc/stat": stat}
    monkeypatch.setattr(nicsampler, "ProcFile", lambda path: real(str(files.get(path, path))))
    port = fake_node / "mlx0" / "device" / "infiniband" / "mlx5_0" / "ports" / "1"
    (port / "counters").mkdir(parents=True)
    (port / "counters" / "port_xmit_data").write_text("4000\n")
    (port / "counters" / "port_rcv_data").write_text("5000\n")
    (port / "counters" / "symbol_error").write_text("3\n")
    yield clock


def _full(sampler: nicsampler.NodeSampler) -> str:
    sampler._steady = None
    return sampler.line()


@pytest.mark.parametrize(
    "sets",
    [
        {"mlx0": NAMES, "eth9": ("rx_queue_0_xdp_drops",)},  # PHY counters on one, the kernel's on the other
        {"mlx0": ('tx_"{x}"_%d_errors_phy', "tx_bytes_phy", "rx_bytes_phy"), "eth9": ("rx_errors_{0}", "tx_errors")},
    ],
)
def test_a_steady_line_is_the_full_reading_s_line(
    steady_node: Clock, monkeypatch: pytest.MonkeyPatch, sets: dict[str, tuple[str, ...]]
) -> None:
    """Two samplers read the same counters at the same times; one makes every line from a full reading."""
    monkeypatch.setattr(FakeReader, "sets", sets)
    monkeypatch.setattr(nicsampler, "select_counters", lambda names: [n for n in names if n != "rx_queue_0_xdp_drops"])
    steady, full = (
        nicsampler.NodeSampler("spark-1", ["mlx0", "eth9"]),
        nicsampler.NodeSampler("spark-1", ["mlx0", "eth9"]),
    )
    try:
        lines: list[tuple[str, str]] = []
        for step in (0.0, 0.01, 0.05, 0.2, 0.35):
            steady_node.now += step
            lines.append((steady.line(), _full(full)))
        assert steady._steady is not None  # the lines after the first came from the layout
    finally:
        steady.close()
        full.close()
    for mine, theirs in lines:
        assert mine == theirs
    data = json.loads(lines[-1][0])
    assert data["ifaces"]["mlx0"]["rdma"] == {"port_xmit_data": 4000, "port_rcv_data": 5000, "symbol_error": 3}
    assert data["ifaces"]["eth9"]["netdev"]["tx_carrier_errors"] == 10
    assert data["cpu"] == [[1, 2, 3, 4, 5, 6, 7, 8], [10, 20, 30, 40, 50, 60, 70, 80]]  # read at 0.1 s or more
    assert [json.loads(a)["cpu"] == [] for a, _ in lines] == [False, True, True, False, False]


def test_the_steady_layout_gives_way_to_a_full_reading(steady_node: Clock, tmp_path: Path) -> None:
    """Once a second, and whenever an interface's place in /proc/net/dev or its digits change."""
    sampler = nicsampler.NodeSampler("n1", ["eth9"])
    net_dev = tmp_path / "net_dev"
    try:
        sampler.line()
        first = sampler._steady
        assert first is not None
        steady_node.now += 0.5
        sampler.line()
        assert sampler._steady is first  # steady
        steady_node.now += nicsampler.RESCAN_S
        sampler.line()
        assert sampler._steady is not first  # a full reading, and a new layout
        second = sampler._steady
        net_dev.write_text(NET_DEV.replace("  eth9:", "  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n  eth9:"))
        steady_node.now += 0.01
        assert json.loads(sampler.line())["ifaces"]["eth9"]["netdev"]["rx_bytes"] == 9000000000  # moved down
        assert sampler._steady is not second
        sampler.line()
        assert sampler._steady is not None
        net_dev.write_text(NET_DEV.replace("9000000000", "-1"))
        steady_node.now += 0.01
        data = json.loads(sampler.line())  # not a number: a full reading, which leaves it out
        assert data["missing"] == ["eth9"] and sampler._steady is None
        net_dev.write_text(NET_DEV)
        steady_node.now += 0.01
        sampler.line()
        assert sampler._steady is not None
        net_dev.write_text(NET_DEV.rsplit(" 6 7 8 9 10 0", 1)[0] + "\n")  # its line cut short
        steady_node.now += 0.01
        assert json.loads(sampler.line())["missing"] == ["eth9"]
    finally:
        sampler.close()


class FakeStdout(io.TextIOBase):
    def __init__(self) -> None:
        self.buffer = io.BytesIO()
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1


def test_lines_go_out_together_at_short_intervals(fake_node: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = FakeStdout()
    monkeypatch.setattr("sys.stdout", out)
    sampling.stream_samples("n1", ["eth9"], 0.01, count=12)
    lines = out.buffer.getvalue().decode().splitlines()
    assert len(lines) == 12 and all(json.loads(x)["node"] == "n1" for x in lines)
    assert out.flushes <= 12 // 5 + 2  # one write per FLUSH_S (5 lines at 0.01 s), the last at the end


class RecordingPipe(io.RawIOBase):
    """A pipe's end as the kernel sees it: every write() the buffered layer makes, whole."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.writes.append(bytes(data))
        return len(data)


class FakeClock:
    """time.monotonic and time.sleep for the stream's schedule: sleeping moves the clock, nothing waits."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_lines_held_together_leave_in_one_write(fake_node: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines that overflow stdout's own buffer (a pipe's is 4 KB; 1 KB here for the test's short lines) still go
    out as one write per FLUSH_S: every write costs sshd, ssh and the controller a wake-up."""
    pipe = RecordingPipe()
    stdout = io.TextIOWrapper(io.BufferedWriter(pipe, buffer_size=1024), encoding="utf-8")
    monkeypatch.setattr("sys.stdout", stdout)
    monkeypatch.setattr(sampling, "time", FakeClock())
    sampling.stream_samples("n1", ["eth9"], 0.01, count=12)
    per_write = [w.count(b"\n") for w in pipe.writes]
    assert len(pipe.writes[0]) > 1024  # more than the buffer holds
    assert per_write == [5, 5, 2] and all(w.endswith(b"\n") for w in pipe.writes)
    assert all(json.loads(line)["node"] == "n1" for line in b"".join(pipe.writes).decode().splitlines())


def test_each_line_goes_out_at_once_at_longer_intervals(fake_node: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = FakeStdout()
    monkeypatch.setattr("sys.stdout", out)
    flushed_lines: list[int] = []
    monkeypatch.setattr(out, "flush", lambda: flushed_lines.append(out.buffer.getvalue().count(b"\n")))
    sampling.stream_samples("n1", ["eth9"], sampling.FLUSH_S, count=3)
    assert flushed_lines[:3] == [1, 2, 3]


def test_sigterm_stops_the_stream_after_writing_what_it_holds(fake_node: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = FakeStdout()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr(sampling, "_stdin_is_a_pipe", lambda: False)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        timer.start()
        sampling.stream_samples("n1", ["eth9"], 0.01)  # until stopped
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # put back
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, previous)
    lines = out.buffer.getvalue().decode().splitlines()
    assert len(lines) >= 5 and out.buffer.getvalue().endswith(b"\n")
    assert out.flushes >= 1


def _piped_process(chunks: list[bytes]) -> object:
    """A RemoteProcess whose stdout is a real pipe that gets `chunks`, one write each, then closes."""
    from types import SimpleNamespace

    from wirespeed.core.cluster.inventory import Node
    from wirespeed.engine.remote import RemoteProcess

    read_fd, write_fd = os.pipe()
    for chunk in chunks:
        os.write(write_fd, chunk)
    os.close(write_fd)
    popen = SimpleNamespace(stdout=os.fdopen(read_fd, "r"))
    return RemoteProcess(Node(name="n1", host="n1"), (), popen, True, "n1")  # type: ignore[arg-type]


def _line(t: float) -> bytes:
    data = {"node": "n1", "t": t, "wall": 1.0, "ifaces": {}, "cpu": [], "missing": [], "renamed": {}}
    return (json.dumps(data) + "\n").encode()


def test_lines_come_in_batches_of_what_has_arrived() -> None:
    process = _piped_process([_line(1) + _line(2) + _line(3)[:10], _line(3)[10:], b'{"node": "n1", "t"'])
    batches = list(sampling._line_batches(process, size=len(_line(1)) + 5))  # type: ignore[arg-type]
    assert [json.loads(line)["t"] for batch in batches[:-1] for line in batch] == [1, 2, 3]
    assert len(batches[0]) == 1 and batches[-1] == ['{"node": "n1", "t"']  # a line split over reads; the cut-off one
    whole = list(sampling._line_batches(_piped_process([_line(1) + _line(2) + _line(3)])))  # type: ignore[arg-type]
    assert [len(batch) for batch in whole] == [3]


def test_the_cluster_sampler_hands_over_batches_and_yields_samples_one_by_one() -> None:
    sampler = sampling.ClusterSampler.__new__(sampling.ClusterSampler)
    sampler._queue = __import__("queue").Queue()
    sampler.running = 1
    sampler._read(_piped_process([_line(1) + _line(2), b"junk\n"]))  # type: ignore[arg-type]
    assert sampler._queue.qsize() == 2  # one batch of two samples, then the ending
    items = list(sampler.samples(timeout_s=0.1))
    assert [getattr(i, "t", None) for i in items[:2]] == [1.0, 2.0]
    assert isinstance(items[2], sampling.Ended) and items[2].reason == "unexpected sampler output: 'junk'"
    assert items[0].line == _line(1).decode().rstrip("\n")  # type: ignore[union-attr]


def _records(layout: str) -> list[tuple[list[str], str | None]]:
    """The compiled reader's layout as it reads it: each header's words, and the text after it where it has one."""
    records, data = [], layout.encode()
    while data:
        head, _, data = data.partition(b"\n")
        words = head.decode().split()
        text = None
        if words[0] in ("NAME", "STATS", "RDMA", "WORD", "FILE", "PART"):
            size = int(words[-1])
            text, data = data[:size].decode(), data[size + 1 :]
        records.append((words, text))
    return records


def _fill(layout: str, clock: Clock, readers: list[Any], net_dev: str, cpu: str) -> str:
    """What steady_reader.c makes of `layout` from these sources (a reader's values as it last gave them)."""
    tokens = net_dev.split()
    rdma: list[tuple[str, list[tuple[str, list[str]]]]] = []
    line = []
    for words, text in _records(layout):
        assert text is not None
        if words[0] == "NAME":
            assert tokens[int(words[1])] == text
        elif words[0] == "RDMA":
            rdma.append((text, []))
        elif words[0] == "WORD":
            rdma[-1][1].append((text, []))
        elif words[0] == "FILE":
            rdma[-1][1][-1][1].append(text)
        elif words[0] == "PART":
            kind, a, b = map(int, words[1:4])
            line.append(text)
            if kind == 1:
                line.append(repr(clock.monotonic()))
            elif kind == 2:
                line.append(repr(clock.time()))
            elif kind == 3:
                line.append(str(readers[a].last[b]))
            elif kind == 4:
                line.append(tokens[a])
            elif kind == 5:
                errors, counted = rdma[a]
                pairs = [f'"{w}":{sum(int(Path(f).read_text()) for f in files)}' for w, files in counted]
                line.append("{" + ",".join(pairs + ([errors] if errors else [])) + "}")
            elif kind == 6:
                line.append(cpu)
    return "".join(line)


@pytest.mark.parametrize(
    "sets",
    [
        {"mlx0": NAMES, "eth9": ("rx_queue_0_xdp_drops",)},
        {"mlx0": ('tx_"{x}"_%d_errors_phy', "tx_bytes_phy", "rx_bytes_phy"), "eth9": ("rx_errors_{0}", "tx_errors")},
    ],
)
def test_the_compiled_reader_s_layout_makes_the_steady_line(
    steady_node: Clock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sets: dict[str, tuple[str, ...]]
) -> None:
    """Filled from the same counters at the same time, the compiled reader's layout gives the line Python's steady
    layout gives: every slot names the right source (the ioctl value by index, the netdev token by place, the RDMA
    files, the clocks), and literals with `%` and quotes come through."""
    monkeypatch.setattr(FakeReader, "sets", sets)
    monkeypatch.setattr(nicsampler, "select_counters", lambda names: [n for n in names if n != "rx_queue_0_xdp_drops"])
    real_values = FakeReader.values

    def remembered(self: FakeReader) -> tuple[int, ...]:
        self.last = real_values(self)  # type: ignore[attr-defined]
        return self.last  # type: ignore[attr-defined,no-any-return]

    monkeypatch.setattr(FakeReader, "values_view", remembered)
    sampler = nicsampler.NodeSampler('spark "1" 100%', ["mlx0", "eth9"])
    try:
        sampler.line()
        handoff = sampler.compiled_layout()
        assert handoff is not None and handoff[1] == steady_node.now + nicsampler.RESCAN_S
        layout = handoff[0]
        stat_readers = [i.reader for i in sampler._ifaces if i.selected]
        for step in (0.01, 0.2):
            steady_node.now += step
            line = sampler.line()
            cpu = json.dumps(json.loads(line)["cpu"], separators=(",", ":"))
            assert _fill(layout, steady_node, stat_readers, (tmp_path / "net_dev").read_text(), cpu) == line
    finally:
        sampler.close()
    assert [w[0] for w, _ in _records(layout)].count("STATS") == len(stat_readers) > 0  # by ioctl: those selected
    assert json.loads(line)["ifaces"]["mlx0"]["rdma"] == {"port_xmit_data": 4000, "port_rcv_data": 5000,
                                                          "symbol_error": 3}  # fmt: skip


def test_no_compiled_layout_where_the_reader_would_differ(steady_node: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """An RDMA error counter named as a data counter: Python's dict keeps its first place, the reader would not."""
    sampler = nicsampler.NodeSampler("n1", ["mlx0"])
    try:
        sampler.line()
        assert sampler.compiled_layout() is not None
        real = nicsampler.is_error_counter
        monkeypatch.setattr(nicsampler, "is_error_counter", lambda name: name == "port_xmit_data" or real(name))
        steady_node.now += nicsampler.RESCAN_S
        data = json.loads(sampler.line())  # a full reading, which reads the error counters again
        assert data["ifaces"]["mlx0"]["rdma"]["port_xmit_data"] == 4000
        assert sampler._steady is not None and sampler.compiled_layout() is None
    finally:
        sampler.close()


def parse_proc_net_dev(text: str, only: Collection[str] | None = None) -> dict[str, dict[str, int]]:
    """/proc/net/dev as {iface: {kept field: value}}: the sampler's fields, named (the oracle its JSON must match)."""
    return {
        name: dict(zip(nicsampler.NETDEV_KEPT_NAMES, map(int, fields), strict=True))
        for name, fields in nicsampler.proc_net_dev_fields(text, only).items()
    }


PROC_NET_DEV = "\n".join(
    (
        "Inter-|   Receive                                                |  Transmit",
        " face |bytes    packets errs drop fifo frame compressed multicast|"
        "bytes    packets errs drop fifo colls carrier compressed",
        "    lo:  123456     789    0    0    0     0          0         0   123456     789    0    0    0     0"
        "       0          0",
        "enp1s0f1np1:6211329423080 97052087 1 2 3 4 0 55 357657403514 5588396 5 6 7 8 9 0",
        "  eth0: 1 2",
        "",
    )
)


def test_parse_proc_net_dev() -> None:
    found = parse_proc_net_dev(PROC_NET_DEV)
    assert set(found) == {"lo", "enp1s0f1np1"}  # the short eth0 line is skipped
    assert found["enp1s0f1np1"] == {
        "rx_bytes": 6211329423080,
        "rx_packets": 97052087,
        "rx_errors": 1,
        "rx_dropped": 2,
        "rx_fifo_errors": 3,
        "rx_frame_errors": 4,
        "tx_bytes": 357657403514,
        "tx_packets": 5588396,
        "tx_errors": 5,
        "tx_dropped": 6,
        "tx_fifo_errors": 7,
        "tx_carrier_errors": 9,
    }
    assert found["lo"]["rx_bytes"] == 123456
    assert parse_proc_net_dev(PROC_NET_DEV, only={"lo"}).keys() == {"lo"}
    assert parse_proc_net_dev("") == {}
