"""`ethtool -k` (features) and `ethtool -S` (driver statistics) text. Pure."""

from __future__ import annotations

import re

_STAT_RE = re.compile(r"^\s+([^:]+?):\s+(-?\d+)\s*$")
_FEATURE_RE = re.compile(r"^\s*([a-z0-9-]+):\s+(on|off)(\s+\[(?:fixed|requested [a-z]+)\])?\s*$")


def parse_stats(text: str) -> dict[str, int]:
    """`NIC statistics:` then `     name: value` lines -> {name: value}. Other lines are ignored."""
    stats: dict[str, int] = {}
    for line in text.splitlines():
        match = _STAT_RE.match(line)
        if match:
            stats[match.group(1)] = int(match.group(2))
    if not stats and text.strip() and "statistics" not in text.lower():
        raise ValueError("not ethtool -S output")
    return stats


def parse_features(text: str) -> dict[str, tuple[bool, bool]]:
    """`ethtool -k IF` -> {feature: (on, fixed)}; `[fixed]` features cannot be changed."""
    features: dict[str, tuple[bool, bool]] = {}
    for line in text.splitlines():
        match = _FEATURE_RE.match(line)
        if match:
            features[match.group(1)] = (match.group(2) == "on", "fixed" in (match.group(3) or ""))
    if not features and text.strip():
        raise ValueError("not ethtool -k output")
    return features


# Counters that should not grow on a healthy RoCE fabric (spark-facts 4.3), by driver naming.
ERROR_COUNTERS = (
    "rx_discards_phy",
    "tx_discards_phy",
    "rx_crc_errors_phy",
    "rx_symbol_err_phy",
    "rx_oversize_pkts_phy",
    "rx_out_of_range_len_phy",
    "rx_in_range_len_errors_phy",
    "link_down_events_phy",
    "rx_pcs_symbol_err_phy",
    "rx_out_of_buffer",
    "outbound_pci_buffer_overflow",
    "rx_errors",
    "tx_errors",
    "rx_dropped",
    "tx_dropped",
)
