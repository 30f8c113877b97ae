"""`ip addr` / `ip address show [dev IFACE]` (iproute2 ip/ipaddress.c: print_linkinfo, print_addrinfo), as pasted.
Pure: text in, interfaces out, with the lines read, so a caller can name the rest.

    2: enp1s0f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP group default qlen 1000
        link/ether a0:88:c2:d5:84:b2 brd ff:ff:ff:ff:ff:ff
        inet 192.168.202.201/24 brd 192.168.202.255 scope global enp1s0f0np0
           valid_lft forever preferred_lft forever
        inet6 fe80::a288:c2ff:fed5:84b2/64 scope link

Also the one-line form of `ip -o addr` (`2: eth0    inet 10.0.0.1/24 brd ... scope global eth0\\ ...`). An address
that is no address (a paste that made it **bold**) is not read, so the caller names its line.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^\s*(?P<index>\d+):\s+(?P<name>[^\s:@]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>(?P<rest>.*)$")
_ONELINE = re.compile(r"^\s*\d+:\s+(?P<name>[^\s:@]+)(?:@\S+)?\s+(?P<family>inet6?)\s+(?P<addr>\S+)")
_MTU = re.compile(r"\bmtu (\d+)\b")
_STATE = re.compile(r"\bstate (\S+)")
_LINK = re.compile(r"^\s*link/(?P<type>\S+)(?:\s+(?P<mac>[0-9a-fA-F:]{11,}))?")
_INET = re.compile(r"^\s*(?P<family>inet6?)\s+(?P<addr>\S+)")
_CONTINUED = re.compile(r"^\s*(?:valid_lft|altname|vf \d|prop )")

LINK_TYPES = {"ether": 1, "infiniband": 32, "loopback": 772, "none": 65534}


@dataclass
class Interface:
    name: str
    flags: tuple[str, ...] = ()
    mtu: int | None = None
    state: str | None = None  # operstate as printed: UP, DOWN, UNKNOWN, LOWERLAYERDOWN ...
    link_type: str | None = None  # ether, infiniband, loopback
    mac: str | None = None
    ipv4: list[str] = field(default_factory=list)  # CIDR
    ipv6: list[str] = field(default_factory=list)

    @property
    def carrier(self) -> bool | None:
        """LOWER_UP: carrier; NO-CARRIER, or UP without LOWER_UP: none; administratively down: not known."""
        if "LOWER_UP" in self.flags:
            return True
        if "NO-CARRIER" in self.flags or "UP" in self.flags:
            return False
        return None


@dataclass(frozen=True)
class IpAddr:
    interfaces: tuple[Interface, ...]
    read: frozenset[int]  # 1-based lines used


def _address(text: str) -> str | None:
    try:
        return str(ipaddress.ip_interface(text))
    except ValueError:
        return None


def parse(text: str) -> IpAddr:
    found: dict[str, Interface] = {}
    read: set[int] = set()
    current: Interface | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current = found.setdefault(header["name"], Interface(header["name"]))
            current.flags = tuple(f for f in header["flags"].split(",") if f)
            mtu, state = _MTU.search(header["rest"]), _STATE.search(header["rest"])
            current.mtu = int(mtu.group(1)) if mtu else None
            current.state = state.group(1) if state else None
            read.add(number)
            continue
        oneline = _ONELINE.match(line)
        if oneline and not header:
            address = _address(oneline["addr"])
            if address is not None:
                iface = found.setdefault(oneline["name"], Interface(oneline["name"]))
                (iface.ipv6 if oneline["family"] == "inet6" else iface.ipv4).append(address)
                read.add(number)
            continue
        if current is None:
            continue
        link = _LINK.match(line)
        if link:
            current.link_type = link["type"]
            current.mac = link["mac"].lower() if link["mac"] else None
            read.add(number)
            continue
        inet = _INET.match(line)
        if inet:
            address = _address(inet["addr"])
            if address is not None:
                (current.ipv6 if inet["family"] == "inet6" else current.ipv4).append(address)
                read.add(number)
            continue
        if _CONTINUED.match(line):
            read.add(number)
    return IpAddr(tuple(found.values()), frozenset(read))


def looks_like(text: str) -> bool:
    return any(_HEADER.match(line) and "mtu" in line for line in text.splitlines())
