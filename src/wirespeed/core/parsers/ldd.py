"""`ldd BINARY`: the file each shared library of a binary resolves to, or that the loader finds none.

nccl-tests links `-L$(NCCL_HOME)/lib -lnccl` with no rpath, so which libnccl a rank loads is decided by the loader's
search (LD_LIBRARY_PATH, then the ldconfig cache) on the node that starts it, in the environment it starts with.
glibc's ldd prints one line per library, tab-indented:

    libnccl.so.2 => /home/u/nccl/build/lib/libnccl.so.2 (0x00007ff05b7e4000)
    libnccl.so.2 => not found
    linux-vdso.so.1 (0x00007ffd...)                 (older glibc: `linux-vdso.so.1 =>  (0x...)`)
    /lib64/ld-linux-x86-64.so.2 (0x00007ff05b7f8000)
"""

from __future__ import annotations

import re

_RESOLVED = re.compile(r"^\s*(\S+)\s+=>\s+(.*?)\s*(?:\(0x[0-9a-fA-F]+\))?\s*$")


def resolved(text: str) -> dict[str, str | None]:
    """soname -> the absolute path it resolves to, or None where ldd says `not found`. The vDSO and the loader
    itself (no `=>`, or nothing after it) are left out."""
    found: dict[str, str | None] = {}
    for line in text.splitlines():
        match = _RESOLVED.match(line)
        if not match:
            continue
        soname, target = match.groups()
        if target == "not found":
            found[soname] = None
        elif target.startswith("/"):
            found[soname] = target
    return found


def library(libraries: dict[str, str | None], name: str) -> tuple[str, str | None] | None:
    """The first of `libraries` whose soname is `name.so` or `name.so.N` (libnccl -> libnccl.so.2), with what it
    resolved to; None where the binary does not link it dynamically."""
    prefix = f"{name}.so"
    return next(
        ((soname, path) for soname, path in libraries.items() if soname == prefix or soname.startswith(prefix + ".")),
        None,
    )


# The loader's own directories (/lib, /usr/lib64, /usr/lib/x86_64-linux-gnu, ...): searched without being named.
_DEFAULT_DIR = re.compile(r"/(?:usr/)?lib(?:32|64)?(?:/[^/]+-linux-gnu[^/]*)?/?")


def default_directory(directory: str) -> bool:
    """Whether the loader searches `directory` anyway. Named in LD_LIBRARY_PATH it would go before every other
    library's RUNPATH (an HPC-X libmpi's own UCX, say), so it is never worth forwarding."""
    return _DEFAULT_DIR.fullmatch(directory) is not None
