"""`ip -br addr` and `ip -br link` (iproute2 ip/ipaddress.c, print_linkinfo and print_addrinfo with -brief: the name
padded to 16, the operstate to 14, then the addresses, or the MAC and the `<FLAGS>`). Pure: text in, interfaces out.

    enp1s0f1np1      UP             169.254.127.30/16 fe80::4ebb:47ff:fe2f:9113/64
    enp1s0f0np0      DOWN           4c:bb:47:2f:91:12 <NO-CARRIER,BROADCAST,MULTICAST,UP>
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

# ip/ipaddress.c oper_states[]
STATES = ("UNKNOWN", "NOTPRESENT", "DOWN", "LOWERLAYERDOWN", "TESTING", "DORMANT", "UP")
_ROW = re.compile(r"^(?P<name>[^\s@]+)(?:@\S+)?\s+(?P<state>" + "|".join(STATES) + r")(?:\s+(?P<rest>.*?))?\s*$")
_LINK_REST = re.compile(r"^(?P<mac>(?:[0-9a-fA-F]{2}:){5,19}[0-9a-fA-F]{2})?\s*<(?P<flags>[^>]*)>$")


@dataclass(frozen=True)
class BriefInterface:
    name: str
    state: str
    ipv4: tuple[str, ...] = ()
    ipv6: tuple[str, ...] = ()
    mac: str | None = None
    flags: tuple[str, ...] | None = None  # `ip -br link` only

    @property
    def carrier(self) -> bool | None:
        """From the flags where `ip -br link` printed them; else from the operstate: UP carries, DOWN and
        LOWERLAYERDOWN do not, UNKNOWN (a loopback, a tun) says nothing."""
        if self.flags is not None:
            if "LOWER_UP" in self.flags:
                return True
            return False if "NO-CARRIER" in self.flags or "UP" in self.flags else None
        return {"UP": True, "DOWN": False, "LOWERLAYERDOWN": False}.get(self.state)


@dataclass(frozen=True)
class IpBrief:
    interfaces: tuple[BriefInterface, ...]
    read: frozenset[int]


def _row(line: str) -> BriefInterface | None:
    match = _ROW.match(line.strip())
    if match is None:
        return None
    rest = match["rest"] or ""
    link = _LINK_REST.match(rest)
    if link:
        flags = tuple(f for f in link["flags"].split(",") if f)
        return BriefInterface(match["name"], match["state"], mac=(link["mac"] or "").lower() or None, flags=flags)
    v4: list[str] = []
    v6: list[str] = []
    for token in rest.split():
        try:
            address = ipaddress.ip_interface(token)
        except ValueError:
            return None  # not an address list: some other table with a state column
        (v6 if address.version == 6 else v4).append(str(address))
    return BriefInterface(match["name"], match["state"], tuple(v4), tuple(v6))


def parse(text: str) -> IpBrief:
    rows: dict[str, BriefInterface] = {}
    read: set[int] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        row = _row(line)
        if row is None:
            continue
        read.add(number)
        before = rows.get(row.name)
        if before is None:
            rows[row.name] = row
        else:  # `ip -br addr` then `ip -br link` in one paste: one interface, both readings
            rows[row.name] = BriefInterface(
                row.name,
                row.state,
                before.ipv4 or row.ipv4,
                before.ipv6 or row.ipv6,
                before.mac or row.mac,
                before.flags if before.flags is not None else row.flags,
            )
    return IpBrief(tuple(rows.values()), frozenset(read))


def looks_like(text: str) -> bool:
    """Two rows or more, and rows are most of the non-blank lines."""
    lines = [line for line in text.splitlines() if line.strip()]
    rows = sum(1 for line in lines if _row(line) is not None)
    return rows >= 2 and rows * 2 >= len(lines)
