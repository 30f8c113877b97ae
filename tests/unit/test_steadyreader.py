"""The compiled steady reader (`steady_reader.c`) against the kernel's own files: it makes the lines Python makes,
reads driver statistics by ioctl and RDMA counters from files, hands back when anything differs, when the layout
is due, at the count or when stopped, and leaves no process behind; `stream_samples` hands over to it and back."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

from wirespeed.adapters import nicsampler, steadyreader
from wirespeed.adapters.nicsampler import reader_layout
from wirespeed.engine import sampling

HAS_CC = any(shutil.which(name) for name in steadyreader.COMPILERS)
needs_cc = pytest.mark.skipif(not HAS_CC, reason="no C compiler here: the agent makes every line in Python")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a network namespace with a veth pair)")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """$XDG_CACHE_HOME/wirespeed of the module's own: the reader is built there once."""
    path = tmp_path_factory.mktemp("xdg") / "wirespeed"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture(scope="module")
def binary(cache: Path) -> Path:
    if not HAS_CC:
        pytest.skip("no C compiler here: the agent makes every line in Python")
    os.environ.pop(steadyreader.ENV, None)
    built = steadyreader.build(cache)
    assert built is not None and steadyreader.trusted(built)
    return built


@pytest.fixture
def out(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A file the reader writes its lines to (as the agent's stdout)."""
    path = tmp_path / "lines"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        yield fd, path
    finally:
        os.close(fd)


@pytest.fixture
def reader(binary: Path, out: tuple[int, Path]) -> Iterator[steadyreader.SteadyReader]:
    running = steadyreader.SteadyReader(binary, out[0])
    try:
        yield running
    finally:
        running.close()
        assert running._process.poll() is not None  # none left behind


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run(reader: steadyreader.SteadyReader, layout: str, *, deadline_in: float = 10.0, interval: float = 0.01,
         remaining: int = 1, last_cpu: float = 0.0) -> steadyreader.Handback:  # fmt: skip
    now = time.monotonic()
    back = reader.run(layout, now + deadline_in, nicsampler.CPU_INTERVAL_S, sampling.FLUSH_S, next_tick=now,
                      interval=interval, remaining=remaining, last_cpu=last_cpu)  # fmt: skip
    assert back is not None
    return back


# ------------------------------------------------------------------------------------ the lines Python makes
@needs_cc
def test_the_reader_makes_the_agent_s_lines_from_the_kernel(
    reader: steadyreader.SteadyReader, out: tuple[int, Path]
) -> None:
    """The same keys, counters and cores that Python reads just before and just after, and t on the schedule."""
    sampler = nicsampler.NodeSampler('node "1"', ["lo"])
    try:
        before = json.loads(sampler.line())
        handoff = sampler.compiled_layout()
        assert handoff is not None
        start = time.monotonic()
        back = reader.run(handoff[0], start + 30, 0.05, sampling.FLUSH_S, next_tick=start, interval=0.02,
                          remaining=8, last_cpu=0.0)  # fmt: skip
        sampler._steady = None
        after = json.loads(sampler.line())
    finally:
        sampler.close()
    assert back is not None and (back.ticks, back.reason) == (8, "count")
    lines = _lines(out[1])
    assert len(lines) == 8
    for line in lines:
        assert line.keys() == before.keys() and line["node"] == 'node "1"' and line["missing"] == []
        assert isinstance(line["t"], float) and isinstance(line["wall"], float)
        assert line["ifaces"]["lo"].keys() == before["ifaces"]["lo"].keys()
        for key, value in line["ifaces"]["lo"]["netdev"].items():
            assert before["ifaces"]["lo"]["netdev"][key] <= value <= after["ifaces"]["lo"]["netdev"][key]
    ts = [line["t"] for line in lines]
    assert all(b > a for a, b in itertools.pairwise(ts)) and start <= ts[0]
    assert back.next_tick >= start + 8 * 0.02 - 1e-6
    with_cpu = [line["cpu"] for line in lines if line["cpu"]]
    assert with_cpu and lines[0]["cpu"]  # read at once (last read at 0), then every 0.05 s
    for cores in with_cpu:
        assert len(cores) == len(before["cpu"]) == len(after["cpu"])
        for mine, first, last in zip(cores, before["cpu"], after["cpu"], strict=True):
            assert all(a <= m <= b for a, m, b in zip(first, mine, last, strict=True))
    assert abs(lines[-1]["wall"] - time.time()) < 60


@needs_cc
def test_rdma_counters_are_summed_from_their_files(
    reader: steadyreader.SteadyReader, out: tuple[int, Path], tmp_path: Path
) -> None:
    ports = [tmp_path / "mlx5_0" / "ports" / str(n) for n in (1, 2)]
    for n, port in enumerate(ports):
        (port / "counters").mkdir(parents=True)
        (port / "counters" / "port_xmit_data").write_text(f"{4000 + n}\n")
        (port / "counters" / "port_rcv_data").write_text(f"{5000 + n}\n")
    iface = nicsampler._Iface("x", "x", None, None, rdma_ports=ports, rdma_errors={"symbol_error": 3})
    found = {"port_xmit_data": 8001, "port_rcv_data": 10001, "symbol_error": 3}
    layout = reader_layout('{"r":%s}', [(5, 0, 0)], [], [(iface, found)], [])
    assert layout is not None
    assert _run(reader, layout).reason == "count"
    assert _lines(out[1]) == [{"r": found}]
    (ports[0] / "counters" / "port_rcv_data").write_text("gone\n")  # one port's file unreadable: the other counts
    assert _run(reader, layout).reason == "count"
    assert _lines(out[1])[-1] == {"r": {**found, "port_rcv_data": 5001}}
    (ports[1] / "counters" / "port_rcv_data").write_text("\n")  # none left: the layout no longer holds
    back = _run(reader, layout)
    assert (back.ticks, back.reason) == (0, "changed") and len(_lines(out[1])) == 2


@needs_cc
def test_a_netdev_token_out_of_place_hands_back_before_any_line(
    reader: steadyreader.SteadyReader, out: tuple[int, Path]
) -> None:
    tokens = Path("/proc/net/dev").read_text().split()
    at = tokens.index("lo:")
    layout = reader_layout('{"rx":%s}', [(4, at + 1, 0)], [], [], [(at, "lo:")])
    assert layout is not None
    assert _run(reader, layout).reason == "count" and _lines(out[1])[0]["rx"] >= 0
    moved = reader_layout('{"rx":%s}', [(4, at + 1, 0)], [], [], [(at, "lo9:")])
    assert moved is not None
    back = _run(reader, moved, remaining=0)
    assert (back.ticks, back.reason) == (0, "changed") and len(_lines(out[1])) == 1
    assert _run(reader, reader_layout('{"x":%s}', [(4, at, 0)], [], [], []) or "", remaining=0).reason == "changed"


@needs_cc
def test_the_layout_due_again_hands_back_at_its_tick(reader: steadyreader.SteadyReader, out: tuple[int, Path]) -> None:
    layout = reader_layout('{"t":%r}', [(1, 0, 0)], [], [], [])
    assert layout is not None
    back = _run(reader, layout, deadline_in=0.3, remaining=0)  # its first tick is due at once
    assert back.reason == "rescan" and back.ticks == len(_lines(out[1])) >= 1
    assert time.monotonic() >= back.next_tick  # the tick it woke for and left to the agent


@needs_cc
def test_a_stop_writes_what_is_held_and_hands_back(reader: steadyreader.SteadyReader, out: tuple[int, Path]) -> None:
    layout = reader_layout('{"t":%r,"w":%r}', [(1, 0, 0), (2, 0, 0)], [], [], [])
    assert layout is not None

    def stop_after_lines() -> None:
        while len(out[1].read_bytes().splitlines()) < 3:  # lines are written every FLUSH_S
            time.sleep(0.005)
        reader.interrupt()

    stopper = threading.Thread(target=stop_after_lines, daemon=True)
    stopper.start()
    back = _run(reader, layout, interval=0.005, remaining=0)
    stopper.join(timeout=30)
    lines = _lines(out[1])
    assert back.reason == "stop" and back.ticks == len(lines) >= 3
    assert out[1].read_bytes().endswith(b"\n")


@needs_cc
def test_a_closed_stdout_ends_the_run(binary: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    running = steadyreader.SteadyReader(binary, write_end)
    os.close(write_end)
    try:
        layout = reader_layout('{"t":%r}', [(1, 0, 0)], [], [], [])
        assert layout is not None
        assert _run(running, layout, remaining=0).reason == "pipe"
    finally:
        running.close()


@needs_cc
def test_a_full_non_blocking_pipe_is_waited_on(binary: Path) -> None:
    """Someone set the agent's stdout non-blocking and the reading side is slow: every line still arrives, whole,
    and the run ends at its count, not as if stdout had closed."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)  # the smallest pipe: a few lines fill it
    os.set_blocking(write_end, False)
    running = steadyreader.SteadyReader(binary, write_end)
    os.close(write_end)
    received = bytearray()

    def drain_slowly() -> None:
        while chunk := os.read(read_end, 512):
            received.extend(chunk)
            time.sleep(0.002)

    drainer = threading.Thread(target=drain_slowly, daemon=True)
    try:
        layout = reader_layout('{"t":%r,"pad":"' + "x" * 200 + '"}', [(1, 0, 0)], [], [], [])
        assert layout is not None
        drainer.start()
        back = _run(running, layout, interval=0.001, remaining=100)
        assert (back.ticks, back.reason) == (100, "count")
    finally:
        running.close()
        drainer.join(timeout=30)
        os.close(read_end)
    lines = received.decode().splitlines()
    assert len(lines) == 100 and all(json.loads(line)["pad"] == "x" * 200 for line in lines)


@needs_cc
def test_nonsense_from_the_agent_ends_the_reader_not_the_agent(binary: Path, out: tuple[int, Path]) -> None:
    running = steadyreader.SteadyReader(binary, out[0])
    try:
        assert running.run("PART 9 0 0 0\n\n", 1.0, 0.1, 0.05, next_tick=0, interval=0.01, remaining=1,
                           last_cpu=0) is None  # fmt: skip
        assert running._process.wait(timeout=10) != 0
    finally:
        running.close()


# ------------------------------------------------------------------------------ driver statistics by ioctl
VETH_SCRIPT = textwrap.dedent(
    """
    import json, subprocess, sys, time
    from pathlib import Path
    from wirespeed.adapters import steadyreader
    from wirespeed.adapters.ethtool_ioctl import StatsReader
    from wirespeed.adapters.nicsampler import reader_layout
    subprocess.run(["ip", "link", "add", "wsr0", "type", "veth", "peer", "name", "wsr1"], check=True)
    values = StatsReader("wsr0").values()
    out = Path(sys.argv[2])
    reader = steadyreader.SteadyReader(Path(sys.argv[1]), 1)
    found = {}
    for n in (len(values), len(values) + 1):  # the count the driver has, then one it has not
        slots = [(3, 0, i) for i in range(len(values))]
        layout = reader_layout("[" + ",".join(["%s"] * len(values)) + "]", slots, [("wsr0", n)], [], [])
        now = time.monotonic()
        back = reader.run(layout, now + 10, 0.1, 0.05, next_tick=now, interval=0.01, remaining=2, last_cpu=0)
        found[n] = [back.ticks, back.reason]
    reader.close()
    out.write_text(json.dumps({"values": list(values), "runs": found}))
    """
)


@needs_root
@needs_cc
def test_driver_statistics_are_the_ioctl_reader_s(binary: Path, tmp_path: Path) -> None:
    """A veth pair in a network namespace of the test's own (gone with its process): the values by index are the
    Python reader's, and a count the driver does not have hands back before any line."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2)")
    result = tmp_path / "result.json"
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", VETH_SCRIPT, str(binary), str(result)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(steadyreader.__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(result.read_text())
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(data["values"]) > 0 and lines == [data["values"]] * 2  # veth's counters stand still without traffic
    assert list(data["runs"].values()) == [[2, "count"], [0, "changed"]]


# ------------------------------------------------------------------------------------------------- building
def test_a_file_others_may_write_is_not_run(tmp_path: Path) -> None:
    target = tmp_path / "steady-reader"
    target.write_bytes(b"x")
    target.chmod(0o700)
    tmp_path.chmod(0o700)
    assert steadyreader.trusted(target)
    target.chmod(0o722)
    assert not steadyreader.trusted(target)
    target.chmod(0o700)
    tmp_path.chmod(0o777)
    assert not steadyreader.trusted(target)
    tmp_path.chmod(0o700)
    assert not steadyreader.trusted(tmp_path / "none")


def test_without_a_compiler_or_when_turned_off_there_is_no_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert steadyreader.build(tmp_path / "cache") is None
    monkeypatch.undo()
    monkeypatch.setenv(steadyreader.ENV, "0")
    assert steadyreader.build(tmp_path / "cache") is None
    assert not (tmp_path / "cache").exists()


@needs_cc
def test_the_reader_is_built_once_per_source(binary: Path, cache: Path) -> None:
    made = binary.stat().st_mtime_ns
    assert steadyreader.build(cache) == binary and binary.stat().st_mtime_ns == made
    assert binary.name.endswith(os.uname().machine) and not [p for p in cache.iterdir() if p.is_dir()]


# --------------------------------------------------------------------------------------- the agent's stream
@pytest.fixture
def real_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> Iterator[tuple[Path, TextIO]]:
    """A file with a descriptor, for stdout (the reader writes there; the test puts it in place, as pytest sets
    sys.stdout anew when the test begins), and the module's cache."""
    path = tmp_path / "stdout"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache.parent))
    monkeypatch.delenv(steadyreader.ENV, raising=False)
    with open(path, "w", encoding="utf-8") as stream:
        yield path, stream


@pytest.fixture
def handbacks(monkeypatch: pytest.MonkeyPatch) -> list[steadyreader.Handback]:
    seen: list[steadyreader.Handback] = []
    real = steadyreader.SteadyReader.run

    def spy(self: steadyreader.SteadyReader, *args: Any, **kwargs: Any) -> steadyreader.Handback | None:
        back = real(self, *args, **kwargs)
        if back is not None:
            seen.append(back)
        return back

    monkeypatch.setattr(steadyreader.SteadyReader, "run", spy)
    return seen


def _readers_of(pid: int) -> list[int]:
    """The steady readers `pid` has started and not yet reaped."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(text[text.rindex(")") + 2 :].split()[1]) == pid and "steady-reader" in text:
                found.append(int(entry))
    return found


@needs_cc
def test_the_stream_hands_over_to_the_reader_and_back(
    binary: Path,
    real_stdout: tuple[Path, TextIO],
    handbacks: list[steadyreader.Handback],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lines on the schedule, as many as asked, most of them from the reader, none lost at the hand-overs, and the
    reader gone when the stream ends."""
    monkeypatch.setattr(nicsampler, "RESCAN_S", 0.2)  # hand-overs every 0.2 s: several in the stream
    monkeypatch.setattr(steadyreader.Builder, "ready", lambda self: self._done.wait(60))  # the build, then the stream
    path, stream = real_stdout
    monkeypatch.setattr("sys.stdout", stream)
    sampling.stream_samples("n1", ["lo"], 0.01, count=60)
    sys.stdout.flush()
    lines = _lines(path)
    assert len(lines) == 60 and all(line["node"] == "n1" for line in lines)
    ts = [line["t"] for line in lines]
    assert all(b > a for a, b in itertools.pairwise(ts))
    assert sum(b.ticks for b in handbacks) >= 20 and {b.reason for b in handbacks} >= {"rescan"}
    assert _readers_of(os.getpid()) == []


@needs_cc
def test_sigterm_stops_the_reader_and_the_stream(
    binary: Path,
    real_stdout: tuple[Path, TextIO],
    handbacks: list[steadyreader.Handback],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sampling, "_stdin_is_a_pipe", lambda: False)
    path, stream = real_stdout
    monkeypatch.setattr("sys.stdout", stream)
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    running: list[int] = []

    def term_once_the_reader_wrote() -> None:
        while path.read_text().count("\n") < 40 or not running:
            running[:] = _readers_of(os.getpid())
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=term_once_the_reader_wrote, daemon=True)
    try:
        killer.start()
        sampling.stream_samples("n1", ["lo"], 0.01)  # until stopped
    finally:
        killer.join(timeout=30)
        signal.signal(signal.SIGTERM, previous)
    sys.stdout.flush()
    assert running  # the reader ran when TERM came
    assert path.read_text().endswith("\n") and len(_lines(path)) >= 40
    assert _readers_of(os.getpid()) == []


