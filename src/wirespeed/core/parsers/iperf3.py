"""iperf3 `-J` output: the receiver's and sender's totals (10^9 bit/s), the reverse direction of `--bidir`,
retransmits, CPU, per-interval sums. A failed run's JSON carries `error`: kept, not raised."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Iperf3Interval:
    start_s: float
    end_s: float
    bytes: int
    gbps: float
    retransmits: int | None


@dataclass(frozen=True)
class Iperf3Result:
    protocol: str | None
    streams: int | None
    sender_gbps: float | None
    receiver_gbps: float | None
    reverse_sender_gbps: float | None
    reverse_receiver_gbps: float | None
    retransmits: int | None
    cpu_local_percent: float | None
    cpu_remote_percent: float | None
    intervals: tuple[Iperf3Interval, ...]
    version: str | None
    error: str | None


def _gbps(block: Any) -> float | None:
    if isinstance(block, dict) and isinstance(block.get("bits_per_second"), int | float):
        return float(block["bits_per_second"]) / 1e9
    return None


def parse_json(text: str) -> Iperf3Result:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not iperf3 JSON ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(data, dict) or not ({"start", "end", "error"} & set(data)):
        raise ValueError("not iperf3 JSON: no start, end or error object")
    start, end = data.get("start", {}) or {}, data.get("end", {}) or {}
    test = start.get("test_start", {}) if isinstance(start, dict) else {}
    cpu = end.get("cpu_utilization_percent", {}) if isinstance(end, dict) else {}
    sent = end.get("sum_sent") if isinstance(end, dict) else None
    intervals = []
    for item in data.get("intervals", []) or []:
        total = item.get("sum", {}) if isinstance(item, dict) else {}
        if isinstance(total, dict) and "bits_per_second" in total:
            intervals.append(
                Iperf3Interval(
                    float(total.get("start", 0.0)),
                    float(total.get("end", 0.0)),
                    int(total.get("bytes", 0)),
                    float(total["bits_per_second"]) / 1e9,
                    total.get("retransmits"),
                )
            )
    return Iperf3Result(
        protocol=test.get("protocol") if isinstance(test, dict) else None,
        streams=test.get("num_streams") if isinstance(test, dict) else None,
        sender_gbps=_gbps(sent),
        receiver_gbps=_gbps(end.get("sum_received") if isinstance(end, dict) else None),
        reverse_sender_gbps=_gbps(end.get("sum_sent_bidir_reverse") if isinstance(end, dict) else None),
        reverse_receiver_gbps=_gbps(end.get("sum_received_bidir_reverse") if isinstance(end, dict) else None),
        retransmits=sent.get("retransmits") if isinstance(sent, dict) else None,
        cpu_local_percent=cpu.get("host_total") if isinstance(cpu, dict) else None,
        cpu_remote_percent=cpu.get("remote_total") if isinstance(cpu, dict) else None,
        intervals=tuple(intervals),
        version=start.get("version") if isinstance(start, dict) else None,
        error=str(data["error"]) if data.get("error") else None,
    )
