"""Driver statistics through SIOCETHTOOL: the packing helpers on hand-built buffers, the reader against a fake kernel
(a string set that grows, shrinks, outgrows every buffer, keeps changing, vanishes), and, as root, against the
`ethtool -S` program on veth interfaces in namespaces of the test's own (read from a child process inside them).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import struct
import subprocess
import sys
import textwrap
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wirespeed.adapters import ethtool_ioctl as eio
from wirespeed.adapters.ethtool_ioctl import (
    ETHTOOL_GSSET_INFO,
    ETHTOOL_GSTATS,
    ETHTOOL_GSTRINGS,
    HEADROOM,
    SIOCETHTOOL,
    EthtoolError,
    KernelBuffer,
    StatsReader,
    decode_names,
    decode_sset_count,
    pack_ifreq,
    stats_count,
    strings_count,
    values_struct,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")


def decode_stats(buffer: bytes, count: int) -> tuple[int, ...]:
    """The first `count` values of an ETHTOOL_GSTATS reply: the values start after its 8-byte head."""
    return values_struct(count).unpack_from(buffer, 8)


def read_stats(iface: str) -> dict[str, int]:
    """One interface's statistics once, as the sampler reads them."""
    with StatsReader(iface) as reader:
        return reader.read()


# --- the pure helpers, on hand-built buffers ----------------------------------------------------------------------


def test_ifreq_holds_the_name_and_the_buffer_address() -> None:
    request = pack_ifreq(b"enp1s0f1np1", 0x7F00DEADBEEF)
    assert len(request) >= 40  # struct ifreq is 40 bytes on 64-bit Linux; the kernel copies no more than that
    name, address = struct.unpack_from("16sP", request)
    assert name == b"enp1s0f1np1" + b"\0" * 5
    assert address == 0x7F00DEADBEEF
    assert struct.calcsize("16sP") - struct.calcsize("P") == 16  # ifr_data sits at offset 16, where the union is


def test_sset_info_count_only_when_the_kernel_kept_the_bit() -> None:
    assert decode_sset_count(struct.pack("=IIQI", ETHTOOL_GSSET_INFO, 0, 1 << 1, 57)) == 57
    assert decode_sset_count(struct.pack("=IIQI", ETHTOOL_GSSET_INFO, 0, 0, 0)) == 0  # lo: no statistics


def gstrings(names: list[bytes], spare: int = 0) -> bytearray:
    """An ETHTOOL_GSTRINGS reply as the kernel lays it out: header, then 32 bytes a name, NUL padded."""
    buffer = bytearray(struct.pack("=III", ETHTOOL_GSTRINGS, 1, len(names)))
    for name in names:
        buffer += name.ljust(32, b"\0")
    return buffer + bytes(32 * spare)


def test_names_are_cut_at_the_first_nul_and_may_fill_all_32_bytes() -> None:
    full = b"rx_prio7_buf_discard_extra_long_"  # exactly 32 bytes: no NUL at all
    buffer = gstrings([b"rx_bytes", b"tx\0junk after the nul", full], spare=2)
    assert strings_count(buffer) == 3
    assert decode_names(buffer, 3) == ("rx_bytes", "tx", full.decode())
    assert decode_names(buffer, 1) == ("rx_bytes",)
    assert decode_names(buffer[:-64], 10) == ("rx_bytes", "tx", full.decode())  # never past the buffer's end


def test_stats_reply_is_its_count_then_native_u64() -> None:
    values = (0, 1, 2**64 - 1, 123456789012)
    buffer = struct.pack("=II4Q", ETHTOOL_GSTATS, 4, *values) + bytes(8 * 3)  # with headroom behind
    assert stats_count(buffer) == 4
    assert decode_stats(buffer, 4) == values
    assert decode_stats(buffer, 2) == values[:2]


# --- what needs no privileges: names, lo, a missing interface, the guard page --------------------------------------


@pytest.mark.parametrize("name", ["", "x" * 16, "a\0b", "\udcff"])
def test_impossible_names_are_refused_before_any_syscall(name: str) -> None:
    with pytest.raises(EthtoolError) as caught:
        StatsReader(name)
    assert caught.value.errno == errno.EINVAL
    assert repr(name) in str(caught.value)


