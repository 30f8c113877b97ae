"""An import kind is one module plus one line in `imports.registry.KINDS`: a toy kind added to the tuple alone is
detected, imported, summed up and compared, ranked against the real kinds by its marks; and the real kinds' marks
keep the order detection has always tried them in."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.imports import imported, importer, registry
from wirespeed.core.imports.kind import BARE, JSON_FORM, ImportKind, Table

REAL = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "real"
NCCL = REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt"
_TOY_LINE = re.compile(r"^TOY speed=(\d+)$", re.MULTILINE)


def _toy_read(text: str) -> dict[str, Any]:
    speeds = [int(m) for m in _TOY_LINE.findall(text)]
    if not speeds:
        raise ValueError("toy output without a `TOY speed=N` line")
    return {"source_format": "text", "speeds": speeds}


def _toy_rows(obj: Mapping[str, Any]) -> Table:
    return ["figure", "value"], [["fastest", f"{max(obj['speeds'])} toys/s"]]


def _toy_figures(obj: Mapping[str, Any]) -> dict[str, float]:
    return {"fastest_toys_per_s": float(max(obj["speeds"]))}


TOY = ImportKind(
    tool="toy",
    names="toy-meter",
    marks=((JSON_FORM - 1, lambda text: text.startswith("TOY ")),),
    read=_toy_read,
    rows=_toy_rows,
    figures=_toy_figures,
)
# Claims any text at all, but only after every real kind has had its say.
CATCH_ALL = ImportKind(
    tool="catch-all",
    names="anything",
    marks=((BARE + 1, lambda text: True),),
    read=lambda text: {"source_format": "text", "lines": len(text.splitlines())},
    rows=lambda obj: (["lines"], [[str(obj["lines"])]]),
)


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
    obj = importer.import_text(text, "toy.txt")
    assert obj == {"format_version": 1, "tool": "toy", "file": "toy.txt", "source_format": "text", "speeds": [3, 7]}
    assert imported.summary(obj) == (["figure", "value"], [["fastest", "7 toys/s"]])
    assert imported.figures(obj) == {"fastest_toys_per_s": 7.0}
    assert "toy" in registry.tools() and "toy-meter" in registry.known_tools()


@pytest.mark.usefixtures("with_toys")
def test_a_kinds_read_error_gets_its_line_like_any_other() -> None:
    with pytest.raises(ValueError, match=r"^line 1: toy output without a `TOY speed=N` line$"):
        importer.import_text("TOY nothing here\n", "toy.txt")


@pytest.mark.usefixtures("with_toys")
def test_rank_decides_between_kinds_whose_marks_both_match() -> None:
    assert importer.detect(NCCL.read_text()) == "nccl-tests"  # the catch-all's rank is past every real mark
    assert importer.import_text("hello\nworld\n", "x.txt")["tool"] == "catch-all"


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
