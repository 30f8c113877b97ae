"""Build, inspect, change and remove the emulated cluster described by a `TestbedPlan`."""

from __future__ import annotations

import ipaddress
import os
import pwd
import shutil
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirespeed.adapters.configroot import CONFIG_ROOT_ENV
from wirespeed.core.cluster.inventory import Cluster, Node, render_cluster_toml
from wirespeed.core.errors import TestbedError, UsageError
from wirespeed.core.fabric.units import format_rate, tc_rate
from wirespeed.testbed import account, system
from wirespeed.testbed.login import furnish_home
from wirespeed.testbed.plan import (
    MGMT_BRIDGE,
    MGMT_IFACE,
    SWITCH_BRIDGE,
    Endpoint,
    FabricIface,
    TestbedPlan,
    host_iface_name,
    links,
    make_plan,
    validate_prefix,
)
from wirespeed.testbed.state import TestbedState, all_states, claiming, load_state, testbed_dir

Progress = Callable[[str], None]
HOST_ACCOUNT_FILES = ("passwd", "shadow", "group", "gshadow")  # in /etc; the node has copies of its own (--user)


def _quiet(_: str) -> None:
    return None


def tbf_args(rate_bps: int) -> list[str]:
    """tbf shaping for one half. The bucket holds a few ms at rate, and at least a few GSO super-packets."""
    burst_bytes = max(256 * 1024, rate_bps // 8 // 250)
    return ["tbf", "rate", tc_rate(rate_bps), "burst", str(burst_bytes), "latency", "50ms"]


SHIPPED_TCP_BUFFERS = (  # the kernel's defaults since Linux 4.20 (net/ipv4/tcp.c tcp_init), as a fresh DGX OS has
    ("net.ipv4.tcp_rmem", "4096 131072 6291456"),
    ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
)

# On a testbed with an ordinary account (`--user`), a shaped node-to-node cable is two macvlan halves (mode bridge)
# over one tap device in the management namespace, not a veth pair: a veth reports a fixed 10000 Mb/s and refuses
# `ethtool -s` (drivers/net/veth.c has no set_link_ksettings), while a tap keeps the speed `ethtool -s` gives it and
# a macvlan reports its lower device's. So each half tells every reader, root or not, the shaped rate as its own link
# speed, as a NIC reports its rate (root also reads the tc qdisc; the account, without /usr/sbin, does not). Root's
# own testbeds keep veth pairs: a macvlan pair forwards through the tap without the receiver's MTU check, so a half
# at a lower MTU would not drop its peer's larger frames as a veth (and a NIC) does (`testbed fault --mtu`).
# A tap has carrier only while a process holds it open: one small holder per testbed (WIRE_HOLDER) keeps them all,
# and lives in the management namespace, where `down` ends it with the rest. Frames between the two macvlans go
# straight from one to the other; only what neither owns reaches the tap, which drops it.
WIRE_MTU = 65521  # a tap's largest MTU (65535 less the Ethernet header): every MTU a half may take fits under it
WIRE_HOLDER_PID = "wires.pid"
WIRE_HOLDER = r"""import fcntl, os, signal, struct, sys
TUNSETIFF, IFF_TAP, IFF_NO_PI = 0x400454CA, 0x0002, 0x1000
fds = []
for name in sys.argv[2:]:
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    fds.append(fd)
with open(sys.argv[1] + ".new", "w") as handle:
    handle.write(f"{os.getpid()}\n")
os.rename(sys.argv[1] + ".new", sys.argv[1])
while True:
    signal.pause()
"""


def wire_name(index: int) -> str:
    """The tap under the `index`-th link of `links(plan)`."""
    return f"wire{index}"


def rated_links(plan: TestbedPlan) -> dict[tuple[str, str], str]:
    """(netns, interface) -> its tap, for both ends of every shaped node-to-node link of a testbed with an ordinary
    account (the ones whose halves report the shaped rate as their link speed); a switch's ports, an unshaped
    testbed and root's testbeds keep veth pairs."""
    if plan.half_rate_bps <= 0 or plan.user is None:
        return {}
    wires: dict[tuple[str, str], str] = {}
    for index, (here, there) in enumerate(links(plan)):
        if there.netns != plan.switch_netns:
            wires[(here.netns, here.iface)] = wires[(there.netns, there.iface)] = wire_name(index)
    return wires


def link_speed_mbps(rate_bps: int) -> int:
    """`ethtool -s ... speed N` for a rate: whole Mb/s, at least 1."""
    return max(1, round(rate_bps / 10**6))


def pick_mgmt_index(prefix: str) -> int:
    """A 198.18.K.0/24 management subnet that no other testbed and no host route uses."""
    taken = {s.plan.mgmt_index for s in all_states() if s.plan.prefix != prefix}
    routes = system.host_routes_v4()
    for index in range(256):
        if index in taken:
            continue
        subnet = ipaddress.IPv4Network(f"198.18.{index}.0/24")
        if not any(subnet.overlaps(route) for route in routes):
            return index
    raise TestbedError("no free management subnet in 198.18.0.0/16", hint="remove old testbeds with `testbed down`")


# Every node gets its own home directory for root, as separate machines have: an overlay on /root in sshd's private
# mount namespace (the host's /root, unchanged, below; the node's writes in its own layer). Sessions over ssh see it;
# `ssh` on a node reads that node's ~/.ssh. Each layer starts with a login ~/.profile as Ubuntu gives its users, and
# node 1's with wirespeed in ~/.local/bin (testbed/login.py). Without overlayfs the nodes share the host's home.
_OWN_HOME_SCRIPT = r"""home=$1 layer=$2; shift 2
mount -t overlay wirespeed-home -o "lowerdir=$home,upperdir=$layer/upper,workdir=$layer/work" "$home" 2>/dev/null \
  || echo "wirespeed testbed: no overlayfs: nodes share $home" >&2
exec "$@"
"""


# With `testbed up --user NAME`, every node has an account of its own (testbed/account.py) that exists only inside the
# node: private copies of this host's /etc/passwd, shadow, group, gshadow and sudoers.d with the account added (and
# of /etc/hosts with the node's own name, which sudo looks up), bind-mounted over this host's in sshd's private mount
# namespace (where root's home overlay is made), and /home an overlay whose node-own layer holds the account's home
# (this host's /home, unchanged, below; without overlayfs the node's layer alone). /usr/local is an overlay of the
# node's own too, so that what root installs there on a node (`init --sudoers`' agent) stays on that node. The
# mounts live and die with the node's sshd; this host's files are only read. `testbed exec` enters a node without
# them, as root.
_ACCOUNT_SCRIPT = r"""etc=$1 layer=$2 local=$3; shift 3
for file in "$etc"/*; do
  mount --bind "$file" "/etc/${file##*/}" || exit 1
done
mount -t overlay wirespeed-homes -o "lowerdir=/home,upperdir=$layer/upper,workdir=$layer/work" /home 2>/dev/null \
  || mount --bind "$layer/upper" /home || exit 1
mkdir -p "$local/upper" "$local/work"
mount -t overlay wirespeed-local -o "lowerdir=/usr/local,upperdir=$local/upper,workdir=$local/work" /usr/local \
  2>/dev/null || echo "wirespeed testbed: no overlayfs: nodes share /usr/local" >&2
exec "$@"
"""


# With `testbed up --mdns`, each node also announces ssh over mDNS, as a Spark's avahi does: a D-Bus system bus and
# avahi-daemon of its own (their /run directories private to sshd's mount namespace, so `avahi-browse` in a session
# talks to its own node's daemon), with an ssh service file in a services directory of its own.
_MDNS_SCRIPT = r"""services=$1; shift
mkdir -p /run/dbus /run/avahi-daemon
mount -t tmpfs wirespeed-dbus /run/dbus
mount -t tmpfs wirespeed-avahi /run/avahi-daemon
mount --bind "$services" /etc/avahi/services
dbus-daemon --system --fork
avahi-daemon -D --no-rlimits
exec "$@"
"""
SSH_SERVICE = """<?xml version="1.0" standalone='no'?>
<!DOCTYPE service-group SYSTEM "avahi-service.dtd">
<service-group>
  <name replace-wildcards="yes">%h</name>
  <service><type>_ssh._tcp</type><port>22</port></service>
</service-group>
"""
MDNS_TOOLS = ("dbus-daemon", "avahi-daemon", "avahi-browse")


def _write_like(path: Path, text: str, model: Path) -> None:
    """Write `text` to `path` with the mode and owner of this host's `model` (shadow stays root:shadow 0640)."""
    path.write_text(text)
    try:
        info = model.stat()
    except OSError:
        path.chmod(0o644)
        return
    path.chmod(info.st_mode & 0o7777)
    os.chown(path, info.st_uid, info.st_gid)


def node_argv(state: TestbedState, node: str, argv: list[str]) -> list[str]:
    """Run argv inside a node as if logged in there: its network namespace, its /sys and its host name."""
    uts = state.directory / "uts" / node
    return ["ip", "netns", "exec", node, "nsenter", f"--uts={uts}", "--", *argv]


class _Builder:
    def __init__(self, plan: TestbedPlan, sshd: str, progress: Progress) -> None:
        self.plan = plan
        self.sshd = sshd
        self.progress = progress
        self.dir = testbed_dir(plan.prefix)

    def ip(self, netns: str | None, *args: str) -> None:
        argv = ["ip", *(["-n", netns] if netns else []), *args]
        system.run(argv, f"{netns or 'host'}: ip {' '.join(args)}")

    def sysctl(self, netns: str, key: str, value: str) -> None:
        system.run(["ip", "netns", "exec", netns, "sysctl", "-qw", f"{key}={value}"], f"{netns}: sysctl {key}")

    def namespaces(self) -> None:
        for netns in self.plan.namespaces:
            self.ip(None, "netns", "add", netns)
            self.ip(netns, "link", "set", "lo", "up")
            # IPv6 stays off on new interfaces unless a fault turns it on (it shifts RoCE GID indices).
            self.sysctl(netns, "net.ipv6.conf.default.disable_ipv6", "1")
        for node in self.plan.nodes:
            # A well-set multi-homed host: each half answers ARP only for its own address (through a switch
            # every half hears every ARP request). `wirespeed check` (sysctl.arp) flags hosts without it.
            # As shipped, the kernel's own: ARP answered on any interface, and TCP buffers at the kernel's defaults
            # (a new namespace copies this host's, which may be tuned), for sysctl.arp and sysctl.tcp to find.
            shipped = self.plan.as_shipped
            self.sysctl(node.name, "net.ipv4.conf.all.arp_ignore", "0" if shipped else "1")
            self.sysctl(node.name, "net.ipv4.conf.all.arp_announce", "0" if shipped else "2")
            for key, value in SHIPPED_TCP_BUFFERS if shipped else ():
                self.sysctl(node.name, key, value)
            # A node forwards as a fresh Ubuntu does: not at all until told to. A new namespace takes the host's
            # IPv4 settings (net.core.devconf_inherit_init_net 0), and a host running Docker forwards; a ring's
            # relays then forward for real, in their own namespace, once `wirespeed fix` (ring.forward) says so.
            self.sysctl(node.name, "net.ipv4.ip_forward", "0")

    def management(self) -> None:
        plan = self.plan
        self.ip(plan.mgmt_netns, "link", "add", MGMT_BRIDGE, "type", "bridge")
        self.ip(plan.mgmt_netns, "link", "set", MGMT_BRIDGE, "up")
        host = plan.host_iface
        self.ip(None, "link", "add", host, "type", "veth", "peer", "name", "host", "netns", plan.mgmt_netns)
        self.ip(None, "addr", "add", plan.host_mgmt_address, "dev", host)
        self.ip(None, "link", "set", host, "up")
        self.ip(plan.mgmt_netns, "link", "set", "host", "master", MGMT_BRIDGE, "up")
        for node in plan.nodes:
            port = node.mgmt_bridge_port
            self.ip(
                node.name,
                "link",
                "add",
                MGMT_IFACE,
                "type",
                "veth",
                "peer",
                "name",
                port,
                "netns",
                plan.mgmt_netns,
            )
            self.ip(node.name, "link", "set", MGMT_IFACE, "address", node.mgmt_mac)
            self.ip(node.name, "addr", "add", node.mgmt_address, "dev", MGMT_IFACE)
            self.ip(node.name, "link", "set", MGMT_IFACE, "up")
            self.ip(plan.mgmt_netns, "link", "set", port, "master", MGMT_BRIDGE, "up")

    def fabric(self) -> None:
        plan = self.plan
        if plan.switch_netns:
            self.ip(plan.switch_netns, "link", "add", SWITCH_BRIDGE, "type", "bridge")
            self.ip(plan.switch_netns, "link", "set", SWITCH_BRIDGE, "mtu", str(plan.switch_mtu), "up")
        wires = rated_links(plan)
        for index, (here, there) in enumerate(links(plan)):
            if (here.netns, here.iface) in wires:
                self.rated_link(wire_name(index), here, there)
                continue
            self.ip(
                here.netns,
                "link",
                "add",
                here.iface,
                "type",
                "veth",
                "peer",
                "name",
                there.iface,
                "netns",
                there.netns,
            )
        for node in plan.nodes:
            for iface in node.fabric:
                if iface.placeholder is not None:  # an uncabled half: its far end lies unplugged
                    spare = iface.placeholder
                    self.ip(
                        node.name,
                        "link",
                        "add",
                        iface.name,
                        "type",
                        "veth",
                        "peer",
                        "name",
                        spare.iface,
                        "netns",
                        spare.netns,
                    )
                self.configure_half(iface)
        if wires:
            self.hold_wires(sorted(set(wires.values())))
        for port in plan.switch_ports:
            assert plan.switch_netns is not None
            self.ip(plan.switch_netns, "link", "set", port.name, "mtu", str(plan.switch_mtu))
            self.ip(plan.switch_netns, "link", "set", port.name, "master", SWITCH_BRIDGE, "up")
            self.shape(plan.switch_netns, port.name, plan.half_rate_bps)

    def rated_link(self, wire: str, here: Endpoint, there: Endpoint) -> None:
        """A cable whose halves report its rate: a tap at that speed, a macvlan on it at each end (WIRE_HOLDER)."""
        mgmt = self.plan.mgmt_netns
        self.ip(mgmt, "tuntap", "add", "dev", wire, "mode", "tap")
        self.ip(mgmt, "link", "set", wire, "mtu", str(WIRE_MTU), "up")
        set_link_speed(mgmt, wire, self.plan.half_rate_bps)
        for end in (here, there):
            self.ip(mgmt, "link", "add", "link", wire, "name", end.iface, "netns", end.netns, "type", "macvlan",
                    "mode", "bridge")  # fmt: skip

    def hold_wires(self, wires: list[str]) -> None:
        """Start the process that keeps every tap open (their carrier), detached, in the management namespace; it
        writes its pid once it holds them all."""
        system.run(
            ["ip", "netns", "exec", self.plan.mgmt_netns, "sh", "-c",
             'exe=$1 script=$2; shift 2; setsid "$exe" -c "$script" "$@" </dev/null >/dev/null 2>&1 &',
             "wirespeed-wires", sys.executable, WIRE_HOLDER, str(self.dir / WIRE_HOLDER_PID), *wires],
            "starting the holder of the fabric's taps",
        )  # fmt: skip

    def configure_half(self, iface: FabricIface) -> None:
        node = iface.node
        self.ip(node, "link", "set", iface.name, "address", iface.mac, "mtu", str(self.plan.mtu))
        if iface.address:
            self.ip(node, "addr", "add", iface.address, "dev", iface.name)
        if self.plan.as_shipped and iface.cabled and not iface.address:
            # As shipped, the twin half has only the IPv6 link-local address the kernel gives it (fe80::/64).
            system.run(
                ["ip", "netns", "exec", node, "sysctl", "-qw", f"net.ipv6.conf.{iface.name}.disable_ipv6=0"],
                f"{node}: IPv6 link-local on {iface.name}",
            )
        self.ip(node, "link", "set", iface.name, "up")
        if iface.cabled:
            self.shape(node, iface.name, self.plan.half_rate_bps)
            # veth leaves GRO off by default; a NIC has it on (`wirespeed check` nic.offloads looks for it).
            system.run(
                ["ip", "netns", "exec", node, "ethtool", "-K", iface.name, "gro", "on"], f"{node}: GRO on {iface.name}"
            )

    def shape(self, netns: str, dev: str, rate_bps: int) -> None:
        if rate_bps <= 0:  # `--half-rate none`: left as veth is, as fast as the CPU moves it
            return
        system.run(
            ["tc", "-n", netns, "qdisc", "replace", "dev", dev, "root", *tbf_args(rate_bps)],
            f"{netns}: shaping {dev}",
        )

    def hostnames(self) -> None:
        uts_dir = self.dir / "uts"
        uts_dir.mkdir(parents=True, exist_ok=True)
        for node in self.plan.nodes:
            path = uts_dir / node.name
            path.touch()
            system.run(["unshare", f"--uts={path}", "hostname", node.name], f"{node.name}: setting host name")

    def make_account(self, public_key: str) -> account.Account | None:
        """With `--user`: the account's password (in the testbed's directory, root only), and every node's private
        account files and home layer, ready for its sshd to mount. None without `--user`."""
        plan = self.plan
        if plan.user is None:
            return None
        host = {
            name: (Path("/etc") / name).read_text() for name in HOST_ACCOUNT_FILES if (Path("/etc") / name).exists()
        }
        uid = account.free_id(host.get("passwd", ""), host.get("group", ""))
        user = account.Account(name=plan.user, uid=uid, gid=uid, sudo=account.SudoMode(plan.sudo))
        password = account.new_password()
        password_file = self.dir / account.PASSWORD_FILE
        fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(password + "\n")
        password_file.chmod(0o600)
        files = account.node_etc(
            host, user, account.sha512_crypt(password, account.new_salt()), int(time.time() // 86400)
        )
        for node in plan.nodes:
            node_dir = self.dir / "nodes" / node.name
            etc = node_dir / "etc"
            etc.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                _write_like(etc / name, text, Path("/etc") / name)
            hosts = Path("/etc/hosts")
            if hosts.exists():  # the node's own name in it, for sudo
                _write_like(etc / "hosts", account.hosts_text(hosts.read_text(), node.name), hosts)
            sudo_state = node_dir / "sudo"
            sudo_state.mkdir(mode=0o700, exist_ok=True)
            shutil.copytree("/etc/sudoers.d", etc / "sudoers.d", symlinks=True)
            dropin = etc / "sudoers.d" / account.sudoers_name(user)
            dropin.write_text(account.sudoers_text(user, str(sudo_state)))
            dropin.chmod(0o440)
            layer = node_dir / "homes"
            for sub in ("upper", "work"):
                (layer / sub).mkdir(parents=True, exist_ok=True)
            home = layer / "upper" / user.name
            if Path("/etc/skel").is_dir():
                shutil.copytree("/etc/skel", home, symlinks=True)  # as adduser starts a home
            furnish_home(home, first=node.index == 1)  # node 1: wirespeed in ~/.local/bin, as pipx
            dot_ssh = home / ".ssh"
            dot_ssh.mkdir(mode=0o700, exist_ok=True)
            (dot_ssh / "authorized_keys").write_text(public_key)
            (dot_ssh / "authorized_keys").chmod(0o600)
            home.chmod(0o750)
            for path in [home, *home.rglob("*")]:
                os.lchown(path, user.uid, user.gid)
        return user

    def ssh(self, state: TestbedState) -> None:
        plan = self.plan
        keys = self.dir / "keys"
        keys.mkdir(mode=0o700, parents=True, exist_ok=True)
        client_key = keys / "id_ed25519"
        system.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "wirespeed-testbed", "-f", str(client_key)],
            "making the testbed ssh key",
        )
        authorized = self.dir / "authorized_keys"
        authorized.write_text(client_key.with_suffix(".pub").read_text())
        authorized.chmod(0o600)
        user = self.make_account(authorized.read_text())
        if user:
            self.progress(f"account {user.name} (uid {user.uid}) on every node; root cannot log in over ssh")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        known_hosts: list[str] = []
        for node in plan.nodes:
            node_dir = self.dir / "nodes" / node.name
            node_dir.mkdir(parents=True, exist_ok=True)
            host_key = node_dir / "ssh_host_ed25519_key"
            system.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", node.name, "-f", str(host_key)],
                f"{node.name}: making host key",
            )
            address = node.mgmt_address.split("/")[0]
            # The node's own /etc for what `fix` writes (the host's is shared): a netplan system like DGX OS.
            config_root = node_dir / "root"
            for sub in ("etc/netplan", "etc/sysctl.d"):
                (config_root / sub).mkdir(parents=True, exist_ok=True)
            (node_dir / "sshd_config").write_text(
                "\n".join(
                    [
                        "ListenAddress 0.0.0.0",  # every address of the node, as a real node's sshd (inside its netns)
                        "Port 22",
                        f"HostKey {host_key}",
                        # root: the controller's key and the node's own; an account: its own (sshd reads them as it)
                        "AuthorizedKeysFile .ssh/authorized_keys"
                        if user
                        else f"AuthorizedKeysFile {authorized} .ssh/authorized_keys",
                        f"PermitRootLogin {'no' if user else 'prohibit-password'}",  # as on a Spark with an account
                        "PasswordAuthentication no",
                        "KbdInteractiveAuthentication no",
                        "UsePAM no",
                        "StrictModes no",
                        "MaxSessions 64",
                        "MaxStartups 64:30:128",
                        f"SetEnv WIRESPEED_EMULATED=1 {CONFIG_ROOT_ENV}={config_root}",
                        f"PidFile {node_dir / 'sshd.pid'}",
                        "",
                    ]
                )
            )
            home = node_dir / "home"  # the node's own layer over root's home: its ~/.ssh, ~/.config
            root_home = pwd.getpwnam("root").pw_dir
            for sub in ("upper", "work"):
                (home / sub).mkdir(parents=True, exist_ok=True)
            # node 1: wirespeed in ~/.local/bin, as pipx, for whoever logs in (the account's home has it with --user)
            furnish_home(home / "upper", first=node.index == 1 and user is None)
            sshd = [self.sshd, "-f", str(node_dir / "sshd_config"), "-E", str(node_dir / "sshd.log")]
            own_home = ["sh", "-c", _OWN_HOME_SCRIPT, "wirespeed-sshd", root_home, str(home)]
            etc, homes, local = str(node_dir / "etc"), str(node_dir / "homes"), str(node_dir / "usr-local")
            own_account = ["sh", "-c", _ACCOUNT_SCRIPT, "wirespeed-account", etc, homes, local] if user else []
            mdns: list[str] = []
            if plan.mdns:
                services = node_dir / "avahi-services"
                services.mkdir(exist_ok=True)
                (services / "ssh.service").write_text(SSH_SERVICE)
                mdns = ["sh", "-c", _MDNS_SCRIPT, "wirespeed-mdns", str(services)]
            system.run(
                node_argv(state, node.name, [*own_home, *own_account, *mdns, *sshd]),
                f"{node.name}: starting sshd",
            )
            public = host_key.with_suffix(".pub").read_text().split()
            known_hosts.append(f"{node.name},{address} {public[0]} {public[1]}")
        (self.dir / "known_hosts").write_text("\n".join(known_hosts) + "\n")
        options = [
            f"    User {plan.login_user}",
            "    Port 22",
            f"    IdentityFile {client_key}",
            "    IdentitiesOnly yes",
            f"    UserKnownHostsFile {self.dir / 'known_hosts'}",
            "    StrictHostKeyChecking yes",
            "    PasswordAuthentication no",
        ]
        lines = [
            f"# wirespeed testbed {plan.prefix!r}: written by `wirespeed testbed up`, removed by `down`",
            "",
        ]
        for node in plan.nodes:
            lines += [f"Host {node.name}", f"    HostName {node.mgmt_address.split('/')[0]}", *options, ""]
        lines += [f"Host 198.18.{plan.mgmt_index}.*", *options, ""]
        state.ssh_config.write_text("\n".join(lines))
        cluster = Cluster(
            name=f"testbed-{plan.prefix.rstrip('-')}",
            nodes=tuple(
                Node(name=node.name, host=node.name, user=plan.user, agent=(sys.executable, "-m", "wirespeed"))
                for node in plan.nodes
            ),
            source=str(state.cluster_file),
            ssh_config=str(state.ssh_config),
        )
        state.cluster_file.write_text(
            render_cluster_toml(
                cluster,
                comment=f"Emulated cluster {plan.prefix!r} ({plan.topology}); see `wirespeed testbed status`.",
            )
        )

    def wait_for_carrier(self, timeout_s: float = 5.0) -> None:
        """Links report carrier a moment after both ends are up (linkwatch); wait so status reads true."""
        deadline = time.monotonic() + timeout_s
        expected = {node.name: {i.name for i in node.fabric if i.cabled} | {MGMT_IFACE} for node in self.plan.nodes}
        if self.plan.switch_netns:
            expected[self.plan.switch_netns] = {port.name for port in self.plan.switch_ports}
        for netns, names in expected.items():
            while True:
                states = {link.get("ifname"): link.get("operstate") for link in system.ip_json(netns, "link", "show")}
                if all(states.get(name) == "UP" for name in names) or time.monotonic() > deadline:
                    break
                time.sleep(0.05)

    def wait_for_sshd(self, timeout_s: float = 15.0) -> None:
        for node in self.plan.nodes:
            address = node.mgmt_address.split("/")[0]
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    with socket.create_connection((address, 22), timeout=1.0):
                        break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        log = self.dir / "nodes" / node.name / "sshd.log"
                        raise TestbedError(
                            f"{node.name}: sshd does not answer on {address}:22 ({exc})", hint=f"see {log}"
                        ) from None
                    time.sleep(0.1)


