"""The cabling probe credits a beacon only to the interface that received it."""

from __future__ import annotations

import json
import socket
from typing import Any, ClassVar

import pytest

from wirespeed.adapters import l2probe

TOKEN = "t0k"


def beacon(node: str, iface: str, token: str = TOKEN) -> bytes:
    body = json.dumps({"node": node, "iface": iface, "token": token}).encode()
    return l2probe.BROADCAST + b"\x02" * 6 + l2probe.ETHERTYPE.to_bytes(2, "big") + l2probe.MAGIC + body


class FakeSocket:
    """One AF_PACKET socket; `queue` holds (frame, sockaddr_ll) pairs as recvfrom returns them."""

    opened: ClassVar[list[FakeSocket]] = []

    def __init__(self, family: int, kind: int, proto: int) -> None:
        self.proto = proto
        self.bound: str | None = None
        self.queue: list[tuple[bytes, tuple[Any, ...]]] = []
        FakeSocket.opened.append(self)

    def bind(self, address: tuple[str, int]) -> None:
        self.bound = address[0]

    def setblocking(self, flag: bool) -> None:
        pass

    def send(self, frame: bytes) -> int:
        return len(frame)

    def recvfrom(self, size: int) -> tuple[bytes, tuple[Any, ...]]:
        return self.queue.pop(0)

    def close(self) -> None:
        pass


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> type[FakeSocket]:
    FakeSocket.opened = []
    monkeypatch.setattr(l2probe.socket, "socket", FakeSocket)
    monkeypatch.setattr(l2probe, "_mac", lambda iface: b"\x02\x00\x00\x00\x00\x01")

    def select(readable: list[FakeSocket], *_: object) -> tuple[list[FakeSocket], list[Any], list[Any]]:
        return [s for s in readable if s.queue], [], []

    monkeypatch.setattr(l2probe.select, "select", select)
    return FakeSocket


def test_sockets_open_with_no_protocol_until_bound(fake: type[FakeSocket]) -> None:
    l2probe.probe("a", ["h0", "h1"], TOKEN, duration_s=0.01)
    assert [(s.proto, s.bound) for s in fake.opened] == [(0, "h0"), (0, "h1")]


def test_a_frame_received_on_another_interface_is_not_credited(fake: type[FakeSocket]) -> None:
    real_init = FakeSocket.__init__

    on_h1 = ("h1", l2probe.ETHERTYPE, socket.PACKET_HOST, 1, b"")

    def init(self: FakeSocket, *args: int) -> None:
        real_init(self, *args)
        # Both sockets hold b's beacon that arrived on h1 (h0's took it before it was bound), and h1's also a
        # beacon of an earlier probe.
        self.queue.append((beacon("b", "p1"), on_h1))
        if len(FakeSocket.opened) == 2:
            self.queue.append((beacon("b", "p9", token="old"), on_h1))

    FakeSocket.__init__ = init  # type: ignore[method-assign]
    try:
        result = l2probe.probe("a", ["h0", "h1"], TOKEN, duration_s=0.05)
    finally:
        FakeSocket.__init__ = real_init  # type: ignore[method-assign]
    assert [(h["rx_iface"], h["from_node"], h["from_iface"]) for h in result.heard] == [("h1", "b", "p1")]
