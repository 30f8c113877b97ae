"""The records of what owners paste (docs/import-format.md, "What owners paste"): one record per pasted kind for
what its output says (`CONTENTS`), the body of one pasted output (`PastedOutput`, tool `nccl-info`, `lspci`, ...)
and of a file of several (`Paste`, tool `paste`, a `Section` each). Pure.

A pasted output's keys sit beside its head (`command`, `host`) and before its `skipped_lines`, and a section's beside
its `line`, `kind`, `command` and `host`: the kind's record is written into the same JSON object and read back from
it, chosen by the object's `tool` (a section's `kind`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from wirespeed.core.imports.rdma_tools import Ibdev2netdevDevice
from wirespeed.core.records.decode import Fields
from wirespeed.core.records.typed import JsonRecord, read_value

# ------------------------------------------------------------------------------------------------ nccl-info


@dataclass(frozen=True)
class NcclGid(JsonRecord):
    """The GID index an HCA's queue pairs used, the GID decoded, and the path MTU."""

    device: str
    index: int
    address: str | None
    mtu_bytes: int | None


@dataclass(frozen=True)
class NcclInfoHost(JsonRecord):
    host: str | None
    nccl_version: str | None
    environment: Mapping[str, str]
    network: str | None
    transport: str | None
    hcas: tuple[str, ...]
    socket_interfaces: tuple[str, ...]
    oob: str | None
    gdr: bool | None
    gdr_by_hca: Mapping[str, bool]
    ring_gdr: bool | None
    gdr_note: str | None
    gdr_finding: bool
    gid_indices: tuple[NcclGid, ...]
    channels: int | None
    via: Mapping[str, int]
    ranks: int | None
    nodes: int | None
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class NcclInfo(JsonRecord):
    hosts: tuple[NcclInfoHost, ...]


# ----------------------------------------------------------------------------------------------- kernel-log


@dataclass(frozen=True)
class KernelLine(JsonRecord):
    line: int
    seconds: float | None
    clock: str | None
    text: str


@dataclass(frozen=True)
class KernelLog(JsonRecord):
    lines: tuple[KernelLine, ...]


# ---------------------------------------------------------------------------------------------------- lspci


@dataclass(frozen=True)
class PciDevice(JsonRecord):
    bdf: str | None
    device_class: str | None
    name: str | None
    numa_node: int | None
    driver: str | None
    cap_speed_gts: float | None
    cap_width: int | None
    sta_speed_gts: float | None
    sta_width: int | None
    downgraded: bool
    slot_power_w: float | None


@dataclass(frozen=True)
class Lspci(JsonRecord):
    devices: tuple[PciDevice, ...]


# ------------------------------------------------------------------------------------------ ip-addr, ip-brief


@dataclass(frozen=True)
class IpInterface(JsonRecord):
    name: str
    flags: tuple[str, ...]
    mtu: int | None
    state: str | None
    link_type: str | None
    mac: str | None
    ipv4: tuple[str, ...]
    ipv6: tuple[str, ...]
    carrier: bool | None


@dataclass(frozen=True)
class IpAddr(JsonRecord):
    interfaces: tuple[IpInterface, ...]


@dataclass(frozen=True)
class BriefInterface(JsonRecord):
    name: str
    state: str | None
    ipv4: tuple[str, ...]
    ipv6: tuple[str, ...]
    mac: str | None
    flags: tuple[str, ...] | None  # `ip -br link` only
    carrier: bool | None


@dataclass(frozen=True)
class IpBrief(JsonRecord):
    interfaces: tuple[BriefInterface, ...]


# ---------------------------------------------------------------------------------------- ethtool, ethtool-fec


@dataclass(frozen=True)
class EthtoolLink(JsonRecord):
    name: str | None
    speed_mbps: int | None
    duplex: str | None
    port: str | None
    autoneg: str | None
    lanes: int | None
    link_detected: bool | None
    link_detail: str | None


@dataclass(frozen=True)
class Ethtool(JsonRecord):
    links: tuple[EthtoolLink, ...]


@dataclass(frozen=True)
class FecInterface(JsonRecord):
    name: str
    configured: tuple[str, ...]
    active: tuple[str, ...]
    statistics: Mapping[str, int]
    lanes: Mapping[str, tuple[int, ...]]  # per statistic, lane 0 first


@dataclass(frozen=True)
class EthtoolFec(JsonRecord):
    interfaces: tuple[FecInterface, ...]