def up(
    *,
    prefix: str = "spark-",
    nodes: int = 2,
    topology: str = "direct",
    cables: int = 1,
    half_rate_bps: int = 10**9,
    mtu: int = 9000,
    switch_mtu: int | None = None,
    miswire: bool = False,
    mdns: bool = False,
    user: str | None = None,
    sudo: str | None = None,
    as_shipped: bool = False,
    progress: Progress = _quiet,
) -> TestbedState:
    """Bring a testbed up. An identical healthy one is kept; a half-built or different one is rebuilt."""
    from wirespeed.testbed.plan import Topology

    system.require_root()
    sshd = system.require_tools()
    missing = [tool for tool in MDNS_TOOLS if mdns and shutil.which(tool) is None]
    if missing:
        raise TestbedError(
            f"--mdns needs {', '.join(missing)}", hint="apt install avahi-daemon avahi-utils dbus (`make install` does)"
        )
    validate_prefix(prefix)
    try:
        topo = Topology(topology)
    except ValueError:
        raise UsageError(f"unknown topology {topology!r}", hint="use direct, ring or switch") from None
    existing = load_state(prefix)

    def plan_for(mgmt_index: int) -> TestbedPlan:
        return make_plan(
            prefix=prefix,
            nodes=nodes,
            topology=topo,
            cables=cables,
            half_rate_bps=half_rate_bps,
            mtu=mtu,
            switch_mtu=switch_mtu,
            miswire=miswire,
            mgmt_index=mgmt_index,
            mdns=mdns,
            user=user,
            sudo=sudo,
            as_shipped=as_shipped,
        )

    requested = plan_for(existing.plan.mgmt_index if existing else 0)  # validates before anything is touched
    if user is not None:
        _check_account_can_be_made(user)
    if existing and existing.phase == "up" and existing.plan == requested and not health_problems(existing):
        progress(f"testbed {prefix!r} is already up")
        return existing
    if existing or any(ns in system.netns_list() for ns in requested.namespaces):
        progress(f"removing the earlier testbed {prefix!r} first")
        down(prefix)
    with claiming():  # another `up` picks its subnet after this one's is recorded
        plan = plan_for(pick_mgmt_index(prefix))
        state = TestbedState(plan=plan, phase="building")
        state.save()  # before touching the system, so `down` can always find what was made
    builder = _Builder(plan, sshd, progress)
    progress(f"namespaces: {', '.join(plan.namespaces)}")
    builder.namespaces()
    progress(f"management network {plan.mgmt_subnet} (this host: {plan.host_mgmt_address} on {plan.host_iface})")
    builder.management()
    progress(
        f"fabric: {plan.topology}, {len(links(plan))} halves "
        + (f"shaped to {format_rate(plan.half_rate_bps)}, " if plan.half_rate_bps > 0 else "not shaped, ")
        + f"MTU {plan.mtu}"
        + (
            ", as shipped: IPv4 link-local on one half of each port, its twin IPv6 link-local only"
            if plan.as_shipped
            else ""
        )
    )
    builder.fabric()
    builder.hostnames()
    progress("ssh servers")
    builder.ssh(state)
    builder.wait_for_sshd()
    builder.wait_for_carrier()
    if rated_links(plan) and not (builder.dir / WIRE_HOLDER_PID).exists():
        raise TestbedError(
            "the process holding the fabric's taps did not start: the cabled halves have no carrier",
            hint="it needs /dev/net/tun (the tun driver); `wirespeed testbed down` removes the half-built testbed",
        )
    state.phase = "up"
    state.save()
    progress(f"testbed {prefix!r} is up; cluster file: {state.cluster_file}")
    return state


