"""`nvidia-smi topo -m` (the GPU/NIC matrix, its legend and `NIC Legend:`), as pasted: tabs or spaces, the header
underlined with ANSI escapes, older drivers naming NIC rows by their device (`mlx5_0`) instead of `NIC0`. Pure: text
in, the topology out.

        GPU0	NIC0	NIC1	CPU Affinity	NUMA Affinity	GPU NUMA ID
    GPU0	 X 	NODE	NODE	0-19	0		N/A
    NIC0	NODE	 X 	PIX
    NIC Legend:
      NIC0: rocep1s0f0
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEVICE = re.compile(r"^(?:GPU\d+|NIC\d+|mlx\d+_\w+|mlx5_bond_\d+)$")
_LEGEND = re.compile(r"^\s*(?P<nic>NIC\d+):\s*(?P<device>\S+)\s*$")
_LEGEND_KEY = re.compile(r"^\s*(?:X|SYS|NODE|PHB|PXB|PIX|NV#|NV\d+)\s+=\s+")
_HEADINGS = re.compile(r"^\s*(?:Legend:|NIC Legend:|NVIDIA Topology:)\s*$")
_TAIL = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


@dataclass
class Topology:
    columns: tuple[str, ...] = ()  # GPU0, NIC0, ... as the header names them
    links: dict[str, dict[str, str]] = field(default_factory=dict)  # row -> column -> X, PIX, NODE, SYS, NV4 ...
    cpu_affinity: dict[str, str] = field(default_factory=dict)  # GPU -> `0-19`
    numa_affinity: dict[str, str] = field(default_factory=dict)
    nics: dict[str, str] = field(default_factory=dict)  # NIC0 -> rocep1s0f0

    @property
    def gpus(self) -> tuple[str, ...]:
        return tuple(c for c in self.columns if c.startswith("GPU"))

    def device(self, column: str) -> str:
        """The RDMA device a NIC column is (from the legend), else the column's own name."""
        return self.nics.get(column, column)


@dataclass(frozen=True)
class NvidiaTopo:
    topology: Topology
    read: frozenset[int]


def parse(text: str) -> NvidiaTopo:
    topology = Topology()
    read: set[int] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _ANSI.sub("", raw)
        cells = [c.strip() for c in re.split(r"\t|\s{2,}", line.strip())]
        if not topology.columns and cells and cells[0] == "GPU0" and not line.startswith("GPU0"):
            topology.columns = tuple(c for c in cells if _DEVICE.match(c))
            read.add(number)
            continue
        legend = _LEGEND.match(line)
        if legend:
            topology.nics[legend["nic"]] = legend["device"]
            read.add(number)
            continue
        if _LEGEND_KEY.match(line) or _HEADINGS.match(line):
            read.add(number)
            continue
        if topology.columns and cells and _DEVICE.match(cells[0]):
            values = [c.strip() for c in line.rstrip("\n").split("\t")[1:]] if "\t" in line else line.split()[1:]
            row = cells[0]
            width = len(topology.columns)
            topology.links[row] = {col: values[i].strip() for i, col in enumerate(topology.columns) if i < len(values)}
            if len(values) > width and row.startswith("GPU"):
                topology.cpu_affinity[row] = values[width].strip()
                if len(values) > width + 1:
                    topology.numa_affinity[row] = values[width + 1].strip()
            read.add(number)
    return NvidiaTopo(topology, frozenset(read))


def looks_like(text: str) -> bool:
    plain = _ANSI.sub("", text)
    return bool(re.search(r"^\s*NIC Legend:\s*$", plain, re.MULTILINE)) or bool(
        re.search(r"^\s+GPU0\b.*\bCPU Affinity\b", plain, re.MULTILINE)
    )