# ------------------------------------------------------------------------------------ nvidia-smi-topo, ibdev2netdev


@dataclass(frozen=True)
class NvidiaSmiTopo(JsonRecord):
    gpus: tuple[str, ...]
    nics: Mapping[str, str]
    links: Mapping[str, Mapping[str, str]]  # row -> column -> relation as printed
    cpu_affinity: Mapping[str, str]
    numa_affinity: Mapping[str, str]


@dataclass(frozen=True)
class PastedIbdev2netdev(JsonRecord):
    """ibdev2netdev among other pasted outputs: its mappings (the lines it skipped are the paste's)."""

    devices: tuple[Ibdev2netdevDevice, ...]


Content = NcclInfo | KernelLog | Lspci | IpAddr | IpBrief | Ethtool | EthtoolFec | NvidiaSmiTopo | PastedIbdev2netdev
CONTENTS: dict[str, type[Content]] = {
    "nccl-info": NcclInfo,
    "kernel-log": KernelLog,
    "lspci": Lspci,
    "ip-addr": IpAddr,
    "ip-brief": IpBrief,
    "ethtool": Ethtool,
    "ethtool-fec": EthtoolFec,
    "nvidia-smi-topo": NvidiaSmiTopo,
    "ibdev2netdev": PastedIbdev2netdev,
}


KIND_OF: dict[type[Content], str] = {record: kind for kind, record in CONTENTS.items()}


def _content(kind: Any, data: Any, where: str, key: str) -> Content:
    reader = CONTENTS.get(kind) if isinstance(kind, str) else None
    if reader is None:
        raise ValueError(f"{where}: {key}: {kind!r} is no pasted output wirespeed reads")
    return reader.from_json(data, where)


# ------------------------------------------------------------------------------------------- the bodies


@dataclass(frozen=True)
class PasteSkipped(JsonRecord):
    """A non-blank line read past, with why (`prompt`, `markdown fence`, `not part of the lspci output`, ...)."""

    line: int
    text: str
    why: str | None


@dataclass(frozen=True)
class PastedOutput:
    """The body of one pasted output (tool `nccl-info`, `lspci`, ...): its prompt's command and host, what it says
    (`content`, the kind's record) and the lines read past."""

    source_format: str | None
    command: str | None
    host: str | None
    content: Content
    skipped_lines: tuple[PasteSkipped, ...]

    @property
    def tool(self) -> str:
        """The `tool` of the object holding it: its content's kind."""
        return KIND_OF[type(self.content)]

    def to_json(self) -> dict[str, Any]:
        return {
            "source_format": self.source_format,
            "command": self.command,
            "host": self.host,
            **self.content.to_json(),
            "skipped_lines": [s.to_json() for s in self.skipped_lines],
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        record = Fields(data, where)
        return cls(
            source_format=record.opt_text("source_format"),
            command=record.opt_text("command"),
            host=record.opt_text("host"),
            content=_content(record.raw("tool"), data, where, "tool"),
            skipped_lines=read_value(record.raw("skipped_lines"), tuple[PasteSkipped, ...], f"{where}: skipped_lines"),
        )


@dataclass(frozen=True)
class Section:
    """One output of a paste: the line it starts on, its kind, its prompt's command and host, what it says."""

    line: int
    kind: str
    command: str | None
    host: str | None
    content: Content

    def to_json(self) -> dict[str, Any]:
        head = {"line": self.line, "kind": self.kind, "command": self.command, "host": self.host}
        return {**head, **self.content.to_json()}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        record = Fields(data, where)
        return cls(
            line=record.whole("line"),
            kind=record.text("kind"),
            command=record.opt_text("command"),
            host=record.opt_text("host"),
            content=_content(record.raw("kind"), data, where, "kind"),
        )


@dataclass(frozen=True)
class Paste:
    """The body of a file of several pasted outputs (tool `paste`): a section per output, in file order."""

    source_format: str | None
    sections: tuple[Section, ...]
    skipped_lines: tuple[PasteSkipped, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "source_format": self.source_format,
            "sections": [s.to_json() for s in self.sections],
            "skipped_lines": [s.to_json() for s in self.skipped_lines],
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        record = Fields(data, where)
        return cls(
            source_format=record.opt_text("source_format"),
            sections=tuple(Section.from_json(s.data, s.where) for s in record.objects("sections")),
            skipped_lines=read_value(record.raw("skipped_lines"), tuple[PasteSkipped, ...], f"{where}: skipped_lines"),
        )
