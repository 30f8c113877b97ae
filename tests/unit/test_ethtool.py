"""`ethtool -S` and `ethtool -k` parsing, on a real mlx5 listing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wirespeed.core.parsers.ethtool import parse_features, parse_stats

# A published listing, kept byte for byte; its sidecar .json holds the values a person reads in it.
REAL = (
    Path(__file__).resolve().parents[1] / "fixtures" / "real" / "ethtool" / "ethtool_S_mlx5_xdp_kernel5.15_nonzero_only"
)


def test_stats_on_a_real_mlx5_listing() -> None:
    stats = parse_stats(Path(f"{REAL}.txt").read_text())
    expect = json.loads(Path(f"{REAL}.json").read_text())["expect"]
    assert len(stats) == expect.pop("n_counters")
    for name, value in expect.items():
        assert stats[name] == value, name


def test_stats_refuse_other_text() -> None:
    with pytest.raises(ValueError):
        parse_stats("no stats available\n")
    assert parse_stats("NIC statistics:\n") == {}


def test_features() -> None:
    text = (
        "Features for enp1s0f1np1:\nrx-checksumming: on\ntx-checksumming: on\n\ttx-checksum-ipv4: off [fixed]\n"
        "scatter-gather: on\ntcp-segmentation-offload: on\ngeneric-receive-offload: off [requested on]\n"
        "large-receive-offload: off [fixed]\n"
    )
    features = parse_features(text)
    assert features["tcp-segmentation-offload"] == (True, False)
    assert features["generic-receive-offload"] == (False, False)
    assert features["tx-checksum-ipv4"] == (False, True)
    with pytest.raises(ValueError):
        parse_features("Cannot get device feature settings: Operation not supported\n")
