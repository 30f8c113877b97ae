"""The wire recorder (wirespeed.engine.wire): what the node sent is on disk before it is metered, one write per
node's read, and every interval reaches the live view. The sampler is a stand-in that hands over fixed batches."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from wirespeed.core.fabric.meter import Cable, NodeLayout, NodeSample, NodeView, sample_from_json
from wirespeed.engine.sampling import Ended
from wirespeed.engine.wire import WireRecorder

NODES = ("n1", "n2")
HALVES = ("eth0", "eth1")
LAYOUTS = [NodeLayout(n, (Cable("port 0", HALVES, 2.0),)) for n in NODES]


def line(node: str, step: int) -> str:
    """A node's line at `step` (0.5 s apart): each half sends 62.5 MB a step, 1 Gb/s."""
    counters = {"tx_bytes": step * 62_500_000, "rx_bytes": 0, "tx_packets": step, "rx_packets": 0}
    data = {"node": node, "t": step * 0.5, "ifaces": {h: {"netdev": counters} for h in HALVES}}
    return json.dumps(data, separators=(",", ":"))


class Batches:
    """ClusterSampler's surface as the recorder uses it."""

    def __init__(self, items: list[list[NodeSample] | Ended | None]) -> None:
        self.items = items
        self.started = self.stopped = False

    def start(self) -> None:
        self.started = True

    def stop(self) -> dict[str, str]:
        self.stopped = True
        return {}

    def batches(self, timeout_s: float) -> Iterator[list[NodeSample] | Ended | None]:
        yield from self.items


class Record(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []
        self.flushes = 0

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)

    def flush(self) -> None:
        self.flushes += 1

    def close(self) -> None:  # kept readable for the test
        pass


def samples(node: str, steps: range) -> list[NodeSample]:
    return [sample_from_json(json.loads(text), text) for text in (line(node, s) for s in steps)]


def recorder(items: list[Any], record: Record, on_view: Any = None) -> WireRecorder:
    made = WireRecorder(None, LAYOUTS, 0.5, record, on_view=on_view)  # type: ignore[arg-type]
    made.sampler = Batches(items)  # type: ignore[assignment]
    return made


def test_one_write_per_read_before_its_samples_are_metered() -> None:
    record = Record()
    seen: list[tuple[str, int]] = []  # (node, lines on disk) when each view came

    def on_view(view: NodeView) -> None:
        seen.append((view.node, record.getvalue().count("\n")))

    items: list[Any] = [samples("n1", range(3)), None, samples("n2", range(2)), samples("n1", range(3, 5))]
    items.append(Ended("n1", "sampler ended"))
    with recorder(items, record, on_view) as made:
        made.thread.join(timeout=10)
    assert len(record.writes) == 3 and record.flushes >= 3  # the None (a quiet second) writes nothing
    assert record.writes[0] == "".join(line("n1", s) + "\n" for s in range(3))  # the node's own lines, in order
    assert record.getvalue().count("\n") == 7
    # each view came after its whole read was on disk: n1's first two intervals after 3 lines, n2's after 5
    assert seen == [("n1", 3), ("n1", 3), ("n2", 5), ("n1", 7), ("n1", 7)]
    assert [v.node for v in made.views] == ["n1", "n1", "n2", "n1", "n1"]
    assert all(v.cables[0].tx_gbps == pytest.approx(2.0) for v in made.views)  # two halves at 1 Gb/s each


def test_the_figures_come_from_the_same_views() -> None:
    record = Record()
    with recorder([samples("n1", range(5)), samples("n2", range(5))], record) as made:
        made.thread.join(timeout=10)
    figures = made.figures()
    assert figures.tx_gbps[("n1", "eth0")] == pytest.approx(1.0)
    assert figures.tx_gbps[("n2", "eth1")] == pytest.approx(1.0)
    assert figures.source == "netdev"
