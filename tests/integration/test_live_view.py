"""The live view during `wirespeed bench` on a two-node, two-cable emulated cluster, as a person sees it: in tmux at
80x24, resized to 120x40 while it runs, `q` to stop, and piped (one plain line per interval, no escape codes).
Every wait is for what the screen shows, never a fixed sleep."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from wirespeed.engine.remote import Remote

from .helpers import processes_in, running_testbed

pytestmark = [pytest.mark.root, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]
PREFIX = "wlv-"
BAR = re.compile(r" (TX|RX) ([█░]+) +(\d+\.\d+) Gb/s$")
RATES = re.compile(r"(NOW|PEAK) +TX +(\d+\.\d+) Gb/s +RX +(\d+\.\d+) Gb/s +Full-duplex +(\d+\.\d+) Gb/s")


@pytest.fixture(scope="module")
def bed() -> Iterator[Remote]:
    with running_testbed(PREFIX, nodes=2, topology="direct", cables=2, half_rate_bps=10**9) as (_, remote):
        yield remote


class Tmux:
    """One detached tmux session running a command; its screen read on demand."""

    def __init__(self, argv: list[str], width: int, height: int) -> None:
        self.name = f"wlv-{uuid.uuid4().hex[:8]}"
        shell = " ".join(map(_quote, argv)) + "; echo EXIT=$?; sleep 3600"
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), shell],
                       check=True)  # fmt: skip

    def screen(self, history: bool = False) -> str:
        argv = ["tmux", "capture-pane", "-p", "-t", self.name, *(["-S", "-300"] if history else [])]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def until(self, what: Callable[[str], bool], timeout_s: float = 90.0, history: bool = False) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            shown = self.screen(history)
            if what(shown):
                return shown
            if time.monotonic() > deadline:
                size = subprocess.run(["tmux", "display", "-p", "-t", self.name, "#{window_width}x#{window_height}"],
                                      capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
                raise AssertionError(f"the screen ({size}) never showed what was awaited:\n{shown}")
            time.sleep(0.2)

    def resize(self, width: int, height: int) -> None:
        subprocess.run(["tmux", "resize-window", "-t", self.name, "-x", str(width), "-y", str(height)], check=True)

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True, check=False)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def bench_argv(bed: Remote, runs: Path, *what: str) -> list[str]:
    return [sys.executable, "-m", "wirespeed", "bench", *what, "--cluster", bed.cluster.source, "--runs", str(runs)]


def bars(screen: str) -> list[tuple[str, int, float]]:
    """(direction, cells, Gb/s) of every cable bar."""
    found = []
    for line in screen.splitlines():
        match = BAR.search(line)
        if match:
            found.append((match.group(1), len(match.group(2)), float(match.group(3))))
    return found


def busy_bars(screen: str) -> list[tuple[str, int, float]]:
    """The bars carrying traffic."""
    return [bar for bar in bars(screen) if bar[2] > 0.5]


def cluster_now(screen: str) -> tuple[float, float, float]:
    for line in screen.splitlines():
        match = RATES.search(line)
        if line.startswith("cluster") and match:
            return float(match.group(2)), float(match.group(3)), float(match.group(4))
    return 0.0, 0.0, 0.0


def tools_running() -> list[str]:
    """The tools and samplers still running in this testbed's nodes (other work on the machine is not ours)."""
    return [
        f"{n}: {argv}" for n in (f"{PREFIX}1", f"{PREFIX}2") for argv in processes_in(n, "iperf3|sockperf|agent sample")
    ]


def test_bench_tcp_live_at_80x24_then_120x40(bed: Remote, tmp_path: Path) -> None:
    session = Tmux(bench_argv(bed, tmp_path, "tcp", "--seconds", "4"), 80, 24)
    try:
        # tcp-halves: every half of both cables at its 1 Gb/s, so both cables' bars fill at once.
        small = session.until(lambda s: "tcp-halves (3 of 4)" in s and min(cluster_now(s)[:2]) > 3.0)
        lines = small.rstrip("\n").splitlines()
        assert len(lines) <= 24 and all(len(line) <= 80 for line in lines)
        assert {"wlv-1", "wlv-2"} <= {line.split(" ")[0] for line in lines}
        assert sum("port " in line and " TX " in line for line in lines) == 4  # two cables on each node
        assert sum(bool(RATES.search(line)) for line in lines) == 6  # NOW and PEAK: two nodes and the cluster
        cluster = next(line for line in lines if line.startswith("cluster"))
        tx, rx, duplex = (float(x) for x in RATES.search(cluster).groups()[1:])  # type: ignore[union-attr]
        assert tx < 4.1 and rx < 4.1, cluster  # 4 halves at 1 Gb/s, one way
        assert abs(duplex - (tx + rx) / 2) < 0.02, cluster  # what the fabric carried, counted once
        assert len(busy_bars(small)) == 4  # TX of both cables on wlv-1, RX of both on wlv-2
        assert "kernel counters: RDMA not seen" in small and "CPU all" in small
        assert "✓ tcp-single" in small and "▶ tcp-halves" in small
        narrow = {cells for _, cells, _ in bars(small)}
        assert len(narrow) == 1  # every bar as long as the others

        session.resize(120, 40)  # redrawn for the new size while it runs
        wide = session.until(lambda s: "▶ tcp-" in s and len(bars(s)) == 8 and bars(s)[0][1] == max(narrow) + 40)
        assert all(len(line) <= 120 for line in wide.splitlines())
        assert sum(bool(RATES.search(line)) for line in wide.splitlines()) == 6
        assert max(float(m.group(4)) for m in map(RATES.search, wide.splitlines()) if m) > 3.0  # the PEAK

        done = session.until(lambda s: "EXIT=" in s, timeout_s=180, history=True)
        assert "EXIT=0" in done, done
        assert "cluster: peak" not in done  # bench ends with its takeaway, not watch's peak lines
        assert "tcp-lat" in done and "results in" in done
        final = done[: done.index("rung ")]
        assert "✓ tcp-lat" in final and "▶" not in final  # the last frame stays printed, every rung ended
    finally:
        session.close()
    assert tools_running() == []


def test_q_stops_the_bench_and_keeps_what_was_measured(bed: Remote, tmp_path: Path) -> None:
    session = Tmux(bench_argv(bed, tmp_path, "tcp-single", "--seconds", "60"), 80, 24)
    try:
        session.until(lambda s: len(busy_bars(s)) >= 2)
        session.keys("q")
        done = session.until(lambda s: "EXIT=" in s, history=True)
        assert "EXIT=130" in done, done
        assert "interrupted" in done
    finally:
        session.close()
    [run] = [p for p in tmp_path.iterdir() if p.is_dir()]
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "interrupted"
    rung = json.loads((run / "tcp-single.json").read_text())
    assert rung["status"] == "interrupted"
    deadline = time.monotonic() + 20
    while tools_running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert tools_running() == []


def test_piped_one_plain_line_per_interval(bed: Remote, tmp_path: Path) -> None:
    argv = bench_argv(bed, tmp_path, "tcp-single", "--seconds", "4", "--interval", "0.5")
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    assert "\x1b" not in out
    lines = [line for line in result.stderr.splitlines() if line.startswith("tcp-single 1/1")]
    with_figures = [line for line in lines if "wlv-1 TX" in line and "cluster TX" in line]
    assert len(with_figures) >= 6, result.stderr  # a 4 s flow and its start at 0.5 s: a line per interval
    assert any(re.search(r"wlv-2 TX 0\.\d\d RX 0\.9\d Gb/s", line) for line in with_figures)
