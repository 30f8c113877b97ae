"""Driver statistics (what `ethtool -S` prints) through the SIOCETHTOOL ioctl: the names once, then only values.

Starting `ethtool -S` per interface per sample costs a process each time; this costs one ioctl. The kernel's
ETHTOOL_GSTATS and ETHTOOL_GSTRINGS write as many entries as the driver has *now*, whatever buffer the caller
sized, and mlx5's string set changes at run time (per-priority counters appear when PFC or more traffic classes
are enabled, channel counters when channels are added: thousands of entries at once). So every buffer the kernel
writes into carries headroom, and, where the system lets us, ends right at a page that may not be written: a
reply longer than even the headroom then fails with EFAULT instead of overwriting the heap. A count that changed
makes the names be read again before any value is mapped to a name.
"""

from __future__ import annotations

import array
import errno
import fcntl
import mmap
import os
import socket
import struct
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TypeAlias

SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETHTOOL_GSSET_INFO = 0x37
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
IFNAMSIZ = 16
IFREQ_SIZE = 40  # sizeof(struct ifreq) on 64-bit Linux; a longer request is harmless elsewhere
HEADROOM = 1024  # extra entries in every buffer, so a set that grows between two calls fits without a fault
PROT_NONE = 0  # mmap has PROT_READ and PROT_WRITE but not this one
ATTEMPTS = 4  # reads of a set that keeps changing size before giving up (EAGAIN)

_IFREQ = struct.Struct(f"16sP{IFREQ_SIZE - struct.calcsize('16sP')}x")  # ifr_name, ifr_data, rest of the union
_SSET_INFO = struct.Struct("=IIQI")  # cmd, reserved, sset_mask, data[0]
_GSTRINGS_HEAD = struct.Struct("=III")  # cmd, string_set, len
_GSTATS_HEAD = struct.Struct("=II")  # cmd, n_stats

Buffer: TypeAlias = "bytes | bytearray | memoryview | array.array[int]"  # what the decoders accept


class EthtoolError(OSError):
    """An interface's statistics could not be read: `strerror` is "<iface>: <reason>", `errno` the kernel's
    (so `str()` reads "[Errno 19] enp1s0f1np1: no such interface", as for any OSError)."""


def pack_ifreq(name: bytes, address: int) -> bytes:
    """A `struct ifreq` whose union holds `ifr_data` = `address` (the ethtool command buffer)."""
    return _IFREQ.pack(name, address)


def decode_sset_count(buffer: Buffer) -> int:
    """The ETH_SS_STATS count of an ETHTOOL_GSSET_INFO reply; 0 when the kernel cleared the bit (no statistics)."""
    _, _, mask, count = _SSET_INFO.unpack_from(buffer)
    return int(count) if mask & (1 << ETH_SS_STATS) else 0


