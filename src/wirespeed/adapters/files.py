"""Reading a file a person named (a cluster file, an output to import, a record of a run) without being stopped by
what the name turned out to be: only regular files are read (a FIFO would block forever, a device or /dev/zero never
ends), never more than a stated size, and text that is not UTF-8 is one line naming the byte and line.

Every refusal is `Unreadable`, a ValueError whose message is one line WITHOUT the file's name, so that the caller
puts the name (or a shorter one) in front: `wirespeed: cluster.toml: not a regular file (a FIFO)`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class Unreadable(ValueError):
    """A file that was not read; the message says why in a few words, without the file's name."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def size_text(size: int, exact: bool = True) -> str:
    """`17.0 MiB (17825792 bytes)`, as a refusal for size shows a file's size; `16 MiB` for a limit (not exact)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            shown = f"{size // scale}" if size % scale == 0 else f"{size / scale:.1f}"
            return f"{shown} {unit} ({size} bytes)" if exact else f"{shown} {unit}"
    return f"{size} bytes"


def read_bytes(path: Path, limit: int, *, too_large: str = "") -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; `Unreadable` otherwise.

    The file is opened without blocking (O_NONBLOCK: a FIFO with no writer would wait forever in open) and its kind
    is taken from the open descriptor, so a file swapped for a FIFO between a check and the read is still refused.
    `too_large` is added to the size refusal (what to do instead)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except PermissionError:
        raise Unreadable("permission denied") from None
    except OSError as exc:
        raise Unreadable(f"cannot open it: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a plain file")
            raise Unreadable(f"not a regular file ({kind})")
        size = os.fstat(fd).st_size
        if size > limit:
            raise Unreadable(f"{size_text(size)}, larger than the {size_text(limit, False)} limit{too_large}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:  # grew while read
            raise Unreadable(f"larger than the {size_text(limit, False)} limit{too_large}")
        return data
    except OSError as exc:
        raise Unreadable(f"cannot read it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def utf8(data: bytes) -> str:
    """`data` as UTF-8 text (a BOM dropped); `Unreadable` naming the first bad byte's offset and line otherwise."""
    try:
        return data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, offset) + 1
        raise Unreadable(f"not UTF-8 text: byte 0x{data[offset]:02x} at offset {offset} (line {line})") from None


def read_text(path: Path, limit: int, *, too_large: str = "") -> str:
    """A regular UTF-8 file's text, at most `limit` bytes: `read_bytes`, then `utf8`."""
    return utf8(read_bytes(path, limit, too_large=too_large))
