"""Small host readings the checks judge: dpkg's view of a package, a Wi-Fi interface's power saving, a NIC's
firmware version. Text in, plain values out."""

from __future__ import annotations

import re
from dataclasses import dataclass

# dpkg's three status words (lib/dpkg/pkg-namevalue.c: wantinfos, eflaginfos, statusinfos). Only these two states
# leave no package files that run: a removed package's conffiles, or nothing at all.
NOT_INSTALLED_STATES = ("not-installed", "config-files")
_POWER_SAVE = re.compile(r"^\s*Power save:\s*(on|off)\s*$", re.MULTILINE)
_FIRMWARE = re.compile(r"^\d+\.\d+\.\d+")


@dataclass(frozen=True)
class DpkgStatus:
    """`dpkg-query -W -f '${Status} ${Version}' NAME`: "install ok installed 24.10-1.1.4"."""

    want: str  # unknown, install, hold, deinstall, purge
    eflag: str  # ok, reinstreq
    state: str  # not-installed, config-files, half-installed, unpacked, half-configured, ..., installed
    version: str  # empty when dpkg has no version for it (never installed)

    @property
    def installed(self) -> bool:
        """Its files are on the system (half-installed and unpacked count: its maintainer scripts can still run)."""
        return self.state not in NOT_INSTALLED_STATES

    @property
    def held(self) -> bool:
        """`apt-mark hold` sets the want to hold: apt upgrades it no more."""
        return self.want == "hold"


def dpkg_status(text: str) -> DpkgStatus:
    """One `${Status} ${Version}` line; ValueError when it is not three status words and a version."""
    words = text.split()
    if len(words) not in (3, 4):
        raise ValueError(f"expected 'WANT EFLAG STATE VERSION', found {text.strip()[:80]!r}")
    return DpkgStatus(words[0], words[1], words[2], words[3] if len(words) == 4 else "")


def iw_power_save(text: str) -> str:
    """`iw dev IF get power_save` prints "Power save: on" or "Power save: off" (iw's power_save.c); ValueError
    otherwise."""
    match = _POWER_SAVE.search(text)
    if match is None:
        raise ValueError(f"no 'Power save: on|off' line in {text.strip()[:80]!r}")
    return match.group(1)


def firmware_version(text: str) -> str | None:
    """The version of an `ethtool -i` firmware-version or a sysfs fw_ver: mlx5 writes "%d.%d.%04d (%.16s)" (the
    PSID in brackets) to ethtool and "%d.%d.%04d" to fw_ver; None when it does not start with one."""
    match = _FIRMWARE.match(text.strip())
    return match.group(0) if match else None
