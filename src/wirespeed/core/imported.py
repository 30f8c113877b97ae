"""Imported tool outputs (the objects of docs/import-format.md) read back: the short summary a person looks at
first, and, for the measuring tools, the rung result they stand for in a run directory, so that `report` and
`compare` treat results imported with `wirespeed import --into RUN_DIR` like measured ones. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wirespeed.core.parsers.ethtool import ERROR_COUNTERS
from wirespeed.core.units import format_rate, format_size_bytes

IMPORTED_PREFIX = "imported-"


def _sizes(rows: list[dict[str, Any]]) -> str:
    first, last = format_size_bytes(rows[0]["size_bytes"]), format_size_bytes(rows[-1]["size_bytes"])
    count = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
    return f"{first} ({count})" if first == last else f"{first} .. {last} ({count})"


def _num(value: float | None, unit: str, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f} {unit}"


def _nccl_rows(obj: Mapping[str, Any]) -> list[list[str]]:
    rows = obj["rows"]
    placements = [
        (row["size_bytes"], name, placement)
        for row in rows
        for name in ("out_of_place", "in_place")
        if (placement := row[name]) is not None and placement["busbw_GBps"] is not None
    ]
    out = [
        ["collective", obj["collective"] or "-"],
        ["ranks", str(obj["ranks"]) if obj["ranks"] is not None else "-"],
        ["transport", obj["transport"] or "-"],
    ]
    if rows:
        out.append(["sizes", _sizes(rows)])
    if placements:
        size, name, best = max(placements, key=lambda item: item[2]["busbw_GBps"])
        out.append(
            ["peak busbw", f"{best['busbw_GBps']:.2f} GB/s at {format_size_bytes(size)} ({name.replace('_', '-')})"]
        )
    out.append(["avg busbw", _num(obj["avg_busbw_GBps"], "GB/s", 3) if obj["complete"] else "- (run cut off)"])
    return out


def _perftest_rows(obj: Mapping[str, Any]) -> list[list[str]]:
    rows = obj["rows"]
    out = [
        ["test", obj["test"] or "-"],
        ["device", f"{obj['device'] or '-'} ({obj['link_type'] or '?'}, MTU {obj['mtu_bytes'] or '?'} B)"],
        ["sizes", _sizes(rows)],
    ]
    if obj["kind"] == "bw":
        averages = [row for row in rows if row["bw_avg_gbps"] is not None]
        if averages:
            best = max(averages, key=lambda row: row["bw_avg_gbps"])
            out.append(["BW average", f"{best['bw_avg_gbps']:.2f} Gb/s at {format_size_bytes(best['size_bytes'])}"])
        else:
            out.append(["BW average", "- (unit not known: perftest JSON without a message rate)"])
        peaks = [row["bw_peak_gbps"] for row in rows if row["bw_peak_gbps"] is not None]
        out.append(["BW peak", f"{max(peaks):.2f} Gb/s" if peaks else "- (not measured)"])
        out.append(["bidirectional", "yes" if obj["bidirectional"] else "no"])
    else:
        first = rows[0]
        out.append([f"t_typical at {format_size_bytes(first['size_bytes'])}", _num(first["t_typical_us"], "us")])
        out.append([f"t_avg at {format_size_bytes(first['size_bytes'])}", _num(first["t_avg_us"], "us")])
        out.append([f"99.9% at {format_size_bytes(first['size_bytes'])}", _num(first["p999_us"], "us")])
    return out


def _iperf3_rows(obj: Mapping[str, Any]) -> list[list[str]]:
    def gbps(bps: float | None) -> str:
        return "-" if bps is None else format_rate(bps)

    out = [
        ["protocol", f"{obj['protocol'] or '-'}, {obj['streams'] or '?'} stream(s)"],
        ["sent", gbps(obj["sent_bps"])],
        ["received", gbps(obj["received_bps"])],
    ]
    if obj["reverse_received_bps"] is not None:
        out.append(["reverse received", gbps(obj["reverse_received_bps"])])
    if obj["retransmits"] is not None:
        out.append(["retransmits", str(obj["retransmits"])])
    if obj["cpu_host_pct"] is not None:
        out.append(["CPU host / remote", f"{obj['cpu_host_pct']:.1f} % / {obj['cpu_remote_pct'] or 0:.1f} %"])
    if obj["total_datagrams"] is not None:
        out.append(["lost datagrams", f"{obj['lost_datagrams']} of {obj['total_datagrams']}"])
        out.append(["jitter", _num(obj["jitter_ms"], "ms", 3)])
    if obj["error"]:
        out.append(["error", obj["error"]])
    return out


def _ethtool_rows(obj: Mapping[str, Any]) -> list[list[str]]:
    counters: dict[str, int] = obj["counters"]
    errors = [f"{name} {counters[name]}" for name in ERROR_COUNTERS if counters.get(name)]
    return [["counters", str(len(counters))], ["error counters above 0", ", ".join(errors) or "none"]]


def summary(obj: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """A short table per imported file (its columns and rows): the figures a person looks for first, units in the
    text. `wirespeed import` prints it; the report shows it under the run's imported results."""
    tool = obj["tool"]
    if tool in ("nccl-tests", "perftest", "iperf3", "ethtool-stats"):
        rows = {
            "nccl-tests": _nccl_rows,
            "perftest": _perftest_rows,
            "iperf3": _iperf3_rows,
            "ethtool-stats": _ethtool_rows,
        }[tool](obj)
        columns = ["figure", "value"]
    elif tool == "ibdev2netdev":
        columns = ["RDMA device", "port", "netdev", "state"]
        rows = [[d["rdma_device"], str(d["port"]), d["netdev"], d["state"] or "-"] for d in obj["devices"]]
    elif tool == "ibv_devinfo":
        columns = ["hca_id", "port", "state", "link layer", "active MTU", "firmware"]
        rows = [
            [d["hca_id"], str(p["port"]), p["state"] or "-", p["link_layer"] or "-",
             _num(p["active_mtu_bytes"], "B", 0), d["fw_ver"] or "-"]
            for d in obj["devices"]
            for p in d["ports"]
        ]  # fmt: skip
    elif tool == "show_gids":
        columns = ["device", "port", "index", "GID", "IPv4", "version", "netdev"]
        rows = [
            [g["rdma_device"], str(g["port"]), str(g["index"]), g["gid"], g["ipv4"] or "", g["roce_version"] or "",
             g["netdev"] or ""]
            for g in obj["gids"]
        ]  # fmt: skip
    else:
        columns = ["link", "state", "physical state", "netdev"]
        rows = [
            [f"{link['rdma_device']}/{link['port'] if link['port'] is not None else '-'}", link["state"] or "-",
             link["physical_state"] or "-", link["netdev"] or "-"]
            for link in obj["links"]
        ]  # fmt: skip
    return columns, rows


