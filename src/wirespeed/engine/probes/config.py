"""How the node is configured where the fabric feels it: sysctls, the firewall, the routes, and the files
`wirespeed fix` manages."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from wirespeed.adapters.configroot import system_path
from wirespeed.adapters.source import NodeSource, Output
from wirespeed.core.fabric.facts import Route, Unknown
from wirespeed.core.fixplan import MANAGED_FILES, NETPLAN_DIR
from wirespeed.core.parsers import sysfs_values as sv
from wirespeed.engine.probes.common import IP_ROUTE_MAIN, command, command_unknown, parsed, read, text

GLOBAL_SYSCTLS = (
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.netdev_max_backlog",
    "net.ipv4.conf.all.arp_ignore",
    "net.ipv4.conf.all.arp_announce",
    "net.ipv4.conf.all.rp_filter",
    "net.ipv4.conf.default.rp_filter",
    "net.ipv4.ip_forward",  # a ring's relays forward between their cables
)
PER_INTERFACE_SYSCTLS = (
    "net.ipv4.conf.{}.arp_ignore",
    "net.ipv4.conf.{}.arp_announce",
    "net.ipv4.conf.{}.rp_filter",
    "net.ipv6.conf.{}.disable_ipv6",
)
FIREWALL_COMMANDS = {
    "nft": ["nft", "list", "ruleset"],
    "iptables": ["iptables", "-S"],
    "ufw": ["ufw", "status"],
}


@dataclass(frozen=True)
class ConfigFiles:
    """The files `fix` manages as they are now (path -> text; absent: not there), and whether netplan is in use."""

    files: dict[str, str]
    netplan: bool


def sysctls(source: NodeSource, fabric: Sequence[str]) -> dict[str, str]:
    """The global sysctls and those of each fabric interface that could be read, whitespace folded (as sysctl
    prints them); an unreadable one is absent."""
    keys = list(GLOBAL_SYSCTLS) + [k.format(i) for i in fabric for k in PER_INTERFACE_SYSCTLS]
    values: dict[str, str] = {}
    for key in keys:
        value = read(source, "/proc/sys/" + key.replace(".", "/"), text, key)
        if not isinstance(value, Unknown):
            values[key] = " ".join(value.split())
    return values


def firewall(source: NodeSource) -> dict[str, str]:
    """Each firewall tool's listing; one not installed (or closed to this user) is absent."""
    found: dict[str, str] = {}
    for tool, argv in FIREWALL_COMMANDS.items():
        listing = source.output(f"firewall_{tool}", command(argv))
        if listing.ok:
            found[tool] = listing.stdout
    return found


def routes(source: NodeSource) -> tuple[Route, ...] | Unknown:
    """The IPv4 main table; the same reading `net.management` takes for the default route (one recorded output)."""
    found = source.output("ip_route", command(IP_ROUTE_MAIN))
    return parsed("ip_route", found, "ip -j route", sv.ip_routes_json)


def _config_files() -> Output:
    """The files `fix` manages, as they are now, and whether the node uses netplan (JSON)."""
    files: dict[str, str] = {}
    for path in MANAGED_FILES:
        with contextlib.suppress(FileNotFoundError, PermissionError):  # unreadable as a user: root reads it (--become)
            files[path] = system_path(path).read_text()
    return Output(0, json.dumps({"files": files, "netplan": system_path(NETPLAN_DIR).is_dir()}) + "\n")


def config_files(source: NodeSource) -> ConfigFiles | Unknown:
    """The files `fix` manages and netplan's use, or why they were not read."""
    result = source.output("config_files", _config_files)
    if not result.ok:
        return command_unknown("config_files", result, "wirespeed")
    try:
        data = json.loads(result.stdout)
        return ConfigFiles(files=dict(data["files"]), netplan=bool(data["netplan"]))
    except (ValueError, KeyError, TypeError) as exc:
        return Unknown(f"config_files: unreadable ({exc})")
