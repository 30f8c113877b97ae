"""The RDMA inventory outputs people paste into tickets: `ibdev2netdev` (also `-v`), `ibv_devinfo` (also `-v`),
NVIDIA's `show_gids` script and iproute2's `rdma link` (text or `-j`). Pure: text in, records out.

Formats as their sources print them, so a line that starts like one of the tool's lines but does not end like it (a
file cut off, a value half-pasted) raises ValueError naming the line instead of giving a wrong value:
- ibdev2netdev (Mellanox OFED script): `DEV port N ==> NETDEV (Up)`; with -v
  `PCI DEV (MTxxxx - PART) DESCRIPTION fw FW port N (STATE) ==> NETDEV (Up)`. Pastes carry notes beside those
  lines and lines of their own between them: read_ibdev2netdev keeps the mappings and names the lines it skipped.
- ibv_devinfo (rdma-core `libibverbs/examples/devinfo.c`): `hca_id:` blocks of `key: value` lines, `port:` blocks;
  -v adds device limits, flag lists, `active_width`, `active_speed`, `phys_state` and `GID[  i]:` lines.
- show_gids: `DEV PORT INDEX GID IPv4 VER DEV` rows (IPv4 empty for other GIDs), then `n_gids_found=N`.
- rdma link (iproute2 `rdma/link.c`): `link DEV/PORT key value ...` (older: `IDX/PORT: DEV/PORT: key value ...`);
  `-d` adds `netdev_index` and a `caps: <...>` line; `-j` prints a JSON list.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import re
from dataclasses import dataclass
from typing import Any

from wirespeed.core.records.typed import JsonRecord

# --------------------------------------------------------------------------------------------------- ibdev2netdev


@dataclass(frozen=True)
class NetdevMapping:
    """One `ibdev2netdev` line. `state` is the netdev's carrier as printed (Up, Down); the -v form adds the RDMA
    port state, PCI address, device id (MT4119), part number and firmware. None without -v, or where the script
    printed `NA` (it could not read the value)."""

    rdma_device: str
    port: int
    netdev: str
    state: str | None
    port_state: str | None = None
    pci_address: str | None = None
    device_id: str | None = None
    part_id: str | None = None
    fw_ver: str | None = None


@dataclass(frozen=True)
class SkippedLine:
    """A non-blank line of a listing that holds no mapping (a prompt, a comment, a note, a markdown fence): its
    1-based number and its text as it stands (surrounding blanks dropped)."""

    line: int
    text: str


@dataclass(frozen=True)
class NetdevListing:
    """What `ibdev2netdev` output gives: the mappings in file order and the lines read past."""

    mappings: tuple[NetdevMapping, ...]
    skipped: tuple[SkippedLine, ...]


# A whole mapping anywhere in a line: what comes before it (an arrow, a bullet, `cat -n`'s number, a `host:` tag)
# and after its `(State)` (a `# comment`, `◄── port 1`, the next prompt glued on by a paste) is the reader's note.
_I2N = re.compile(
    r"(?<![\w.\-:])(?:(?P<pci>[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F])\s+)?"
    r"(?P<dev>[\w.\-]+)\s+"
    r"(?:\(\s*(?P<devid>[^)\s]*)\s*-\s*(?P<part>[^)]*?)\s*\)\s*(?:.*?\s)?fw\s+(?P<fw>\S+)\s+)?"
    r"port\s+(?P<port>\d+)\s+(?:\(\s*(?P<pstate>\w+)\s*\)\s+)?==>\s+(?P<netdev>[^\s()]+)\s*\(\s*(?P<state>\w+)\s*\)"
)
# `port N ==>` (or -v's `port N (STATE) ==>`) with no whole `NETDEV (State)` after it: a line broken or cut short.
_I2N_ARROW = re.compile(r"\bport\s+\d+\s+(?:\(\s*\w*\s*\)\s+)?==>")
_COMMENT = re.compile(r"^\s*(?:#|//)")
_LEAD = re.compile(r"^[^\w#]*")  # arrows, bullets, a `$ ` before the first word
# What a cut leaves of `DEV port N ==>` (the first word checked apart), and of a -v line: its PCI address first.
_I2N_PREFIX = re.compile(r"^(?P<dev>[\w.\-]+)(?:\s+p(?:o(?:r(?:t(?:\s+\d*(?:\s+=?=?)?)?)?)?)?)?\s*$")
_I2N_PCI_START = re.compile(r"^[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]\s")
_I2N_FORM = "`DEV port N ==> NETDEV (State)`"


def _unterminated(text: str, number: int, count: int) -> bool:
    """True for the last line of a text that does not end with a newline: the one line a cut can shorten."""
    return number == count and not text.endswith(("\n", "\r"))


def _given(value: str | None) -> str | None:
    """The script prints `NA` for what it could not read: that is no value."""
    return None if value in (None, "", "NA") else value


def _cut_mapping(line: str, found: list[NetdevMapping]) -> bool:
    """True when `line` (the unterminated last line) reads as the start of a mapping: a -v line's PCI address, or a
    word that begins as a device already read (its first 4 characters) followed by what `port N ==>` leaves. A last
    word like `ibv_devinfo` or `logout`, run in from the next command, is no device and is only skipped."""
    rest = _LEAD.sub("", line)
    if _I2N_PCI_START.match(rest):
        return True
    start = _I2N_PREFIX.match(rest)
    if start is None:
        return False
    word = start["dev"][:4]
    return any(mapping.rdma_device[: len(word)] == word for mapping in found)


def _mapping(match: re.Match[str]) -> NetdevMapping:
    return NetdevMapping(
        rdma_device=match["dev"],
        port=int(match["port"]),
        netdev=match["netdev"],
        state=_given(match["state"]),
        port_state=_given(match["pstate"]),
        pci_address=match["pci"],
        device_id=_given(match["devid"]),
        part_id=_given(match["part"]),
        fw_ver=_given(match["fw"]),
    )


def read_ibdev2netdev(text: str) -> NetdevListing:
    """Every line that holds a `... port N ==> NETDEV (State)` mapping, and the non-blank lines that hold none.

    A mapping may carry notes before and after it (`──► mlx5_0 port 1 ==> ens1f0 (Up)  # CX-7 1/8`, the next
    prompt glued to the last line); lines starting `#` or `//` are comments, even when they hold a mapping. A line
    with `port N ==>` but no whole `NETDEV (State)` after it, or a last line cut inside `DEV port N ==>`, raises
    ValueError naming it; so does a text in which no line holds a mapping.
    """
    found: list[NetdevMapping] = []
    skipped: list[SkippedLine] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        comment = _COMMENT.match(line) is not None
        match = None if comment else _I2N.search(line)
        if match is not None:
            found.append(_mapping(match))
            continue
        if not comment and (
            _I2N_ARROW.search(line) or (_unterminated(text, number, len(lines)) and _cut_mapping(line, found))
        ):
            raise ValueError(f"line {number}: ibdev2netdev line does not end as `==> NETDEV (State)` (cut off?)")
        skipped.append(SkippedLine(number, line.strip()))
    if not found:
        where = next((s.line for s in skipped if "==>" in s.text), skipped[0].line if skipped else 1)
        raise ValueError(
            f"line {where}: no line holds an ibdev2netdev mapping {_I2N_FORM} (hint: import what `ibdev2netdev` "
            "prints, one mapping a line; notes around a mapping are fine, a line starting `#` is a comment)"
        )
    return NetdevListing(tuple(found), tuple(skipped))


# ---------------------------------------------------------------------------------------------------- ibv_devinfo


@dataclass(frozen=True)
class Gid:
    """A populated GID slot as `ibv_devinfo -v` lists it, written as eight 4-digit groups like sysfs and show_gids
    (rdma-core prints RoCE v2 GIDs as IPv6 text, `::ffff:192.168.1.1`). `type` (`RoCE v2`) only on Ethernet ports of
    rdma-core versions that print it."""

    index: int
    gid: str
    type: str | None


@dataclass(frozen=True)
class DevinfoPort:
    """One port block. MTUs in bytes; `active_width_lanes`, `active_speed_gbps` (per lane), `phys_state` and `gids`
    come with -v only."""

    port: int
    state: str | None = None
    max_mtu_bytes: int | None = None
    active_mtu_bytes: int | None = None
    sm_lid: int | None = None
    port_lid: int | None = None
    port_lmc: int | None = None
    link_layer: str | None = None
    phys_state: str | None = None
    active_width_lanes: int | None = None
    active_speed_gbps: float | None = None
    gids: tuple[Gid, ...] = ()


@dataclass(frozen=True)
class DevinfoDevice:
    """One `hca_id:` block. Ids stay strings as printed (`0x02c9`); counts are numbers."""

    hca_id: str
    transport: str | None = None
    fw_ver: str | None = None
    node_guid: str | None = None
    sys_image_guid: str | None = None
    vendor_id: str | None = None
    vendor_part_id: int | None = None
    hw_ver: str | None = None
    board_id: str | None = None
    phys_port_cnt: int | None = None
    ports: tuple[DevinfoPort, ...] = ()


_HCA = re.compile(r"^\s*hca_id:\s*(?P<name>\S+)\s*$")
_PORT = re.compile(r"^\s*port:\s*(?P<port>\S*)\s*$")
_GID_LINE = re.compile(r"^\s*GID\[\s*(?P<index>\d+)\]:\s*(?P<gid>[^,\s]+)(?:,\s*(?P<type>\S.*?))?\s*$")
_KEY_VALUE = re.compile(r"^\s*(?P<key>[A-Za-z_][\w ]*?):\s*(?P<value>.*?)\s*$")
_NO_DEVICES = re.compile(r"^\s*No IB devices found\s*$", re.MULTILINE)
_ENUM = re.compile(r"^(?P<name>\S.*?)\s*\((?P<code>-?\d+)\)$")  # `PORT_ACTIVE (4)`, `4096 (5)`, `4X (2)`
_MTU_CODES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}  # enum ibv_mtu
_DEVICE_STRINGS = ("transport", "fw_ver", "node_guid", "sys_image_guid", "vendor_id", "hw_ver", "board_id")


def _cut(number: int, tool: str, key: str, value: str) -> ValueError:
    return ValueError(f"line {number}: {tool} {key} {value!r} is not as {tool} prints it (cut off?)")


def _devinfo_int(number: int, key: str, value: str) -> int:
    if not re.fullmatch(r"\d+", value):
        raise _cut(number, "ibv_devinfo", key, value)
    return int(value)


def _devinfo_enum(number: int, key: str, value: str) -> str:
    """`PORT_ACTIVE (4)` -> `PORT_ACTIVE`: the code in brackets is what tells a whole value from a cut one."""
    match = _ENUM.match(value)
    if match is None:
        raise _cut(number, "ibv_devinfo", key, value)
    return match["name"]


def _devinfo_mtu(number: int, key: str, value: str) -> int | None:
    match = _ENUM.match(value)
    if match is None:
        raise _cut(number, "ibv_devinfo", key, value)
    if match["name"] == "invalid MTU":
        return None
    expected = _MTU_CODES.get(int(match["code"]))
    if expected is None or match["name"] != str(expected):
        raise ValueError(f"line {number}: ibv_devinfo {key} {value!r}: MTU and its code disagree (cut off?)")
    return expected


def _gid_groups(number: int, text: str) -> str:
    """`fe80::ba59:9fff:fe1d:e4e0` or `fe80:0000:...` -> `fe80:0000:0000:0000:ba59:9fff:fe1d:e4e0`."""
    try:
        return ipaddress.IPv6Address(text).exploded
    except ValueError:
        raise _cut(number, "ibv_devinfo", "GID", text) from None


def _port_value(port: dict[str, Any], number: int, key: str, value: str) -> None:
    if key == "state":
        port["state"] = _devinfo_enum(number, key, value)
    elif key in ("max_mtu", "active_mtu"):
        port[f"{key}_bytes"] = _devinfo_mtu(number, key, value)
    elif key in ("sm_lid", "port_lid"):
        port[key] = _devinfo_int(number, key, value)
    elif key == "port_lmc":
        if not re.fullmatch(r"0x[0-9a-fA-F]+", value):
            raise _cut(number, "ibv_devinfo", key, value)
        port["port_lmc"] = int(value, 16)
    elif key == "link_layer":
        port["link_layer"] = value
    elif key == "phys_state":
        port["phys_state"] = _devinfo_enum(number, key, value)
    elif key == "active_width":
        width = re.fullmatch(r"(\d+)X", _devinfo_enum(number, key, value))
        port["active_width_lanes"] = int(width.group(1)) if width else None
    elif key == "active_speed":
        speed = re.fullmatch(r"(\d+(?:\.\d+)?)\s*Gbps", _devinfo_enum(number, key, value))
        port["active_speed_gbps"] = float(speed.group(1)) if speed else None


def _device_value(device: dict[str, Any], number: int, key: str, value: str) -> None:
    if key == "transport":
        device["transport"] = _devinfo_enum(number, key, value)
    elif key in _DEVICE_STRINGS:
        device[key] = value
    elif key in ("vendor_part_id", "phys_port_cnt"):
        device[key] = _devinfo_int(number, key, value)


def _finish_device(device: dict[str, Any], ports: list[dict[str, Any]]) -> DevinfoDevice:
    built = tuple(DevinfoPort(**{**port, "gids": tuple(port.get("gids", ()))}) for port in ports)
    return DevinfoDevice(**device, ports=built)


def parse_ibv_devinfo(text: str) -> tuple[DevinfoDevice, ...]:
    """`ibv_devinfo [-v]` -> one DevinfoDevice per `hca_id:` block; `No IB devices found` gives none. Lines before
    the first block (the prompt) and `-v` lines not listed in DevinfoDevice/DevinfoPort are skipped."""
    devices: list[DevinfoDevice] = []
    device: dict[str, Any] | None = None
    ports: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        hca = _HCA.match(line)
        if hca:
            if device is not None:
                devices.append(_finish_device(device, ports))
            device, ports = {"hca_id": hca["name"]}, []
            continue
        if device is None:
            continue
        port = _PORT.match(line)
        if port:
            ports.append({"port": _devinfo_int(number, "port", port["port"])})
            continue
        gid = _GID_LINE.match(line)
        if gid:
            if not ports:
                raise _cut(number, "ibv_devinfo", "GID", line.strip())
            ports[-1].setdefault("gids", []).append(
                Gid(int(gid["index"]), _gid_groups(number, gid["gid"]), gid["type"])
            )
            continue
        pair = _KEY_VALUE.match(line)
        if pair:
            if ports:
                _port_value(ports[-1], number, pair["key"], pair["value"])
            else:
                _device_value(device, number, pair["key"], pair["value"])
    if device is not None:
        devices.append(_finish_device(device, ports))
    if not devices and not _NO_DEVICES.search(text):
        raise ValueError("not ibv_devinfo output: no `hca_id:` line")
    return tuple(devices)


# ------------------------------------------------------------------------------------------------------ show_gids


@dataclass(frozen=True)
class GidEntry:
    """One show_gids row. `ipv4` is printed for GIDs starting `0000` (IPv4-mapped), `roce_version` is `v1`/`v2`
    (from `gid_attrs/types`), `netdev` from `gid_attrs/ndevs`; None where the column is empty."""

    rdma_device: str
    port: int
    index: int
    gid: str
    ipv4: str | None
    roce_version: str | None
    netdev: str | None


_GID_ROW = re.compile(
    r"^\s*(?P<dev>[\w.\-]+)\s+(?P<port>\d+)\s+(?P<index>\d+)\s+"
    r"(?P<gid>[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7})(?P<rest>(?:\s.*)?)$"
)
_GID_ROW_START = re.compile(r"^\s*[\w.\-]+\s+\d+\s+\d+\s+[0-9a-fA-F]{1,4}(?::|\s*$)")
_GID_ROW_PREFIX = re.compile(r"^\s*[\w.\-]+(?:\s+\d+(?:\s+\d*)?)?\s*$")
_GIDS_HEADER = re.compile(r"^\s*DEV\s+PORT\s+INDEX\s+GID\b")
_GIDS_FOOTER = re.compile(r"^\s*n_gids_found=(?P<n>\d+)\s*$")
_IPV4 = re.compile(r"^(?:\d{1,3}\.){3}\d{1,3}$")
_PARTIAL_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{0,3}){0,3}$")
_VERSION = re.compile(r"^[vV]\d$")


def _show_gids_ipv4(gid: str) -> str | None:
    """What show_gids prints in the IPv4 column: for a GID starting `0000`, hex chars 30-31, 32-33, 35-36, 37-38."""
    if not gid.startswith("0000"):
        return None
    return ".".join(str(int(gid[a:b], 16)) for a, b in ((30, 32), (32, 34), (35, 37), (37, 39)))


def _gid_row(number: int, match: re.Match[str]) -> GidEntry:
    ipv4 = version = netdev = None
    for token in match["rest"].split():
        if _IPV4.match(token) and ipv4 is None:
            ipv4 = token
        elif _VERSION.match(token) and version is None:
            version = token
        elif _PARTIAL_IPV4.match(token):
            raise ValueError(f"line {number}: show_gids IPv4 column {token!r} is not an address (cut off?)")
        elif netdev is None:
            netdev = token
    gid = match["gid"].lower()
    if ipv4 is not None and ipv4 != _show_gids_ipv4(gid):
        raise ValueError(f"line {number}: show_gids IPv4 column {ipv4} is not the address in GID {gid}")
    return GidEntry(match["dev"], int(match["port"]), int(match["index"]), gid, ipv4, version, netdev)


def parse_show_gids(text: str) -> tuple[tuple[GidEntry, ...], int | None]:
    """show_gids output (or rows of it, as `show_gids | grep v2` leaves them) -> (rows, n_gids_found or None).

    The footer's count is checked against the rows: a mismatch means rows went missing between them.
    """
    rows: list[GidEntry] = []
    total: int | None = None
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        match = _GID_ROW.match(line)
        if match:
            rows.append(_gid_row(number, match))
            continue
        footer = _GIDS_FOOTER.match(line)
        if footer:
            total = int(footer["n"])
            if total != len(rows):
                raise ValueError(f"line {number}: n_gids_found={total} but {len(rows)} GID row(s) above it")
            continue
        cut = _unterminated(text, number, len(lines)) and _GID_ROW_PREFIX.match(line) and rows
        if (_GID_ROW_START.match(line) and not _GIDS_HEADER.match(line)) or cut:
            raise ValueError(f"line {number}: show_gids row does not hold a whole GID (cut off?)")
    if not rows and total is None:
        raise ValueError("not show_gids output: no `DEV PORT INDEX GID` row")
    return tuple(rows), total


# ------------------------------------------------------------------------------------------------------ rdma link


@dataclass(frozen=True)
class RdmaLink(JsonRecord):
    """One `rdma link` entry. `port` is None for `DEV/-`; `subnet_prefix`, `lid`, `sm_lid`, `lmc` come on
    InfiniBand ports; `netdev` on RoCE and iWARP ports; `netdev_index` and `caps` with `-d`."""

    rdma_device: str
    port: int | None
    state: str | None
    physical_state: str | None
    netdev: str | None
    netdev_index: int | None
    subnet_prefix: str | None
    lid: int | None
    sm_lid: int | None
    lmc: int | None
    caps: tuple[str, ...] = ()


_LINK = re.compile(
    r"^\s*(?:\d+/\d+:\s+(?P<old>[\w.\-]+)/(?P<old_port>\d+|-):|link\s+(?P<dev>[\w.\-]+)/(?P<port>\d+|-))"
    r"(?P<rest>(?:\s.*)?)$"
)
_LINK_START = re.compile(r"^\s*(?:link\s+\S|\d+/\d+:\s)")
_CAPS = re.compile(r"^\s*caps:\s*<(?P<caps>[^<>]*)>\s*$")
_CAPS_START = re.compile(r"^\s*caps:")
# iproute2 rdma/link.c link_state_to_str and phys_state_to_str.
LINK_STATES = frozenset({"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER", "UNKNOWN"})
PHYSICAL_STATES = frozenset(
    {"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP", "LINK_ERROR_RECOVER", "PHY_TEST", "UNKNOWN"}
    | {"OPA_OFFLINE", "OPA_TEST"}
)
_LINK_KEYS = ("subnet_prefix", "lid", "sm_lid", "lmc", "state", "physical_state", "netdev", "netdev_index")
_LINK_INTS = ("lid", "sm_lid", "lmc", "netdev_index")


def _link_fields(number: int, fields: dict[str, Any]) -> dict[str, Any]:
    """Check the values `rdma link` prints from fixed tables, so a cut `ACTI` is not taken for a state."""
    for key, known in (("state", LINK_STATES), ("physical_state", PHYSICAL_STATES)):
        value = fields.get(key)
        if value is not None and (not isinstance(value, str) or value not in known):
            raise _cut(number, "rdma link", key, str(value))
    for key in _LINK_INTS:
        value = fields.get(key)
        if isinstance(value, str):
            if not re.fullmatch(r"\d+", value):
                raise _cut(number, "rdma link", key, value)
            fields[key] = int(value)
        elif value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise _cut(number, "rdma link", key, str(value))
    for key in ("subnet_prefix", "netdev"):
        if fields.get(key) is not None and not isinstance(fields[key], str):
            raise _cut(number, "rdma link", key, str(fields[key]))
    return fields


def _text_link(number: int, match: re.Match[str], unterminated: bool) -> RdmaLink:
    tokens = match["rest"].split()
    if unterminated and (len(tokens) < 2 or tokens[-2] not in _LINK_KEYS):
        raise ValueError(f"line {number}: rdma link line stops inside a key or value (cut off?)")
    fields: dict[str, Any] = {}
    at = 0
    while at < len(tokens):
        key = tokens[at]
        if key in _LINK_KEYS:
            if at + 1 >= len(tokens):
                raise ValueError(f"line {number}: rdma link `{key}` without its value (cut off?)")
            fields[key] = tokens[at + 1]
            at += 2
        else:
            at += 1  # a key newer iproute2 prints, or its value
    _link_fields(number, fields)
    device = match["dev"] or match["old"]
    port = match["port"] or match["old_port"]
    return RdmaLink(
        rdma_device=device,
        port=None if port == "-" else int(port),
        state=fields.get("state"),
        physical_state=fields.get("physical_state"),
        netdev=fields.get("netdev"),
        netdev_index=fields.get("netdev_index"),
        subnet_prefix=fields.get("subnet_prefix"),
        lid=fields.get("lid"),
        sm_lid=fields.get("sm_lid"),
        lmc=fields.get("lmc"),
    )


def _json_link(number: int, item: Any) -> RdmaLink:
    if not isinstance(item, dict) or not isinstance(item.get("ifname"), str):
        raise ValueError(f"line {number}: rdma link JSON entry is not an object with an ifname")
    device, _, port_text = item["ifname"].partition("/")  # iproute2 before 5.x wrote `mlx5_0/1` into ifname
    port = item.get("port")
    if port is None and port_text.isdigit():
        port = int(port_text)
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
        raise ValueError(f"line {number}: rdma link JSON port {port!r} is not a number")
    fields = _link_fields(number, {key: item.get(key) for key in _LINK_KEYS})
    caps = item.get("caps")
    return RdmaLink(
        rdma_device=device,
        port=port,
        state=fields["state"],
        physical_state=fields["physical_state"],
        netdev=fields["netdev"],
        netdev_index=fields["netdev_index"],
        subnet_prefix=fields["subnet_prefix"],
        lid=fields["lid"],
        sm_lid=fields["sm_lid"],
        lmc=fields["lmc"],
        caps=tuple(str(c) for c in caps) if isinstance(caps, list) else (),
    )


def _parse_rdma_link_json(text: str, start: int) -> tuple[RdmaLink, ...]:
    number = text.count("\n", 0, start) + 1
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {exc.lineno}: rdma link JSON cut off or malformed ({exc.msg})") from None
    if not isinstance(data, list):
        raise ValueError(f"line {number}: rdma link JSON is not a list")
    return tuple(_json_link(number, item) for item in data)


def parse_rdma_link(text: str) -> tuple[RdmaLink, ...]:
    """`rdma link [show] [-d]` text, or `rdma -j link` JSON -> one RdmaLink per port."""
    opening = _rdma_json_start(text)
    if opening is not None:
        links = _parse_rdma_link_json(text, opening)
    else:
        found: list[RdmaLink] = []
        lines = text.splitlines()
        for number, line in enumerate(lines, start=1):
            match = _LINK.match(line)
            if match:
                found.append(_text_link(number, match, _unterminated(text, number, len(lines))))
                continue
            caps = _CAPS.match(line)
            if caps and found:
                names = tuple(name.strip() for name in caps["caps"].split(",") if name.strip())
                found[-1] = dataclasses.replace(found[-1], caps=names)
                continue
            if _LINK_START.match(line) or _CAPS_START.match(line):
                raise ValueError(f"line {number}: rdma link line is not whole (cut off?)")
        links = tuple(found)
    if not links:
        raise ValueError("not rdma link output: no `link DEV/PORT` line")
    return links


# ---------------------------------------------------------------------------------------------------- recognition

_I2N_MARK = re.compile(r"\bport\s+\d+\s+(?:\(\s*\w+\s*\)\s+)?==>\s+\S")
_DEVINFO_MARK = re.compile(r"^\s*hca_id:\s*\S", re.MULTILINE)
_GIDS_MARK = re.compile(
    r"^\s*DEV\s+PORT\s+INDEX\s+GID\b|^\s*n_gids_found=\d+\s*$"
    r"|^\s*[\w.\-]+\s+\d+\s+\d+\s+[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}(?:\s|$)",
    re.MULTILINE,
)
_LINK_MARK = re.compile(
    r"^\s*(?:\d+/\d+:\s+[\w.\-]+/(?:\d+|-):|link\s+[\w.\-]+/(?:\d+|-))\s.*\b(?:state|physical_state|netdev)\s+\S",
    re.MULTILINE,
)
_RDMA_JSON = re.compile(r'^[ \t]*\[\s*\{\s*"(?:ifindex|ifname|port)"\s*:', re.MULTILINE)
_RDMA_JSON_MARK = re.compile(r'"physical_state"\s*:')


def _rdma_json_start(text: str) -> int | None:
    """Where `rdma -j link` JSON starts (a list of objects naming physical_state), or None."""
    opening = _RDMA_JSON.search(text)
    if opening is None or not _RDMA_JSON_MARK.search(text, opening.start()):
        return None
    return text.index("[", opening.start())


def looks_like_json(text: str) -> bool:
    """True when `text` is `rdma -j link` JSON rather than the text form."""
    return _rdma_json_start(text) is not None


def looks_like(text: str) -> str | None:
    """Which of the four tools printed `text`, told from its content: "ibv_devinfo", "show_gids", "rdma-link",
    "ibdev2netdev", or None."""
    if _DEVINFO_MARK.search(text) or _NO_DEVICES.search(text):
        return "ibv_devinfo"
    if _GIDS_MARK.search(text):
        return "show_gids"
    if _LINK_MARK.search(text) or _rdma_json_start(text) is not None:
        return "rdma-link"
    if _I2N_MARK.search(text):
        return "ibdev2netdev"
    return None
