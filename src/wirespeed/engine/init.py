"""`wirespeed init` on the node it runs on: find the other nodes on the fabric, set up the ssh mesh, write the
cluster file; `--undo` takes the mesh away again. The edits themselves are `core.sshmesh`'s; this module runs the
commands, each an argument list, on this node directly and on the peers over ssh.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from wirespeed.adapters import files
from wirespeed.adapters.process import run_process
from wirespeed.adapters.ssh import LocalTransport, SshTransport, Transport, default_control_dir
from wirespeed.core.cluster import sshmesh
from wirespeed.core.cluster.become import SYSTEM_AGENT_DIR, Become, install_sudoers_argv, sudoers_path, sudoers_text
from wirespeed.core.cluster.inventory import DEFAULT_AGENT, Cluster, Node, local_cluster, render_cluster_toml
from wirespeed.core.errors import UsageError, WirespeedError
from wirespeed.core.fabric.facts import NodeFacts
from wirespeed.core.parsers import sysfs_values as sv
from wirespeed.engine.discover import discover_live
from wirespeed.engine.remote import Remote

SSH_PORT = 22
_HOME_SSH = 'mkdir -p "$HOME/.ssh" && chmod 700 "$HOME/.ssh" && cd "$HOME/.ssh"'
# Each script is fixed text; names and keys reach it as positional arguments, never pasted in.
_ENSURE_KEY = _HOME_SSH + ' && { test -f "$1" || ssh-keygen -q -t ed25519 -N "" -C "$2" -f "$1"; } && cat "$1.pub"'
_READ = 'test -e "$HOME/.ssh/$1" || exit 3; cat "$HOME/.ssh/$1"'
_WRITE = _HOME_SSH + ' && umask 077 && cat > "$1.wirespeed-tmp" && mv -f "$1.wirespeed-tmp" "$1"'
_REMOVE = 'cd "$HOME/.ssh" 2>/dev/null || exit 0; rm -rf -- "$@"'
# The first init keeps each file as it was (or notes it was absent), once: --undo goes back to exactly that.
_BACKUP = (
    _HOME_SSH
    + ' && mkdir -p "$1" && for f in "$@"; do [ "$f" = "$1" ] && continue;'
    + ' [ -e "$1/$f.orig" ] || [ -e "$1/$f.absent" ] || { if [ -e "$f" ]; then cp -p "$f" "$1/$f.orig";'
    + ' else : > "$1/$f.absent"; fi; }; done'
)
EDITED = ("authorized_keys", "config")
OURS = (sshmesh.KEY_NAME, f"{sshmesh.KEY_NAME}.pub", sshmesh.KNOWN_HOSTS_NAME, sshmesh.CONFIG_NAME)


@dataclass(frozen=True)
class InitOptions:
    peers: tuple[str, ...] = ()  # addresses to use instead of finding them
    user: str | None = None  # the user on every node (default: this one's)
    interactive: bool = False  # let ssh ask for a password on the first contact
    agent: tuple[str, ...] = DEFAULT_AGENT
    ssh_options: tuple[str, ...] = ()  # for the first contact, as the user would give ssh


@dataclass(frozen=True)
class Found:
    """What init found before changing anything."""

    method: str  # "mDNS", "probe of 198.19.0.0/24, ..." or "--peers"
    me: sshmesh.Peer  # this node (its fabric addresses and host keys)
    peers: list[sshmesh.Peer]
    fabric: dict[str, tuple[str, ...]]  # this node's up fabric halves and their addresses


def _local_facts() -> NodeFacts:
    discovery = discover_live(Remote(local_cluster()), probe=False)
    return next(iter(discovery.facts.values()))


def fabric_addresses(facts: NodeFacts) -> dict[str, tuple[str, ...]]:
    """This node's fabric halves that are up, with their IPv4 addresses (CIDR)."""
    halves: dict[str, tuple[str, ...]] = {}
    for name in facts.fabric:
        netdev = facts.netdev(name)
        if netdev is not None and netdev.carrier is True and netdev.ipv4:
            halves[name] = netdev.ipv4
    return halves


