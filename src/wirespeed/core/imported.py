"""Imported tool outputs (the objects of docs/import-format.md) read back: the short summary a person looks at
first, and the figures `compare` may set beside the same file imported into another run. An import is evidence
beside a run (`wirespeed import --into RUN`), never one of its rungs and never its headline. Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from wirespeed.core.parsers.ethtool import ERROR_COUNTERS
from wirespeed.core.units import format_rate, format_size_bytes

PASTED = ("nccl-info", "kernel-log", "lspci", "ip-addr", "ip-brief", "ethtool", "ethtool-fec", "nvidia-smi-topo")


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


def _gid(gid: Mapping[str, Any]) -> str:
    address = gid.get("address")
    return f"{gid['device']} GID {gid['index']}" + (f" ({address})" if address else "")


def _pasted_rows(kind: str, obj: Mapping[str, Any]) -> list[list[str]]:
    """What one pasted output says, a row per host, interface, device or event: (subject, what it says)."""
    if kind == "nccl-info":
        rows = []
        for host in obj["hosts"]:
            gdr = host["gdr"]
            parts = [
                f"NCCL {host['nccl_version']}" if host["nccl_version"] else "",
                host["transport"] or "",
                ", ".join(host["hcas"] or host["socket_interfaces"]),
                ", ".join(_gid(g) for g in host["gid_indices"]),
                "" if gdr is None else f"GDR {int(gdr)}",
                host.get("gdr_note") or "",
                f"{host['channels']} channels" if host["channels"] else "",
                ", ".join(f"{k}={v}" for k, v in host["environment"].items()),
                f"{len(host['warnings'])} NCCL WARN" if host["warnings"] else "",
            ]
            rows.append([host["host"] or "-", "; ".join(p for p in parts if p) or "-"])
        return rows
    if kind == "kernel-log":
        from wirespeed.core.parsers.kernel_log import kind_of

        rows = []
        for line in obj["lines"]:
            event = kind_of(line["text"])
            if event is not None:
                when = f"{line['seconds']:.1f} s" if line["seconds"] is not None else line["clock"] or "-"
                rows.append([when, f"{event}: {line['text']}"])
        return rows or [["-", f"{len(obj['lines'])} kernel lines, no NIC hot-plug, probe or slot-power event"]]
    if kind == "lspci":

        def link(speed: float | None, width: int | None) -> str:
            return f"{'?' if speed is None else f'{speed:g}'} GT/s x{'?' if width is None else width}"

        return [
            [d["bdf"] or "-", f"{d['name'] or d['device_class'] or 'PCI function'}: LnkSta "
             f"{link(d['sta_speed_gts'], d['sta_width'])} of LnkCap {link(d['cap_speed_gts'], d['cap_width'])}"
             + (" (downgraded)" if d["downgraded"] else "")]
            for d in obj["devices"]
        ]  # fmt: skip
    if kind in ("ip-addr", "ip-brief"):
        rows = []
        for i in obj["interfaces"]:
            carrier = {True: "carrier", False: "no carrier", None: ""}[i["carrier"]]
            parts = [i["state"] or "-", f"mtu {i['mtu']}" if i.get("mtu") else "", carrier, *i["ipv4"], *i["ipv6"]]
            rows.append([i["name"], " ".join(p for p in parts if p)])
        return rows
    if kind == "ethtool":
        return [
            [link["name"] or "-", (f"{link['speed_mbps']} Mb/s" if link["speed_mbps"] else "speed unknown") + ", link "
             + {True: "detected", False: "not detected", None: "not shown"}[link["link_detected"]]
             + (f" ({link['link_detail']})" if link["link_detail"] else "")]
            for link in obj["links"]
        ]  # fmt: skip
    if kind == "ethtool-fec":
        return [
            [s["name"], f"active {' '.join(s['active']) or '?'}, configured {' '.join(s['configured']) or '?'}"
             + "".join(f", {k} {v}" for k, v in s["statistics"].items())]
            for s in obj["interfaces"]
        ]  # fmt: skip
    if kind == "nvidia-smi-topo":
        rows = [[gpu, ", ".join(f"{obj['nics'].get(nic, nic)} {rel}" for nic, rel in obj["links"].get(gpu, {}).items()
                                if nic != gpu) + (f"; CPUs {obj['cpu_affinity'][gpu]}" if gpu in obj["cpu_affinity"]
                                                  else "")]
                for gpu in obj["gpus"]]  # fmt: skip
        return rows or [["-", "no GPU rows"]]
    if kind == "ibdev2netdev":
        return [[d["rdma_device"], f"port {d['port']} ==> {d['netdev']} ({d['state'] or '?'})"] for d in obj["devices"]]
    return []


def summary(obj: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """A short table per imported file (its columns and rows): the figures a person looks for first, units in the
    text. `wirespeed import` prints it; the report shows it under the run's imported results."""
    tool = obj["tool"]
    if tool == "paste":
        return ["line", "output", "subject", "what it says"], [
            [str(section["line"]), section["kind"], *row]
            for section in obj["sections"]
            for row in _pasted_rows(section["kind"], section)
        ]
    if tool in PASTED:
        return ["subject", "what it says"], _pasted_rows(tool, obj)
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


# ------------------------------------------------------------------------------------------ figures to compare


def _placement(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The out-of-place half (what nccl-tests' summary and wirespeed's own rung use), else the in-place one."""
    for name in ("out_of_place", "in_place"):
        half = row.get(name)
        if isinstance(half, Mapping) and _finite(half.get("busbw_GBps")):
            return half
    return None


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def figures(obj: Mapping[str, Any]) -> dict[str, float]:
    """The figures of an imported measurement that `compare` sets beside the same file imported into another run,
    named with their units: busbw per message size (nccl-tests), the largest message's rate (perftest; `-b` is
    both directions added, named so), what the receiver counted (iperf3). Empty for what measures nothing."""
    tool = obj.get("tool")
    found: dict[str, float] = {}
    if tool == "nccl-tests":
        for row in obj.get("rows") or []:
            half = _placement(row) if isinstance(row, Mapping) else None
            if half is not None and isinstance(row.get("size_bytes"), int):
                found[f"busbw_GBps @ {row['size_bytes']} B"] = float(half["busbw_GBps"])
    elif tool == "perftest" and obj.get("kind") == "bw":
        rows = [r for r in obj.get("rows") or [] if isinstance(r, Mapping) and _finite(r.get("bw_avg_gbps"))]
        if rows:
            largest = max(rows, key=lambda r: r.get("size_bytes") or 0)
            name = "full_duplex_gbps" if obj.get("bidirectional") else "forward_gbps"
            found[name] = float(largest["bw_avg_gbps"])
    elif tool == "iperf3":
        for key, name in (("received_bps", "forward_gbps"), ("reverse_received_bps", "reverse_gbps")):
            if _finite(obj.get(key)):
                found[name] = float(obj[key]) / 1e9
    return found
