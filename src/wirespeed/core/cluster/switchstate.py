"""What a RouterOS switch's fabric ports are doing, read from its REST replies, and what they should be doing. Pure.

The REST API returns every value as a string (`"9000"`, `"true"`), counters may carry spaces as the console prints
them (`"100 054"`), and `/system/resource` may come back as one object or a list of one: the parsers take all of
these. From the state and the cluster file's `[switch]` table come the changes `switch apply` makes (ordered so that
RouterOS accepts each step) and the problems `switch verify` and the `switch.ports` check report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.cluster.routeros import L2MTU_MIN_OVERHEAD, PlanOptions, SwitchConfig, rate_gbps

# `/interface/ethernet/print stats` names, as MikroTik's Ethernet manual (Stats) lists them: `tx-drop` counts frames
# dropped for a full output queue (there is no `tx-drop-packet`), `rs-fec-uncorrected` the RS-FEC codewords it could
# not correct (fec91 only).
COUNTERS = ("rx-fcs-error", "rx-too-long", "tx-drop", "rs-fec-uncorrected")
LINK_PROPS = ("auto-negotiation", "speed", "fec-mode")


class SwitchReplyError(ValueError):
    """A REST reply that is not what RouterOS sends: names what was expected."""


@dataclass(frozen=True)
class SwitchPort:
    """One fabric port: its settings (`/interface/ethernet`), its link (`monitor` with `once`), counters, bridge."""

    id: str  # `.id`, e.g. `*1`: what PATCH takes
    name: str
    default_name: str
    mtu: int | None
    l2mtu: int | None
    speed: str
    auto_negotiation: bool | None
    fec_mode: str
    disabled: bool | None
    status: str | None = None  # `link-ok`, `no-link`; None when not monitored
    rate: str | None = None  # monitor's `rate`, e.g. `200Gbps`; None without link
    counters: Mapping[str, int] = field(default_factory=dict)
    bridge: str | None = None  # the bridge it is a port of
    bridge_port_id: str | None = None

    @property
    def link_up(self) -> bool:
        return self.status == "link-ok"

    @property
    def rate_gbps(self) -> float | None:
        return rate_gbps(self.rate) if self.rate else None

    def setting(self, prop: str) -> str | None:
        """A setting as the plan spells it, for comparison and the diff: booleans as yes/no."""
        values: dict[str, Any] = {
            "auto-negotiation": self.auto_negotiation,
            "speed": self.speed,
            "fec-mode": self.fec_mode,
            "l2mtu": self.l2mtu,
            "mtu": self.mtu,
        }
        value = values.get(prop)
        if isinstance(value, bool):
            return "yes" if value else "no"
        return None if value is None else str(value)


@dataclass(frozen=True)
class SwitchState:
    address: str
    version: str | None
    board_name: str | None
    ports: Mapping[str, SwitchPort]  # by default-name (what the cluster file names), every ethernet port

    def port(self, name: str) -> SwitchPort | None:
        """By default-name, or by the name the user gave it."""
        found = self.ports.get(name)
        return found or next((p for p in self.ports.values() if p.name == name), None)


def _records(reply: Any, what: str) -> list[Mapping[str, Any]]:
    """A reply as a list of records: None is none, one object is a list of one (RouterOS answers either way)."""
    if reply is None:
        return []
    if isinstance(reply, Mapping):
        reply = [reply]
    if not isinstance(reply, list) or not all(isinstance(r, Mapping) for r in reply):
        raise SwitchReplyError(f"{what}: expected a JSON list of records, got {type(reply).__name__}")
    return reply


def parse_int(text: Any) -> int | None:
    """`"9000"` -> 9000; `"100 054"` (console grouping) -> 100054; anything else -> None."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if not isinstance(text, str):
        return None
    compact = text.replace(" ", "")
    return int(compact) if compact.isascii() and compact.isdigit() else None


def parse_bool(text: Any) -> bool | None:
    if isinstance(text, bool):
        return text
    return {"true": True, "yes": True, "false": False, "no": False}.get(str(text).lower()) if text is not None else None


def parse_resource(reply: Any) -> tuple[str | None, str | None]:
    """`/system/resource`: (version, board-name)."""
    records = _records(reply, "/system/resource")
    first = records[0] if records else {}
    version, board = first.get("version"), first.get("board-name")
    return (version if isinstance(version, str) else None, board if isinstance(board, str) else None)


