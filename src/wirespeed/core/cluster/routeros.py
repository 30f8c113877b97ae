"""The switch as part of the cluster: a MikroTik RouterOS switch (CRS804-4DDQ and kin) named in the cluster file,
and the RouterOS script that makes its fabric ports carry what the hosts send. Pure.

Why each line of the plan is there (`spark-facts.md` section 6, field reports):
- breakout lanes at RouterOS defaults (auto-negotiation on) gave no link or 100G: the plan forces
  `auto-negotiation=no speed=200G-baseCR4` (`speed` takes effect only with auto-negotiation off);
- `fec-mode=auto` means off on RouterOS while the ConnectX-7 runs RS-FEC (544,514) at 200G: the plan sets `fec91`
  (clause-91 RS-FEC), the same on both ends;
- the default L2MTU 1584 clamps jumbo frames: the plan sets `l2mtu` before `mtu`, with headroom for tags;
- lossless RoCE (DSCP 26 to traffic class 3 with PFC and ECN, CNP in class 6) is offloaded on CRS8xx only from
  RouterOS 7.23 ("qos-hw - added ECN and PFC support on CRS8xx switches"; on 7.21.4 traffic never reached queue 3),
  so `--lossless` is refused below that version and says so when the version is not known.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.errors import InventoryError

KINDS = ("routeros",)
# `/interface ethernet` `speed` link modes of 10G and up, spelled as MikroTik's Ethernet manual lists them (RouterOS
# 7.12+; the `supported` list of `monitor` holds the 200G and 400G ones); `monitor` reports the rate as `200Gbps`.
SPEEDS = (
    "10G-baseT", "10G-baseSR-LR", "10G-baseCR", "25G-baseSR-LR", "25G-baseCR", "40G-baseSR4-LR4", "40G-baseCR4",
    "50G-baseSR2-LR2", "50G-baseCR2", "50G-baseSR-LR", "50G-baseCR", "100G-baseSR4-LR4", "100G-baseCR4",
    "100G-baseSR2-LR2", "100G-baseCR2", "200G-baseSR4-LR4", "200G-baseCR4", "400G-baseSR8-LR8", "400G-baseCR8",
)  # fmt: skip
FEC_MODES = ("auto", "fec74", "fec91", "off")
L2MTU_HEADROOM = 216  # 9000 -> 9216, what the CRS804 field plan used: room for VLAN/QinQ tags
# RouterOS l2mtu >= MTU + 22 (Ethernet header 14, one VLAN tag 4, FCS 4): spark-facts problem 5; the live CRS804 ran
# mtu=9000 l2mtu=9022. Below it full-size frames are dropped at the switch, silently.
L2MTU_MIN_OVERHEAD = 22
LOSSLESS_MIN_VERSION = (7, 23)
ROCE_DSCP, ROCE_TC, CNP_DSCP, CNP_TC = 26, 3, 48, 6
ROCE_TOS = 106  # DSCP 26 << 2 | ECT(0): what NCCL_IB_TC and cma_roce_tos take
PASSWORD_ENV = "WIRESPEED_SWITCH_PASSWORD"  # noqa: S105 - the name of the variable, not a password
_PORT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class SwitchConfig:
    """The `[switch]` table of a cluster file. The password is never here: only where to read it from."""

    kind: str
    address: str  # host or host:port of the REST API
    user: str = "admin"
    password_env: str = PASSWORD_ENV
    password_file: str | None = None  # a file the user controls, holding only the password
    ports: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node -> its cables' switch ports
    bridge: str | None = "bridge1"
    tls: bool = True  # https (RouterOS `www-ssl`); plain http needs RouterOS 7.9+ and `tls = false`
    ca_file: str | None = None  # the certificate to trust for a self-signed switch (else the system's)
    speed: str = "200G-baseCR4"  # what every fabric port should run: the rate `switch.ports` expects
    fec_mode: str = "fec91"


def parse_switch_table(data: Mapping[str, Any], source: str, nodes: Sequence[str]) -> SwitchConfig:
    """Read `[switch]`; each error names the file and the key, with a hint."""
    known = {
        "kind", "address", "user", "password_env", "password_file", "ports", "bridge", "tls", "ca_file", "speed",
        "fec_mode",
    }  # fmt: skip
    if "password" in data:
        raise InventoryError(
            f"{source}: [switch] password: not in the cluster file",
            hint=f"export {PASSWORD_ENV}, or password_file = a file only you can read",
        )
    unknown = sorted(set(data) - known)
    if unknown:
        raise InventoryError(
            f"{source}: [switch]: unknown key(s) {', '.join(unknown)}", hint=f"keys are {', '.join(sorted(known))}"
        )

    def text(key: str, default: str | None = None) -> str:
        value = data.get(key, default)
        if not isinstance(value, str) or not value:
            raise InventoryError(f"{source}: [switch] {key} must be a non-empty string", hint=f'{key} = "..."')
        return value

    kind = text("kind")
    if kind not in KINDS:
        raise InventoryError(
            f"{source}: [switch] kind {kind!r} is not supported", hint=f"kind is one of {', '.join(KINDS)}"
        )
    password_env = text("password_env", PASSWORD_ENV)
    if not _ENV_RE.fullmatch(password_env):
        raise InventoryError(f"{source}: [switch] password_env {password_env!r} is not a variable name")
    raw_ports = data.get("ports", {})
    if not isinstance(raw_ports, Mapping):
        raise InventoryError(
            f"{source}: [switch] ports must be a table", hint='ports = { spark-1 = ["qsfp56-dd-1-1"] }'
        )
    ports: dict[str, tuple[str, ...]] = {}
    for node, names in raw_ports.items():
        if node not in nodes:
            raise InventoryError(
                f"{source}: [switch] ports: no node named {node!r}", hint=f"nodes are: {', '.join(nodes)}"
            )
        listed = [names] if isinstance(names, str) else names
        if not isinstance(listed, list) or not all(isinstance(n, str) and _PORT_RE.fullmatch(n) for n in listed):
            raise InventoryError(
                f"{source}: [switch] ports.{node}: a list of switch port names", hint='["qsfp56-dd-1-1"]'
            )
        ports[node] = tuple(listed)
    seen: dict[str, str] = {}
    for node, names in ports.items():
        for name in names:
            if name in seen:
                raise InventoryError(f"{source}: [switch] port {name} is given for {seen[name]} and {node}")
            seen[name] = node
    bridge = data.get("bridge", "bridge1")
    if bridge is not None and (not isinstance(bridge, str) or (bridge and not _PORT_RE.fullmatch(bridge))):
        raise InventoryError(f'{source}: [switch] bridge must be a bridge name, or "" for none')
    tls = data.get("tls", True)
    if not isinstance(tls, bool):
        raise InventoryError(f"{source}: [switch] tls must be true or false")
    paths: dict[str, str | None] = {}
    for key in ("password_file", "ca_file"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise InventoryError(f"{source}: [switch] {key} must be a path")
        paths[key] = value
    speed, fec_mode = text("speed", "200G-baseCR4"), text("fec_mode", "fec91")
    if speed not in SPEEDS:
        raise InventoryError(f"{source}: [switch] speed {speed!r} is not a RouterOS speed", hint="e.g. 200G-baseCR4")
    if fec_mode not in FEC_MODES:
        raise InventoryError(f"{source}: [switch] fec_mode {fec_mode!r}", hint=f"one of {', '.join(FEC_MODES)}")
    return SwitchConfig(
        kind=kind,
        address=text("address"),
        user=text("user", "admin"),
        password_env=password_env,
        password_file=paths["password_file"],
        ports=ports,
        bridge=bridge or None,
        tls=tls,
        ca_file=paths["ca_file"],
        speed=speed,
        fec_mode=fec_mode,
    )


def _loopback(address: str) -> bool:
    """Whether `address` (host, host:port, [v6]:port, or a bare IPv6 address) is this host."""
    host, sep, port = address.rpartition(":")
    candidates = [address.strip("[]")]
    if sep and port.isdigit() and "]" not in port:
        candidates.append(host.strip("[]"))
    for candidate in candidates:
        if candidate.lower() == "localhost":
            return True
        try:
            if ipaddress.ip_address(candidate).is_loopback:
                return True
        except ValueError:
            continue
    return False


def cleartext_password(config: SwitchConfig) -> str | None:
    """Why the switch password would cross the network unencrypted with this `[switch]`, in one line naming the
    switch; None with TLS, or to a loopback address (an ssh tunnel's end: the password never leaves the host)."""
    if config.tls or _loopback(config.address):
        return None
    return (
        f"switch {config.address}: tls = false: the password of user {config.user!r} crosses the network "
        "unencrypted (HTTP Basic auth)"
    )


CLEARTEXT_HINT = "set tls = true in [switch] (with --insecure or ca_file for a self-signed certificate)"


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """`7.23.1 (stable)` -> (7, 23, 1); None when it is not a RouterOS version."""
    if not text:
        return None
    match = re.match(r"^\s*(\d+(?:\.\d+)*)", text)
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


@dataclass(frozen=True)
class PlanOptions:
    speed: str = "200G-baseCR4"
    fec_mode: str = "fec91"
    host_mtu: int = 9000
    lossless: bool = False
    routeros_version: str | None = None  # what the switch runs (from `switch status`), for the lossless guard

    def __post_init__(self) -> None:
        if self.speed not in SPEEDS:
            raise ValueError(f"speed {self.speed!r}: one of {', '.join(SPEEDS)}")
        if self.fec_mode not in FEC_MODES:
            raise ValueError(f"fec mode {self.fec_mode!r}: one of {', '.join(FEC_MODES)}")
        if not 1280 <= self.host_mtu <= 9978:
            raise ValueError(f"MTU {self.host_mtu}: between 1280 and 9978 (the switch's L2MTU tops out at 10218)")

    @property
    def l2mtu(self) -> int:
        return self.host_mtu + L2MTU_HEADROOM

    def port_settings(self) -> dict[str, str]:
        """What each fabric port is set to, as RouterOS names and spells it (REST reads back `false` for `no`)."""
        return {
            "auto-negotiation": "no",
            "speed": self.speed,
            "fec-mode": self.fec_mode,
            "l2mtu": str(self.l2mtu),
            "mtu": str(self.host_mtu),
        }


def rate_gbps(speed: str) -> float | None:
    """`200G-baseCR4` or monitor's `200Gbps` -> 200.0 (Gb/s, 10^9 bit/s); `100Mbps` -> 0.1; None if neither."""
    match = re.match(r"^(\d+(?:\.\d+)?)([MG])(?:bps\b|-|$)", speed)
    if match is None:
        return None
    return float(match.group(1)) * (1.0 if match.group(2) == "G" else 0.001)


@dataclass(frozen=True)
class HostHalf:
    """A host interface on the switch: where the lossless host-side settings go."""

    node: str
    iface: str
    rdma_device: str | None


@dataclass(frozen=True)
class Plan:
    script: tuple[str, ...]  # RouterOS CLI lines, to paste or to apply
    host_commands: tuple[str, ...]  # per node, what the hosts need to match (lossless only)
    notes: tuple[str, ...]  # what was left out and why


def _ports(config: SwitchConfig) -> list[tuple[str, str]]:
    return [(node, port) for node, names in config.ports.items() for port in names]


def plan(config: SwitchConfig, options: PlanOptions, halves: Sequence[HostHalf] = ()) -> Plan:
    """The RouterOS script for the fabric ports, and with `lossless` the QoS recipe and the matching host side.
    Raises ValueError with the reason when the plan cannot be made (no ports, lossless on a version too old)."""
    ports = _ports(config)
    if not ports:
        raise ValueError('no switch ports in the cluster file ([switch] ports = { NODE = ["PORT", ...] })')
    notes: list[str] = []
    version = parse_version(options.routeros_version)
    if options.lossless:
        if version is None:
            raise ValueError(
                "--lossless needs the RouterOS version (PFC and ECN are offloaded on CRS8xx only from 7.23): "
                "`wirespeed switch status` reads it, or give --routeros-version"
            )
        if version < LOSSLESS_MIN_VERSION:
            shown = ".".join(map(str, version))
            raise ValueError(
                f"RouterOS {shown} does not offload PFC/ECN on CRS8xx switches (7.23 added it; on 7.21.4 RoCE traffic "
                "never reached queue 3): upgrade the switch first"
            )
    lines = [
        f"# wirespeed switch plan: {len(ports)} fabric port(s) at {options.speed}, FEC {options.fec_mode}, "
        f"MTU {options.host_mtu} (L2MTU {options.l2mtu})",
        "/interface/ethernet",
    ]
    for node, port in ports:
        cables = config.ports[node]
        lines.append(f"# {node}, cable {cables.index(port) + 1} of {len(cables)}")
        lines.append(
            f'set [find default-name="{port}"] auto-negotiation=no speed={options.speed} fec-mode={options.fec_mode} '
            f"l2mtu={options.l2mtu} mtu={options.host_mtu}"
        )
    if config.bridge:
        lines.append("/interface/bridge/port")
        lines += [f"add bridge={config.bridge} interface={port}" for _, port in ports]
        notes.append(f"ports join {config.bridge}; `add` fails on a port already in it, which is harmless")
    host: list[str] = []
    if options.lossless:
        lines += [
            "/interface/ethernet/switch/qos/profile",
            f"add name=roce dscp={ROCE_DSCP} traffic-class={ROCE_TC}",
            f"add name=cnp dscp={CNP_DSCP} traffic-class={CNP_TC}",
            "/interface/ethernet/switch/qos/map/ip",
            f"add dscp={ROCE_DSCP} profile=roce",
            f"add dscp={CNP_DSCP} profile=cnp",
            "/interface/ethernet/switch/qos/tx-manager/queue",
            "set 1 schedule=high-priority-group weight=1",
            f"set {ROCE_TC} schedule=high-priority-group weight=1 ecn=yes",
            f"set {CNP_TC} schedule=strict-priority",
            "/interface/ethernet/switch/qos/priority-flow-control",
            f"add name=pfc-tc{ROCE_TC} traffic-class={ROCE_TC} rx=yes tx=yes",
            "/interface/ethernet/switch/qos/port",
            *[f"set {port} trust-l3=keep pfc=pfc-tc{ROCE_TC}" for _, port in ports],
            "/interface/ethernet/switch/qos/settings",
            f"set lossless-traffic-class={ROCE_TC} lossless-buffers=auto",
            "/interface/ethernet/switch",
            "set [find] qos-hw-offloading=yes",
            "/ip/neighbor/discovery-settings",
            "set lldp-dcbx=yes",
        ]
        notes.append("no egress-rate-queue3: a CRS804 on 7.23.1 refused 200Gbps (`max bit rate is 100G`)")
        for half in halves:
            host.append(f"# {half.node}")
            host.append(f"dcb app add dev {half.iface} dscp-prio {ROCE_DSCP}:{ROCE_TC} {CNP_DSCP}:{CNP_TC}")
            host.append(f"dcb pfc set dev {half.iface} prio-pfc {ROCE_TC}:on")
            if half.rdma_device:
                host.append(f"cma_roce_tos -d {half.rdma_device} -p 1 -t {ROCE_TOS}")
        if halves:
            host.append(
                f"# NCCL: NCCL_IB_TC={ROCE_TOS} (DSCP {ROCE_DSCP} with ECT), as in: bench --env NCCL_IB_TC={ROCE_TOS}"
            )
        else:
            notes.append("no host-side commands: no discovery of the hosts' fabric interfaces")
    return Plan(tuple(lines), tuple(host), tuple(notes))
