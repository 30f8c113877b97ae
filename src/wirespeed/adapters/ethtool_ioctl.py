"""Driver statistics (what `ethtool -S` prints) through the SIOCETHTOOL ioctl: the names once, then only values.

Starting `ethtool -S` per interface per sample costs a process each time; this costs one ioctl. The kernel's
ETHTOOL_GSTATS writes as many values as the driver has *now*, whatever buffer the caller sized, and mlx5's
string set grows at run time (per-priority counters appear when PFC is enabled): buffers therefore carry
headroom, and a count that changed makes the names be read again before any value is mapped to a name.
"""

from __future__ import annotations

import array
import errno
import fcntl
import socket
import struct

SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETHTOOL_GSSET_INFO = 0x37
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
IFNAMSIZ = 16
HEADROOM = 1024  # extra entries in every buffer: a string set that grows between two calls cannot overrun it

_IFREQ = struct.Struct("16sP16x")  # ifr_name, ifr_data, rest of the union
_SSET_INFO = struct.Struct("<IIQI")  # cmd, reserved, sset_mask, data[0]
_GSTRINGS_HEAD = struct.Struct("<III")  # cmd, string_set, len
_GSTATS_HEAD = struct.Struct("<II")  # cmd, n_stats


class EthtoolError(OSError):
    """An interface's statistics could not be read; the message names the interface."""


def decode_names(buffer: bytes | bytearray | array.array[int], count: int) -> tuple[str, ...]:
    """The `count` NUL-padded names of an ETHTOOL_GSTRINGS reply (data at offset 12)."""
    start = _GSTRINGS_HEAD.size
    names = []
    for i in range(count):
        raw = bytes(buffer[start + i * ETH_GSTRING_LEN : start + (i + 1) * ETH_GSTRING_LEN])
        names.append(raw.split(b"\0", 1)[0].decode("ascii", "replace"))
    return tuple(names)


def _reason(iface: str, exc: OSError) -> EthtoolError:
    why = {
        errno.ENODEV: "no such interface",
        errno.EOPNOTSUPP: "the driver has no statistics",
        errno.EPERM: "not permitted",
    }.get(exc.errno or 0, exc.strerror or str(exc))
    return EthtoolError(exc.errno or 0, f"{iface}: {why}")


class StatsReader:
    """One interface's driver statistics: the string set once, then only the values on each read."""

    def __init__(self, iface: str) -> None:
        encoded = iface.encode()
        if not encoded or len(encoded) >= IFNAMSIZ or b"/" in encoded or b"\0" in encoded:
            raise EthtoolError(errno.EINVAL, f"{iface!r}: not an interface name")
        self.iface = iface
        self._name = encoded
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.names: tuple[str, ...] = ()
        self._stats = array.array("B")
        self._format = struct.Struct("<0Q")
        try:
            self._load_names()
        except EthtoolError:
            self._sock.close()
            raise

    def __enter__(self) -> StatsReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def _ioctl(self, buffer: array.array[int]) -> None:
        """The kernel reads and writes `buffer` in place (an array's memory stays put while it is not resized)."""
        pointer, _ = buffer.buffer_info()
        try:
            fcntl.ioctl(self._sock.fileno(), SIOCETHTOOL, _IFREQ.pack(self._name, pointer))
        except OSError as exc:
            raise _reason(self.iface, exc) from None

    def _count(self) -> int:
        request = array.array("B", _SSET_INFO.pack(ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS, 0))
        self._ioctl(request)
        _, _, mask, count = _SSET_INFO.unpack(request)
        return count if mask & (1 << ETH_SS_STATS) else 0

    def _load_names(self) -> None:
        count = self._count()
        if count == 0:
            self.names = ()
        else:
            request = array.array("B", _GSTRINGS_HEAD.pack(ETHTOOL_GSTRINGS, ETH_SS_STATS, count))
            request.frombytes(bytes((count + HEADROOM) * ETH_GSTRING_LEN))
            self._ioctl(request)
            _, _, returned = _GSTRINGS_HEAD.unpack_from(request)
            self.names = decode_names(request, min(returned, count + HEADROOM))
        self._stats = array.array("B", _GSTATS_HEAD.pack(ETHTOOL_GSTATS, len(self.names)))
        self._stats.frombytes(bytes((len(self.names) + HEADROOM) * 8))
        self._format = struct.Struct(f"<{len(self.names)}Q")

    def values(self) -> tuple[int, ...]:
        """The values now, in the order of `names` (which is read again first when the count changed)."""
        if not self.names:
            self._load_names()
            if not self.names:
                return ()
        for _ in range(3):
            buffer = self._stats
            _GSTATS_HEAD.pack_into(buffer, 0, ETHTOOL_GSTATS, len(self.names))
            self._ioctl(buffer)
            if _GSTATS_HEAD.unpack_from(buffer)[1] == len(self.names):
                return self._format.unpack_from(buffer, _GSTATS_HEAD.size)
            self._load_names()  # the driver's count changed: names first, then values again
        raise EthtoolError(errno.EAGAIN, f"{self.iface}: the statistics keep changing size")

    def read(self) -> dict[str, int]:
        """name -> value now."""
        values = self.values()
        return dict(zip(self.names, values, strict=True))


def read_stats(iface: str) -> dict[str, int]:
    with StatsReader(iface) as reader:
        return reader.read()
