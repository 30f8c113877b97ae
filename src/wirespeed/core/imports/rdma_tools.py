"""The four small RDMA tools (ibdev2netdev, ibv_devinfo, show_gids, rdma link): one ImportKind each, kept in one
module because they share one parser (wirespeed.core.parsers.rdma_tools) and one detection, its `looks_like`, which
tells them apart by fixed line shapes in the order ibv_devinfo, show_gids, rdma link, ibdev2netdev."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

from wirespeed.core.imports.kind import FIXED_LINES, ImportKind, Table, num
from wirespeed.core.parsers import rdma_tools
from wirespeed.core.parsers.paste import split


def _is(tool: str) -> Callable[[str], bool]:
    """The mark of one of the four: the parser's `looks_like` naming it (its own order settles overlaps)."""

    def mark(text: str) -> bool:
        return rdma_tools.looks_like(text) == tool

    return mark


# ---------------------------------------------------------------------------------------------- ibdev2netdev


def _read_ibdev2netdev(text: str) -> dict[str, Any]:
    """The mappings, and the non-blank lines that hold none (prompts, comments, notes), so what was read past is
    said rather than silently dropped."""
    listing = rdma_tools.read_ibdev2netdev(text)
    return {
        "source_format": "text",
        "devices": [asdict(m) for m in listing.mappings],
        "skipped_lines": [asdict(s) for s in listing.skipped],
    }


def _ibdev2netdev_rows(obj: Mapping[str, Any]) -> Table:
    columns = ["RDMA device", "port", "netdev", "state"]
    return columns, [[d["rdma_device"], str(d["port"]), d["netdev"], d["state"] or "-"] for d in obj["devices"]]


def _among_other_outputs(text: str) -> bool:
    """ibdev2netdev's lines in a file of several pasted outputs: the paste reader keeps them all."""
    return len(split(text).sections) > 1


IBDEV2NETDEV = ImportKind(
    tool="ibdev2netdev",
    names="ibdev2netdev",
    marks=((FIXED_LINES + 3, _is("ibdev2netdev")),),
    read=_read_ibdev2netdev,
    rows=_ibdev2netdev_rows,
    paste_first=_among_other_outputs,
)

# ----------------------------------------------------------------------------------------------- ibv_devinfo


def _read_ibv_devinfo(text: str) -> dict[str, Any]:
    return {"source_format": "text", "devices": [asdict(d) for d in rdma_tools.parse_ibv_devinfo(text)]}


def _ibv_devinfo_rows(obj: Mapping[str, Any]) -> Table:
    columns = ["hca_id", "port", "state", "link layer", "active MTU", "firmware"]
    return columns, [
        [d["hca_id"], str(p["port"]), p["state"] or "-", p["link_layer"] or "-", num(p["active_mtu_bytes"], "B", 0),
         d["fw_ver"] or "-"]
        for d in obj["devices"]
        for p in d["ports"]
    ]  # fmt: skip


IBV_DEVINFO = ImportKind(
    tool="ibv_devinfo",
    names="ibv_devinfo",
    marks=((FIXED_LINES, _is("ibv_devinfo")),),
    read=_read_ibv_devinfo,
    rows=_ibv_devinfo_rows,
)

# ------------------------------------------------------------------------------------------------- show_gids


def _read_show_gids(text: str) -> dict[str, Any]:
    rows, total = rdma_tools.parse_show_gids(text)
    return {"source_format": "text", "gids": [asdict(row) for row in rows], "n_gids_found": total}


def _show_gids_rows(obj: Mapping[str, Any]) -> Table:
    columns = ["device", "port", "index", "GID", "IPv4", "version", "netdev"]
    return columns, [
        [g["rdma_device"], str(g["port"]), str(g["index"]), g["gid"], g["ipv4"] or "", g["roce_version"] or "",
         g["netdev"] or ""]
        for g in obj["gids"]
    ]  # fmt: skip


SHOW_GIDS = ImportKind(
    tool="show_gids",
    names="show_gids",
    marks=((FIXED_LINES + 1, _is("show_gids")),),
    read=_read_show_gids,
    rows=_show_gids_rows,
)

# ------------------------------------------------------------------------------------------------- rdma link


def _read_rdma_link(text: str) -> dict[str, Any]:
    links = rdma_tools.parse_rdma_link(text)
    source = "json" if rdma_tools.looks_like_json(text) else "text"
    return {"source_format": source, "links": [{**asdict(link), "caps": list(link.caps)} for link in links]}


def _rdma_link_rows(obj: Mapping[str, Any]) -> Table:
    columns = ["link", "state", "physical state", "netdev"]
    return columns, [
        [f"{link['rdma_device']}/{link['port'] if link['port'] is not None else '-'}", link["state"] or "-",
         link["physical_state"] or "-", link["netdev"] or "-"]
        for link in obj["links"]
    ]  # fmt: skip


RDMA_LINK = ImportKind(
    tool="rdma-link",
    names="rdma link",
    marks=((FIXED_LINES + 2, _is("rdma-link")),),
    read=_read_rdma_link,
    rows=_rdma_link_rows,
)
