"""Imported tool outputs (the objects of docs/import-format.md) read back: the short summary a person looks at
first, and the figures `compare` may set beside the same file imported into another run. An import is evidence
beside a run (`wirespeed import --into RUN`), never one of its rungs and never its headline. Pure.

A measured or read tool's table and figures are its kind's (wirespeed.core.imports); the pasted outputs, which are
no kind, are summed up here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wirespeed.core.imports import registry

PASTED = registry.PASTE_TOOLS


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
    kind = registry.kind_of(tool)
    if kind is None:
        raise KeyError(f"no import kind writes tool {tool!r}")  # the report shows such a file by its tool alone
    return kind.rows(obj)


def figures(obj: Mapping[str, Any]) -> dict[str, float]:
    """The figures of an imported measurement that `compare` sets beside the same file imported into another run,
    named with their units: each kind's `figures` (busbw per message size for nccl-tests, the largest message's rate
    for perftest, what the receiver counted for iperf3). Empty for what measures nothing."""
    kind = registry.kind_of(obj.get("tool"))
    return {} if kind is None else kind.figures(obj)