def test_the_source_is_in_the_package() -> None:
    text = steadyreader.source()
    assert b"int main(" in text and stat.S_ISREG(
        os.stat(Path(steadyreader.__file__).with_name(steadyreader.SOURCE_NAME)).st_mode
    )


@needs_cc
def test_nothing_is_built_where_it_could_not_be_run(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    assert steadyreader.build(shared) is None and list(shared.iterdir()) == []


@pytest.mark.parametrize(
    ("backs", "stopping", "given_up"),
    [
        (["changed", "changed", "changed"], False, True),  # it keeps handing back before any line: Python goes on
        (["changed", "changed", "rescan", "changed", "changed"], False, False),  # lines came between
        (["cpu"], False, True),  # a /proc/stat it does not read
        (["stop"], False, True),  # stopped by someone else: the agent goes on without it
        (["stop"], True, False),  # the agent's own stop
    ],
)
def test_a_stream_gives_the_reader_up_when_it_cannot_help(backs: list[str], stopping: bool, given_up: bool) -> None:
    stream = steadyreader.StreamReader(None)
    stream._given_up = False  # as if built and started
    for reason in backs:
        stream.handed_back(steadyreader.Handback(0 if reason == "changed" else 5, 0.0, 0.0, reason), stopping)
    assert stream._given_up is given_up
    stream.close()