# ------------------------------------------------------------------------------------------- as a rung result


def _placement(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The out-of-place half (what nccl-tests' summary and wirespeed's own rung use), else the in-place one."""
    for name in ("out_of_place", "in_place"):
        half = row.get(name)
        if isinstance(half, Mapping) and isinstance(half.get("busbw_GBps"), int | float):
            return half
    return None


def _rung(name: str, obj: Mapping[str, Any], forward: float | None, reverse: float | None) -> dict[str, Any]:
    duplex = None if forward is None else forward + (reverse or 0.0)
    return {
        "rung": name,
        "status": "ran",
        "reason": None,
        "fix": None,
        "seconds": None,
        "forward_gbps": forward,
        "reverse_gbps": reverse,
        "full_duplex_gbps": duplex,
        "flows": [],
        "wire": None,
        "ceiling": None,
        "collective": None,
        "notes": [f"imported from {obj.get('file')} ({obj.get('tool')}, {obj.get('source_format')})"],
    }


def _nccl_rung(name: str, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    rows = []
    for row in obj.get("rows") or []:
        half = _placement(row)
        if half is not None:
            rows.append(
                {
                    "size_bytes": row["size_bytes"],
                    "time_us": half.get("time_us"),
                    "algbw_GBps": half.get("algbw_GBps"),
                    "busbw_GBps": half["busbw_GBps"],
                }
            )
    if not rows:
        return None
    peak = max(rows, key=lambda r: r["busbw_GBps"])
    per_direction = peak["busbw_GBps"] * 8  # busbw is per direction (GB/s); every rank sends and receives it
    rung = _rung(name, obj, per_direction, None)
    rung["full_duplex_gbps"] = 2 * per_direction
    rung["collective"] = {
        "collective": obj.get("collective"),
        "ranks": obj.get("ranks"),
        "transport": obj.get("transport"),
        "gdr": obj.get("gdr"),
        "socket_interfaces": [],
        "ib_devices": [],
        "figures_from": "imported",
        "wrong_elements": None,
        "complete": obj.get("complete"),
        "nccl_version": obj.get("nccl_version"),
        "avg_busbw_GBps": obj.get("avg_busbw_GBps"),
        "peak_busbw_GBps": peak["busbw_GBps"],
        "peak_at_bytes": peak["size_bytes"],
        "rows": rows,
    }
    return rung


def _perftest_rung(name: str, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    if obj.get("kind") != "bw":
        return None  # latency has no bandwidth figure; the report lists it with the other imports
    rows = [r for r in obj.get("rows") or [] if isinstance(r.get("bw_avg_gbps"), int | float)]
    if not rows:
        return None
    largest = max(rows, key=lambda r: r["size_bytes"])  # what wirespeed's own rdma-bw rung reports
    if obj.get("bidirectional"):  # perftest's -b figure is both directions added: never halved by guess
        rung = _rung(name, obj, None, None)
        rung["full_duplex_gbps"] = largest["bw_avg_gbps"]
        return rung
    return _rung(name, obj, largest["bw_avg_gbps"], None)


def _iperf3_rung(name: str, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    def gbps(key: str) -> float | None:
        value = obj.get(key)
        return value / 1e9 if isinstance(value, int | float) else None

    forward = gbps("received_bps")
    return None if forward is None else _rung(name, obj, forward, gbps("reverse_received_bps"))


def as_rung(stem: str, obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The rung result (as `<rung>.json` holds it) an imported measurement stands for, named `imported-<stem>`;
    None for what measures nothing (ethtool -S, ibdev2netdev, ...) or holds no figure."""
    name = IMPORTED_PREFIX + stem
    tool = obj.get("tool")
    if tool == "nccl-tests":
        return _nccl_rung(name, obj)
    if tool == "perftest":
        return _perftest_rung(name, obj)
    if tool == "iperf3":
        return _iperf3_rung(name, obj)
    return None
