"""The cluster inventory: which nodes exist and how to reach them.

A cluster file is TOML:

    [cluster]
    name = "lab"
    ssh_config = "~/.ssh/config"      # optional: passed to ssh as -F

    [[nodes]]
    name = "spark-1"                  # what wirespeed calls the node
    host = "198.18.0.11"              # ssh destination (address or ssh_config alias); "localhost" runs locally
    user = "alice"                    # optional, else ssh's own default
    port = 22                         # optional
    ssh_options = ["-i", "~/.ssh/id_wirespeed"]   # optional, given to ssh as they are
    agent = ["/opt/wirespeed/bin/wirespeed"]      # optional argv that starts wirespeed on that node

Parsing is pure: text in, `Cluster` out, `InventoryError` naming the file and line otherwise.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from wirespeed.core.cluster.nodeset import expand_hosts
from wirespeed.core.errors import InventoryError
from wirespeed.core.records.nesting import Malformed, check_toml_depth

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_NODE_NAME_RE = re.compile(r"^[A-Za-z0-9:][A-Za-z0-9._:-]{0,62}$")  # ':' for IPv6 literals from --hosts
_HOST_RE = re.compile(r"^[A-Za-z0-9_.:%\[\]-]+$")
_USER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
DEFAULT_AGENT: tuple[str, ...] = ("wirespeed",)


@dataclass(frozen=True)
class Node:
    """One machine of the cluster and how to reach it."""

    name: str
    host: str
    user: str | None = None
    port: int | None = None
    ssh_options: tuple[str, ...] = ()
    agent: tuple[str, ...] = DEFAULT_AGENT

    @property
    def is_local(self) -> bool:
        """Local nodes run commands directly, without ssh."""
        return self.host in LOCAL_HOSTS and not self.user and not self.port and not self.ssh_options


@dataclass(frozen=True)
class Cluster:
    """The nodes a command acts on, and where that list came from (shown to the user)."""

    name: str
    nodes: tuple[Node, ...]
    source: str
    ssh_config: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    nccl_env: tuple[tuple[str, str], ...] = ()  # `[nccl.env]`: every rank's environment (`tune nccl --save` writes it)

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise InventoryError(f"{self.source}: no node named {name!r}", hint=f"nodes are: {', '.join(self.names)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(node.name for node in self.nodes)


def _node_lines(text: str) -> list[int]:
    """Line number of each `[[nodes]]` header, in order: entry i of the parsed list starts there."""
    return [n for n, line in enumerate(text.splitlines(), start=1) if re.match(r"^\s*\[\[\s*nodes\s*\]\]", line)]


def _where(source: str, text: str, index: int) -> str:
    """`file:line` of node entry `index` (1-based): its `name =` line, else its `[[nodes]]` header."""
    headers = _node_lines(text)
    if not 0 < index <= len(headers):
        return f"{source} (node {index})"
    all_lines = text.splitlines()
    end = headers[index] - 1 if index < len(headers) else len(all_lines)
    for number in range(headers[index - 1] + 1, end + 1):
        if re.match(r"^\s*name\s*=", all_lines[number - 1]):
            return f"{source}:{number}"
    return f"{source}:{headers[index - 1]}"


def _string(value: object, what: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise InventoryError(f"{where}: {what} must be a non-empty string, got {value!r}")
    return value


def _string_list(value: object, what: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise InventoryError(f"{where}: {what} must be a list of non-empty strings, got {value!r}")
    return tuple(value)


def validate_node(node: Node, where: str) -> Node:
    """Reject names that could be mistaken for ssh options or that ssh would not accept."""
    if not _NODE_NAME_RE.fullmatch(node.name):
        raise InventoryError(
            f"{where}: node name {node.name!r} is not valid",
            hint="use letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    if node.host.startswith("-") or not _HOST_RE.fullmatch(node.host):
        raise InventoryError(f"{where}: node {node.name}: host {node.host!r} is not a host name or address")
    if node.user is not None and not _USER_RE.fullmatch(node.user):
        raise InventoryError(f"{where}: node {node.name}: user {node.user!r} is not a valid user name")
    if node.port is not None and not 0 < node.port < 65536:
        raise InventoryError(f"{where}: node {node.name}: port {node.port} is out of range")
    if not node.agent:
        raise InventoryError(f"{where}: node {node.name}: agent must name a command")
    return node


def loads_toml(text: str, source: str) -> dict[str, Any]:
    """A cluster file's TOML, refused (InventoryError naming `source`) when it is not TOML or nests past
    nesting.MAX_DEPTH (tomllib parses nested arrays by recursion: 5,000 deep is a RecursionError)."""
    try:
        check_toml_depth(text)
        return tomllib.loads(text)
    except Malformed as exc:
        raise InventoryError(f"{source}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InventoryError(f"{source}: not valid TOML: {exc}", hint="see `wirespeed --help` for the format") from None
    except RecursionError:  # unreachable past the depth check; a last guard
        raise InventoryError(f"{source}: nested too deeply to read") from None


def parse_cluster_toml(text: str, source: str) -> Cluster:
    """Parse a cluster file; every error names `source` and, where it can, the line."""
    data = loads_toml(text, source)
    header = data.get("cluster", {})
    if not isinstance(header, dict):
        raise InventoryError(f"{source}: [cluster] must be a table")
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise InventoryError(
            f"{source}: no [[nodes]] entries",
            hint='add one [[nodes]] table per node with name = "..." and host = "..."',
        )
    nodes: list[Node] = []
    for index, raw in enumerate(raw_nodes, start=1):
        if not isinstance(raw, dict):
            raise InventoryError(f"{source}: nodes entry {index} must be a table")
        where = _where(source, text, index)
        unknown = set(raw) - {"name", "host", "user", "port", "ssh_options", "agent"}
        if unknown:
            raise InventoryError(
                f"{where}: unknown key(s) {', '.join(sorted(unknown))}",
                hint="keys are name, host, user, port, ssh_options, agent",
            )
        name = _string(raw.get("name"), "name", where)
        port = raw.get("port")
        if port is not None and (not isinstance(port, int) or isinstance(port, bool)):
            raise InventoryError(f"{where}: node {name}: port must be an integer, got {port!r}")
        node = Node(
            name=name,
            host=_string(raw.get("host", name), "host", where),
            user=_string(raw["user"], "user", where) if "user" in raw else None,
            port=port,
            ssh_options=_string_list(raw.get("ssh_options", []), "ssh_options", where),
            agent=_string_list(raw["agent"], "agent", where) if "agent" in raw else DEFAULT_AGENT,
        )
        nodes.append(validate_node(node, where))
    seen: set[str] = set()
    for index, node in enumerate(nodes, start=1):
        if node.name in seen:
            raise InventoryError(f"{_where(source, text, index)}: node name {node.name!r} is used twice")
        seen.add(node.name)
    ssh_config = header.get("ssh_config")
    if ssh_config is not None:
        ssh_config = _string(ssh_config, "cluster.ssh_config", source)
    name = header.get("name", "cluster")
    extra = {k: str(v) for k, v in header.items() if k not in {"name", "ssh_config"}}
    return Cluster(
        name=_string(name, "cluster.name", source),
        nodes=tuple(nodes),
        source=source,
        ssh_config=ssh_config,
        extra=extra,
        nccl_env=_nccl_env(data.get("nccl"), source),
    )


def _nccl_env(raw: Any, source: str) -> tuple[tuple[str, str], ...]:
    """`[nccl.env]`: NAME = "value" pairs (numbers allowed), each name an environment variable's."""
    if raw is None:
        return ()
    env = raw.get("env", {}) if isinstance(raw, dict) else None
    if not isinstance(env, dict) or set(raw) - {"env"}:
        raise InventoryError(f"{source}: [nccl] holds one table, [nccl.env]",
                             hint='e.g. [nccl.env] NCCL_MIN_NCHANNELS = "8"')  # fmt: skip
    pairs = []
    for name, value in env.items():
        if (
            not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)
            or isinstance(value, bool)
            or not isinstance(value, str | int | float)
        ):
            raise InventoryError(f"{source}: [nccl.env] {name} = {value!r}: not NAME = \"value\"",
                                 hint='e.g. NCCL_SOCKET_NTHREADS = "4"')  # fmt: skip
        pairs.append((name, str(value)))
    return tuple(pairs)


