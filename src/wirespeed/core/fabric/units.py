"""Units in one place: rates are bits per second internally, and every conversion is named for its units.

Traps this module exists for (see shared fixtures README): tc and iperf3 use SI prefixes (1gbit = 10^9 bit/s);
perftest's `MB/sec` is MiB/s (2^20 B/s); nccl-tests algbw/busbw are GB/s (10^9 B/s).
"""

from __future__ import annotations

import re

from wirespeed.core.errors import UsageError

# tc(8): "bit" or a bare number is bits per second, "bps" is BYTES per second.
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(bit|bit/s|b/s|bps)?\s*$", re.IGNORECASE)
_SI = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


def parse_rate_bps(text: str) -> int:
    """Parse a tc-style rate ("1gbit", "500mbit", "2.5G", "100000000", "125mbps") into bits per second.

    Prefixes are SI (1gbit = 10^9 bit/s); as in tc, `bps` means bytes per second.
    """
    match = _RATE_RE.match(text)
    if not match:
        raise UsageError(f"not a rate: {text!r}", hint="use tc units such as 1gbit, 500mbit or 100000000")
    value = float(match.group(1)) * _SI[match.group(2).lower()]
    if (match.group(3) or "").lower() == "bps":
        value *= 8
    if round(value) <= 0:
        raise UsageError(f"rate must be positive (at least 1 bit/s): {text!r}")
    return round(value)


def tc_rate(bits_per_second: int) -> str:
    """Render a rate for `tc` without loss: tc reads `bit` as bits per second."""
    return f"{bits_per_second}bit"


def format_rate(bits_per_second: float) -> str:
    """Human rate with an explicit unit: 1.00 Gb/s, 940.00 Mb/s."""
    for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if abs(bits_per_second) >= scale:
            return f"{bits_per_second / scale:.2f} {unit}"
    return f"{bits_per_second:.0f} b/s"


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_BINARY = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size_bytes(text: str) -> int:
    """A message size as nccl-tests reads `-b`/`-e`: 1M = 2^20 bytes, 8G = 2^33 (K, M, G, T are binary)."""
    match = _SIZE_RE.match(text)
    if not match or int(match.group(1)) <= 0:
        raise UsageError(f"not a size: {text!r}", hint="use bytes or K, M, G (binary, as nccl-tests does): 64M, 8G")
    return int(match.group(1)) * _BINARY[match.group(2).lower()]


def format_size_bytes(size_bytes: int | None) -> str:
    """Message sizes as nccl-tests and perftest users read them: binary units."""
    if size_bytes is None:
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= scale and size_bytes % scale == 0:
            return f"{size_bytes // scale} {unit}"
    return f"{size_bytes} B"