def parse_state(
    address: str,
    resource: Any,
    ethernet: Any,
    monitor: Any = None,
    stats: Any = None,
    bridge_ports: Any = None,
) -> SwitchState:
    """The switch from its replies: `GET /system/resource`, `GET /interface/ethernet`, `POST .../monitor` (once),
    `POST .../print` with `stats`, `GET /interface/bridge/port`. Raises SwitchReplyError on a malformed reply."""
    version, board = parse_resource(resource)
    links = {str(r.get("name")): r for r in _records(monitor, "/interface/ethernet/monitor")}
    counters = {str(r.get("name")): r for r in _records(stats, "/interface/ethernet/print stats")}
    bridged = {
        str(r.get("interface")): r
        for r in _records(bridge_ports, "/interface/bridge/port")
        if parse_bool(r.get("disabled")) is not True
    }
    ports: dict[str, SwitchPort] = {}
    for record in _records(ethernet, "/interface/ethernet"):
        name, record_id = record.get("name"), record.get(".id")
        if not isinstance(name, str) or not isinstance(record_id, str):
            raise SwitchReplyError("/interface/ethernet: a record without name or .id")
        default_name = record.get("default-name") or name
        link = links.get(name, {})
        bridge = bridged.get(name, {})
        ports[str(default_name)] = SwitchPort(
            id=record_id,
            name=name,
            default_name=str(default_name),
            mtu=parse_int(record.get("mtu")),
            l2mtu=parse_int(record.get("l2mtu")),
            speed=str(record.get("speed", "")),
            auto_negotiation=parse_bool(record.get("auto-negotiation")),
            fec_mode=str(record.get("fec-mode", "")),
            disabled=parse_bool(record.get("disabled")),
            status=link.get("status") if isinstance(link.get("status"), str) else None,
            rate=link.get("rate") if isinstance(link.get("rate"), str) else None,
            counters={c: n for c in COUNTERS if (n := parse_int(counters.get(name, {}).get(c))) is not None},
            bridge=bridge.get("bridge") if isinstance(bridge.get("bridge"), str) else None,
            bridge_port_id=bridge.get(".id") if isinstance(bridge.get(".id"), str) else None,
        )
    return SwitchState(address, version, board, ports)


def monitor_targets(ethernet: Any, config: SwitchConfig) -> list[tuple[str, str]]:
    """(current name, node) of each fabric port the switch has (the cluster file may give default-names)."""
    names = {str(r.get("default-name") or r.get("name")): str(r.get("name")) for r in _records(ethernet, "ethernet")}
    current = set(names.values())
    return [(names.get(p, p), node) for node, p in wanted_ports(config) if p in names or p in current]


# ---------------------------------------------------------------------------------------------- what should change
@dataclass(frozen=True)
class Change:
    """One setting of one port, from what it is to what the plan wants."""

    node: str
    port: str  # default-name
    prop: str  # a RouterOS property, or `bridge` for membership
    old: str | None
    new: str


@dataclass(frozen=True)
class PortUpdate:
    """The REST calls that make one port right, in an order RouterOS accepts: each PATCH body keeps its key order,
    and `l2mtu` goes in its own PATCH before `mtu` when the new MTU would not fit the current L2MTU (or after it,
    when the L2MTU shrinks below the current MTU)."""

    node: str
    port: str
    record_id: str
    patches: tuple[dict[str, str], ...]
    join_bridge: str | None = None  # PUT /interface/bridge/port
    move_bridge: tuple[str, str] | None = None  # (bridge port .id, new bridge): PATCH it


def wanted_ports(config: SwitchConfig) -> list[tuple[str, str]]:
    """(node, port) for every cable on the switch, in the cluster file's order."""
    return [(node, port) for node, names in config.ports.items() for port in names]


def _patches(port: SwitchPort, wanted: Mapping[str, str]) -> tuple[dict[str, str], ...]:
    body = {p: wanted[p] for p in (*LINK_PROPS, "mtu") if port.setting(p) != wanted[p]}
    if port.setting("l2mtu") == wanted["l2mtu"]:
        return (body,) if body else ()
    l2mtu = {"l2mtu": wanted["l2mtu"]}
    if "mtu" not in body:
        return ({**body, **l2mtu},)
    if port.l2mtu is None or int(body["mtu"]) > port.l2mtu:  # the new MTU does not fit the L2MTU of now
        return (l2mtu, body)
    return (body, l2mtu)


def plan_updates(
    state: SwitchState, config: SwitchConfig, options: PlanOptions
) -> tuple[list[Change], list[PortUpdate], list[str]]:
    """The diff between the switch and the plan, the calls that close it, and the ports the switch lacks."""
    wanted = options.port_settings()
    changes: list[Change] = []
    updates: list[PortUpdate] = []
    missing: list[str] = []
    for node, name in wanted_ports(config):
        port = state.port(name)
        if port is None:
            missing.append(f"{name} ({node})")
            continue
        port_changes = [
            Change(node, port.default_name, prop, port.setting(prop), value)
            for prop, value in wanted.items()
            if port.setting(prop) != value
        ]
        join = move = None
        if config.bridge and port.bridge != config.bridge:
            port_changes.append(Change(node, port.default_name, "bridge", port.bridge, config.bridge))
            if port.bridge_port_id is None:
                join = config.bridge
            else:
                move = (port.bridge_port_id, config.bridge)
        if port_changes:
            changes += port_changes
            updates.append(PortUpdate(node, port.default_name, port.id, _patches(port, wanted), join, move))
    return changes, updates, missing