def parse_host_list(spec: str, user: str | None = None) -> Cluster:
    """`--hosts a,b,user@c:2222,spark-[1-4]` → a cluster; the node name is the host as written (without user/port),
    a node set expanded (`nodeset.expand_hosts`)."""
    nodes: list[Node] = []
    for item in (part.strip() for part in expand_hosts(spec)):
        if not item:
            continue
        node_user = user
        if "@" in item:
            node_user, item = item.split("@", 1)
        port: int | None = None
        port_text: str | None = None
        if item.startswith("["):  # [IPv6]:port
            address, _, rest = item[1:].partition("]")
            item, port_text = address, rest[1:] if rest.startswith(":") else None
        elif item.count(":") == 1:
            item, port_text = item.split(":")
        if port_text is not None:
            if not (port_text.isascii() and port_text.isdigit()):  # `²` is a digit to str.isdigit, not to int()
                raise InventoryError(f"--hosts: {port_text!r} is not a port number in {spec!r}")
            port = int(port_text)
        nodes.append(validate_node(Node(name=item, host=item, user=node_user or None, port=port), "--hosts"))
    if not nodes:
        raise InventoryError("--hosts: no hosts given", hint="write --hosts node1,node2")
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise InventoryError(f"--hosts: a host is listed twice in {spec!r}")
    return Cluster(name="hosts", nodes=tuple(nodes), source="--hosts")