@dataclass
class DownReport:
    namespaces: list[str] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespaces": self.namespaces,
            "killed_pids": self.killed,
            "links": self.links,
            "files": self.files,
        }


def _check_account_can_be_made(user: str) -> None:
    """`--user` needs sudo on this host (the nodes run this host's programs), and a name this host does not use:
    the node's account is its own, never one of this host's."""
    if shutil.which("sudo") is None or not Path("/etc/sudoers.d").is_dir():
        raise TestbedError("--user needs sudo on this machine", hint="apt install sudo (`make install` does)")
    etc = Path("/etc")
    if account.name_taken(user, (etc / "passwd").read_text(), (etc / "group").read_text()):
        raise UsageError(
            f"--user {user}: this machine already has a user or group of that name",
            hint="the nodes' account must be their own: choose another name (e.g. --user spark)",
        )


def account_status(state: TestbedState) -> dict[str, Any] | None:
    """The nodes' account (`--user`): name, uid, sudo variant, where its password is; None when ssh logs in as
    root."""
    plan = state.plan
    if plan.user is None:
        return None
    uid: int | None = None
    try:
        passwd = (state.directory / "nodes" / plan.nodes[0].name / "etc" / "passwd").read_text()
        uid = next(int(line.split(":")[2]) for line in passwd.splitlines() if line.startswith(f"{plan.user}:"))
    except (OSError, StopIteration, IndexError, ValueError):
        uid = None
    return {
        "user": plan.user,
        "uid": uid,
        "sudo": plan.sudo,
        "password_file": str(state.directory / account.PASSWORD_FILE),
        "root_login": False,
    }


