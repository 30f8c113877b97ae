"""iperf3 output, as text or `-J` JSON: the parsing is wirespeed.core.tools.iperf3's; this module keeps its rates in
bits per second, as the public format names them, and offers what the receiver counted to `compare`."""

from __future__ import annotations

from dataclasses import dataclass

from wirespeed.core.fabric.units import format_rate
from wirespeed.core.imports.kind import BANNER, JSON_FORM, ImportKind, Table, finite, num
from wirespeed.core.records.typed import JsonRecord
from wirespeed.core.tools import iperf3


def _is_json(text: str) -> bool:
    return iperf3.looks_like(text) == "json"


def _is_text(text: str) -> bool:
    return iperf3.looks_like(text) == "text"


def _bps(gbps: float | None) -> float | None:
    return None if gbps is None else round(gbps * 1e9, 3)


@dataclass(frozen=True)
class Iperf3(JsonRecord):
    """An iperf3 run's end totals (docs/import-format.md, `iperf3`): rates in bits/s."""

    source_format: str | None
    protocol: str | None
    streams: int | None
    sent_bps: float | None
    received_bps: float | None
    reverse_sent_bps: float | None
    reverse_received_bps: float | None
    retransmits: int | None
    cpu_host_pct: float | None
    cpu_remote_pct: float | None
    jitter_ms: float | None
    lost_datagrams: int | None
    total_datagrams: int | None
    error: str | None


def read(text: str) -> Iperf3:
    kind = iperf3.looks_like(text)
    try:
        result = iperf3.parse_json(text) if kind == "json" else iperf3.parse_text(text)
    except ValueError as exc:
        if str(exc).startswith("not iperf3 output"):  # recognised by its banner, so the results are what is missing
            raise ValueError("iperf3 output without interval, summary or error lines: the text was cut") from None
        raise
    return Iperf3(
        source_format="json" if kind == "json" else "text",
        protocol=result.protocol,
        streams=result.streams,
        sent_bps=_bps(result.sender_gbps),
        received_bps=_bps(result.receiver_gbps),
        reverse_sent_bps=_bps(result.reverse_sender_gbps),
        reverse_received_bps=_bps(result.reverse_receiver_gbps),
        retransmits=result.retransmits,
        cpu_host_pct=result.cpu_local_percent,
        cpu_remote_pct=result.cpu_remote_percent,
        jitter_ms=result.jitter_ms,
        lost_datagrams=result.lost_datagrams,
        total_datagrams=result.total_datagrams,
        error=result.error,
    )


def rows(obj: Iperf3) -> Table:
    def gbps(bps: float | None) -> str:
        return "-" if bps is None else format_rate(bps)

    out = [
        ["protocol", f"{obj.protocol or '-'}, {obj.streams or '?'} stream(s)"],
        ["sent", gbps(obj.sent_bps)],
        ["received", gbps(obj.received_bps)],
    ]
    if obj.reverse_received_bps is not None:
        out.append(["reverse received", gbps(obj.reverse_received_bps)])
    if obj.retransmits is not None:
        out.append(["retransmits", str(obj.retransmits)])
    if obj.cpu_host_pct is not None:
        out.append(["CPU host / remote", f"{obj.cpu_host_pct:.1f} % / {obj.cpu_remote_pct or 0:.1f} %"])
    if obj.total_datagrams is not None:
        out.append(["lost datagrams", f"{obj.lost_datagrams} of {obj.total_datagrams}"])
        out.append(["jitter", num(obj.jitter_ms, "ms", 3)])
    if obj.error:
        out.append(["error", obj.error])
    return ["figure", "value"], out


def figures(obj: Iperf3) -> dict[str, float]:
    """What the receiver counted, each way."""
    found: dict[str, float] = {}
    for value, name in ((obj.received_bps, "forward_gbps"), (obj.reverse_received_bps, "reverse_gbps")):
        if value is not None and finite(value):
            found[name] = float(value) / 1e9
    return found


KIND = ImportKind(
    tool="iperf3",
    names="iperf3",
    marks=((JSON_FORM + 2, _is_json), (BANNER, _is_text)),
    body=Iperf3,
    read=read,
    rows=rows,
    figures=figures,
)