def test_a_missing_interface_is_named_in_the_error() -> None:
    name = f"wsx{uuid.uuid4().hex[:8]}"
    with pytest.raises(EthtoolError) as caught:
        read_stats(name)
    assert caught.value.strerror == f"{name}: no such interface"
    assert str(caught.value) == f"[Errno {errno.ENODEV}] {name}: no such interface"
    assert caught.value.errno == errno.ENODEV
    assert isinstance(caught.value, OSError)


def test_lo_has_no_driver_statistics_so_it_reads_as_empty() -> None:
    """lo answers GSSET_INFO with the ETH_SS_STATS bit cleared (`ethtool -S lo`: "no stats available")."""
    assert read_stats("lo") == {}
    with StatsReader("lo") as reader:
        assert reader.names == ()
        assert reader.read() == {}
        assert reader.values() == ()


def test_a_closed_reader_says_so() -> None:
    reader = StatsReader("lo")
    reader.close()
    reader.close()  # twice is fine
    with pytest.raises(EthtoolError) as caught:
        reader.read()
    assert caught.value.errno == errno.EBADF
    assert caught.value.strerror == "lo: reader is closed"


def test_kernel_buffers_end_at_a_page_that_cannot_be_written() -> None:
    """A reply longer than the buffer must fail (EFAULT, or a short write), not run over the heap."""
    buffer = KernelBuffer(100)
    if not buffer.guarded:
        pytest.skip("no mprotect through ctypes here: buffers carry headroom only")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    libc.read.restype = ctypes.c_ssize_t
    fd = os.open("/dev/urandom", os.O_RDONLY)
    try:
        assert libc.read(fd, buffer.address, 100) == 100  # all of it is writable
        assert libc.read(fd, buffer.address + 100, 1) == -1  # the next byte is not
        assert ctypes.get_errno() == errno.EFAULT
        assert libc.read(fd, buffer.address, 4096) == 100  # a long write stops at the end
    finally:
        os.close(fd)
    assert len(buffer.view) == 100


# --- the reader against a fake kernel -----------------------------------------------------------------------------


def value_of(name: str, tick: int) -> int:
    """Each value carries its name's checksum in the low 32 bits: a value under the wrong name shows at once."""
    return zlib.crc32(name.encode()) | (tick << 32)


class FakeKernel:
    """SIOCETHTOOL for one interface whose string set a test changes at will. Like the kernel it writes replies
    by address, as long as the driver's set is *now*, whatever the caller asked for; where that passes the end of a
    KernelBuffer it writes the header and answers EFAULT, as copy_to_user does at a guard page."""

    def __init__(self, iface: str, names: list[str]) -> None:
        self.iface = iface.encode()
        self.names = names
        self.present = True
        self.has_stats = True
        self.tick = 0
        self.on_gstats: Callable[[FakeKernel], None] | None = None
        self.calls: Counter[int] = Counter()
        self.buffers: dict[int, int] = {}  # address -> size of every KernelBuffer the reader made

    def ioctl(self, fd: int, request: int, arg: bytes) -> bytes:
        assert request == SIOCETHTOOL
        name, address = struct.unpack_from("16sP", arg)
        if not self.present or name.rstrip(b"\0") != self.iface:
            raise OSError(errno.ENODEV, os.strerror(errno.ENODEV))
        cmd = struct.unpack("=I", ctypes.string_at(address, 4))[0]
        self.calls[cmd] += 1
        if cmd == ETHTOOL_GSSET_INFO:
            _, _, mask = struct.unpack("=IIQ", ctypes.string_at(address, 16))
            if self.has_stats and mask & 2:
                self.write(address, struct.pack("=IIQI", cmd, 0, 2, len(self.names)))
            else:
                self.write(address, struct.pack("=IIQ", cmd, 0, 0))
        elif cmd == ETHTOOL_GSTRINGS:
            reply = b"".join(n.encode().ljust(32, b"\0") for n in self.names)
            self.reply(address, struct.pack("=III", cmd, 1, len(self.names)), reply)
        elif cmd == ETHTOOL_GSTATS:
            if not self.has_stats:
                raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
            if self.on_gstats is not None:
                self.on_gstats(self)
            self.tick += 1
            values = [value_of(n, self.tick) for n in self.names]
            self.reply(address, struct.pack("=II", cmd, len(values)), struct.pack(f"={len(values)}Q", *values))
        else:
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))
        return arg

    def reply(self, address: int, head: bytes, data: bytes) -> None:
        assert address in self.buffers, "a reply of the driver's size must go to a KernelBuffer"
        self.write(address, head)
        if len(head) + len(data) > self.buffers[address]:
            raise OSError(errno.EFAULT, os.strerror(errno.EFAULT))
        self.write(address + len(head), data)

    @staticmethod
    def write(address: int, data: bytes) -> None:
        ctypes.memmove(address, data, len(data))


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    fake = FakeKernel("fake0", [f"rx_queue_{i}_packets" for i in range(8)])

    class RecordedBuffer(KernelBuffer):
        __slots__ = ()

        def __init__(self, size: int) -> None:
            super().__init__(size)
            fake.buffers[self.address] = size

    monkeypatch.setattr(eio, "KernelBuffer", RecordedBuffer)
    monkeypatch.setattr(eio.fcntl, "ioctl", fake.ioctl)
    return fake


