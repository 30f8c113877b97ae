"""Views of a discovery: one compact table per node, the cabling diagram, and an ibdev2netdev-style list."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from wirespeed.core.fabric.cabling import PortLink
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.fabric.units import format_rate

SEVERITY_STYLE = {"info": "dim", "warn": "yellow", "fail": "red"}


def _v(value: object, suffix: str = "") -> str:
    if isinstance(value, Unknown):
        return "?"
    if value is None:
        return "-"
    return f"{value}{suffix}"


def _speed(value: int | Unknown) -> str:
    return "-" if isinstance(value, Unknown) else format_rate(value * 1e6).replace(".00", "")


def node_table(facts: NodeFacts) -> Table:
    """Fabric halves grouped by physical port, then the management interface."""
    title = f"{facts.node}  (host name {_v(facts.hostname)})" + ("  \\[emulated]" if facts.emulated else "")
    table = Table(title=title, title_justify="left", title_style="bold", show_edge=False, pad_edge=False)
    for column in (
        "port",
        "interface",
        "state",
        "speed",
        "mtu",
        "ipv4",
        "rdma",
        "rdma state",
        "rate",
        "gid v2",
        "pcie",
    ):
        table.add_column(column)
    rdma = {d.name: d for d in facts.rdma}
    pci = {p.bdf: p for p in facts.pci}
    for port in facts.ports:
        for half, name in enumerate(port.halves):
            netdev = facts.netdev(name)
            if netdev is None:
                continue
            device = rdma.get(netdev.rdma_devices[0]) if netdev.rdma_devices else None
            rport = device.ports[0] if device and device.ports else None
            function = pci.get(netdev.pci) if netdev.pci else None
            pcie = "-"
            if function and not isinstance(function.current_width, Unknown):
                pcie = f"x{function.current_width}/{_v(function.max_width)} {_v(function.current_speed_gts)}GT/s"
                if not isinstance(function.max_width, Unknown) and function.current_width < function.max_width:
                    pcie = f"[red]{pcie}[/red]"
            state = _v(netdev.operstate)
            state_style = "green" if state == "up" and netdev.carrier is True else ("red" if state == "up" else "dim")
            table.add_row(
                port.label if half == 0 else "",
                name,
                Text(
                    "up" if state == "up" and netdev.carrier is True else ("no-carrier" if state == "up" else state),
                    style=state_style,
                ),
                _speed(netdev.speed_mbps),
                _v(netdev.mtu),
                ", ".join(netdev.ipv4) or "-",
                device.name if device else "-",
                f"{_v(rport.state)}/{_v(rport.phys_state)}" if rport else "-",
                _v(rport.rate) if rport else "-",
                _v(rport.rocev2_ipv4_index) if rport else "-",
                Text.from_markup(pcie),
            )
    if not isinstance(facts.management, Unknown):
        netdev = facts.netdev(facts.management)
        if netdev:
            table.add_row(
                "mgmt",
                netdev.name,
                _v(netdev.operstate),
                _speed(netdev.speed_mbps),
                _v(netdev.mtu),
                ", ".join(netdev.ipv4) or "-",
                "-",
                "-",
                "-",
                "-",
                "-",
            )
    return table


def node_summary(facts: NodeFacts) -> Text:
    text = Text()
    if facts.rdma_absent_reason:
        text.append(f"  {facts.rdma_absent_reason}\n", style="yellow")
    for device in facts.rdma:
        for port in device.ports:
            index = port.rocev2_ipv4_index
            netdev = facts.netdev(device.netdevs[0]) if device.netdevs else None
            if isinstance(index, int) and index > 3 and netdev is not None and netdev.ipv6:
                text.append(
                    f"  {device.name}: RoCE v2 IPv4 GID index {index}, shifted by IPv6 on {netdev.name} "
                    f"({', '.join(netdev.ipv6)}); do not pin NCCL_IB_GID_INDEX, or turn IPv6 off there\n",
                    style="yellow",
                )
    if not isinstance(facts.pending_fixes, Unknown):
        for journal in facts.pending_fixes:
            timer = "its rollback timer still runs" if journal.timer_alive else "no timer will restore it"
            text.append(f"  a {journal.kind} from {journal.created_utc} is {journal.state}, not confirmed: {timer} "
                        "(`wirespeed check` says what to do)\n", style="red")  # fmt: skip
    gpus = facts.gpus
    gpu_text = (
        f"unknown ({gpus.reason})"
        if isinstance(gpus, Unknown)
        else ", ".join(f"{g.name} (sm {_v(g.compute_capability)})" for g in gpus) or "none"
    )
    text.append(f"  GPUs: {gpu_text}\n")
    nccl = facts.nccl_version
    text.append(f"  NCCL: {nccl.reason if isinstance(nccl, Unknown) else nccl}\n")
    tools = []
    nccl_tests = [t for t in facts.tools if t.path]
    for tool in facts.tools:
        if tool.path:
            continue
        version = f"unknown ({tool.version.reason})" if isinstance(tool.version, Unknown) else tool.version
        tools.append(f"{tool.name} {version}" + (f" [{tool.detail}]" if tool.detail else ""))
    if nccl_tests:
        mpi = {t.detail or "" for t in nccl_tests}
        tools.append(
            f"nccl-tests {', '.join(t.name.removesuffix('_perf') for t in nccl_tests)} [{', '.join(sorted(mpi))}]"
        )
    text.append("  tools: " + "; ".join(tools))
    return text


def cabling_diagram(discovery: Discovery) -> Text:
    """One line per cable (physical port pair), with its halves, then the findings."""
    cabling = discovery.cabling
    text = Text()
    header = f"cabling: {cabling.topology}"
    if cabling.cables is not None:
        header += f", {cabling.cables} cable(s)"
    text.append(header, style="bold")
    text.append(f"  (found by {cabling.method})\n", style="dim")
    if cabling.topology == "switch":
        by_port: dict[tuple[str, str], set[str]] = {}
        for link in cabling.port_links:
            by_port.setdefault((link.a_node, link.a_port), set()).add(link.b_node)
            by_port.setdefault((link.b_node, link.b_port), set()).add(link.a_node)
        for (node, port), peers in sorted(by_port.items()):
            text.append(f"  {node} {port} ──[switch]── reaches {', '.join(sorted(peers))}\n")
    else:
        links = list(cabling.port_links)
        if cabling.order:
            loop = (*cabling.order, cabling.order[0]) if cabling.topology == "ring" else cabling.order
            text.append(f"  {'ring' if cabling.topology == 'ring' else 'chain'}: {' → '.join(loop)}\n")
            position = {node: i for i, node in enumerate(cabling.order)}
            links.sort(key=lambda pl: _cable_position(position, pl.a_node, pl.b_node))
        for link in links:
            if cabling.order and position[link.a_node] != _cable_position(position, link.a_node, link.b_node):
                link = _flipped(link)
            text.append(f"  {link.a_node} {link.a_port} ════ {link.b_node} {link.b_port}\n")
            for a_if, b_if in link.halves:
                text.append(f"      {a_if} ── {b_if}\n", style="dim")
    for node, iface in cabling.unpaired:
        text.append(f"  {node} {iface} ── (no peer)\n", style="yellow")
    for finding in cabling.findings:
        line = f"  {finding.severity}: {finding.message}"
        if finding.hint:
            line += f" (hint: {finding.hint})"
        text.append(line + "\n", style=SEVERITY_STYLE.get(finding.severity, ""))
    for reason in discovery.errors.values():
        text.append(f"  not read: {reason}\n", style="red")
    return text


def _cable_position(position: dict[str, int], a: str, b: str) -> int:
    """The ring position of the cable between two neighbours: that of the node it leaves (the one before the other
    in cable order; the last node's cable returns to the first)."""
    i, j = position.get(a, 0), position.get(b, 0)
    if abs(i - j) == 1:
        return min(i, j)
    return max(i, j)


def _flipped(link: PortLink) -> PortLink:
    return PortLink(link.b_node, link.b_port, link.a_node, link.a_port, tuple((b, a) for a, b in link.halves))


def discovery_view(discovery: Discovery) -> RenderableType:
    parts: list[RenderableType] = []
    for facts in discovery.facts.values():
        parts += [node_table(facts), node_summary(facts), Text("")]
    parts.append(cabling_diagram(discovery))
    return Group(*parts)


def ibdev2netdev(discovery: Discovery) -> str:
    """`rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)` per device, as the Mellanox tool prints it, per node."""
    lines: list[str] = []
    for node, facts in discovery.facts.items():
        if len(discovery.facts) > 1:
            lines.append(f"# {node}")
        if not facts.rdma:
            lines.append(f"# {facts.rdma_absent_reason or 'no RDMA devices'}")
        for device in facts.rdma:
            for port in device.ports:
                for netdev_name in device.netdevs or ("",):
                    netdev = facts.netdev(netdev_name)
                    up = netdev is not None and netdev.operstate == "up" and netdev.carrier is True
                    lines.append(
                        f"{device.name} port {port.number} ==> {netdev_name or '?'} ({'Up' if up else 'Down'})"
                    )
    return "\n".join(lines) + "\n"
