"""The ssh mesh `wirespeed init` sets up, as data and text edits: peers found by mDNS or by probing the fabric
subnets, grouped into nodes by their host keys, and the lines it adds to (and removes from) each node's ~/.ssh.

Each node gets its own key pair (`~/.ssh/wirespeed_ed25519`, made there; a private key never leaves its node), every
node's public key goes into every node's `authorized_keys` with a marker, and the host keys seen at discovery are
pinned in `~/.ssh/wirespeed_known_hosts`. `~/.ssh/config` gains one `Include` line at its top, so plain `ssh PEER`
(what mpirun runs) uses them. Pure: text in, text out.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from wirespeed.core.errors import UsageError

MARKER = "wirespeed-mesh"
KEY_NAME = "wirespeed_ed25519"
KNOWN_HOSTS_NAME = "wirespeed_known_hosts"
CONFIG_NAME = "wirespeed_config"
BACKUP_DIR = "wirespeed-init"  # under ~/.ssh: the files as they were before the first init
INCLUDE_LINE = f"Include {CONFIG_NAME}  # {MARKER}: added by `wirespeed init`, removed by `wirespeed init --undo`"
MAX_PROBED = 1024  # addresses per subnet; a larger subnet needs --peers
_KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")


@dataclass(frozen=True)
class MdnsPeer:
    iface: str
    address: str
    name: str  # the host's mDNS name, e.g. spark-2.local


def parse_avahi_browse(text: str, ifaces: Iterable[str]) -> list[MdnsPeer]:
    """`avahi-browse -p -r -f -t _ssh._tcp` -> the IPv4 ssh services seen on `ifaces`, once per address.

    A resolved line is `=;IFACE;IPv4;SERVICE;_ssh._tcp;local;HOST.local;ADDRESS;PORT;TXT`."""
    wanted = set(ifaces)
    found: dict[str, MdnsPeer] = {}
    for line in text.splitlines():
        fields = line.split(";")
        if len(fields) < 9 or fields[0] != "=" or fields[2] != "IPv4" or fields[1] not in wanted:
            continue
        try:
            address = str(ipaddress.IPv4Address(fields[7]))
        except ValueError:
            continue
        found.setdefault(address, MdnsPeer(fields[1], address, fields[6]))
    return list(found.values())


def probe_targets(subnets: Sequence[str], own: Iterable[str]) -> list[str]:
    """Every host address of the fabric subnets but this node's own, to try ssh's port on."""
    mine = set(own)
    targets: list[str] = []
    for cidr in subnets:
        network = ipaddress.ip_interface(cidr).network
        if network.num_addresses > MAX_PROBED + 2:
            raise UsageError(
                f"{cidr}: {network.num_addresses} addresses are too many to probe",
                hint="name the peers with --peers ADDR,ADDR",
            )
        targets += [str(host) for host in network.hosts() if str(host) not in mine]
    return list(dict.fromkeys(targets))


def parse_keyscan(text: str) -> dict[str, list[tuple[str, str]]]:
    """`ssh-keyscan ADDR...` -> {address: [(key type, base64 key)]}; comments and unknown types left out."""
    keys: dict[str, list[tuple[str, str]]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and not line.startswith("#") and fields[1] in _KEY_TYPES:
            entry = (fields[1], fields[2])
            if entry not in keys.setdefault(fields[0], []):
                keys[fields[0]].append(entry)
    return keys


def fingerprint(key: str) -> str:
    """OpenSSH's SHA256 fingerprint of a base64 public key, as `ssh-keygen -lf` prints it."""
    digest = hashlib.sha256(base64.b64decode(key)).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


@dataclass(frozen=True)
class Peer:
    """A machine seen on the fabric: every address it answered on, and its host keys (which say it is one)."""

    addresses: tuple[str, ...]
    host_keys: tuple[tuple[str, str], ...]
    names: tuple[str, ...] = ()  # mDNS names, when mDNS found it

    @property
    def fingerprint(self) -> str:
        """The ed25519 host key's fingerprint (else the first key's); "-" when none was seen."""
        if not self.host_keys:
            return "-"
        preferred = next((k for t, k in self.host_keys if t == "ssh-ed25519"), self.host_keys[0][1])
        return fingerprint(preferred)