def _ssh_port_open(address: str, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((address, SSH_PORT), timeout=timeout_s):
            return True
    except OSError:
        return False


def keyscan(addresses: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    if not addresses:
        return {}
    outcome = run_process(["ssh-keyscan", "-T", "3", "-t", "ed25519,ecdsa,rsa", *addresses], timeout_s=60)
    if outcome.spawn_error:
        raise WirespeedError("ssh-keyscan not found", hint="install openssh-client")
    return sshmesh.parse_keyscan(outcome.stdout)


def find(options: InitOptions, say: Callable[[str], None]) -> Found:
    """The other nodes on the fabric: named with --peers, else mDNS where avahi runs, else ssh's port on every
    address of this node's fabric subnets. Grouped into machines by their host keys."""
    halves = fabric_addresses(_local_facts())
    own = [cidr.split("/")[0] for cidrs in halves.values() for cidr in cidrs]
    if not halves and not options.peers:
        raise UsageError(
            "no fabric half of this node is up with an IPv4 address",
            hint="cable and address the halves (`wirespeed check`, `wirespeed fix`), or name peers with --peers",
        )
    names: dict[str, str] = {}
    candidates: list[str] = []
    method = ""
    if options.peers:
        method, candidates = "--peers", list(options.peers)
    elif shutil.which("avahi-browse"):
        outcome = run_process(["avahi-browse", "-p", "-r", "-f", "-t", "_ssh._tcp"], timeout_s=30)
        found = [p for p in sshmesh.parse_avahi_browse(outcome.stdout, halves) if p.address not in own]
        if outcome.returncode == 0 and found:
            names = {p.address: p.name for p in found}
            method, candidates = "mDNS (avahi-browse _ssh._tcp)", [p.address for p in found]
        elif outcome.returncode != 0:  # no daemon to ask (a node without avahi running), not a failure of ours
            said = (outcome.stderr.strip().splitlines() or [f"exit status {outcome.returncode}"])[-1]
            why = "avahi-daemon is not running" if "Daemon not running" in said else f"avahi-browse: {said}"
            say(f"no mDNS here ({why})")
        else:
            say("mDNS found nobody (no ssh service announced on the fabric)")
    if not method:
        subnets = [cidr for cidrs in halves.values() for cidr in cidrs]
        targets = sshmesh.probe_targets(subnets, own)
        say(f"probing ssh on {len(targets)} addresses of {', '.join(subnets)}")
        with ThreadPoolExecutor(max_workers=64) as pool:
            candidates = [a for a, ok in zip(targets, pool.map(_ssh_port_open, targets), strict=True) if ok]
        method = f"probe of {', '.join(subnets)}"
    scans = keyscan([*own, *candidates])
    mine = {k for address in own for k in scans.get(address, [])}
    me = sshmesh.Peer(tuple(a for a in own if scans.get(a)), tuple(sorted(mine)))
    others = [
        p for p in sshmesh.group_peers({a: scans.get(a, []) for a in candidates}, names) if not set(p.host_keys) & mine
    ]
    return Found(method, me, others, halves)


class Session:
    """Commands on the mesh's nodes: this one directly, the others over ssh with their host keys pinned to what
    discovery saw (a temporary known_hosts file), the user's own authentication, and one connection per node."""

    def __init__(self, options: InitOptions, pinned: Sequence[sshmesh.Peer]) -> None:
        self.options = options
        self._dir = tempfile.TemporaryDirectory(prefix="wirespeed-init-")
        lines = [f"{','.join(p.addresses)} {t} {k}" for p in pinned for t, k in p.host_keys]
        self.known_hosts = Path(self._dir.name) / "known_hosts"
        self.known_hosts.write_text("\n".join(lines) + "\n")
        self.transport = SshTransport(control_dir=default_control_dir(), batch_mode=not options.interactive)

    def node(self, name: str, address: str | None) -> Node:
        if address is None:
            return Node(name=name, host="localhost")
        pinning = (f"-oUserKnownHostsFile={self.known_hosts}", "-oStrictHostKeyChecking=yes")
        return Node(name=name, host=address, user=self.options.user, ssh_options=(*self.options.ssh_options, *pinning))

    def remote(self, nodes: Sequence[Node]) -> Remote:
        cluster = Cluster("init", tuple(nodes), "wirespeed init")
        local: Transport = LocalTransport()
        return Remote(cluster, transport_factory=lambda node: local if node.is_local else self.transport)

    def close(self) -> None:
        self._dir.cleanup()


@dataclass(frozen=True)
class NodeOutcome:
    """One node after init or undo: what it is called and which files of its ~/.ssh were written or removed."""

    name: str
    address: str  # how this node was reached ("localhost" for this one)
    changed: tuple[str, ...]


def _must(remote: Remote, node: Node, argv: Sequence[str], input_text: str | None = None) -> str:
    result = remote.run(node, argv, timeout_s=120, input_text=input_text)
    if not result.ok:
        raise WirespeedError(result.message, hint=result.hint)
    return result.stdout


def _read(remote: Remote, node: Node, name: str) -> str | None:
    result = remote.run(node, ["sh", "-c", _READ, "sh", name], timeout_s=60)
    if result.returncode == 3:
        return None
    if not result.ok:
        raise WirespeedError(result.message, hint=result.hint)
    return result.stdout


def _write(remote: Remote, node: Node, name: str, text: str) -> None:
    _must(remote, node, ["sh", "-c", _WRITE, "sh", name], input_text=text)


def _describe(
    remote: Remote, node: Node, reached_on: str | None, fabric: Sequence[str]
) -> tuple[str, str, str, tuple[str, ...], dict[str, list[str]]]:
    """(host name, user, management address, every IPv4 address but loopback, and by interface with prefixes) of
    a node, as it says itself over the connection its pinned host key authenticated."""
    name = _must(remote, node, ["hostname"]).strip()
    user = _must(remote, node, ["id", "-un"]).strip()
    addresses = sv.ip_addr_json(_must(remote, node, ["ip", "-j", "addr", "show"]))
    device = sv.default_route_iface(_must(remote, node, ["ip", "-j", "route", "show", "table", "main"]))
    management = sshmesh.management_address(addresses.ipv4, device, fabric) or reached_on
    if management is None:
        raise WirespeedError(f"{name}: no IPv4 address to name it by", hint="give the node a management address")
    every = tuple(c.split("/")[0] for iface, cidrs in addresses.ipv4.items() if iface != "lo" for c in cidrs)
    return name, user, management, every, {i: list(c) for i, c in addresses.ipv4.items()}


@dataclass(frozen=True)
class Member:
    """A node as it describes itself on first contact (read-only: nothing is changed yet)."""

    node: Node  # how this session reaches it
    name: str
    user: str
    management: str
    machine: sshmesh.Peer
    addresses: tuple[str, ...]  # every IPv4 address it has (mDNS may have shown one per node only)
    ipv4: Mapping[str, Sequence[str]] = field(default_factory=dict)  # interface -> CIDRs


class Survey:
    """Every node reached and described, before anything is changed; `close()` ends the session."""

    def __init__(self, session: Session, remote: Remote, members: list[Member]) -> None:
        self.session, self.remote, self.members = session, remote, members

    def close(self) -> None:
        self.remote.stop_all()
        self.session.close()


def survey(found: Found, options: InitOptions, say: Callable[[str], None]) -> Survey:
    """Reach every node (one at a time: one password prompt at a time) and ask its name, user and addresses."""
    session = Session(options, found.peers)
    machines = [found.me, *found.peers]
    nodes = [session.node("this node", None)] + [
        session.node(f"peer {i}", peer.addresses[0]) for i, peer in enumerate(found.peers, 1)
    ]
    remote = session.remote(nodes)
    fabric = [cidr for cidrs in found.fabric.values() for cidr in cidrs]
    members: list[Member] = []
    try:
        for node, machine in zip(nodes, machines, strict=True):
            reached = None if node.is_local else node.host
            name, user, management, every, ipv4 = _describe(remote, node, reached, fabric)
            say(f"{name}: reached {'here' if reached is None else 'on ' + reached} as {user}")
            members.append(Member(node, name, user, management, machine, every, ipv4))
    except BaseException:
        session.close()
        raise
    if len({m.user for m in members}) > 1:
        session.close()
        users = ", ".join(f"{m.name}: {m.user}" for m in members)
        raise UsageError(f"the nodes' users differ ({users}): mpirun needs the same user", hint="give --user")
    return Survey(session, remote, members)


def setup(found: Survey, say: Callable[[str], None]) -> tuple[list[sshmesh.MeshNode], list[NodeOutcome]]:
    """Make each node's key, then give every node every key, the pinned host keys and the Include line. Nothing
    is written where it is already as it should be, so a second run changes nothing."""
    remote, nodes = found.remote, [m.node for m in found.members]
    try:
        mesh: list[sshmesh.MeshNode] = []
        for member in found.members:
            comment = f"{sshmesh.MARKER}@{member.name}"
            public = sshmesh.check_public_key(
                _must(remote, member.node, ["sh", "-c", _ENSURE_KEY, "sh", sshmesh.KEY_NAME, comment]), member.name
            )
            addresses = tuple(dict.fromkeys((member.management, *member.machine.addresses, *member.addresses)))
            mesh.append(
                sshmesh.MeshNode(
                    member.name, member.user, member.management, addresses, member.machine.host_keys, public
                )
            )
        files = {
            sshmesh.KNOWN_HOSTS_NAME: sshmesh.known_hosts(mesh),
            sshmesh.CONFIG_NAME: sshmesh.mesh_config(mesh),
        }
        keys = [m.public_key for m in mesh]
        outcomes = []
        for node, mesh_node in zip(nodes, mesh, strict=True):
            _must(remote, node, ["sh", "-c", _BACKUP, "sh", sshmesh.BACKUP_DIR, *EDITED])
            wanted = dict(files)
            wanted["authorized_keys"] = sshmesh.authorized_keys_with(_read(remote, node, "authorized_keys") or "", keys)
            wanted["config"] = sshmesh.config_with_include(_read(remote, node, "config") or "")
            changed = []
            for name, text in wanted.items():
                if _read(remote, node, name) != text:
                    _write(remote, node, name, text)
                    changed.append(name)
            outcomes.append(NodeOutcome(mesh_node.name, "localhost" if node.is_local else node.host, tuple(changed)))
        return mesh, outcomes
    finally:
        found.close()


def cluster_of(mesh: Sequence[sshmesh.MeshNode], agent: tuple[str, ...]) -> Cluster:
    nodes = tuple(Node(name=m.name, host=m.management, user=m.user, agent=agent) for m in mesh)
    return Cluster("init", nodes, "wirespeed init")


def write_cluster_file(path: Path, mesh: Sequence[sshmesh.MeshNode], agent: tuple[str, ...]) -> bool:
    """Writes the cluster file; False when it already said exactly this."""
    text = render_cluster_toml(
        cluster_of(mesh, agent), comment="Written by `wirespeed init`; `init --undo` removes it."
    )
    if path.exists() and path.read_text() == text:
        return False
    files.write_atomic(files.ensure_dir(path.parent) / path.name, text)
    return True


def undo(cluster: Cluster, options: InitOptions, say: Callable[[str], None]) -> list[NodeOutcome]:
    """On every node of init's cluster file (the others first, this one last): init's lines out of
    authorized_keys and config, the files back byte for byte where nothing else changed them, its files gone."""
    here = socket.gethostname()
    nodes = [Node(name=n.name, host="localhost") if n.name == here else n for n in cluster.nodes]
    nodes.sort(key=lambda node: node.is_local)
    local: Transport = LocalTransport()
    ssh = SshTransport(control_dir=default_control_dir(), batch_mode=not options.interactive)
    remote = Remote(
        Cluster(cluster.name, tuple(nodes), cluster.source),
        transport_factory=lambda node: local if node.is_local else ssh,
    )
    outcomes = []
    for node in nodes:
        changed = []
        for name, without in (
            ("authorized_keys", sshmesh.authorized_keys_without),
            ("config", sshmesh.config_without_include),
        ):
            current = _read(remote, node, name)
            if current is None:
                continue
            original = _read(remote, node, f"{sshmesh.BACKUP_DIR}/{name}.orig")
            absent = _read(remote, node, f"{sshmesh.BACKUP_DIR}/{name}.absent") is not None
            backed_up = original is not None or absent
            target = sshmesh.undo_text(current, original, without(current)) if backed_up else without(current)
            if target is None:
                _must(remote, node, ["sh", "-c", _REMOVE, "sh", name])
                changed.append(name)
            elif target != current:
                _write(remote, node, name, target)
                changed.append(name)
        present = [name for name in (*OURS, sshmesh.BACKUP_DIR) if _read_exists(remote, node, name)]
        if present:
            _must(remote, node, ["sh", "-c", _REMOVE, "sh", *present])
        outcomes.append(NodeOutcome(node.name, node.host, tuple(changed + present)))
        say(f"{node.name}: {', '.join(changed + present) or 'nothing of init left'}")
    remote.stop_all()
    return outcomes


def _read_exists(remote: Remote, node: Node, name: str) -> bool:
    result = remote.run(node, ["sh", "-c", 'test -e "$HOME/.ssh/$1"', "sh", name], timeout_s=60)
    return result.ok


# ------------------------------------------------------------------------------------------ standing permission
def grant_sudoers(path: Path, become: Become, say: Callable[[str], None]) -> list[str]:
    """`init --sudoers`: on every node of init's cluster file, a root-owned copy of this wirespeed's agent and a
    sudoers drop-in that lets the login user run it (and only it) as root without a password; the cluster file then
    says `become = "sudoers"`, so that every command runs its privileged steps through it with no --become.
    Returns one line per node that could not be given it."""
    from wirespeed.adapters.agentzip import agent_content, build_agent
    from wirespeed.core.cluster.agentship import AgentSource
    from wirespeed.engine.clusters import load_cluster_file
    from wirespeed.engine.remote import ensure_agents

    cluster = load_cluster_file(path)
    remote = Remote(cluster, become=become, say=say)
    infos = ensure_agents(remote)
    name = agent_content().name
    failed: list[str] = []
    for node in cluster.nodes:
        info = infos[node.name]
        if node.is_local:
            python, source = os.path.realpath(sys.executable), str(build_agent().path)
        elif info.source in (AgentSource.SHIPPED, AgentSource.PRESENT) and info.file:
            python, source = info.argv[0], info.file
        else:
            failed.append(f"{node.name}: its agent is configured (agent = [...]): no drop-in written there")
            continue
        who = remote.run(node, ["id", "-un"], timeout_s=30)
        user = who.stdout.strip()
        try:
            rule = sudoers_text(user, python)
        except ValueError as exc:
            failed.append(f"{node.name}: {exc}")
            continue
        done = remote.run(node, install_sudoers_argv(source, name, user), input_text=rule, privileged=True,
                          timeout_s=60)  # fmt: skip
        if done.ok:
            say(f"{node.name}: {sudoers_path(user)} lets {user} run the agent as root ({SYSTEM_AGENT_DIR}/{name})")
        else:
            failed.append(done.message + (f" (hint: {done.hint})" if done.hint else ""))
    if not failed:
        _set_become(path, "sudoers")
    return failed


def revoke_sudoers(cluster: Cluster, say: Callable[[str], None]) -> list[str]:
    """`init --undo` of `--sudoers`: the drop-in and the root-owned agents removed on every node, through the drop-in
    itself (no password); one line per node where that failed, with what to remove by hand."""
    from wirespeed.adapters.agentzip import agent_content

    remote = Remote(cluster, become=Become(system_agent=agent_content().name), say=say)
    failed = []
    for node in cluster.nodes:
        user = remote.run(node, ["id", "-un"], timeout_s=30).stdout.strip() or (node.user or "")
        done = remote.run(node, [*remote.agent_argv(node), "agent", "unsudoers", "--user", user], privileged=True,
                          timeout_s=60)  # fmt: skip
        if done.ok:
            say(f"{node.name}: removed {sudoers_path(user)} and {SYSTEM_AGENT_DIR}")
        else:
            failed.append(f"{done.message} (by hand: sudo rm /etc/sudoers.d/wirespeed-{user}; "
                          f"sudo rm -r {SYSTEM_AGENT_DIR})")  # fmt: skip
    remote.stop_all()
    return failed


def _set_become(path: Path, value: str | None) -> None:
    from wirespeed.engine.clusters import load_cluster_file

    cluster = load_cluster_file(path)
    extra = {k: v for k, v in cluster.extra.items() if k != "become"}
    if value is not None:
        extra["become"] = value
    text = render_cluster_toml(Cluster(cluster.name, cluster.nodes, cluster.source, cluster.ssh_config, extra),
                               comment="Written by `wirespeed init`; `init --undo` removes it.")  # fmt: skip
    files.write_atomic(path, text)


def pin_fabric_addresses(remote: Remote, facts: Mapping[str, NodeFacts]) -> list[str]:
    """After a fix readdresses fabric halves: pin every node's fabric addresses as they are now in the mesh's
    known_hosts and config on every node (the same host keys; init only saw the old addresses), so ssh, and mpirun
    through it, reaches the new ones. Nodes init did not set up are left alone. Returns the nodes changed."""
    addresses = {
        name: [a.split("/")[0] for iface in node.fabric if (n := node.netdev(iface)) for a in n.ipv4]
        for name, node in facts.items()
    }
    changed = []
    for name in facts:
        node = remote.cluster.node(name)
        known, config = _read(remote, node, sshmesh.KNOWN_HOSTS_NAME), _read(remote, node, sshmesh.CONFIG_NAME)
        if known is None or config is None:
            continue
        grown = sshmesh.with_addresses(known, config, addresses)
        if grown is None or grown == (known, config):
            continue
        _write(remote, node, sshmesh.KNOWN_HOSTS_NAME, grown[0])
        _write(remote, node, sshmesh.CONFIG_NAME, grown[1])
        changed.append(name)
    return changed
