"""An import kind is one module plus one line in `imports.registry.KINDS`: a toy kind added to the tuple alone is
detected, imported, summed up and compared, ranked against the real kinds by its marks; and the real kinds' marks
keep the order detection has always tried them in."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import pytest

from wirespeed.core.imports import imported, importer, registry
from wirespeed.core.imports.kind import BARE, JSON_FORM, ImportKind, Table
from wirespeed.core.imports.record import ImportObject
from wirespeed.core.records.typed import JsonRecord

REAL = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "real"
NCCL = REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt"
_TOY_LINE = re.compile(r"^TOY speed=(\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class Toy(JsonRecord):
    """A kind's body, written and read back by its fields (JsonRecord)."""

    source_format: str | None
    speeds: tuple[int, ...]


def _toy_read(text: str) -> Toy:
    speeds = [int(m) for m in _TOY_LINE.findall(text)]
    if not speeds:
        raise ValueError("toy output without a `TOY speed=N` line")
    return Toy("text", tuple(speeds))


def _toy_rows(obj: Toy) -> Table:
    return ["figure", "value"], [["fastest", f"{max(obj.speeds)} toys/s"]]


def _toy_figures(obj: Toy) -> dict[str, float]:
    return {"fastest_toys_per_s": float(max(obj.speeds))}


TOY = ImportKind(
    tool="toy",
    names="toy-meter",
    marks=((JSON_FORM - 1, lambda text: text.startswith("TOY ")),),
    body=Toy,
    read=_toy_read,
    rows=_toy_rows,
    figures=_toy_figures,
)


@dataclass(frozen=True)
class Lines:
    """The least a body is (kind.py's `Body`): its source_format, `to_json` and a `from_json` that reads it back."""

    source_format: str | None
    lines: int

    def to_json(self) -> dict[str, Any]:
        return {"source_format": self.source_format, "lines": self.lines}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        if not isinstance(data.get("lines"), int):
            raise ValueError(f"{where}: lines: expected a whole number")
        return cls(data.get("source_format"), data["lines"])


# Claims any text at all, but only after every real kind has had its say.
CATCH_ALL = ImportKind(
    tool="catch-all",
    names="anything",
    marks=((BARE + 1, lambda text: True),),
    body=Lines,
    read=lambda text: Lines("text", len(text.splitlines())),
    rows=lambda obj: (["lines"], [[str(obj.lines)]]),
)


def import_json(text: str, file_name: str) -> dict[str, Any]:
    """The public object as `import --json` prints it."""
    return importer.import_text(text, file_name).to_json()


@pytest.fixture
def with_toys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "KINDS", (*registry.KINDS, TOY, CATCH_ALL))


def test_a_kind_not_in_the_registry_is_not_known() -> None:
    assert importer.detect("TOY speed=3\n") is None
    with pytest.raises(ValueError, match=r"^line 1: not output of a known tool"):
        importer.import_text("TOY speed=3\n", "toy.txt")


@pytest.mark.usefixtures("with_toys")
def test_one_line_in_the_registry_makes_a_kind_detected_imported_summed_up_and_compared() -> None:
    text = "TOY speed=3\nTOY speed=7\n"
    assert importer.detect(text) == "toy"
    record = importer.import_text(text, "toy.txt")
    obj = record.to_json()
    assert obj == {"format_version": 1, "tool": "toy", "file": "toy.txt", "source_format": "text", "speeds": [3, 7]}
    assert imported.summary(record) == (["figure", "value"], [["fastest", "7 toys/s"]])
    assert imported.figures(record) == {"fastest_toys_per_s": 7.0}
    assert ImportObject.from_json(obj, "imported/toy.toy.json") == record  # and a run reads it back typed
    assert "toy" in registry.tools() and "toy-meter" in registry.known_tools()


@pytest.mark.usefixtures("with_toys")
def test_a_kinds_read_error_gets_its_line_like_any_other() -> None:
    with pytest.raises(ValueError, match=r"^line 1: toy output without a `TOY speed=N` line$"):
        importer.import_text("TOY nothing here\n", "toy.txt")


@pytest.mark.usefixtures("with_toys")
def test_rank_decides_between_kinds_whose_marks_both_match() -> None:
    assert importer.detect(NCCL.read_text()) == "nccl-tests"  # the catch-all's rank is past every real mark
    assert import_json("hello\nworld\n", "x.txt")["tool"] == "catch-all"
    again = ImportObject.from_json(import_json("hello\nworld\n", "x.txt"), "imported/x.catch-all.json")
    assert again == importer.import_text("hello\nworld\n", "x.txt")


def test_the_real_kinds_are_tried_in_the_documented_order() -> None:
    """JSON forms, the RDMA tools' fixed line shapes, `NIC statistics:`, perftest's table, iperf3's banners,
    nccl-tests' comments and rows, headerless ethtool -S (registry.detect's docstring)."""
    order = [kind.tool for _, _, kind in registry._marks()]
    assert order == [
        "nccl-tests", "perftest", "iperf3",
        "ibv_devinfo", "show_gids", "rdma-link", "ibdev2netdev",
        "ethtool-stats", "perftest", "iperf3", "nccl-tests", "ethtool-stats",
    ]  # fmt: skip
    assert registry.tools() == importer.TOOLS
    assert registry.known_tools() == importer.KNOWN_TOOLS
