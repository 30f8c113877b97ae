"""The live board shared by a run's threads (engine.live) and the plain-line display (cli.screen.PlainLines): a
display wakes on changes, and a pipe gets one line per interval only while something runs or samples come in."""

from __future__ import annotations

import threading

from test_dashboard import two_cables

from wirespeed.cli.screen import PlainLines
from wirespeed.engine.live import LiveBoard


def test_a_display_waits_for_a_change_and_wakes_on_it() -> None:
    board = LiveBoard("watch", 0.5)
    assert board.changed(board.version, timeout_s=0.01) == 0  # nothing changed: the wait times out
    woke = threading.Event()
    got: list[int] = []

    def wait() -> None:
        got.append(board.changed(0, timeout_s=30.0))
        woke.set()

    thread = threading.Thread(target=wait)
    thread.start()
    board.view(two_cables("a", 1.0, 0.0))
    assert woke.wait(30.0) and got == [1]
    thread.join()
    board.tail(["same"])
    version = board.version
    board.tail(["same"])  # the same tail again is no change
    assert board.version == version


def test_plain_lines_one_per_interval_while_a_step_runs() -> None:
    board = LiveBoard("bench tcp", 0.01, steps=["tcp-single"])
    lines: list[str] = []
    got_three = threading.Event()

    def write(line: str) -> None:
        lines.append(line)
        if len(lines) >= 3:
            got_three.set()

    with PlainLines(board, write) as plain:
        plain.say("wirespeed: run 1 in /tmp/x")
        board.start("tcp-single", expected_s=5.0)
        board.view(two_cables("a", 1.0, 0.0))
        assert got_three.wait(30.0)
        board.end("tcp-single", "ran", "1.98 Gb/s")
    assert lines[0] == "wirespeed: run 1 in /tmp/x"
    assert all(line.startswith("tcp-single 1/1") for line in lines[1:3])
    assert "a TX 2.00 RX 0.00 Gb/s" in lines[2]  # both halves of port 1 at 1 Gb/s


def test_plain_lines_say_nothing_when_nothing_runs_or_comes() -> None:
    board = LiveBoard("watch", 0.01)
    lines: list[str] = []
    with PlainLines(board, lines.append):
        board.changed(board.version, timeout_s=0.1)  # several intervals pass with nothing new
    assert lines == []