# ------------------------------------------------------------------------------------------------ what is wrong
@dataclass(frozen=True)
class PortProblem:
    """One way a fabric port falls short, with the RouterOS line that fixes it."""

    node: str
    port: str
    what: str  # link, rate, l2mtu, mtu, fec, errors, missing
    found: str
    expected: str
    fix: str | None  # a RouterOS CLI line, None when it is not a setting (a cable, counters)
    severity: str = "fail"  # "fail" or "warn"


def _set_line(port: str, **props: str) -> str:
    values = " ".join(f"{k.replace('_', '-')}={v}" for k, v in props.items())
    return f'/interface/ethernet/set [find default-name="{port}"] {values}'


def port_problems(
    state: SwitchState,
    config: SwitchConfig,
    host_mtu: Mapping[str, int] | int,
    expected_speed: str | None = None,
) -> list[PortProblem]:
    """What `switch verify` and the `switch.ports` check report: each fabric port up at the expected rate, its L2MTU
    at least the host MTU + 22 and its MTU at least the host MTU, FEC as planned and the same on every port, and
    no error counter above zero. `host_mtu` is one MTU or one per node (the largest of its cabled halves)."""
    speed = expected_speed or config.speed
    want_gbps = rate_gbps(speed) or 0.0
    problems: list[PortProblem] = []
    for node, name in wanted_ports(config):
        port = state.port(name)
        if port is None:
            problems.append(PortProblem(node, name, "missing", "no such port", name, None))
            continue
        mtu = host_mtu if isinstance(host_mtu, int) else host_mtu.get(node)
        if port.disabled:
            problems.append(PortProblem(node, name, "link", "disabled", "enabled", _set_line(name, disabled="no")))
        elif port.status is not None and not port.link_up:
            fix = (
                _set_line(name, auto_negotiation="no", speed=speed)
                if port.auto_negotiation or port.speed != speed
                else None
            )
            found = f"{port.status} (auto-negotiation {'on' if port.auto_negotiation else 'off'}, speed {port.speed})"
            problems.append(PortProblem(node, name, "link", found, f"link-ok at {speed}", fix))
        elif port.link_up and port.rate_gbps is not None and port.rate_gbps < want_gbps:
            problems.append(
                PortProblem(
                    node, name, "rate", port.rate or "?", f"{want_gbps:g}Gbps",
                    _set_line(name, auto_negotiation="no", speed=speed),
                )
            )  # fmt: skip
        if mtu is not None and port.l2mtu is not None and port.l2mtu < mtu + L2MTU_MIN_OVERHEAD:
            l2mtu = PlanOptions(host_mtu=mtu).l2mtu if 1280 <= mtu <= 9978 else mtu + L2MTU_MIN_OVERHEAD
            problems.append(
                PortProblem(
                    node, name, "l2mtu", str(port.l2mtu), f">= {mtu + L2MTU_MIN_OVERHEAD} (host MTU {mtu} + 22)",
                    _set_line(name, l2mtu=str(l2mtu)),
                )
            )  # fmt: skip
        if mtu is not None and port.mtu is not None and port.mtu < mtu:
            problems.append(
                PortProblem(
                    node, name, "mtu", str(port.mtu), f">= {mtu} (host MTU)",
                    _set_line(name, mtu=str(mtu)),
                    severity="warn",  # switched frames obey l2mtu; mtu matters where the switch's CPU handles them
                )
            )  # fmt: skip
        if port.fec_mode != config.fec_mode:
            problems.append(
                PortProblem(
                    node, name, "fec", port.fec_mode or "?", config.fec_mode,
                    _set_line(name, fec_mode=config.fec_mode),
                    severity="warn" if port.link_up else "fail",
                )
            )  # fmt: skip
        grown = {c: n for c, n in port.counters.items() if n > 0}
        if grown:
            found = ", ".join(f"{c} {n}" for c, n in sorted(grown.items()))
            problems.append(PortProblem(node, name, "errors", found, "0", None, severity="warn"))
    return problems


def fec_modes(state: SwitchState, config: SwitchConfig) -> dict[str, list[str]]:
    """FEC mode -> the fabric ports running it: more than one key means the fabric is not consistent."""
    modes: dict[str, list[str]] = {}
    for _, name in wanted_ports(config):
        port = state.port(name)
        if port is not None:
            modes.setdefault(port.fec_mode, []).append(name)
    return modes


def host_mtu_by_node(mtus: Sequence[tuple[str, int]]) -> dict[str, int]:
    """(node, MTU of a cabled half) pairs -> the largest per node: what its frames need from the switch."""
    out: dict[str, int] = {}
    for node, mtu in mtus:
        out[node] = max(mtu, out.get(node, 0))
    return out
