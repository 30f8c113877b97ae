"""`ethtool IFACE` (ethtool.c dump_link_usettings and netlink/settings.c: `Settings for IFACE:`, then `Key: value`
lines, link-mode lists continued on lines of their own), as pasted: whole, or cut down with `| grep Speed`, which leaves
no header, so the caller gives the interface its command named. Pure: text in, one reading per interface out.

    Settings for enp1s0f0np0:
            Speed: 200000Mb/s
            Link detected: yes

`Speed: Unknown!` (no link) is no speed; `Link detected: no (No cable)` keeps the driver's reason (netlink/settings.c
prints the link's extended state in parentheses).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^\s*Settings for (?P<name>\S+?):\s*$")
_FIELD = re.compile(r"^\s+(?P<key>[A-Z][\w ./-]*?):\s*(?P<value>.*?)\s*$")
_SPEED = re.compile(r"^(?P<n>\d+)\s*Mb/s$")
_DETECTED = re.compile(r"^(?P<yes>yes|no)(?:\s*\((?P<why>[^)]*)\))?$")
_NETLINK_ERROR = re.compile(r"^\s*netlink error: ")


@dataclass
class LinkSettings:
    name: str | None
    speed_mbps: int | None = None  # None: `Unknown!` or not shown
    duplex: str | None = None
    port: str | None = None
    autoneg: str | None = None
    lanes: int | None = None
    link_detected: bool | None = None
    link_detail: str | None = None  # the reason beside `no`, as printed
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EthtoolSettings:
    links: tuple[LinkSettings, ...]
    read: frozenset[int]


def _apply(link: LinkSettings, key: str, value: str) -> bool:
    """Keep one `Key: value`; True when it is a key of `ethtool IFACE`'s."""
    link.fields[key] = value
    if key == "Speed":
        speed = _SPEED.match(value)
        link.speed_mbps = int(speed["n"]) if speed else None
    elif key == "Duplex":
        link.duplex = value.split()[0] if value else None
    elif key == "Port":
        link.port = value
    elif key == "Auto-negotiation":
        link.autoneg = value
    elif key == "Lanes":
        link.lanes = int(value) if value.isdigit() else None
    elif key == "Link detected":
        detected = _DETECTED.match(value)
        if detected:
            link.link_detected = detected["yes"] == "yes"
            link.link_detail = detected["why"]
    return True


def parse(text: str, name: str | None = None) -> EthtoolSettings:
    """Every `Settings for` block; lines before any header (a `| grep` paste) belong to `name`."""
    links: list[LinkSettings] = []
    read: set[int] = set()
    current: LinkSettings | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current = LinkSettings(header["name"])
            links.append(current)
            read.add(number)
            continue
        if _NETLINK_ERROR.match(line):
            read.add(number)  # unprivileged ethtool's stderr: what follows is still read
            continue
        row = _FIELD.match(line) if line[:1].isspace() else None
        if row is None and current is None:
            row = re.match(
                r"^\s*(?P<key>Speed|Duplex|Link detected|Port|Lanes|Auto-negotiation):\s*(?P<value>.*?)\s*$", line
            )
        if row is not None:
            if current is None:
                current = LinkSettings(name)
                links.append(current)
            _apply(current, row["key"], row["value"])
            read.add(number)
        elif current is not None and line[:1].isspace() and line.strip():
            read.add(number)  # a link-mode list or message level continued on its own line
    return EthtoolSettings(tuple(links), frozenset(read))


def looks_like(text: str) -> bool:
    lines = text.splitlines()
    if any(_HEADER.match(line) for line in lines):
        return any(re.match(r"^\s+(?:Speed|Link detected|Supported ports):", line) for line in lines)
    keys = [line for line in lines if re.match(r"^\s*(?:Speed: (?:\d+Mb/s|Unknown!)|Link detected: (?:yes|no))", line)]
    return bool(keys) and len(keys) * 2 >= len([line for line in lines if line.strip()])
