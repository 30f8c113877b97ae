"""`ethtool --show-fec IFACE` (ethtool.c do_gfec and netlink/fec.c fec_reply_cb), as pasted. Pure: text in, one
reading per interface out.

    FEC parameters for enp1s0f1np1:
    Supported/Configured FEC encodings: Auto
    Active FEC encoding: RS

Before ethtool 5.13 the second line read `Configured FEC encodings:`; with `-I` a `Statistics:` block follows, totals
then `Lane N:` values (`corrected_blocks`, `uncorrectable_blocks`, `corrected_bits`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^\s*FEC parameters for (?P<name>\S+?):\s*$")
_CONFIGURED = re.compile(r"^\s*(?:Supported/)?Configured FEC encodings?:\s*(?P<modes>.*?)\s*$")
_ACTIVE = re.compile(r"^\s*Active FEC encodings?:\s*(?P<modes>.*?)\s*$")
_STATISTICS = re.compile(r"^\s*Statistics:\s*$")
_STAT = re.compile(r"^\s+(?P<name>[a-z_]+):\s*(?P<value>\d+)\s*$")
_LANE = re.compile(r"^\s+Lane (?P<lane>\d+):\s*(?P<value>\d+)\s*$")


@dataclass
class FecSetting:
    name: str
    configured: tuple[str, ...] = ()
    active: tuple[str, ...] = ()
    statistics: dict[str, int] = field(default_factory=dict)  # totals
    lanes: dict[str, dict[int, int]] = field(default_factory=dict)  # per statistic, per lane


@dataclass(frozen=True)
class EthtoolFec:
    settings: tuple[FecSetting, ...]
    read: frozenset[int]


def parse(text: str) -> EthtoolFec:
    settings: list[FecSetting] = []
    read: set[int] = set()
    current: FecSetting | None = None
    statistic: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current, statistic = FecSetting(header["name"]), None
            settings.append(current)
            read.add(number)
            continue
        if current is None:
            continue
        for pattern, attribute in ((_CONFIGURED, "configured"), (_ACTIVE, "active")):
            match = pattern.match(line)
            if match:
                setattr(current, attribute, tuple(match["modes"].split()))
                read.add(number)
                break
        else:
            if _STATISTICS.match(line):
                read.add(number)
            elif lane := _LANE.match(line):
                if statistic is not None:
                    current.lanes.setdefault(statistic, {})[int(lane["lane"])] = int(lane["value"])
                    read.add(number)
            elif stat := _STAT.match(line):
                statistic = stat["name"]
                current.statistics[statistic] = int(stat["value"])
                read.add(number)
    return EthtoolFec(tuple(settings), frozenset(read))


def looks_like(text: str) -> bool:
    return any(_HEADER.match(line) for line in text.splitlines())
