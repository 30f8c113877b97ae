"""The fat binary reader against a real NCCL 2.28.9 container and cuobjdump's listing of the whole library."""

from __future__ import annotations

import gzip
import re
import struct
from pathlib import Path

import pytest

from wirespeed.core.parsers.fatbin import Architectures, architectures, capability_number, decode, encode

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "fatbin"


def container() -> bytes:
    # One of libnccl.so.2's 143 containers (NCCL 2.28.9, pip); payloads zeroed, headers as shipped.
    return gzip.decompress((REAL / "nccl-2.28.9-container-headers.fatbin.gz").read_bytes())


def listed(name: str, kind: str) -> set[int]:
    text = (REAL / name).read_text()
    return {int(m) for m in re.findall(rf"{kind} file\s+\d+: \S+\.sm_(\d+)\.", text)}


def test_the_real_container_lists_what_cuobjdump_lists_for_the_library() -> None:
    archs = architectures(b"\x7fELF padding" + container() + b"trailing")
    assert archs.elf == listed("cuobjdump-list-elf.txt", "ELF") == {75, 80, 90, 100, 110, 120}
    assert archs.ptx == listed("cuobjdump-list-ptx.txt", "PTX") == {120}


def test_compatibility_follows_cudas_rules() -> None:
    archs = Architectures(frozenset({80, 90, 120}), frozenset({120}))
    assert archs.runs_on(90) == "sm"
    assert archs.runs_on(121) == "sm"  # GB10: a 12.0 cubin runs on 12.1
    assert archs.runs_on(86) == "sm"
    assert archs.runs_on(100) is None  # no 10.x cubin, and PTX 12.0 cannot JIT down
    assert Architectures(frozenset({90}), frozenset({90})).runs_on(121) == "ptx"
    assert Architectures(frozenset({120}), frozenset()).runs_on(110) is None


def test_no_container_or_a_false_magic_is_an_error_not_a_guess() -> None:
    with pytest.raises(ValueError, match="no CUDA fat binary"):
        architectures(b"\x7fELF" + b"\0" * 64)
    fake = struct.pack("<IHHQ", 0xBA55ED50, 7, 16, 8) + b"\0" * 8  # wrong version: not a container
    with pytest.raises(ValueError):
        architectures(fake)
    cut = container()[:-100]  # a container running past the end of the file is not read
    with pytest.raises(ValueError):
        architectures(cut)


def test_encode_decode_and_capabilities() -> None:
    archs = architectures(container())
    assert encode(archs) == "elf=75,80,90,100,110,120 ptx=120"
    assert decode(encode(archs)) == archs
    assert decode("elf= ptx=") == Architectures(frozenset(), frozenset())
    with pytest.raises(ValueError):
        decode("error: Permission denied")
    assert capability_number("12.1") == 121 and capability_number("9.0") == 90 and capability_number("n/a") is None
