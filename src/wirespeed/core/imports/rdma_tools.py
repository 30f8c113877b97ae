"""The four small RDMA tools (ibdev2netdev, ibv_devinfo, show_gids, rdma link): one ImportKind each, kept in one
module because they share one parser (wirespeed.core.parsers.rdma_tools) and one detection, its `looks_like`, which
tells them apart by fixed line shapes in the order ibv_devinfo, show_gids, rdma link, ibdev2netdev."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from wirespeed.core.imports.kind import FIXED_LINES, ImportKind, Table, num
from wirespeed.core.parsers import rdma_tools
from wirespeed.core.parsers.paste import split
from wirespeed.core.records.typed import JsonRecord


def _is(tool: str) -> Callable[[str], bool]:
    """The mark of one of the four: the parser's `looks_like` naming it (its own order settles overlaps)."""

    def mark(text: str) -> bool:
        return rdma_tools.looks_like(text) == tool

    return mark


# ---------------------------------------------------------------------------------------------- ibdev2netdev


@dataclass(frozen=True)
class Ibdev2netdevDevice(JsonRecord):
    """One mapping line; the fields after `state` come with `-v` only."""

    rdma_device: str
    port: int
    netdev: str
    state: str | None
    port_state: str | None
    pci_address: str | None
    device_id: str | None
    part_id: str | None
    fw_ver: str | None


@dataclass(frozen=True)
class SkippedLine(JsonRecord):
    """A non-blank line that holds no mapping, as in the file."""

    line: int
    text: str


@dataclass(frozen=True)
class Ibdev2netdev(JsonRecord):
    source_format: str | None
    devices: tuple[Ibdev2netdevDevice, ...]
    skipped_lines: tuple[SkippedLine, ...]


def ibdev2netdev_devices(listing: rdma_tools.NetdevListing) -> tuple[Ibdev2netdevDevice, ...]:
    """A listing's mappings as the import format keeps them (also a pasted section's)."""
    return tuple(Ibdev2netdevDevice(**asdict(m)) for m in listing.mappings)


def _read_ibdev2netdev(text: str) -> Ibdev2netdev:
    """The mappings, and the non-blank lines that hold none (prompts, comments, notes), so what was read past is
    said rather than silently dropped."""
    listing = rdma_tools.read_ibdev2netdev(text)
    return Ibdev2netdev(
        source_format="text",
        devices=ibdev2netdev_devices(listing),
        skipped_lines=tuple(SkippedLine(s.line, s.text) for s in listing.skipped),
    )


def _ibdev2netdev_rows(obj: Ibdev2netdev) -> Table:
    columns = ["RDMA device", "port", "netdev", "state"]
    return columns, [[d.rdma_device, str(d.port), d.netdev, d.state or "-"] for d in obj.devices]


def _among_other_outputs(text: str) -> bool:
    """ibdev2netdev's lines in a file of several pasted outputs: the paste reader keeps them all."""
    return len(split(text).sections) > 1


IBDEV2NETDEV = ImportKind(
    tool="ibdev2netdev",
    names="ibdev2netdev",
    marks=((FIXED_LINES + 3, _is("ibdev2netdev")),),
    body=Ibdev2netdev,
    read=_read_ibdev2netdev,
    rows=_ibdev2netdev_rows,
    paste_first=_among_other_outputs,
)

# ----------------------------------------------------------------------------------------------- ibv_devinfo


@dataclass(frozen=True)
class DevinfoGid(JsonRecord):
    index: int
    gid: str
    type: str | None


@dataclass(frozen=True)
class DevinfoPort(JsonRecord):
    port: int
    state: str | None
    max_mtu_bytes: int | None
    active_mtu_bytes: int | None
    sm_lid: int | None
    port_lid: int | None
    port_lmc: int | None
    link_layer: str | None
    phys_state: str | None
    active_width_lanes: int | None
    active_speed_gbps: float | None
    gids: tuple[DevinfoGid, ...]


