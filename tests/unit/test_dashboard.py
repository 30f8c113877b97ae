"""The live view (wirespeed.core.fabric.board + wirespeed.ui.dashboard): NOW and PEAK per node and for the cluster, the
seeds' bars per cable, the step list, and what goes first when the screen is short. Rendered by Rich into plain
text at the sizes the tmux tests use."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from wirespeed.core.fabric.board import Board, cluster_rates, counter_source, node_rates, step_figure
from wirespeed.core.fabric.counters import IfaceRate, cable_rate
from wirespeed.core.fabric.meter import NETDEV_WARNING, NodeView, Peak, Rates
from wirespeed.ui.dashboard import EMPTY, FULL, bar, final_lines, gb, plain_line, render

GB = 1_000_000_000


def two_cables(
    node: str, tx: float, rx: float, source: str = "netdev", errors: dict[str, int] | None = None
) -> NodeView:
    """Two cables of two halves each at 1 Gb/s a half (2 Gb/s a cable): `tx`/`rx` on each half of port 1 only."""

    def half(t: float, r: float, errs: dict[str, int] | None = None) -> IfaceRate:
        return IfaceRate(source, t, r, errors=errs or {})

    port1 = cable_rate("port 1", {"enp1s0f0np0": half(tx, rx, errors), "enP2p1s0f0np0": half(tx, rx)}, False, 2.0)
    port2 = cable_rate("port 2", {"enp1s0f1np1": half(0, 0), "enP2p1s0f1np1": half(0, 0)}, False, 2.0)
    warnings = (NETDEV_WARNING.format(names="enp1s0f0np0"),) if source == "netdev" else ()
    return NodeView(node, 0.5, (port1, port2), {"port 1": Peak(), "port 2": Peak()}, (20.0, 90.0), warnings)


def board_of_two() -> Board:
    board = Board("bench tcp", 0.5, steps=["tcp-single", "tcp-multi", "tcp-halves", "tcp-lat"])
    board.start("tcp-single", now=100.0, expected_s=6.0)
    board.end("tcp-single", "ran", step_figure(0.99, None, "wire"))
    board.start("tcp-halves", now=110.0, expected_s=6.0)
    board.add(two_cables("spark-1", 0.99, 0.0))
    board.add(two_cables("spark-2", 0.0, 0.99))
    return board


def text(frame_board: Board, width: int, height: int, now: float = 113.0, hint: str | None = "q stops") -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None, height=height)
    console.print(render(frame_board.frame(now), width, height, hint))
    return console.export_text().rstrip("\n").split("\n")


def test_now_and_peak_per_node_and_for_the_cluster() -> None:
    board = board_of_two()
    frame = board.frame(113.0)
    assert frame.nodes["spark-1"].now == Rates(1.98, 0.0, 1.98)
    assert frame.nodes["spark-2"].now == Rates(0.0, 1.98, 1.98)
    # The fabric carried 1.98 Gb/s: sent by one node, received by the other, counted once.
    assert frame.cluster.now == Rates(1.98, 1.98, 1.98)
    board.add(two_cables("spark-1", 0.5, 0.0))
    frame = board.frame(114.0)
    assert frame.nodes["spark-1"].now.tx_gbps == pytest.approx(1.0)
    assert frame.nodes["spark-1"].peak.tx_gbps == pytest.approx(1.98)  # the peak stays
    assert frame.cluster.peak.duplex_gbps == pytest.approx(1.98)


def test_a_pair_full_duplex_is_the_seeds_figure() -> None:
    """Both directions at 168/168 Gb/s between two nodes: each node's full duplex is 336, and so is the cluster's."""
    a, b = two_cables("a", 84.0, 84.0), two_cables("b", 84.0, 84.0)
    assert node_rates(a).duplex_gbps == pytest.approx(336.0)
    assert cluster_rates([a, b]) == Rates(pytest.approx(336.0), pytest.approx(336.0), pytest.approx(336.0))


def test_the_step_list_and_the_time_left() -> None:
    frame = board_of_two().frame(113.0)
    assert frame.position == (3, 4)
    assert frame.elapsed_s == pytest.approx(3.0)
    assert frame.seconds_left == pytest.approx(3.0)
    assert [s.state for s in frame.steps] == ["ran", "waiting", "running", "waiting"]
    assert frame.steps[0].figure == "0.99 Gb/s (wire)"
    assert step_figure(None, 41.5, None) == "41.5 us"
    assert step_figure(None, None, None) is None


def test_errors_that_grew_add_up_and_congestion_is_not_an_error() -> None:
    board = Board("watch", 0.5)
    board.add(two_cables("n", 1.0, 1.0, errors={"rx_crc_errors_phy": 3, "rx_pause_ctrl_phy": 9}))
    board.add(two_cables("n", 1.0, 1.0, errors={"rx_crc_errors_phy": 2}))
    assert board.frame(0).errors == {"n": {"enp1s0f0np0": {"rx_crc_errors_phy": 5}}}


def test_the_counter_source_is_said_once_per_node() -> None:
    assert counter_source(two_cables("n", 1, 1, "phy")) == "PHY counters: RDMA included"
    assert "RDMA not seen" in counter_source(two_cables("n", 1, 1, "netdev"))
    lines = text(board_of_two(), 80, 24)
    assert sum("RDMA not seen" in line for line in lines) == 2  # one per node, not one per half
    assert not any("no PHY counters on" in line for line in lines)  # the long per-half note is folded into it


@pytest.mark.parametrize(("width", "height"), [(80, 24), (120, 40)])
def test_two_nodes_two_cables_fit_and_show_the_seeds_picture(width: int, height: int) -> None:
    lines = text(board_of_two(), width, height)
    assert len(lines) <= height
    assert all(len(line) <= width for line in lines)
    filled = [line for line in lines if FULL in line]
    assert len(filled) == 2  # spark-1 sends on port 1, spark-2 receives on it
    assert " TX " in filled[0] and " RX " in filled[1]
    assert any("CPU all  55% · core 1  90%" in line for line in lines)
    cable_lines = [line for line in lines if "port 1" in line or "port 2" in line]
    assert len(cable_lines) == 4 and all("2G" in line and "Gb/s" in line for line in cable_lines)
    now = [line for line in lines if "NOW" in line]
    peak = [line for line in lines if "PEAK" in line]
    assert len(now) == len(peak) == 3  # two nodes and the cluster
    for line in now + peak:
        assert "TX" in line and "RX" in line and "Full-duplex" in line and line.count("Gb/s") == 3
    assert any(line.startswith("cluster") and "1.98 Gb/s" in line for line in now)
    assert "tcp-halves (3 of 4)" in lines[0] and "3 s, about 3 s left" in lines[0]
    assert any("✓ tcp-single 0.99 Gb/s (wire)" in line and "▶ tcp-halves" in line for line in lines)


def test_bars_grow_with_the_width() -> None:
    def bar_cells(width: int) -> int:
        line = next(x for x in text(board_of_two(), width, 40) if "port 1" in x)
        return line.count(FULL) + line.count(EMPTY)

    assert bar_cells(120) - bar_cells(80) == 40
    assert bar_cells(200) - bar_cells(120) == 80


def test_halves_unfold_when_asked_and_fold_again_when_the_screen_is_short() -> None:
    board = board_of_two()
    board.show_halves = True
    tall = text(board, 120, 40)
    assert sum("enP2p1s0f0np0" in line for line in tall) == 2
    short = text(board, 80, 24)
    assert len(short) <= 24
    assert not any("enP2p1s0f0np0" in line for line in short)  # the first to go


def test_a_screen_too_short_says_so() -> None:
    board = Board("watch", 0.5)
    for i in range(6):
        board.add(two_cables(f"node-{i}", 0.5, 0.5))
    lines = text(board, 80, 24)
    assert len(lines) == 24
    assert "more line(s): enlarge the terminal" in lines[-1]


def test_below_80_columns_lines_are_cut_not_wrapped() -> None:
    lines = text(board_of_two(), 60, 24)
    assert len(lines) <= 24


def test_errors_are_highlighted_in_the_node_block() -> None:
    board = Board("watch", 0.5)
    board.add(two_cables("n", 1.0, 1.0, source="phy", errors={"rx_crc_errors_phy": 3}))
    lines = text(board, 80, 24)
    assert any("errors grew on enp1s0f0np0: rx_crc_errors_phy +3" in line for line in lines)
    console = Console(width=80, record=True, file=io.StringIO(), color_system="truecolor")
    console.print(render(board.frame(0), 80, 24))
    assert "\x1b[1;31m" in console.file.getvalue()  # type: ignore[attr-defined]


def test_a_waiting_node_and_the_tail_of_a_command() -> None:
    board = Board("watch: all_reduce_perf", 0.5, nodes=["a", "b"])
    board.add(two_cables("a", 1.0, 0.0))
    board.tail = ("#  size  count  type  redop  root  time  algbw  busbw",)
    lines = text(board, 80, 24)
    assert "b: waiting for samples" in lines
    assert any("busbw" in line for line in lines)


def test_plain_line_has_the_step_nodes_cluster_and_no_escape_codes() -> None:
    line = plain_line(board_of_two().frame(113.0))
    assert "\x1b" not in line and "\n" not in line
    assert line.startswith("tcp-halves 3/4 3s | spark-1 TX 1.98 RX 0.00 Gb/s cpu 90%")
    assert "cluster TX 1.98 RX 1.98 full-duplex 1.98 Gb/s (peak 1.98)" in line
    assert plain_line(Board("watch", 0.5).frame(0)) == "no samples yet"


def test_final_lines_give_the_peaks_with_units() -> None:
    lines = final_lines(board_of_two().frame(113.0))
    assert lines[0] == "spark-1: peak TX 1.98 Gb/s  RX 0.00 Gb/s  full duplex 1.98 Gb/s"
    assert lines[-1].startswith("cluster: peak TX 1.98 Gb/s  RX 1.98 Gb/s  full duplex 1.98 Gb/s")


def test_bar_and_figures() -> None:
    assert bar(100.0, 200.0, 10).plain == FULL * 5 + EMPTY * 5
    assert bar(None, 200.0, 10).plain == EMPTY * 10
    assert bar(50.0, None, 10).plain == EMPTY * 10
    assert bar(300.0, 200.0, 10).plain == FULL * 10
    assert gb(0.994) == "  0.99" and gb(335.94) == " 335.9" and gb(None) == "     -"


def test_a_long_step_list_shortens_then_wraps_and_never_overflows() -> None:
    ladder = ["tcp-single", "tcp-multi", "tcp-halves", "tcp-lat", "rdma-bw", "rdma-lat", "nccl-sendrecv",
              "nccl-all_gather", "nccl-all_reduce"]  # fmt: skip
    board = Board("bench ladder", 0.5, steps=ladder)
    for name in ladder[:4]:
        board.start(name, now=0.0)
        board.end(name, "ran", "3.97 Gb/s (wire)")
    board.end("rdma-bw", "skipped")
    board.add(two_cables("a", 1.0, 0.0))
    lines = text(board, 80, 40)
    steps = [line for line in lines if "tcp-single" in line or "nccl-all_reduce" in line]
    assert len(steps) == 2 and all(len(line) <= 80 for line in steps)  # over two lines, every rung named
    assert "✓ tcp-single 3.97  ✓ tcp-multi 3.97" in steps[0]  # figures shortened to their number
    assert "- rdma-bw" in "\n".join(lines)
    wide = text(board, 200, 40)
    assert any("✓ tcp-single 3.97 Gb/s (wire)" in line for line in wide)  # in full where it fits