def decode_names(buffer: Buffer, count: int) -> tuple[str, ...]:
    """The first `count` NUL-padded names of an ETHTOOL_GSTRINGS reply (data at offset 12)."""
    start = _GSTRINGS_HEAD.size
    count = max(0, min(count, (len(buffer) - start) // ETH_GSTRING_LEN))
    data = bytes(buffer[start : start + count * ETH_GSTRING_LEN])
    return tuple(
        data[i : i + ETH_GSTRING_LEN].split(b"\0", 1)[0].decode("utf-8", "replace")
        for i in range(0, count * ETH_GSTRING_LEN, ETH_GSTRING_LEN)
    )


def strings_count(buffer: Buffer) -> int:
    """`len` of an ETHTOOL_GSTRINGS reply: how many names the kernel wrote (or wanted to, on EFAULT)."""
    return int(_GSTRINGS_HEAD.unpack_from(buffer)[2])


def stats_count(buffer: Buffer) -> int:
    """`n_stats` of an ETHTOOL_GSTATS reply: how many values the kernel wrote (or wanted to, on EFAULT)."""
    return int(_GSTATS_HEAD.unpack_from(buffer)[1])


@lru_cache(maxsize=64)
def values_struct(count: int) -> struct.Struct:
    """The compiled format of `count` u64 values (native byte order, as the kernel writes them)."""
    return struct.Struct(f"={count}Q")


def _find_mprotect() -> Callable[[int, int, int], int] | None:
    """libc's mprotect through ctypes, or None where ctypes or the symbol is missing (buffers then go unguarded)."""
    try:
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).mprotect
    except (ImportError, OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int

    def mprotect(address: int, length: int, prot: int) -> int:
        return int(function(address, length, prot))

    return mprotect


_MPROTECT = _find_mprotect()


class KernelBuffer:
    """`size` bytes the kernel writes into by address; a PROT_NONE page follows them where mprotect is at hand."""

    __slots__ = ("_keep", "address", "guarded", "size", "view")
    address: int
    guarded: bool
    size: int
    view: memoryview
    _keep: object

    def __init__(self, size: int) -> None:
        self.size = size
        self.guarded = False
        if _MPROTECT is not None and self._guard(size, _MPROTECT):
            return
        fallback = array.array("B", bytes(size))
        self.address = fallback.buffer_info()[0]  # stays put: the array is never resized
        self.view = memoryview(fallback)
        self._keep = fallback

    def _guard(self, size: int, mprotect: Callable[[int, int, int], int]) -> bool:
        """Map the data pages plus one more and make that one PROT_NONE; False (nothing kept) where that fails."""
        import ctypes

        page = mmap.PAGESIZE
        data_pages = -(-size // page)
        try:
            region = mmap.mmap(-1, (data_pages + 1) * page, flags=mmap.MAP_PRIVATE)
        except OSError:
            return False
        anchor = ctypes.c_char.from_buffer(region)  # pins the mapping: it cannot be closed under the kernel
        base = ctypes.addressof(anchor)
        if mprotect(base + data_pages * page, page, PROT_NONE) != 0:
            return False  # unmapped once `region` and `anchor` are collected
        start = data_pages * page - size  # the data ends where the guard page begins
        self.view = memoryview(region)[start : start + size]
        self.address = base + start
        self._keep = anchor
        self.guarded = True
        return True


class StatsReader:
    """One interface's driver statistics: the string set once, then only the values on each read.

    Not thread-safe: one reader per thread. The socket lives in the network namespace current at `__init__`.
    """

    def __init__(self, iface: str) -> None:
        try:
            encoded = iface.encode()
        except UnicodeError:
            encoded = b""
        if not encoded or len(encoded) >= IFNAMSIZ or b"\0" in encoded:
            raise EthtoolError(errno.EINVAL, f"{iface!r}: not an interface name")
        self.iface = iface
        self._name = encoded
        try:
            self._sock: socket.socket | None = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        except OSError as exc:
            raise EthtoolError(exc.errno or 0, f"{iface}: no socket for ethtool ({exc.strerror or exc})") from None
        self._fd = self._sock.fileno()
        self._opened = False  # ENODEV before the first successful read means "no such interface", after it "gone"
        self._sset = array.array("B", bytes(_SSET_INFO.size))
        self._sset_ifreq = pack_ifreq(encoded, self._sset.buffer_info()[0])
        self.names: tuple[str, ...] = ()
        self._stats: KernelBuffer | None = None
        self._stats_ifreq = b""
        self._format = values_struct(0)
        self._view: memoryview | None = None  # values_view's cast of the buffer it was made from
        self._view_of: KernelBuffer | None = None
        try:
            self._load_names()
        except EthtoolError:
            self.close()
            raise
        self._opened = True

    def __enter__(self) -> StatsReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StatsReader({self.iface!r}, {len(self.names)} statistics)"

    def close(self) -> None:
        """Release the socket and buffers; reading afterwards raises EthtoolError (EBADF)."""
        self._fd = -1
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._stats = None
        self._view = self._view_of = None

    def _error(self, code: int, detail: str = "") -> EthtoolError:
        """An EthtoolError that names the interface and says in a few words what the kernel's errno means here."""
        reasons = {
            errno.ENODEV: "gone (removed, renamed or moved away)" if self._opened else "no such interface",
            errno.EOPNOTSUPP: "the driver has no statistics",
            errno.EPERM: "not permitted",
            errno.EBADF: "reader is closed",
            errno.EAGAIN: "the statistics keep changing size",
        }
        why = reasons.get(code) or detail or os.strerror(code)
        return EthtoolError(code, f"{self.iface}: {why}")

    def _ioctl(self, ifreq: bytes) -> None:
        """One SIOCETHTOOL; the kernel reads the command from, and writes the reply to, ifr_data."""
        if self._fd < 0:
            raise self._error(errno.EBADF)
        try:
            fcntl.ioctl(self._fd, SIOCETHTOOL, ifreq)
        except OSError as exc:
            raise self._error(exc.errno or 0, exc.strerror or str(exc)) from None

    def _count(self) -> int:
        """How many statistics the driver has now (GSSET_INFO); 0 for a driver without any (lo)."""
        _SSET_INFO.pack_into(self._sset, 0, ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS, 0)
        try:
            self._ioctl(self._sset_ifreq)
        except EthtoolError as exc:
            if exc.errno == errno.EOPNOTSUPP:
                return 0
            raise
        return decode_sset_count(self._sset)

    def _read_names(self) -> tuple[str, ...]:
        """The string set now (GSTRINGS), sized by GSSET_INFO, with headroom and a retry if it outgrew both."""
        count = self._count()
        for _ in range(ATTEMPTS):
            if count == 0:
                return ()
            capacity = count + HEADROOM
            buffer = KernelBuffer(_GSTRINGS_HEAD.size + capacity * ETH_GSTRING_LEN)
            _GSTRINGS_HEAD.pack_into(buffer.view, 0, ETHTOOL_GSTRINGS, ETH_SS_STATS, count)
            try:
                self._ioctl(pack_ifreq(self._name, buffer.address))
            except EthtoolError as exc:
                if exc.errno == errno.EOPNOTSUPP:
                    return ()
                if exc.errno != errno.EFAULT:
                    raise
                count = max(strings_count(buffer.view), 2 * capacity)  # outgrew the buffer: ask with more room
                continue
            returned = strings_count(buffer.view)
            if returned <= capacity:
                return decode_names(buffer.view, returned)
            count = returned  # only without a guard page: the kernel wrote past the buffer
        raise self._error(errno.EAGAIN)

    def _load_names(self) -> None:
        """Read the string set again and size the values' buffer for it (headroom included)."""
        names = self._read_names()
        if names != self.names:
            self.names = names  # a new tuple only when the set changed: callers may compare by identity
        if not names:
            self._stats = None
            self._stats_ifreq = b""
            self._format = values_struct(0)
            return
        size = _GSTATS_HEAD.size + (len(names) + HEADROOM) * 8
        if self._stats is None or self._stats.size < size:  # a set that shrank keeps its buffer (more headroom)
            self._stats = KernelBuffer(size)
            self._stats_ifreq = pack_ifreq(self._name, self._stats.address)
        _GSTATS_HEAD.pack_into(self._stats.view, 0, ETHTOOL_GSTATS, len(names))
        self._format = values_struct(len(names))

    def values(self) -> tuple[int, ...]:
        """The values now, in the order of `names` (read again first whenever the driver's count changed)."""
        buffer = self._fill()
        return () if buffer is None else self._format.unpack_from(buffer.view, _GSTATS_HEAD.size)

    def values_view(self) -> Sequence[int]:
        """The values now as u64s seen in place in the kernel's reply, in the order of `names`; valid until the
        next read. Taking a few of an mlx5's several hundred this way makes no int object for the others."""
        buffer = self._fill()
        if buffer is None:
            return ()
        if self._view is None or self._view_of is not buffer or len(self._view) != len(self.names):
            self._view = buffer.view[_GSTATS_HEAD.size : _GSTATS_HEAD.size + 8 * len(self.names)].cast("Q")
            self._view_of = buffer
        return self._view

    def _fill(self) -> KernelBuffer | None:
        """One GSTATS into the values' buffer (names read again whenever the driver's count changed); None for a
        driver without statistics."""
        if not self.names:
            self._load_names()  # a driver without statistics: one GSSET_INFO, in case some appeared
        for _ in range(ATTEMPTS):
            buffer = self._stats
            if buffer is None:
                if self._fd < 0:
                    raise self._error(errno.EBADF)
                return None
            try:
                self._ioctl(self._stats_ifreq)  # the kernel leaves cmd as it was and sets n_stats: no repacking
            except EthtoolError as exc:
                if exc.errno not in (errno.EFAULT, errno.EOPNOTSUPP):
                    raise
            else:
                if stats_count(buffer.view) == len(self.names):
                    return buffer
            self._load_names()  # the count changed (or the set outgrew the buffer): names first, then values
        raise self._error(errno.EAGAIN)

    def read(self) -> dict[str, int]:
        """name -> value now (u64). A driver that repeats a name keeps the last value under it, as a dict must."""
        values = self.values()
        return dict(zip(self.names, values, strict=True))
