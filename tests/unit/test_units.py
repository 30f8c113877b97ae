"""Rates: tc units in, bits per second inside, explicit units out."""

from __future__ import annotations

import pytest

from wirespeed.core.errors import UsageError
from wirespeed.core.fabric.units import format_rate, parse_rate_bps, tc_rate


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1gbit", 10**9),
        ("1Gbit", 10**9),
        ("500mbit", 500 * 10**6),
        ("300kbit", 300 * 10**3),
        ("2tbit", 2 * 10**12),
        ("2.5G", 2_500_000_000),
        ("2.5g", 2_500_000_000),
        ("100000000", 100_000_000),
        ("100000000bit", 100_000_000),
        ("1", 1),
        ("  1gbit  ", 10**9),
        ("1 gbit", 10**9),
        ("940Mb/s", 940 * 10**6),
        ("0.5mbit", 500_000),
    ],
)
def test_parse_rate_bps_accepts_tc_style_rates(text: str, expected: int) -> None:
    value = parse_rate_bps(text)
    assert value == expected
    assert isinstance(value, int)


def test_parse_rate_bps_uses_si_not_binary_prefixes() -> None:
    # tc and iperf3 read 1gbit as 10^9 bit/s, never 2^30.
    assert parse_rate_bps("1gbit") != 2**30
    assert parse_rate_bps("1kbit") == 1000


@pytest.mark.parametrize(
    "text",
    ["", "fast", "gbit", "1 2gbit", "-1gbit", "1e9", "1xbit", "1gbitx", "1,5gbit", "1gib"],
)
def test_parse_rate_bps_rejects_garbage_with_a_hint(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_rate_bps(text)
    assert repr(text) in info.value.message
    assert info.value.hint is not None
    assert "1gbit" in info.value.hint
    assert info.value.exit_status == 2
    assert "(hint: " in str(info.value)


@pytest.mark.parametrize("text", ["0", "0bit", "0.0gbit", "0mbit"])
def test_parse_rate_bps_rejects_zero(text: str) -> None:
    with pytest.raises(UsageError, match="positive"):
        parse_rate_bps(text)


def test_parse_rate_bps_never_returns_zero() -> None:
    with pytest.raises(UsageError):
        parse_rate_bps("0.4bit")


def test_parse_rate_bps_does_not_misread_tc_bytes_per_second() -> None:
    try:
        value = parse_rate_bps("1gbps")
    except UsageError:
        return
    assert value == 8 * 10**9


@pytest.mark.parametrize("rate", [1, 1_000, 999_999_999, 10**9, 2_500_000_000])
def test_tc_rate_is_lossless(rate: int) -> None:
    text = tc_rate(rate)
    assert text == f"{rate}bit"
    assert parse_rate_bps(text) == rate


@pytest.mark.parametrize(
    ("bps", "expected"),
    [
        (10**9, "1.00 Gb/s"),
        (2.5e9, "2.50 Gb/s"),
        (1.5e12, "1.50 Tb/s"),
        (940e6, "940.00 Mb/s"),
        (1e6, "1.00 Mb/s"),
        (12_500, "12.50 kb/s"),
        (999, "999 b/s"),
        (0, "0 b/s"),
        (-2e9, "-2.00 Gb/s"),
    ],
)
def test_format_rate_picks_the_unit(bps: float, expected: str) -> None:
    assert format_rate(bps) == expected


def test_format_rate_and_parse_agree_on_si_prefixes() -> None:
    assert format_rate(parse_rate_bps("500mbit")) == "500.00 Mb/s"
    assert format_rate(parse_rate_bps("2.5G")) == "2.50 Gb/s"
