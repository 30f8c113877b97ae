"""The active cabling probe: raw L2 broadcast beacons on every fabric interface, as NVIDIA's cluster setup does
(AF_PACKET, EtherType 0x88B5, IEEE local experimental). It finds who is cabled to what even when addresses are
missing or wrong. Needs CAP_NET_RAW (root)."""

from __future__ import annotations

import json
import os
import select
import socket
import time
from dataclasses import dataclass, field

ETHERTYPE = 0x88B5
MAGIC = b"WIRESPEED-PROBE/1 "
BROADCAST = b"\xff" * 6
PACKET_OUTGOING = 4


@dataclass
class ProbeResult:
    node: str
    heard: list[dict[str, str]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "heard": self.heard, "errors": self.errors}


def _mac(iface: str) -> bytes:
    with open(f"/sys/class/net/{iface}/address") as handle:
        return bytes.fromhex(handle.read().strip().replace(":", ""))


def probe(node: str, ifaces: list[str], token: str, duration_s: float = 2.0, interval_s: float = 0.2) -> ProbeResult:
    """Send beacons on every interface and listen on all of them for `duration_s`."""
    result = ProbeResult(node)
    sockets: dict[socket.socket, tuple[str, bytes]] = {}
    for iface in ifaces:
        try:
            # Protocol 0 receives nothing until bind() names the interface: a socket opened with the EtherType
            # would take frames from every interface in between, and a beacon heard on one half would be
            # credited to another (a cable that does not exist).
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            sock.bind((iface, ETHERTYPE))
            sock.setblocking(False)
            sockets[sock] = (iface, _mac(iface))
        except OSError as exc:
            result.errors[iface] = exc.strerror or str(exc)
    seen: set[tuple[str, str, str]] = set()
    try:
        deadline = time.monotonic() + duration_s
        next_send = 0.0
        while time.monotonic() < deadline:
            now = time.monotonic()
            if now >= next_send:
                for sock, (iface, mac) in sockets.items():
                    body = json.dumps({"node": node, "iface": iface, "token": token}).encode()
                    try:
                        sock.send(BROADCAST + mac + ETHERTYPE.to_bytes(2, "big") + MAGIC + body)
                    except OSError as exc:  # a half that is down cannot send
                        result.errors.setdefault(iface, exc.strerror or str(exc))
                next_send = now + interval_s
            readable, _, _ = select.select(list(sockets), [], [], max(0.0, min(next_send, deadline) - time.monotonic()))
            for sock in readable:
                try:
                    frame, address = sock.recvfrom(2048)
                except OSError:
                    continue
                rx_iface = sockets[sock][0]
                if address[2] == PACKET_OUTGOING or address[0] != rx_iface:
                    continue
                payload = frame[14:]
                if not payload.startswith(MAGIC):
                    continue
                try:
                    data = json.loads(payload[len(MAGIC) :])
                except ValueError:
                    continue
                if data.get("token") != token:
                    continue
                key = (rx_iface, str(data.get("node")), str(data.get("iface")))
                if key not in seen:
                    seen.add(key)
                    result.heard.append(
                        {
                            "rx_iface": key[0],
                            "from_node": key[1],
                            "from_iface": key[2],
                            "from_mac": frame[6:12].hex(":"),
                        }
                    )
    finally:
        for sock in sockets:
            sock.close()
    return result


def can_probe() -> bool:
    return os.geteuid() == 0
