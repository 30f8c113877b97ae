"""Every rung wirespeed climbs, in ladder order: one line each. A rung's name, layer and tools come from its class;
`bench`, `runs`, `compare`, `report` and the takeaway know nothing else of it."""

from __future__ import annotations

from collections.abc import Sequence

from wirespeed.core.records.options import BenchOptions
from wirespeed.engine.rungs.base import Rung
from wirespeed.engine.rungs.nccl import NcclRung
from wirespeed.engine.rungs.rdma import RdmaBwRung, RdmaLatRung
from wirespeed.engine.rungs.tcp import TcpRung
from wirespeed.engine.rungs.tcp_lat import TcpLatRung

LADDER: tuple[Rung, ...] = (
    TcpRung("tcp-single"),
    TcpRung("tcp-multi"),
    TcpRung("tcp-halves"),
    TcpLatRung(),
    RdmaBwRung(),
    RdmaLatRung(),
)
LAYERS = ("tcp", "rdma", "nccl")
__all__ = ["LADDER", "LAYERS", "BenchOptions", "Rung", "names", "select"]


def names() -> list[str]:
    """What `bench` takes: the whole ladder, a layer, or one rung."""
    return ["ladder", *LAYERS, *(r.name for r in LADDER)]


def select(what: str, collectives: Sequence[str]) -> list[Rung]:
    """The rungs of `bench WHAT`, in ladder order; NCCL has one rung per collective asked for."""
    every = [*LADDER, *(NcclRung(c) for c in collectives)]
    if what == "ladder":
        return every
    if what in LAYERS:
        return [r for r in every if r.layer == what]
    return [r for r in every if r.name == what]