def group_peers(scans: Mapping[str, Sequence[tuple[str, str]]], names: Mapping[str, str] | None = None) -> list[Peer]:
    """Addresses whose host keys overlap are one machine (a Spark answers on every addressed half); addresses that
    gave no host key are left out. Order: by first address as given."""
    groups: list[tuple[list[str], set[tuple[str, str]]]] = []
    for address, keys in scans.items():
        if not keys:
            continue
        keyset = set(keys)
        match = [group for group in groups if group[1] & keyset]
        if not match:
            groups.append(([address], keyset))
            continue
        first = match[0]
        first[0].append(address)
        first[1].update(keyset)
        for other in match[1:]:
            first[0].extend(other[0])
            first[1].update(other[1])
            groups.remove(other)
    peers = []
    for addresses, _ in groups:
        seen = [key for a in addresses for key in scans[a]]
        mdns = tuple(dict.fromkeys(n for a in addresses if names and (n := names.get(a))))
        peers.append(Peer(tuple(addresses), tuple(dict.fromkeys(seen)), mdns))
    return peers


def management_address(
    ipv4: Mapping[str, Sequence[str]], default_iface: str | None, fabric: Sequence[str]
) -> str | None:
    """The address a node is named by in the cluster file: that of its default route's interface, else the first
    one outside the fabric subnets and loopback (the fabric carries the measurements, not the control)."""
    if default_iface and ipv4.get(default_iface):
        return ipv4[default_iface][0].split("/")[0]
    networks = [ipaddress.ip_interface(cidr).network for cidr in fabric]
    for iface, cidrs in ipv4.items():
        for cidr in cidrs:
            address = ipaddress.ip_interface(cidr)
            if iface != "lo" and not address.is_loopback and not any(address.ip in net for net in networks):
                return str(address.ip)
    return None


def half_of(address: str, halves: Mapping[str, Sequence[str]]) -> str | None:
    """The fabric half of this node whose subnet holds `address` (how a peer's address is reached)."""
    ip = ipaddress.ip_address(address)
    for half, cidrs in halves.items():
        if any(ip in ipaddress.ip_interface(cidr).network for cidr in cidrs):
            return half
    return None


def lone_halves(
    members: Mapping[str, Mapping[str, Sequence[str]]], halves: Iterable[str]
) -> list[tuple[str, str, str]]:
    """(node, half, subnet) for each addressed fabric half whose subnet no other node found has an address on: its
    cable leads to a node init did not reach (in a ring of four or more, the nodes past the neighbours: they answer
    only once the ring is routed). Halves on a subnet every half shares (link-local) never count."""
    names = set(halves)
    seen: dict[ipaddress.IPv4Network, set[str]] = {}
    for node, ipv4 in members.items():
        for half, cidrs in ipv4.items():
            if half in names:
                for cidr in cidrs:
                    seen.setdefault(ipaddress.IPv4Interface(cidr).network, set()).add(node)
    return sorted(
        (node, half, str(network))
        for node, ipv4 in members.items()
        for half, cidrs in ipv4.items()
        if half in names
        for cidr in cidrs
        if seen[(network := ipaddress.IPv4Interface(cidr).network)] == {node}
    )


@dataclass(frozen=True)
class MeshNode:
    """One node of the mesh as init found it."""

    name: str  # its host name
    user: str
    management: str  # the address the cluster file names it by
    addresses: tuple[str, ...]  # every address it is reached on (management and fabric halves)
    host_keys: tuple[tuple[str, str], ...]
    public_key: str  # its wirespeed_ed25519.pub line


def known_hosts(nodes: Sequence[MeshNode]) -> str:
    """~/.ssh/wirespeed_known_hosts: every node's host keys under its name and every address."""
    lines = [f"# {MARKER}: host keys pinned by `wirespeed init`"]
    for node in nodes:
        hosts = ",".join(dict.fromkeys((node.name, *node.addresses)))
        lines += [f"{hosts} {kind} {key}" for kind, key in node.host_keys]
    return "\n".join(lines) + "\n"


def mesh_config(nodes: Sequence[MeshNode]) -> str:
    """~/.ssh/wirespeed_config: for the mesh's names and addresses, this key and these pinned host keys."""
    lines = [f"# {MARKER}: written by `wirespeed init`; ~/.ssh/config includes it"]
    for node in nodes:
        lines += [f"Host {node.name}", f"    HostName {node.management}", f"    User {node.user}", ""]
    patterns = " ".join(dict.fromkeys(p for node in nodes for p in (node.name, *node.addresses)))
    lines += [
        f"Host {patterns}",
        f"    IdentityFile ~/.ssh/{KEY_NAME}",
        f"    UserKnownHostsFile ~/.ssh/{KNOWN_HOSTS_NAME}",
        "    StrictHostKeyChecking yes",
        "    BatchMode yes",
        "",
    ]
    return "\n".join(lines)


