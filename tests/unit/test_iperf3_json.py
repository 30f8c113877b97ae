"""iperf3 -J output as the bench reads it: real outputs from iperf3 3.6 and 3.9, and a failed run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wirespeed.core.tools.iperf3 import parse_json

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "iperf3"
CASES = sorted(REAL.glob("iperf3_json_*.txt"))


def test_both_real_json_outputs_are_covered() -> None:
    assert len(CASES) == 2


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_real_outputs_give_what_a_person_reads(path: Path) -> None:
    expect = json.loads(path.with_suffix(".json").read_text())["expect"]
    result = parse_json(path.read_text())
    assert result.version == expect["version"] and result.protocol == "TCP" and result.streams == 1
    assert result.receiver_gbps == pytest.approx(expect["sum_received"]["bits_per_second"] / 1e9)
    assert result.sender_gbps == pytest.approx(expect["sum_sent"]["bits_per_second"] / 1e9)
    assert result.retransmits == expect["sum_sent"]["retransmits"]
    assert len(result.intervals) == expect["n_intervals"]
    assert result.reverse_receiver_gbps is None and result.error is None
    if "cpu_utilization_percent" in expect:
        assert result.cpu_local_percent == pytest.approx(expect["cpu_utilization_percent"]["host_total"])


def test_a_failed_run_keeps_its_error_and_garbage_is_refused() -> None:
    failed = parse_json('{"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server"}')
    assert failed.error == "unable to connect to server" and failed.receiver_gbps is None
    bidir = parse_json(
        '{"start": {}, "end": {"sum_received": {"bits_per_second": 9.9e8},'
        ' "sum_received_bidir_reverse": {"bits_per_second": 9.8e8}}}'
    )
    assert (bidir.receiver_gbps, bidir.reverse_receiver_gbps) == (0.99, 0.98)
    with pytest.raises(ValueError, match="not iperf3 JSON"):
        parse_json("Connecting to host 10.0.0.2, port 5201")
    with pytest.raises(ValueError, match="not iperf3 JSON"):
        parse_json('{"hello": 1}')