@dataclass(frozen=True)
class DevinfoDevice(JsonRecord):
    hca_id: str
    transport: str | None
    fw_ver: str | None
    node_guid: str | None
    sys_image_guid: str | None
    vendor_id: str | None
    vendor_part_id: int | None
    hw_ver: str | None
    board_id: str | None
    phys_port_cnt: int | None
    ports: tuple[DevinfoPort, ...]


@dataclass(frozen=True)
class IbvDevinfo(JsonRecord):
    source_format: str | None
    devices: tuple[DevinfoDevice, ...]


def _devinfo_device(d: rdma_tools.DevinfoDevice) -> DevinfoDevice:
    ports = tuple(DevinfoPort(**{**asdict(p), "gids": tuple(DevinfoGid(**asdict(g)) for g in p.gids)}) for p in d.ports)
    return DevinfoDevice(**{**asdict(d), "ports": ports})


def _read_ibv_devinfo(text: str) -> IbvDevinfo:
    return IbvDevinfo("text", tuple(_devinfo_device(d) for d in rdma_tools.parse_ibv_devinfo(text)))


def _ibv_devinfo_rows(obj: IbvDevinfo) -> Table:
    columns = ["hca_id", "port", "state", "link layer", "active MTU", "firmware"]
    return columns, [
        [d.hca_id, str(p.port), p.state or "-", p.link_layer or "-", num(p.active_mtu_bytes, "B", 0), d.fw_ver or "-"]
        for d in obj.devices
        for p in d.ports
    ]


IBV_DEVINFO = ImportKind(
    tool="ibv_devinfo",
    names="ibv_devinfo",
    marks=((FIXED_LINES, _is("ibv_devinfo")),),
    body=IbvDevinfo,
    read=_read_ibv_devinfo,
    rows=_ibv_devinfo_rows,
)

# ------------------------------------------------------------------------------------------------- show_gids


@dataclass(frozen=True)
class ShowGidsRow(JsonRecord):
    rdma_device: str
    port: int
    index: int
    gid: str
    ipv4: str | None
    roce_version: str | None
    netdev: str | None


@dataclass(frozen=True)
class ShowGids(JsonRecord):
    source_format: str | None
    gids: tuple[ShowGidsRow, ...]
    n_gids_found: int | None


def _read_show_gids(text: str) -> ShowGids:
    rows, total = rdma_tools.parse_show_gids(text)
    return ShowGids("text", tuple(ShowGidsRow(**asdict(row)) for row in rows), total)


def _show_gids_rows(obj: ShowGids) -> Table:
    columns = ["device", "port", "index", "GID", "IPv4", "version", "netdev"]
    return columns, [
        [g.rdma_device, str(g.port), str(g.index), g.gid, g.ipv4 or "", g.roce_version or "", g.netdev or ""]
        for g in obj.gids
    ]


SHOW_GIDS = ImportKind(
    tool="show_gids",
    names="show_gids",
    marks=((FIXED_LINES + 1, _is("show_gids")),),
    body=ShowGids,
    read=_read_show_gids,
    rows=_show_gids_rows,
)

# ------------------------------------------------------------------------------------------------- rdma link


@dataclass(frozen=True)
class RdmaLink(JsonRecord):
    source_format: str | None
    links: tuple[rdma_tools.RdmaLink, ...]  # the parser's own record


def _read_rdma_link(text: str) -> RdmaLink:
    links = rdma_tools.parse_rdma_link(text)
    source = "json" if rdma_tools.looks_like_json(text) else "text"
    return RdmaLink(source, tuple(replace(link, caps=tuple(link.caps)) for link in links))


def _rdma_link_rows(obj: RdmaLink) -> Table:
    columns = ["link", "state", "physical state", "netdev"]
    return columns, [
        [f"{link.rdma_device}/{link.port if link.port is not None else '-'}", link.state or "-",
         link.physical_state or "-", link.netdev or "-"]
        for link in obj.links
    ]  # fmt: skip


RDMA_LINK = ImportKind(
    tool="rdma-link",
    names="rdma link",
    marks=((FIXED_LINES + 2, _is("rdma-link")),),
    body=RdmaLink,
    read=_read_rdma_link,
    rows=_rdma_link_rows,
)
