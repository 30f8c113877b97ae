"""Folding node names for display, ClusterShell style."""

from __future__ import annotations

import re

import pytest

from wirespeed.core.cluster.nodeset import fold_names


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["spark-1", "spark-2", "spark-3"], "spark-[1-3]"),
        (["spark-1", "spark-2", "spark-4"], "spark-[1-2,4]"),
        (["spark-1", "spark-3", "spark-5"], "spark-[1,3,5]"),
        (["spark-1", "spark-2", "spark-3", "spark-7", "spark-8", "spark-10"], "spark-[1-3,7-8,10]"),
        (["spark-3", "spark-1", "spark-2"], "spark-[1-3]"),
        (["spark-1", "spark-1", "spark-2"], "spark-[1-2]"),
        (["spark-1"], "spark-1"),
        (["spark-1", "spark-1"], "spark-1"),
        (["localhost"], "localhost"),
        ([], ""),
        (["node9", "node10", "node11"], "node[9-11]"),
        (["node0", "node1"], "node[0-1]"),
    ],
)
def test_fold(names: list[str], expected: str) -> None:
    assert fold_names(names) == expected


def test_mixed_prefixes_and_plain_names_keep_first_seen_order() -> None:
    names = ["mgmt", "spark-2", "gpu1", "spark-1", "other", "gpu2"]
    assert fold_names(names) == "mgmt,spark-[1-2],gpu[1-2],other"


def test_different_prefixes_are_not_merged() -> None:
    assert fold_names(["a1", "b2", "a2", "b3"]) == "a[1-2],b[2-3]"


def test_leading_zeros_stay_plain() -> None:
    # Folding node01,node02 to node[1-2] would name different hosts.
    assert fold_names(["node01", "node02", "node03"]) == "node01,node02,node03"
    assert fold_names(["node01", "node1", "node2"]) == "node01,node[1-2]"


def test_only_the_trailing_number_is_folded() -> None:
    assert fold_names(["r1n1", "r1n2", "r2n1"]) == "r1n[1-2],r2n1"


def test_accepts_any_iterable() -> None:
    assert fold_names(f"s{i}" for i in range(1, 17)) == "s[1-16]"


def expand(folded: str) -> list[str]:
    """Undo a fold (the test's own reader): prefix[1-3,5] and plain names, comma-separated."""
    names: list[str] = []
    for prefix, ranges, plain in re.findall(r"([^,\[]*)\[([^\]]*)\]|([^,]+)", folded):
        if plain:
            names.append(plain)
            continue
        for piece in ranges.split(","):
            low, _, high = piece.partition("-")
            names += [f"{prefix}{n}" for n in range(int(low), int(high or low) + 1)]
    return names


def test_every_name_is_recoverable_from_the_fold() -> None:
    names = ["spark-1", "spark-2", "spark-4", "x", "spark-9", "y7", "y8", "node01"]
    assert sorted(expand(fold_names(names))) == sorted(names)