def _prefix_namespaces(prefix: str) -> list[str]:
    tails = {"mgmt", "switch"}
    return [
        ns
        for ns in system.netns_list()
        if ns.startswith(prefix) and (ns[len(prefix) :].isdigit() or ns[len(prefix) :] in tails)
    ]


def down(prefix: str = "spark-") -> DownReport:
    """Remove everything a testbed made: processes, mounts, links, namespaces, files. Idempotent."""
    system.require_root()
    validate_prefix(prefix)
    report = DownReport()
    directory = testbed_dir(prefix)
    state = load_state(prefix) if (directory / "state.json").exists() else None
    namespaces = set(_prefix_namespaces(prefix))
    if state:
        live = set(system.netns_list())
        namespaces |= {ns for ns in state.plan.namespaces if ns in live}
    pids: list[int] = []
    for netns in sorted(namespaces):
        pids += system.netns_pids(netns)
    if directory.exists():
        pids += system.pids_mentioning(str(directory))  # ssh control masters and clients using its config
    report.killed = system.kill_pids(sorted(set(pids)))
    uts_dir = directory / "uts"
    if uts_dir.is_dir():
        for path in uts_dir.iterdir():
            if system.is_mounted(path):
                system.run(["umount", str(path)], f"unmounting {path}", check=False)
    host = host_iface_name(prefix)
    if system.link_exists(host):
        system.run(["ip", "link", "del", host], f"deleting {host}", check=False)
        report.links.append(host)
    for netns in sorted(namespaces):
        system.run(["ip", "netns", "del", netns], f"deleting namespace {netns}", check=False)
        report.namespaces.append(netns)
    if directory.exists():
        report.files.append(str(directory))
        shutil.rmtree(directory, ignore_errors=True)
    leftovers = [ns for ns in system.netns_list() if ns in namespaces]
    if leftovers:
        raise TestbedError(f"could not delete namespace(s) {', '.join(leftovers)}", hint="see `ip netns pids NAME`")
    return report