def with_addresses(
    known_hosts_text: str, config_text: str, addresses: Mapping[str, Sequence[str]]
) -> tuple[str, str] | None:
    """init's two files with each mesh node's `addresses` pinned too (a fix that readdresses a half gives a node
    addresses init never saw; its host keys are the same). Rebuilt from what the files hold: the node's name,
    user, management address, every address pinned so far (kept: `fix --revert` brings them back) and host keys.
    None: the files are not init's, or hold no node; nodes not in the mesh are left out."""
    nodes = _mesh_nodes(known_hosts_text, config_text)
    if not nodes:
        return None
    grown = [replace(n, addresses=tuple(dict.fromkeys((*n.addresses, *addresses.get(n.name, ()))))) for n in nodes]
    return known_hosts(grown), mesh_config(grown)


def _mesh_nodes(known_hosts_text: str, config_text: str) -> list[MeshNode]:
    """The mesh as init wrote it: `Host NAME` blocks of the config (HostName, User) joined with the known_hosts lines
    whose first host is NAME."""
    if not known_hosts_text.startswith(f"# {MARKER}") or not config_text.startswith(f"# {MARKER}"):
        return []
    blocks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in config_text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "Host":
            current = blocks.setdefault(fields[1], {})
        elif len(fields) > 2 and fields[0] == "Host":
            current = None
        elif len(fields) == 2 and current is not None and fields[0] in ("HostName", "User"):
            current[fields[0]] = fields[1]
    hosts: dict[str, list[str]] = {}
    keys: dict[str, list[tuple[str, str]]] = {}
    for line in known_hosts_text.splitlines():
        fields = line.split()
        if len(fields) < 3 or line.startswith("#") or fields[1] not in _KEY_TYPES:
            continue
        names = fields[0].split(",")
        hosts.setdefault(names[0], []).extend(names[1:])
        keys.setdefault(names[0], []).append((fields[1], fields[2]))
    return [
        MeshNode(name, block["User"], block["HostName"], tuple(dict.fromkeys(hosts[name])), tuple(keys[name]), "")
        for name, block in blocks.items()
        if name in hosts and "User" in block and "HostName" in block
    ]


def _is_ours(line: str) -> bool:
    fields = line.split()
    return len(fields) >= 3 and not line.lstrip().startswith("#") and fields[-1].startswith(f"{MARKER}@")


def authorized_keys_with(text: str, keys: Sequence[str]) -> str:
    """`authorized_keys` with the mesh's keys (comment `wirespeed-mesh@NODE`) in place of any earlier ones."""
    kept = authorized_keys_without(text)
    if kept and not kept.endswith("\n"):
        kept += "\n"
    return kept + "".join(key.strip() + "\n" for key in keys)


def authorized_keys_without(text: str) -> str:
    """`authorized_keys` without the mesh's lines; every other byte kept."""
    return "".join(line for line in text.splitlines(keepends=True) if not _is_ours(line))


def config_with_include(text: str) -> str:
    """~/.ssh/config with the Include line first (ssh takes the first value it reads); unchanged if there."""
    if any(line.rstrip("\n") == INCLUDE_LINE for line in text.splitlines()):
        return text
    return INCLUDE_LINE + "\n" + text


def config_without_include(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if line.rstrip("\n") != INCLUDE_LINE)


_PUBLIC_KEY_RE = re.compile(r"^ssh-ed25519 [A-Za-z0-9+/=]+ " + MARKER + r"@[A-Za-z0-9._-]+$")


def check_public_key(line: str, node: str) -> str:
    """The node's mesh public key, checked: one line, ed25519, our comment (nothing else goes into authorized_keys)."""
    key = line.strip()
    if not _PUBLIC_KEY_RE.fullmatch(key):
        raise UsageError(f"{node}: ~/.ssh/{KEY_NAME}.pub is not a wirespeed mesh key", hint=f"remove it on {node}")
    return key


def undo_text(current: str | None, original: str | None, without: str | None) -> str | None:
    """What a file goes back to: the original bytes when nothing but init's lines changed since (`without` is the
    current text with init's lines taken out), else `without`. None: the file did not exist and goes away."""
    if current is None:
        return None
    if without is not None and original is not None and _same_but_newline(without, original):
        return original
    if original is None and (without or "").strip() == "":
        return None
    return without


def _same_but_newline(without: str, original: str) -> bool:
    return without == original or without == original + "\n"
