"""The import kinds, one line each, in the order the list of known tools names them. Everything that tells kinds
apart reads this tuple when it runs (detection, the public `tool` names, the summary and compare's figures), so a
new kind is its module plus one line here, and a test may swap the tuple. Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wirespeed.core.imports import ethtool_stats, iperf3, nccl_tests, perftest, rdma_tools
from wirespeed.core.imports.kind import ImportKind

KINDS: tuple[ImportKind[Any], ...] = (
    nccl_tests.KIND,
    perftest.KIND,
    iperf3.KIND,
    ethtool_stats.KIND,
    rdma_tools.IBDEV2NETDEV,
    rdma_tools.IBV_DEVINFO,
    rdma_tools.SHOW_GIDS,
    rdma_tools.RDMA_LINK,
)

# What owners paste when asking for help (wirespeed.core.imports.pastes, read by importer's paste path, not by a
# kind), and `paste`: a file holding several outputs.
PASTE_TOOLS = ("nccl-info", "kernel-log", "lspci", "ip-addr", "ip-brief", "ethtool", "ethtool-fec", "nvidia-smi-topo")
PASTE_NAMES = (
    "NCCL_DEBUG=INFO logs, dmesg/journalctl -k, lspci -vv, ip addr, ip -br addr/link, ethtool IFACE, "
    "ethtool --show-fec, nvidia-smi topo -m"
)
# detect() reads the marks of a tool at the start of a file only: enough for any real output's header and first rows.
DETECT_CHARS = 256 * 2**10


def tools() -> tuple[str, ...]:
    """The `tool` values of the public format: the kinds', then the pasted outputs', then `paste`."""
    return (*(kind.tool for kind in KINDS), *PASTE_TOOLS, "paste")


def known_tools() -> str:
    """The tools named to a user whose file is none of them."""
    return ", ".join([*(kind.names for kind in KINDS), PASTE_NAMES])


def kind_of(tool: object) -> ImportKind[Any] | None:
    """The kind whose `tool` value this is; None for a pasted output, `paste`, or a value no kind writes."""
    return next((kind for kind in KINDS if kind.tool == tool), None)


def _marks() -> list[tuple[int, Callable[[str], bool], ImportKind[Any]]]:
    """Every kind's marks, the most particular first; equal ranks go in KINDS order (sorted() keeps it)."""
    return sorted(((rank, looks, kind) for kind in KINDS for rank, looks in kind.marks), key=lambda mark: mark[0])


def detect_kind(text: str) -> ImportKind[Any] | None:
    """The kind whose output `text` is, from its content (never its file name: people name logs `out.txt`); None
    when it is no kind's. Where two could match, the lower rank wins (kind.py's JSON_FORM .. BARE). Only the first
    DETECT_CHARS (to the end of a line) are looked at, so a huge file costs no more to tell."""
    if len(text) > DETECT_CHARS:
        end = text.find("\n", DETECT_CHARS)
        text = text[:DETECT_CHARS] if end < 0 else text[: end + 1]
    return next((kind for _, looks, kind in _marks() if looks(text)), None)


def detect(text: str) -> str | None:
    """The `tool` whose output `text` is (see detect_kind), or None.

    Where two could match, the more particular mark wins: JSON forms first, then the RDMA tools' fixed line shapes,
    `NIC statistics:`, perftest's table, iperf3's banners, nccl-tests' comments and rows, and headerless ethtool -S.
    """
    kind = detect_kind(text)
    return None if kind is None else kind.tool


TOOLS = tools()
KNOWN_TOOLS = known_tools()