def health_problems(state: TestbedState) -> list[str]:
    """What is missing or dead in a testbed that claims to be up (empty when healthy)."""
    problems: list[str] = []
    live = set(system.netns_list())
    for netns in state.plan.namespaces:
        if netns not in live:
            problems.append(f"namespace {netns} is missing")
    for node in state.plan.nodes:
        pid_file = state.directory / "nodes" / node.name / "sshd.pid"
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            problems.append(f"{node.name}: sshd has no pid file")
            continue
        if not system.pid_alive(pid):
            problems.append(f"{node.name}: sshd (pid {pid}) is not running")
    holder = state.directory / WIRE_HOLDER_PID
    if rated_links(state.plan):
        try:
            alive = system.pid_alive(int(holder.read_text().strip()))
        except (OSError, ValueError):
            alive = False
        if not alive:
            problems.append("the holder of the fabric's taps is not running: the cabled halves have no carrier")
    if not system.link_exists(state.plan.host_iface):
        problems.append(f"management link {state.plan.host_iface} is missing on this host")
    if state.plan.user and not (state.directory / account.PASSWORD_FILE).is_file():
        problems.append(f"the password file of account {state.plan.user} is missing")
    return problems


def set_link_speed(netns: str, wire: str, rate_bps: int) -> None:
    """The link speed a tap (and the macvlan halves over it) reports: the cable's rate, as a NIC reports its own."""
    speed = str(link_speed_mbps(rate_bps))
    system.run(
        ["ip", "netns", "exec", netns, "ethtool", "-s", wire, "speed", speed, "duplex", "full"],
        f"{netns}: link speed of {wire}",
    )


