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
from wirespeed.core.imports import importer
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


# ------------------------------------------------- issue 35: a record holding a figure no measurement can have


def _rich_rung() -> dict[str, Any]:
    """A rung record with every kind of figure a rung holds: flows both ways, the wire, a collective, latency."""
    from wirespeed.core.records.results import (
        Ceiling,
        CollectiveSummary,
        Direction,
        Flow,
        FlowResult,
        Latency,
        RungResult,
        RungStatus,
        SizeFigures,
        WireFigures,
    )

    flow = Flow(("s1", "p0"), ("s2", "p0"), "10.0.0.1", "10.0.0.2", 200.0, 100.0, "p0", 200.0)
    wire = WireFigures(
        tx_gbps={("s1", "p0"): 95.0}, rx_gbps={("s2", "p0"): 94.0}, busiest_core={"s1": (3, 88.5)},
        cpu_average={"s1": 12.5}, errors={("s1", "p0"): {"rx_crc_errors": 2}}, peak_tx_gbps={"s1": 96.0},
        peak_rx_gbps={"s1": 95.0}, peak_duplex_gbps={"s1": 190.0}, steady_tx_gbps={"s1": 94.0},
        steady_rx_gbps={"s1": 93.0}, steady_intervals={"s1": 8}, interval_s=0.5,
    )  # fmt: skip
    rows = (SizeFigures(1 << 20, 5.0, 7.5, 210.0), SizeFigures(1 << 30, 11.0, 11.5, 97000.0))
    collective = CollectiveSummary("all_reduce", 2, rows, 9.5, "NET/IB", True, ("p0",), ("mlx5_0",))
    latency = Latency(flow, "sockperf", 64, 2.5, 4.0, 9.0, 1.9, 30.0, 2.6, 10000)
    rung = RungResult(
        "nccl-all_reduce", RungStatus.RAN, flows=(FlowResult(flow, Direction.FORWARD, 93.5),
        FlowResult(flow.reversed(), Direction.REVERSE, 92.0)), wire=wire, ceiling=Ceiling("wire", ("x",)),
        duration_s=12.0, collective=collective, latency=(latency,),
    )  # fmt: skip
    return rung.to_json()


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every number in a JSON value."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))]
    return []


RUNG = _rich_rung()
RUNG_LEAVES = _leaves(RUNG)
IMPOSSIBLE = [math.nan, math.inf, -math.inf, 1e308, -1e308, -100, -100.0, 10**30, 2.5e12]


def _replaced(record: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    import copy

    changed = copy.deepcopy(record)
    at: Any = changed
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return changed


def test_the_rich_rung_reads_back_whole_and_has_many_figures() -> None:
    from wirespeed.core.records.results import RungResult

    assert RungResult.from_json(RUNG, "r.json").to_json() == RUNG
    assert len(RUNG_LEAVES) > 50


@settings(max_examples=250, deadline=None)
@given(path=st.sampled_from(RUNG_LEAVES), value=st.sampled_from(IMPOSSIBLE))
def test_any_figure_of_a_rung_made_impossible_loads_as_damaged_naming_it(path: tuple[Any, ...], value: Any) -> None:
    """NaN, an infinity, 1e308, a negative or a figure past its unit's most, anywhere in a rung record: the record
    is damaged, and the one line says which field and which value (never 309 digits)."""
    from wirespeed.core.records.decode import Damaged
    from wirespeed.core.records.results import RungResult

    if path[-1] == "schema_version" and isinstance(value, int) and value > 2:
        return  # a newer schema: refused as such, not as damage
    if value == 2.5e12 and not _implausible(path, value):
        return  # only impossible for some units
    try:
        RungResult.from_json(_replaced(RUNG, path, value), "r.json")
    except Damaged as exc:
        message = str(exc)
        assert message.startswith("r.json: ") and str(path[-1]) in message and "damaged" in message
        assert "\n" not in message and len(message) < 300 and "0000000000" not in message, message
        return
    pytest.fail(f"{path} = {value!r} was read as a figure")


def _implausible(path: tuple[Any, ...], value: float) -> bool:
    """2.5e12 is past every unit's most but a count's (2^53) and a size's (2^50 bytes)."""
    from wirespeed.core.records.decode import unit_of

    keys = [k for k in path if isinstance(k, str)]
    unit = unit_of(keys[-1]) or (unit_of(keys[-2]) if len(keys) > 1 else None)
    return unit is not None and value > unit[2]


@settings(max_examples=40, deadline=None)
@given(path=st.sampled_from(RUNG_LEAVES), value=st.sampled_from([math.nan, math.inf, 1e308, -1e308, -100]))
def test_a_damaged_rung_is_never_compared(path: tuple[Any, ...], value: Any) -> None:
    """Two runs, one holding the rung damaged: `compare` names it damaged, sets no figure of it beside the other
    run's, counts nothing worse, and exits 3 (the run and the rung named)."""
    import io
    import json
    import tempfile

    from wirespeed.cli.main import main
    from wirespeed.cli.output import Environment
    from wirespeed.core.records.compare import DAMAGED, compare_runs, regressions
    from wirespeed.engine.runs import load_run

    if path[-1] == "schema_version":
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, record in (("a", RUNG), ("b", _replaced(RUNG, path, value))):
            (root / name).mkdir()
            (root / name / "discovery.json").write_text('{"nodes": {"s1": {}, "s2": {}}}')
            (root / name / "nccl-all_reduce.json").write_text(json.dumps(record))
        for first, second in (("a", "b"), ("b", "a")):
            before, after = load_run(root / first), load_run(root / second)
            assert [d.key for d in load_run(root / "b").damaged] == ["nccl-all_reduce"]
            changes = compare_runs(before, after)
            assert changes and regressions(changes, 5.0) == []
            for change in changes:
                assert change.before is None and change.after is None and change.percent is None
                assert DAMAGED in (change.status_before, change.status_after)
            env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
            code = main(["compare", first, second, "--runs", str(root)], env)
            err = env.stderr.getvalue()  # type: ignore[attr-defined]
            out = env.stdout.getvalue()  # type: ignore[attr-defined]
            assert code == 3 and "wirespeed: not compared: nccl-all_reduce in b is damaged" in err.splitlines()
            assert "Traceback" not in out + err and "0000000000" not in out + err
