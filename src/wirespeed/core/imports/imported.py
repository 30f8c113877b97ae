"""Imported tool outputs (the objects of docs/import-format.md) read back: the short summary a person looks at
first, and the figures `compare` may set beside the same file imported into another run. An import is evidence
beside a run (`wirespeed import --into RUN`), never one of its rungs and never its headline. Pure.

A measured or read tool's table and figures are its kind's (wirespeed.core.imports); the pasted outputs, which are
no kind, are summed up here."""

from __future__ import annotations

from wirespeed.core.imports import pasted, registry
from wirespeed.core.imports.record import ImportObject

PASTED = registry.PASTE_TOOLS


def _gid(gid: pasted.NcclGid) -> str:
    return f"{gid.device} GID {gid.index}" + (f" ({gid.address})" if gid.address else "")


def _nccl_info_rows(content: pasted.NcclInfo) -> list[list[str]]:
    rows = []
    for host in content.hosts:
        gdr = host.gdr
        parts = [
            f"NCCL {host.nccl_version}" if host.nccl_version else "",
            host.transport or "",
            ", ".join(host.hcas or host.socket_interfaces),
            ", ".join(_gid(g) for g in host.gid_indices),
            "" if gdr is None else f"GDR {int(gdr)}",
            host.gdr_note or "",
            f"{host.channels} channels" if host.channels else "",
            ", ".join(f"{k}={v}" for k, v in host.environment.items()),
            f"{len(host.warnings)} NCCL WARN" if host.warnings else "",
        ]
        rows.append([host.host or "-", "; ".join(p for p in parts if p) or "-"])
    return rows


def _kernel_log_rows(content: pasted.KernelLog) -> list[list[str]]:
    from wirespeed.core.parsers.kernel_log import kind_of

    rows = []
    for line in content.lines:
        event = kind_of(line.text)
        if event is not None:
            when = f"{line.seconds:.1f} s" if line.seconds is not None else line.clock or "-"
            rows.append([when, f"{event}: {line.text}"])
    return rows or [["-", f"{len(content.lines)} kernel lines, no NIC hot-plug, probe or slot-power event"]]


def _link(speed: float | None, width: int | None) -> str:
    return f"{'?' if speed is None else f'{speed:g}'} GT/s x{'?' if width is None else width}"


def _pasted_rows(content: pasted.Content) -> list[list[str]]:
    """What one pasted output says, a row per host, interface, device or event: (subject, what it says)."""
    if isinstance(content, pasted.NcclInfo):
        return _nccl_info_rows(content)
    if isinstance(content, pasted.KernelLog):
        return _kernel_log_rows(content)
    if isinstance(content, pasted.Lspci):
        return [
            [d.bdf or "-", f"{d.name or d.device_class or 'PCI function'}: LnkSta "
             f"{_link(d.sta_speed_gts, d.sta_width)} of LnkCap {_link(d.cap_speed_gts, d.cap_width)}"
             + (" (downgraded)" if d.downgraded else "")]
            for d in content.devices
        ]  # fmt: skip
    if isinstance(content, pasted.IpAddr | pasted.IpBrief):
        rows = []
        for i in content.interfaces:
            carrier = {True: "carrier", False: "no carrier", None: ""}[i.carrier]
            mtu = i.mtu if isinstance(i, pasted.IpInterface) else None
            parts = [i.state or "-", f"mtu {mtu}" if mtu else "", carrier, *i.ipv4, *i.ipv6]
            rows.append([i.name, " ".join(p for p in parts if p)])
        return rows
    if isinstance(content, pasted.Ethtool):
        return [
            [link.name or "-", (f"{link.speed_mbps} Mb/s" if link.speed_mbps else "speed unknown") + ", link "
             + {True: "detected", False: "not detected", None: "not shown"}[link.link_detected]
             + (f" ({link.link_detail})" if link.link_detail else "")]
            for link in content.links
        ]  # fmt: skip
    if isinstance(content, pasted.EthtoolFec):
        return [
            [s.name, f"active {' '.join(s.active) or '?'}, configured {' '.join(s.configured) or '?'}"
             + "".join(f", {k} {v}" for k, v in s.statistics.items())]
            for s in content.interfaces
        ]  # fmt: skip
    if isinstance(content, pasted.NvidiaSmiTopo):
        topo = content
        rows = [[gpu, ", ".join(f"{topo.nics.get(nic, nic)} {rel}" for nic, rel in topo.links.get(gpu, {}).items()
                                if nic != gpu) + (f"; CPUs {topo.cpu_affinity[gpu]}" if gpu in topo.cpu_affinity
                                                  else "")]
                for gpu in topo.gpus]  # fmt: skip
        return rows or [["-", "no GPU rows"]]
    return [[d.rdma_device, f"port {d.port} ==> {d.netdev} ({d.state or '?'})"] for d in content.devices]


def summary(obj: ImportObject) -> tuple[list[str], list[list[str]]]:
    """A short table per imported file (its columns and rows): the figures a person looks for first, units in the
    text. `wirespeed import` prints it; the report shows it under the run's imported results."""
    body = obj.body
    if isinstance(body, pasted.Paste):
        return ["line", "output", "subject", "what it says"], [
            [str(section.line), section.kind, *row]
            for section in body.sections
            for row in _pasted_rows(section.content)
        ]
    if isinstance(body, pasted.PastedOutput):
        return ["subject", "what it says"], _pasted_rows(body.content)
    kind = registry.kind_of(obj.tool)
    if kind is None:
        raise KeyError(f"no import kind writes tool {obj.tool!r}")  # the report shows such a file by its tool alone
    return kind.rows(body)


def figures(obj: ImportObject) -> dict[str, float]:
    """The figures of an imported measurement that `compare` sets beside the same file imported into another run,
    named with their units: each kind's `figures` (busbw per message size for nccl-tests, the largest message's rate
    for perftest, what the receiver counted for iperf3). Empty for what measures nothing."""
    kind = registry.kind_of(obj.tool)
    return {} if kind is None else kind.figures(obj.body)