def _qdisc_rate(netns: str, dev: str) -> int | None:
    for qdisc in system.tc_json(netns, dev):
        if qdisc.get("kind") == "tbf":
            rate = qdisc.get("options", {}).get("rate")
            if isinstance(rate, int | float):
                return int(rate) * 8  # iproute2's JSON gives tbf rate in bytes per second
    return None


def interfaces(state: TestbedState, netns: str) -> list[dict[str, Any]]:
    """Live view of one namespace's interfaces: state, MTU, addresses, shaping."""
    rows: list[dict[str, Any]] = []
    for link in system.ip_json(netns, "addr", "show"):
        name = link.get("ifname", "?")
        if name == "lo":
            continue
        rows.append(
            {
                "iface": name,
                "state": link.get("operstate", "?"),
                "flags": link.get("flags", []),
                "mtu": link.get("mtu"),
                "mac": link.get("address"),
                "ipv4": [
                    f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []) if a.get("family") == "inet"
                ],
                "ipv6": [
                    f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []) if a.get("family") == "inet6"
                ],
                "rate_bps": _qdisc_rate(netns, name),
            }
        )
    return rows


def status(prefix: str = "spark-") -> dict[str, Any]:
    """The testbed as it is now: plan, phase, health, faults, and every node's interfaces."""
    system.require_root()
    state = load_state(prefix)
    if state is None:
        leftovers = _prefix_namespaces(prefix)
        return {"prefix": prefix, "phase": "down", "leftover_namespaces": leftovers, "problems": []}
    problems = health_problems(state)
    live = set(system.netns_list())
    plan = state.plan
    nodes = []
    for node in plan.nodes:
        peers = {i.name: (f"{i.peer.netns}:{i.peer.iface}" if i.peer else None) for i in node.fabric}
        rows = interfaces(state, node.name) if node.name in live else []
        for row in rows:
            row["peer"] = peers.get(row["iface"])
            row["role"] = "management" if row["iface"] == MGMT_IFACE else "fabric"
        nodes.append({"name": node.name, "mgmt_address": node.mgmt_address, "interfaces": rows})
    switch = None
    if plan.switch_netns:
        switch = {
            "netns": plan.switch_netns,
            "ports": interfaces(state, plan.switch_netns) if plan.switch_netns in live else [],
        }
    slurm_conf = state.directory / "slurm" / "slurm.conf"
    return {
        "prefix": prefix,
        "phase": state.phase if not problems else "degraded",
        "topology": plan.topology.value,
        "cables": plan.cables,
        "half_rate_bps": plan.half_rate_bps,
        "mtu": plan.mtu,
        "mgmt_subnet": plan.mgmt_subnet,
        "cluster_file": str(state.cluster_file),
        "ssh_config": str(state.ssh_config),
        "slurm_conf": str(slurm_conf) if slurm_conf.exists() else None,  # `testbed up --slurm`
        "account": account_status(state),  # `testbed up --user`; None: ssh logs in as root
        "problems": problems,
        "faults": state.faults,
        "nodes": nodes,
        "switch": switch,
    }


