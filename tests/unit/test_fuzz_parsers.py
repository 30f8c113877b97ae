"""Property tests over every parser and file reader: whatever text comes in (random, or a real output cut, spliced,
its numbers mangled), a parser returns a result or refuses with ValueError (one line, for the person reading), and
never raises anything else or hangs. The real outputs under tests/fixtures/real are the seeds of the mutations."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirespeed.adapters.files import Unreadable, read_text, utf8
from wirespeed.core import importer
from wirespeed.core.parsers import ethtool, jobconf, kernel_log, rdma_tools
from wirespeed.core.tools import iperf3, nccl_tests, perftest, sockperf

REAL = Path(__file__).parent.parent / "fixtures" / "real"
SEEDS = sorted(
    p.read_text(errors="replace")
    for p in REAL.rglob("*")
    if p.is_file() and p.suffix in (".txt", ".json") and p.stat().st_size < 200_000
)

PARSERS: dict[str, Callable[[str], Any]] = {
    "ethtool.parse_stats": ethtool.parse_stats,
    "ethtool.parse_features": ethtool.parse_features,
    "ibdev2netdev": rdma_tools.read_ibdev2netdev,
    "ibv_devinfo": rdma_tools.parse_ibv_devinfo,
    "show_gids": rdma_tools.parse_show_gids,
    "rdma_link": rdma_tools.parse_rdma_link,
    "iperf3.parse_json": iperf3.parse_json,
    "iperf3.parse_text": iperf3.parse_text,
    "iperf3.parse_version": iperf3.parse_version,
    "nccl_tests.parse_text": nccl_tests.parse_text,
    "nccl_tests.parse_json": nccl_tests.parse_json,
    "perftest.parse_text": perftest.parse_text,
    "perftest.parse_version": perftest.parse_version,
    "sockperf.parse": sockperf.parse,
    "sockperf.parse_version": sockperf.parse_version,
    "nccl.conf": lambda text: jobconf.nccl_conf(text, "/etc/nccl.conf"),
    "mca-params.conf": lambda text: jobconf.mca_params(text, "/etc/openmpi/openmpi-mca-params.conf"),
    "meminfo": lambda text: jobconf.meminfo_kb(text, "CmaTotal"),
    "kernel log": lambda text: kernel_log.after_boot(kernel_log.events(text.splitlines())),
    "import": lambda text: importer.import_text(text, "pasted.txt"),
}

NUMBER_NOISE = st.sampled_from(
    ["-1e308", "1e999", "nan", "NaN", "-0", "inf", "99999999999999999999999", "", "-", "0x1f"]
)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A real output, cut at a random place, with a slice spliced in from another, and numbers made absurd."""
    text = draw(st.sampled_from(SEEDS))
    cut = draw(st.integers(0, len(text)))
    text = text[:cut] if draw(st.booleans()) else text[cut:]
    if draw(st.booleans()):
        other = draw(st.sampled_from(SEEDS))
        at = draw(st.integers(0, len(other)))
        text = text + other[at : at + draw(st.integers(0, 400))]
    for _ in range(draw(st.integers(0, 3))):
        digits = [i for i, c in enumerate(text) if c.isdigit()]
        if not digits:
            break
        i = draw(st.sampled_from(digits))
        text = text[:i] + draw(NUMBER_NOISE) + text[i + 1 :]
    return text


ANY_TEXT = st.one_of(st.text(max_size=2000), mutated())


def survives(name: str, text: str) -> None:
    try:
        result = PARSERS[name](text)
    except ValueError as exc:  # a refusal: one line, readable
        message = str(exc)
        assert message and "\n" not in message.strip(), (name, message)
        return
    floats = [v for v in _numbers(result) if isinstance(v, float)]
    assert all(not math.isnan(v) or name in ("import", "nccl_tests.parse_text", "nccl_tests.parse_json")
               for v in floats), (name, text[:200])  # fmt: skip


def _numbers(value: Any, depth: int = 0) -> list[Any]:
    """The numbers anywhere in a parser's result (dataclasses, dicts, lists), a few levels deep."""
    if depth > 6:
        return []
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v, depth + 1)]
    if isinstance(value, list | tuple):
        return [n for v in value for n in _numbers(v, depth + 1)]
    if hasattr(value, "__dataclass_fields__"):
        return [n for f in value.__dataclass_fields__ for n in _numbers(getattr(value, f), depth + 1)]
    return []


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=ANY_TEXT)
def test_every_parser_returns_or_refuses_in_one_line(name: str, text: str) -> None:
    survives(name, text)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=4000))
def test_any_bytes_are_text_or_one_line_naming_the_byte(data: bytes) -> None:
    try:
        text = utf8(data)
    except Unreadable as exc:
        assert "byte 0x" in str(exc) and "\n" not in str(exc)
        return
    assert isinstance(text, str)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=3000), limit=st.integers(1, 5000))
def test_the_file_reader_reads_refuses_or_caps_never_more(tmp_path: Path, data: bytes, limit: int) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    try:
        text = read_text(path, limit)
    except Unreadable as exc:
        assert "\n" not in str(exc)
        return
    assert len(data) <= limit
    assert text.encode("utf-8") == data.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark is not text