def local_cluster() -> Cluster:
    """The fallback when no cluster is named: this machine alone."""
    return Cluster(name="local", nodes=(Node(name="localhost", host="localhost"),), source="localhost")


def _toml_string(value: str) -> str:
    # JSON string escapes are a subset of TOML basic-string escapes; non-ASCII stays as UTF-8 because TOML
    # has no surrogate pairs (\ud83d...) for characters outside the BMP.
    return json.dumps(value, ensure_ascii=False)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key)


def _toml_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def render_cluster_toml(cluster: Cluster, comment: str | None = None) -> str:
    """Write a cluster file that `parse_cluster_toml` reads back to the same `Cluster`."""
    lines: list[str] = []
    if comment:
        lines += [f"# {line}" for line in comment.splitlines()] + [""]
    lines.append("[cluster]")
    lines.append(f"name = {_toml_string(cluster.name)}")
    if cluster.ssh_config:
        lines.append(f"ssh_config = {_toml_string(cluster.ssh_config)}")
    for key, value in sorted(cluster.extra.items()):
        lines.append(f"{_toml_key(key)} = {_toml_string(value)}")
    for node in cluster.nodes:
        lines += ["", "[[nodes]]", f"name = {_toml_string(node.name)}", f"host = {_toml_string(node.host)}"]
        if node.user:
            lines.append(f"user = {_toml_string(node.user)}")
        if node.port:
            lines.append(f"port = {node.port}")
        if node.ssh_options:
            lines.append(f"ssh_options = {_toml_list(node.ssh_options)}")
        if node.agent != DEFAULT_AGENT:
            lines.append(f"agent = {_toml_list(node.agent)}")
    if cluster.nccl_env:
        lines += ["", "[nccl.env]", *(f"{_toml_key(k)} = {_toml_string(v)}" for k, v in cluster.nccl_env)]
    return "\n".join(lines) + "\n"


def with_nccl_env(text: str, env: tuple[tuple[str, str], ...], source: str) -> str:
    """The cluster file's text with `[nccl.env]` holding `env` over what it held (the rest of the file, comments
    included, as it was): the section's lines replaced where it exists, else the section added at the end."""
    cluster = parse_cluster_toml(text, source)
    merged = dict(cluster.nccl_env)
    merged.update(env)
    section = ["[nccl.env]", *(f"{_toml_key(k)} = {_toml_string(v)}" for k, v in merged.items())]
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.fullmatch(r"\s*\[\s*nccl\.env\s*\]\s*(#.*)?", line)), None)
    if start is None:
        updated = [*lines, *([""] if lines and lines[-1].strip() else []), *section]
    else:
        end = next((i for i in range(start + 1, len(lines)) if re.match(r"\s*\[", lines[i])), len(lines))
        updated = [*lines[:start], *section, *([""] if end < len(lines) else []), *lines[end:]]
    result = "\n".join(updated) + "\n"
    parse_cluster_toml(result, source)  # still a cluster file
    return result
