"""The `wirespeed watch` dashboard (wirespeed.ui.watch), rendered by Rich into plain text at 80 and 120 columns."""

from __future__ import annotations

import io

from rich.console import Console

from wirespeed.core.counters import IfaceRate, IfaceReading, cable_rate
from wirespeed.core.meter import Cable, Meter, NodeLayout, NodeSample, NodeView, Peak
from wirespeed.ui.watch import EMPTY, FULL, bar, dashboard, gb, node_block, peak_lines

A, B = "enp1s0f1np1", "enP2p1s0f1np1"
GB = 1_000_000_000


def render(views: dict[str, NodeView], width: int, waiting: tuple[str, ...] = (), tail: tuple[str, ...] = ()) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(dashboard(views, waiting, "wirespeed watch: 2 nodes, 10 samples/s", width, tail))
    return console.export_text()


def split_view(node: str = "spark-a") -> NodeView:
    """Two halves on two wires: 80+80 TX, 40+40 RX on a 200G port; rx_discards_phy grew by 12."""
    halves = {
        A: IfaceRate("phy", 80.0, 40.0, None, None, 55.0, 25.0, {"rx_discards_phy": 12, "tx_pause_ctrl_phy": 3}),
        B: IfaceRate("phy", 80.0, 40.0, None, None, 15.0, 5.0),
    }
    cable = cable_rate("port 1", halves, False, 200.0)
    return NodeView(node, 0.5, (cable,), {"port 1": Peak(150.0, 90.0, 200.0)}, (10.0, 90.0, 29.0))


def shared_view() -> NodeView:
    """One shared wire (80 TX, 40 RX) split 60/20 and 30/10 between the functions."""
    halves = {
        A: IfaceRate("phy", 80.0, 40.0, 60.0, 30.0),
        B: IfaceRate("phy", 80.0, 40.0, 20.0, 10.0),
    }
    cable = cable_rate("port 1", halves, True, 200.0)
    return NodeView("spark-a", 0.5, (cable,), {"port 1": Peak(80.0, 40.0, 120.0)}, (50.0,))


def lines_of(text: str) -> list[str]:
    return text.rstrip("\n").split("\n")


# --------------------------------------------------------------------------------------------------- pieces


def test_bar() -> None:
    half = bar(100.0, 200.0, 10)
    assert half.plain == FULL * 5 + EMPTY * 5
    assert bar(None, 200.0, 10).plain == EMPTY * 10
    assert bar(50.0, None, 10).plain == EMPTY * 10
    assert bar(50.0, 0.0, 10).plain == EMPTY * 10
    assert bar(300.0, 200.0, 10).plain == FULL * 10  # over the line rate: full, not longer
    assert bar(0.0, 200.0, 10).plain == EMPTY * 10
    assert bar(199.0, 200.0, 34).cell_len == 34


def test_bar_colours_by_load() -> None:
    assert bar(100.0, 200.0, 10).style == "green"  # below 75 % of the line rate
    assert bar(160.0, 200.0, 10).style == "yellow"
    assert bar(195.0, 200.0, 10).style == "bold red"  # 95 % and above
    assert bar(None, 200.0, 10).style == "dim"


def test_gb() -> None:
    assert gb(None) == "     -"
    assert gb(0.0) == "  0.00"
    assert gb(0.994) == "  0.99"  # a shaped 1 Gb/s half
    assert gb(9.5) == "  9.50"
    assert gb(10.0) == "  10.0"
    assert gb(123.26) == " 123.3"
    assert gb(199.96, 8) == "   200.0"


# ------------------------------------------------------------------------------------------------ dashboard


def test_dashboard_at_80_columns() -> None:
    text = render({"spark-a": split_view()}, 80, waiting=("spark-b",), tail=("step 3/4: ib_write_bw",))
    lines = lines_of(text)
    assert lines[0] == "wirespeed watch: 2 nodes, 10 samples/s"
    assert lines[1] == "spark-a" + " " * 43 + "CPU  43%  busiest core 1  90%"
    assert len(lines[1]) == 79
    # 34-cell bars: 160 of 200 is 27 cells, 80 of 200 is 14
    assert lines[2] == f" port 1     TX {FULL * 27}{EMPTY * 7}  160.0 Gb/s  peak  150.0"
    assert lines[3] == f"{'':11} RX {FULL * 14}{EMPTY * 20}   80.0 Gb/s  peak   90.0"
    assert lines[4] == f"{'':12}full duplex  240.0 Gb/s  peak  200.0 of 200"
    assert lines[5] == f"   {A}      TX   80.0  RX   40.0 Gb/s"
    assert lines[6] == f"   {B}    TX   80.0  RX   40.0 Gb/s"
    assert lines[7] == f"  errors {A}: rx_discards_phy +12"  # the pause frames are congestion, not shown
    assert lines[8] == "spark-b: waiting for samples"
    assert lines[9] == "─" * 80
    assert lines[10] == "step 3/4: ib_write_bw"
    assert len(lines) == 11
    assert "RDMA" not in text  # only on wide terminals
    assert max(len(line) for line in lines) <= 80


def test_dashboard_at_120_columns_shows_the_halves_and_rdma() -> None:
    lines = lines_of(render({"spark-a": split_view()}, 120))
    assert lines[2] == f" port 1     TX {FULL * 32}{EMPTY * 8}  160.0 Gb/s  peak  150.0"
    assert lines[5] == f"   {A}      TX   80.0  RX   40.0 Gb/s   RDMA TX   55.0  RX   25.0"
    assert lines[6] == f"   {B}    TX   80.0  RX   40.0 Gb/s   RDMA TX   15.0  RX   5.00"
    assert lines[7] == f"  errors {A}: rx_discards_phy +12"
    assert max(len(line) for line in lines) <= 120