def require_state(prefix: str) -> TestbedState:
    state = load_state(prefix)
    if state is None or state.phase != "up":
        raise TestbedError(f"testbed {prefix!r} is not up", hint=f"run `wirespeed testbed up --prefix {prefix}`")
    return state


@dataclass(frozen=True)
class Fault:
    """A change to one half (or switch port); every field left None is left as it is."""

    mtu: int | None = None
    down: bool = False
    unaddress: bool = False
    ipv6: bool | None = None
    rate_bps: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.mtu is not None:
            data["mtu"] = self.mtu
        if self.down:
            data["down"] = True
        if self.unaddress:
            data["unaddress"] = True
        if self.ipv6 is not None:
            data["ipv6"] = self.ipv6
        if self.rate_bps is not None:
            data["rate_bps"] = self.rate_bps
        return data


def _target(state: TestbedState, node: str, iface: str) -> tuple[str, str, str | None, int]:
    """(netns, device, planned address, planned rate) of a fault target: a node's half or a switch port."""
    plan = state.plan
    if plan.switch_netns and node in ("switch", plan.switch_netns):
        port = plan.switch_port(iface)
        return plan.switch_netns, port.name, None, plan.half_rate_bps
    half = plan.node(node).iface(iface)
    return node, half.name, half.address, plan.half_rate_bps if half.cabled else 0