def assert_consistent(stats: dict[str, int], kernel: FakeKernel) -> None:
    assert list(stats) == kernel.names
    for name, value in stats.items():
        assert value & 0xFFFFFFFF == zlib.crc32(name.encode()), f"{name} got another counter's value"


def test_names_are_read_once_then_only_values(kernel: FakeKernel) -> None:
    with StatsReader("fake0") as reader:
        names = reader.names
        for _ in range(50):
            assert_consistent(reader.read(), kernel)
        assert reader.names is names
    assert kernel.calls == {ETHTOOL_GSSET_INFO: 1, ETHTOOL_GSTRINGS: 1, ETHTOOL_GSTATS: 50}


@pytest.mark.parametrize("added", [1, 72, HEADROOM - 1, HEADROOM, HEADROOM + 1, 5 * HEADROOM])
def test_a_set_that_grows_is_read_again_before_any_value(kernel: FakeKernel, added: int) -> None:
    """Within the headroom the reply shows the new count; past it the guard page answers EFAULT: both re-read."""
    reader = StatsReader("fake0")
    before = reader.names
    assert_consistent(reader.read(), kernel)
    kernel.names = kernel.names + [f"rx_prio{i}_pause" for i in range(added)]  # PFC or channels switched on
    assert_consistent(reader.read(), kernel)
    assert reader.names is not before and len(reader.names) == 8 + added
    assert_consistent(reader.read(), kernel)
    assert kernel.calls[ETHTOOL_GSTRINGS] == 2


def test_without_a_guard_page_the_headroom_still_takes_the_growth(
    kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eio, "_MPROTECT", None)  # as where ctypes is missing
    reader = StatsReader("fake0")
    assert not KernelBuffer(8).guarded
    kernel.names = kernel.names + [f"rx_prio{i}_pause" for i in range(72)]
    assert_consistent(reader.read(), kernel)


def test_a_set_that_shrinks_is_read_again(kernel: FakeKernel) -> None:
    reader = StatsReader("fake0")
    kernel.names = kernel.names[:3]
    assert_consistent(reader.read(), kernel)
    kernel.names = [*kernel.names, "tx_pause"]
    assert_consistent(reader.read(), kernel)


def test_a_set_that_changes_between_count_and_values(kernel: FakeKernel) -> None:
    """The set grows right after GSTRINGS, before GSTATS: the values must still never go under stale names."""
    reader = StatsReader("fake0")

    def grow_once(k: FakeKernel) -> None:
        k.names = [*k.names, "late_counter"]
        k.on_gstats = None

    kernel.on_gstats = grow_once
    assert_consistent(reader.read(), kernel)
    assert reader.names[-1] == "late_counter"


def test_a_set_that_keeps_changing_gives_up_with_an_error(kernel: FakeKernel) -> None:
    reader = StatsReader("fake0")

    def grow(k: FakeKernel) -> None:
        k.names = [*k.names, f"extra{len(k.names)}"]

    kernel.on_gstats = grow
    with pytest.raises(EthtoolError) as caught:
        reader.read()
    assert caught.value.errno == errno.EAGAIN
    assert caught.value.strerror == "fake0: the statistics keep changing size"


