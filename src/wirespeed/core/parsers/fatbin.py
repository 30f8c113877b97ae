"""Which GPU architectures a CUDA library (libnccl.so) carries code for, read from its embedded fat binaries.

A CUDA library holds one or more fat binary containers (magic 0xBA55ED50). Each holds entries: ELF cubins that
run on one compute capability (and newer minor versions of the same major) and PTX that the driver can JIT for
newer GPUs. The same listing `cuobjdump --list-elf` / `--list-ptx` prints, without needing the CUDA toolkit.
Entry payloads may be compressed; the headers read here never are.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = struct.pack("<I", 0xBA55ED50)
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries that follow
_ENTRY = struct.Struct("<HHIQ")  # kind, unknown, header size, payload size
_ARCH_OFFSET = 28  # u32 after compressed size (16), unknown (20), version minor/major (24, 26)
KIND_PTX = 1
KIND_ELF = 2


@dataclass(frozen=True)
class Architectures:
    """Compute capabilities as integers (90 = sm_90, 121 = sm_121)."""

    elf: frozenset[int]
    ptx: frozenset[int]

    def runs_on(self, capability: int) -> str | None:
        """How code for `capability` is there: "sm" (a cubin), "ptx" (JIT from older PTX) or None."""
        major = capability // 10
        if any(arch // 10 == major and arch <= capability for arch in self.elf):
            return "sm"
        if any(arch <= capability for arch in self.ptx):
            return "ptx"
        return None

    def describe(self) -> str:
        elf = " ".join(f"sm_{a}" for a in sorted(self.elf)) or "none"
        ptx = " ".join(f"compute_{a}" for a in sorted(self.ptx)) or "none"
        return f"cubins: {elf}; PTX: {ptx}"


def architectures(raw: bytes) -> Architectures:
    """Walk every fat binary container in `raw`; raises ValueError when there is none."""
    elf: set[int] = set()
    ptx: set[int] = set()
    containers = 0
    start = raw.find(MAGIC)
    while start != -1:
        if start + _CONTAINER.size > len(raw):
            break
        _, version, header_size, size = _CONTAINER.unpack_from(raw, start)
        if version != 1 or header_size != _CONTAINER.size or start + header_size + size > len(raw):
            start = raw.find(MAGIC, start + 4)  # the four bytes happened to appear elsewhere
            continue
        containers += 1
        position, end = start + header_size, start + header_size + size
        while position + _ARCH_OFFSET + 4 <= end:
            kind, _, entry_header, payload = _ENTRY.unpack_from(raw, position)
            if entry_header < _ARCH_OFFSET + 4 or position + entry_header + payload > end:
                break
            (arch,) = struct.unpack_from("<I", raw, position + _ARCH_OFFSET)
            if kind == KIND_ELF:
                elf.add(arch)
            elif kind == KIND_PTX:
                ptx.add(arch)
            position += entry_header + payload
        start = raw.find(MAGIC, end)
    if not containers:
        raise ValueError("no CUDA fat binary inside (not a CUDA library?)")
    return Architectures(frozenset(elf), frozenset(ptx))


def capability_number(text: str) -> int | None:
    """nvidia-smi's compute_cap ("12.1") as 121."""
    major, _, minor = text.strip().partition(".")
    return int(major) * 10 + int(minor or 0) if major.isdigit() and (minor or "0").isdigit() else None


def encode(archs: Architectures) -> str:
    """One line for a snapshot: "elf=75,80,90 ptx=120"."""
    return f"elf={','.join(map(str, sorted(archs.elf)))} ptx={','.join(map(str, sorted(archs.ptx)))}"


def decode(text: str) -> Architectures:
    """The inverse of `encode`; raises ValueError on anything else."""
    fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
    if set(fields) != {"elf", "ptx"}:
        raise ValueError(f"not an architecture list: {text!r}")
    elf, ptx = ({int(a) for a in fields[k].split(",") if a} for k in ("elf", "ptx"))
    return Architectures(frozenset(elf), frozenset(ptx))