def _ipv6(state: TestbedState, netns: str, dev: str, on: bool) -> None:
    system.run(
        ["ip", "netns", "exec", netns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6={0 if on else 1}"],
        f"{netns}: IPv6 on {dev}",
    )


def fault(prefix: str, node: str, iface: str, change: Fault) -> dict[str, Any]:
    """Inject a fault on one half; it is recorded so `status` shows it and `revert` undoes it."""
    system.require_root()
    state = require_state(prefix)
    netns, dev, _address, _rate = _target(state, node, iface)
    if not change.to_json():
        raise UsageError("no fault given", hint="use --mtu M, --down, --unaddress, --ipv6 on|off or --rate RATE")
    if change.mtu is not None and (netns, dev) in rated_links(state.plan):
        raise UsageError(
            f"{node} {iface}: on a testbed with an ordinary account the halves are macvlans over a tap, which pass "
            "frames larger than the receiver's MTU (a NIC and a veth drop them): an MTU fault would not show",
            hint="bring the testbed up without --user for MTU faults",
        )
    if change.mtu is not None:
        system.run(["ip", "-n", netns, "link", "set", dev, "mtu", str(change.mtu)], f"{netns}: MTU of {dev}")
    if change.down:
        system.run(["ip", "-n", netns, "link", "set", dev, "down"], f"{netns}: taking {dev} down")
        wire = rated_links(state.plan).get((netns, dev))
        if wire:  # the far end loses its link too, as a veth's peer (and a real cable's) does
            system.run(["ip", "-n", state.plan.mgmt_netns, "link", "set", wire, "down"], f"taking {wire} down")
    if change.unaddress:
        system.run(["ip", "-n", netns, "-4", "addr", "flush", "dev", dev], f"{netns}: removing addresses of {dev}")
    if change.ipv6 is not None:
        _ipv6(state, netns, dev, change.ipv6)
    if change.rate_bps is not None:
        system.run(
            ["tc", "-n", netns, "qdisc", "replace", "dev", dev, "root", *tbf_args(change.rate_bps)],
            f"{netns}: rate of {dev}",
        )
        wire = rated_links(state.plan).get((netns, dev))
        if wire:  # the link's own speed follows (both of its ends report it, as a renegotiated cable would)
            set_link_speed(state.plan.mgmt_netns, wire, change.rate_bps)
    key = f"{netns}/{dev}"
    state.faults[key] = {**state.faults.get(key, {}), **change.to_json()}
    state.save()
    return {"target": key, "fault": state.faults[key]}


def revert(prefix: str, node: str, iface: str) -> dict[str, Any]:
    """Put one half back as the plan built it: MTU, link up, address, IPv6 off, rate."""
    system.require_root()
    state = require_state(prefix)
    netns, dev, address, rate = _target(state, node, iface)
    mtu = state.plan.switch_mtu if netns == state.plan.switch_netns else state.plan.mtu
    system.run(["ip", "-n", netns, "link", "set", dev, "mtu", str(mtu)], f"{netns}: MTU of {dev}")
    half = state.plan.node(node).iface(iface) if netns != state.plan.switch_netns else None
    shipped_twin = state.plan.as_shipped and half is not None and half.cabled and half.address is None
    _ipv6(state, netns, dev, shipped_twin)  # as shipped, the unaddressed twin keeps its IPv6 link-local address
    if address:
        system.run(["ip", "-n", netns, "-4", "addr", "replace", address, "dev", dev], f"{netns}: address of {dev}")
    system.run(["ip", "-n", netns, "link", "set", dev, "up"], f"{netns}: bringing {dev} up")
    wire = rated_links(state.plan).get((netns, dev))
    if wire:
        system.run(["ip", "-n", state.plan.mgmt_netns, "link", "set", wire, "up"], f"bringing {wire} up")
    if rate:
        system.run(
            ["tc", "-n", netns, "qdisc", "replace", "dev", dev, "root", *tbf_args(rate)],
            f"{netns}: rate of {dev}",
        )
        if wire:
            set_link_speed(state.plan.mgmt_netns, wire, rate)
    elif "rate_bps" in state.faults.get(f"{netns}/{dev}", {}):  # an unshaped testbed: take the fault's tbf away
        system.run(["tc", "-n", netns, "qdisc", "del", "dev", dev, "root"], f"{netns}: rate of {dev}", check=False)
    removed = state.faults.pop(f"{netns}/{dev}", None)
    state.save()
    return {"target": f"{netns}/{dev}", "reverted": removed or {}}