def test_an_interface_gone_between_reads(kernel: FakeKernel) -> None:
    reader = StatsReader("fake0")
    reader.read()
    kernel.present = False
    with pytest.raises(EthtoolError) as caught:
        reader.read()
    assert caught.value.errno == errno.ENODEV
    assert (caught.value.strerror or "").startswith("fake0: gone")


def test_statistics_that_vanish_and_come_back(kernel: FakeKernel) -> None:
    reader = StatsReader("fake0")
    kernel.has_stats = False
    assert reader.read() == {}
    assert reader.names == ()
    gstats = kernel.calls[ETHTOOL_GSTATS]
    assert reader.read() == {}
    assert kernel.calls[ETHTOOL_GSTATS] == gstats  # without statistics only the count is asked for
    kernel.has_stats = True
    assert_consistent(reader.read(), kernel)


# --- as root: the real kernel, veth in namespaces of the test's own ----------------------------------------------

CHILD_PRELUDE = '''
import json, subprocess, sys
from wirespeed.adapters.ethtool_ioctl import EthtoolError, StatsReader

def read_stats(iface):
    with StatsReader(iface) as reader:
        return reader.read()

def sh(*argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout

def ethtool_S(iface):
    """`ethtool -S` parsed minimally: name -> value, in the program's order."""
    lines = sh("ethtool", "-S", iface).splitlines()
    assert lines[0].startswith("NIC statistics"), lines[:1]
    return {name.strip(): int(value) for name, _, value in (line.rpartition(":") for line in lines[1:])}

def error(fn):
    try:
        fn()
    except EthtoolError as exc:
        return {"errno": exc.errno, "message": exc.strerror}
    return None
'''


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def in_netns(netns: str, body: str) -> Any:
    """Run `body` in a Python child inside `netns`; it prints one JSON line, which is returned."""
    proc = subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def netns() -> Iterator[Callable[[], str]]:
    """Makes namespaces named wsx-<random>; all of them are deleted at teardown, whatever the test did."""
    made: list[str] = []

    def make() -> str:
        name = f"wsx-{uuid.uuid4().hex[:8]}"
        sh("ip", "netns", "add", name)
        made.append(name)
        sh("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")  # no DAD or RS noise
        sh("ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
        return name

    try:
        yield make
    finally:
        for name in made:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
        left = set(made) & {line.split()[0] for line in sh("ip", "netns", "list").splitlines() if line.strip()}
        assert not left, f"namespaces left behind: {sorted(left)}"


@pytest.mark.root
def test_same_names_and_values_as_the_ethtool_program(netns: Callable[[], str]) -> None:
    ns = netns()
    sh("ip", "-n", ns, "link", "add", "va", "type", "veth", "peer", "name", "vb")
    sh("ip", "-n", ns, "link", "set", "va", "up")
    sh("ip", "-n", ns, "link", "set", "vb", "up")
    got = in_netns(
        ns,
        """
        with StatsReader("va") as reader:
            before = reader.read()
            program = ethtool_S("va")
            after = reader.read()
            names = list(reader.names)
        lo_program = subprocess.run(["ethtool", "-S", "lo"], capture_output=True, text=True)
        print(json.dumps({
            "names": names, "before": before, "program": program, "after": after,
            "vb": read_stats("vb"), "vb_program": ethtool_S("vb"),
            "lo": read_stats("lo"), "lo_program": [lo_program.returncode, lo_program.stdout + lo_program.stderr],
        }))
        """,
    )
    assert got["names"] == list(got["program"])  # same names, same order
    assert "peer_ifindex" in got["names"]
    for name, value in got["program"].items():
        assert got["before"][name] <= value <= got["after"][name], name  # idle veth: these are all equal
    assert got["before"] == got["program"]
    assert got["vb"] == got["vb_program"]
    assert got["vb"]["peer_ifindex"] != got["after"]["peer_ifindex"]  # each end names the other's ifindex
    assert got["lo"] == {}
    assert got["lo_program"][0] != 0 and "no stats" in got["lo_program"][1]


@pytest.mark.root
def test_values_grow_with_traffic_across_the_pair(netns: Callable[[], str]) -> None:
    """veth counts received packets in its ethtool statistics only in NAPI mode: GRO on, and TSO off at the sender."""
    a, b = netns(), netns()
    sh("ip", "-n", a, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", b)
    for ns, iface, addr in ((a, "va", "198.18.255.1/24"), (b, "vb", "198.18.255.2/24")):
        sh("ip", "-n", ns, "addr", "add", addr, "dev", iface)
        sh("ip", "-n", ns, "link", "set", iface, "up")
        sh("ip", "netns", "exec", ns, "ethtool", "-K", iface, "gro", "on", "tso", "off")
    got = in_netns(
        b,
        """
        reader = StatsReader("vb")
        names = reader.names
        before = reader.read()
        sh("ping", "-c", "5", "-i", "0.05", "-W", "2", "198.18.255.1")
        after = reader.read()
        print(json.dumps({"before": before, "after": after, "program": ethtool_S("vb"), "same": reader.names is names}))
        """,
    )
    before, after = got["before"], got["after"]
    assert after["rx_queue_0_xdp_packets"] - before["rx_queue_0_xdp_packets"] >= 5  # the echo replies
    assert after["rx_queue_0_xdp_bytes"] - before["rx_queue_0_xdp_bytes"] >= 5 * 84
    assert got["same"], "an unchanged set must not be read again"
    for name, value in after.items():
        assert value <= got["program"][name], name


@pytest.mark.root
def test_a_string_set_that_changes_size_at_run_time(netns: Callable[[], str]) -> None:
    """veth has one set of queue counters per channel: `ethtool -L` changes the count under an open reader."""
    ns = netns()
    sh("ip", "-n", ns, "link", "add", "va", "numtxqueues", "4", "numrxqueues", "4", "type", "veth", "peer", "name",
       "vb", "numtxqueues", "4", "numrxqueues", "4")  # fmt: skip
    sh("ip", "-n", ns, "link", "set", "va", "up")
    sh("ip", "netns", "exec", ns, "ethtool", "-L", "va", "rx", "1", "tx", "1")
    got = in_netns(
        ns,
        """
        reader = StatsReader("va")
        first = reader.read()
        sh("ethtool", "-L", "va", "rx", "4", "tx", "4")
        grown, grown_program = reader.read(), ethtool_S("va")
        sh("ethtool", "-L", "va", "rx", "2", "tx", "1")
        shrunk, shrunk_program = reader.read(), ethtool_S("va")
        print(json.dumps({"first": first, "grown": [grown, grown_program], "shrunk": [shrunk, shrunk_program]}))
        """,
    )
    for stats, program in (got["grown"], got["shrunk"]):
        assert list(stats) == list(program)
        assert stats == program
    assert len(got["first"]) < len(got["shrunk"][0]) < len(got["grown"][0])
    assert "rx_queue_3_xdp_packets" in got["grown"][0] and "rx_queue_3_xdp_packets" not in got["shrunk"][0]


@pytest.mark.root
def test_an_interface_renamed_or_removed_between_reads(netns: Callable[[], str]) -> None:
    ns = netns()
    sh("ip", "-n", ns, "link", "add", "va", "type", "veth", "peer", "name", "vb")
    got = in_netns(
        ns,
        """
        reader = StatsReader("va")
        reader.read()
        sh("ip", "link", "set", "va", "name", "vr")
        renamed = error(reader.read)
        again = StatsReader("vr")
        ok = again.read()
        sh("ip", "link", "del", "vr")
        removed = error(again.read)
        missing = error(lambda: StatsReader("vr"))
        print(json.dumps({"renamed": renamed, "ok": ok, "removed": removed, "missing": missing}))
        """,
    )
    assert got["renamed"]["errno"] == errno.ENODEV and got["renamed"]["message"].startswith("va: gone")
    assert "peer_ifindex" in got["ok"]
    assert got["removed"]["errno"] == errno.ENODEV and got["removed"]["message"].startswith("vr: gone")
    assert got["missing"] == {"errno": errno.ENODEV, "message": "vr: no such interface"}