def test_one_half_cable_shows_its_half_only_when_wide() -> None:
    cable = cable_rate("eth0", {"eth0": IfaceRate("netdev", 9.5, 0.25)}, False, 10.0)
    view = NodeView("laptop", 1.0, (cable,), {}, ())
    narrow = render({"laptop": view}, 80)
    wide = render({"laptop": view}, 120)
    assert "   eth0             TX   9.50  RX   0.25 Gb/s" not in narrow
    assert "   eth0             TX   9.50  RX   0.25 Gb/s" in wide
    assert "laptop" in narrow and "CPU -" in narrow
    assert "peak   0.00" in narrow  # no peak recorded yet
    assert f" eth0       TX {FULL * 32}{EMPTY * 2}   9.50 Gb/s  peak   0.00" in narrow


def test_shared_phy_shows_the_function_split() -> None:
    text = render({"spark-a": shared_view()}, 120)
    assert "full duplex  120.0 Gb/s  peak  120.0 of 200  shared PHY" in text
    assert f"   {A}      TX   60.0  RX   30.0 Gb/s" in text
    assert f"   {B}    TX   20.0  RX   10.0 Gb/s" in text


def test_shared_phy_fits_80_columns() -> None:
    lines = lines_of(render({"spark-a": shared_view()}, 80))
    duplex = [line for line in lines if "full duplex" in line]
    assert len(duplex) == 1
    assert "shared PHY" in duplex[0]
    assert len(lines) == 7  # header, node, TX, RX, full duplex, two halves


def test_every_line_fits_80_columns_with_notes_and_a_gone_half() -> None:
    halves = {A: IfaceRate("netdev", 1.0, 2.0), B: IfaceRate("gone", None, None)}
    cable = cable_rate("port 1", halves, False, 200.0)
    view = NodeView(
        "a-rather-long-node-name.example.internal",
        0.5,
        (cable,),
        {"port 1": Peak(1.0, 2.0, 3.0)},
        (100.0, 0.0),
        (f"no PHY counters on {A}: kernel netdev counters used, RDMA traffic is not in them",),
        (B,),
    )
    text = render({view.node: view}, 80, tail=("x" * 200,))
    lines = lines_of(text)
    assert max(len(line) for line in lines) <= 80
    assert f"   {B}    gone (unplugged or renamed)" in lines
    assert f" port 1     TX {EMPTY * 34}      - Gb/s  peak   1.00" in lines
    assert "  missing: enP2p1s0f1np1" in lines
    assert "x" * 80 in lines and "x" * 81 not in text
    assert "note: no PHY counters on enp1s0f1np1" in text
    assert "CPU  50%  busiest core 0 100%" in text


def test_nodes_in_name_order() -> None:
    text = render({"spark-b": split_view("spark-b"), "spark-a": split_view("spark-a")}, 80)
    assert text.index("spark-a") < text.index("spark-b")


def test_errors_that_grew_are_shown_sorted() -> None:
    halves = {
        A: IfaceRate("phy", 0.0, 0.0, errors={"rx_out_of_buffer": 4, "rdma:out_of_sequence": 9}),
        B: IfaceRate("phy", 0.0, 0.0, errors={"rp_cnp_handled": 100}),
    }
    view = NodeView("n", 1.0, (cable_rate("port 1", halves, False, 200.0),), {}, ())
    text = render({"n": view}, 80)
    assert f"  errors {A}: rdma:out_of_sequence +9, rx_out_of_buffer +4" in lines_of(text)
    assert "rp_cnp_handled" not in text
    assert f"errors {B}" not in text


def test_node_block_from_the_meter() -> None:
    layout = NodeLayout("spark-a", (Cable("port 1", (A, B), 200.0),))
    meter = Meter([layout])

    def reading(tx: int, discards: int) -> IfaceReading:
        return IfaceReading(
            stats={
                "tx_bytes_phy": tx,
                "rx_bytes_phy": 0,
                "tx_packets_phy": 0,
                "rx_packets_phy": 0,
                "rx_discards_phy": discards,
            }
        )

    meter.add(NodeSample("spark-a", 0.0, {A: reading(0, 0), B: reading(500 * GB, 0)}, []))
    view = meter.add(NodeSample("spark-a", 0.5, {A: reading(5 * GB, 2), B: reading(505 * GB, 0)}, []))
    assert view is not None
    console = Console(width=80, record=True, file=io.StringIO(), color_system=None)
    for part in node_block(view, 80):
        console.print(part)
    lines = lines_of(console.export_text())
    assert lines[1] == f" port 1     TX {FULL * 27}{EMPTY * 7}  160.0 Gb/s  peak  160.0"
    assert lines[3] == f"{'':12}full duplex  160.0 Gb/s  peak  160.0 of 200"
    assert f"  errors {A}: rx_discards_phy +2" in lines


# --------------------------------------------------------------------------------------------------- peaks


def test_peak_lines_one_per_cable() -> None:
    two = NodeView(
        "spark-b",
        1.0,
        (
            cable_rate("port 0", {"x": IfaceRate("phy", 1.0, 1.0)}, False, 200.0),
            cable_rate("port 1", {"y": IfaceRate("phy", 1.0, 1.0)}, False, 200.0),
        ),
        {"port 0": Peak(12.5, 6.0, 18.5)},
        (),
    )
    assert peak_lines({"spark-b": two, "spark-a": split_view()}) == [
        "spark-a port 1: peak TX 150.00  RX 90.00  full duplex 200.00 Gb/s",
        "spark-b port 0: peak TX 12.50  RX 6.00  full duplex 18.50 Gb/s",
        "spark-b port 1: peak TX 0.00  RX 0.00  full duplex 0.00 Gb/s",
    ]
    assert peak_lines({}) == []
