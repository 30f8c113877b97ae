"""Whether a figure read from a tool's output may be shown to a person as a measurement. Pure.

A tool's output can be damaged, edited by hand, or written by a tool whose arithmetic went wrong (a clock that went
backwards, a counter that wrapped): `sent = -1e308` must never become "-99999... Tb/s" on a screen. Every parser
passes the figures it reports through `measured`, and a figure outside physical sense (not a number, NaN or
infinite, negative, or beyond what any link carries) raises `Untrustworthy` naming it, so the reading fails with
one line instead of a result.
"""

from __future__ import annotations

import math
from typing import Any

# No single flow (one NIC port, one host pair, one -P group of streams) carries more than this: 800G ports are the
# fastest today; 10 Tb/s leaves room for a decade of them, and a figure beyond it is damage, not speed.
MAX_FLOW_GBPS = 10_000.0
# Bus bandwidth of a collective (NVLink inside a rack counts in): 100 Tb/s, i.e. 12,500 GB/s.
MAX_BUS_GBPS = 100_000.0
# A latency above an hour is no latency a test measured.
MAX_LATENCY_US = 3_600e6


class Untrustworthy(ValueError):
    """A figure that is no measurement: its message names the figure and why it cannot be one."""


def measured(value: Any, what: str, unit: str = "", *, high: float | None = None) -> float:
    """`value` as a float when it is a finite, non-negative number no larger than `high`; `Untrustworthy` naming
    `what` otherwise. `unit` is only for the message (`Gb/s`, `us`)."""
    shown_unit = f" {unit}" if unit else ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Untrustworthy(f"{what} is {value!r}, not a number: untrustworthy output")
    number = float(value)
    if not math.isfinite(number):
        raise Untrustworthy(f"{what} is {value!r}, not a finite number: untrustworthy output")
    if number < 0:
        raise Untrustworthy(f"{what} is {number:g}{shown_unit}, negative: untrustworthy output")
    if high is not None and number > high:
        raise Untrustworthy(f"{what} is {number:g}{shown_unit}, above {high:g}{shown_unit}: untrustworthy output")
    return number


def rate_gbps(value: Any, what: str, *, high: float = MAX_FLOW_GBPS) -> float:
    """A rate in Gb/s a person may read: `measured` with the per-flow ceiling."""
    return measured(value, what, "Gb/s", high=high)


def consistent_rate(size_bytes: float, seconds: float, gbps: float, what: str, tolerance: float = 0.1) -> None:
    """A rate that its own bytes and seconds must give (within `tolerance`, a fraction; rounding and iperf3's
    timer resolution need a little). Nothing is checked when no time passed or nothing moved."""
    if seconds <= 0 or (size_bytes == 0 and gbps == 0):
        return
    implied = size_bytes * 8 / seconds / 1e9
    if abs(implied - gbps) > tolerance * max(implied, gbps) + 1e-6:
        raise Untrustworthy(
            f"{what} says {gbps:g} Gb/s but {size_bytes:g} bytes in {seconds:g} s is {implied:g} Gb/s: "
            "untrustworthy output"
        )
