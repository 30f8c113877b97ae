"""ring.routes and ring.forward: in a ring of four or more nodes (or a ring cut to a chain), pairs that share no
cable reach each other only through the nodes between them.

Each half of each cable is its own subnet, so every node needs a route to every fabric subnet it has no address
on: through the neighbour on the shorter way round the ring (ties go the way of the node's port 0), over the same
half (half 0 traffic stays on the halves of PCI domain 0000, half 1 on 0002). Every node on such a path forwards:
`net.ipv4.ip_forward=1`, a FORWARD chain that accepts the fabric (Docker sets its policy to DROP), reverse-path
filtering no stricter than the paths allow (strict rp_filter drops a packet whose way back leaves by another
interface), and one MTU along the path. The field report behind these checks: FujitsuPolycom/sparkring's
`scripts/ring_doctor.py` (field-problems 2026-11-26, row 7).
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wirespeed.core.checks.common import joined
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.fabric.cabling import CablingMap
from wirespeed.core.fabric.facts import NodeFacts, Route, Unknown

ROUTES = "ring.routes"
FORWARD = "ring.forward"
FORWARD_FILE = "/etc/sysctl.d/93-wirespeed-forward.conf"
IP_FORWARD = "net.ipv4.ip_forward"
RP_ALL = "net.ipv4.conf.all.rp_filter"
RP_LOOSE = 2


@dataclass(frozen=True)
class HalfLink:
    """One half of one ring cable: its subnet and each end's interface and address (the cable's position in the
    ring: it joins order[cable] and order[cable + 1])."""

    cable: int
    half: int
    subnet: ipaddress.IPv4Network
    ends: Mapping[str, tuple[str, str]]  # node -> (interface, address without its prefix)


@dataclass(frozen=True)
class PlannedRoute:
    node: str
    dst: str  # the subnet, CIDR
    via: str  # the neighbour's address on the half the route leaves by
    dev: str
    relays: tuple[str, ...]  # the nodes a packet from `node` passes before it reaches the subnet's far end

    @property
    def value(self) -> str:
        """The route as `fix`'s operation holds it, and as `ip route replace DST` takes it."""
        return f"via {self.via} dev {self.dev}"

    @property
    def command(self) -> str:
        return f"sudo ip route replace {self.dst} {self.value}"


@dataclass(frozen=True)
class Relay:
    node: str
    in_if: str
    out_if: str


@dataclass(frozen=True)
class RingPlan:
    order: tuple[str, ...]
    closed: bool  # a ring; False: a cut ring, a chain from order[0] to order[-1]
    links: tuple[HalfLink, ...]
    routes: tuple[PlannedRoute, ...]
    relays: Mapping[str, frozenset[tuple[str, str]]]  # relay node -> (in, out) interfaces of what it forwards
    asymmetric: Mapping[str, tuple[str, ...]]  # node -> interfaces where the way back leaves by another one
    unaddressed: tuple[str, ...]  # cable halves left out of the plan: no subnet shared by both ends


def _half_index(facts: NodeFacts | None, iface: str) -> int:
    if facts is not None:
        for port in facts.ports:
            if iface in port.halves:
                return port.halves.index(iface)
    return 0


def _shared_subnet(
    a: NodeFacts | None, a_if: str, b: NodeFacts | None, b_if: str
) -> tuple[ipaddress.IPv4Network, str, str] | None:
    a_dev, b_dev = (a.netdev(a_if) if a else None), (b.netdev(b_if) if b else None)
    if a_dev is None or b_dev is None:
        return None
    for a_cidr in a_dev.ipv4:
        a_addr = ipaddress.IPv4Interface(a_cidr)
        for b_cidr in b_dev.ipv4:
            b_addr = ipaddress.IPv4Interface(b_cidr)
            if a_addr.network == b_addr.network and a_addr.ip != b_addr.ip:
                return a_addr.network, str(a_addr.ip), str(b_addr.ip)
    return None


def _half_links(cabling: CablingMap, facts: Mapping[str, NodeFacts]) -> tuple[list[HalfLink], list[str]]:
    position = {node: i for i, node in enumerate(cabling.order)}
    links: list[HalfLink] = []
    unaddressed: list[str] = []
    for (a, a_if), (b, b_if) in cabling.links:
        if a not in position or b not in position:
            continue
        i, j = position[a], position[b]
        cable = min(i, j) if abs(i - j) == 1 else max(i, j)  # the last cable of a ring returns to order[0]
        shared = _shared_subnet(facts.get(a), a_if, facts.get(b), b_if)
        if shared is None:
            unaddressed.append(f"{a} {a_if} - {b} {b_if}")
            continue
        subnet, a_addr, b_addr = shared
        links.append(HalfLink(cable, _half_index(facts.get(a), a_if), subnet, {a: (a_if, a_addr), b: (b_if, b_addr)}))
    return sorted(links, key=lambda h: (h.cable, h.half)), unaddressed


def _direction(position: int, cable: int, count: int, closed: bool) -> int | None:
    """+1 (towards order[position + 1]) or -1 to reach cable `cable` from `position`; None when the node is one of
    its ends. Of the two ways round a ring the shorter, ties going +1: each next node keeps the same way, so the
    routes never loop."""
    ahead = (cable - position) % count  # steps to the cable's first end, going +1
    behind = (position - cable - 1) % count  # steps to its second end, going -1
    if ahead == 0 or behind == 0:
        return None
    if not closed:
        return 1 if cable > position else -1
    return 1 if ahead <= behind else -1


class RingPaths:
    """Where a packet goes, hop by hop, once every node has its planned routes."""

    def __init__(self, order: tuple[str, ...], closed: bool, links: Sequence[HalfLink]) -> None:
        self.order, self.closed, self.count = order, closed, len(order)
        self.by_cable: dict[int, list[HalfLink]] = {}
        for link in links:
            self.by_cable.setdefault(link.cable, []).append(link)

    def out(self, pos: int, target: HalfLink) -> tuple[HalfLink, int] | None:
        """The half link order[pos] sends to `target`'s subnet by, and the neighbour's position; None when the
        subnet is on the node's own link (or no half of the cable towards it is addressed)."""
        step = _direction(pos, target.cable, self.count, self.closed)
        if step is None:
            return None
        cable = pos if step == 1 else (pos - 1) % self.count
        candidates = self.by_cable.get(cable, [])
        link = next((h for h in candidates if h.half == target.half), candidates[0] if candidates else None)
        return (link, (pos + step) % self.count) if link else None

    def back_ok(self, pos: int, in_if: str, source: HalfLink) -> bool:
        """Whether order[pos]'s way back to `source`'s subnet leaves by `in_if` (strict rp_filter's test)."""
        node = self.order[pos]
        if node in source.ends:
            return source.ends[node][0] == in_if
        back = self.out(pos, source)
        return back is None or back[0].ends[node][0] == in_if

    def follow(self, pos: int, source: HalfLink, target: HalfLink) -> tuple[list[Relay], set[tuple[str, str]]]:
        """A packet from order[pos]'s address on `source` to the far end of `target`: each relay with the
        interfaces it enters and leaves by, and the (node, interface) where strict reverse-path filtering drops
        it (its way back to `source`'s subnet leaves by another interface)."""
        relays: list[Relay] = []
        asymmetric: set[tuple[str, str]] = set()
        hop = self.out(pos, target)
        while hop is not None and len(relays) < self.count:
            link, here = hop
            node = self.order[here]
            in_if = link.ends[node][0]
            if not self.back_ok(here, in_if, source):
                asymmetric.add((node, in_if))
            if node in target.ends:  # it hands the packet to the subnet's far end over the target link itself
                relays.append(Relay(node, in_if, target.ends[node][0]))
                far = next(n for n in target.ends if n != node)
                far_if = target.ends[far][0]
                if not self.back_ok(self.order.index(far), far_if, source):
                    asymmetric.add((far, far_if))
                break
            hop = self.out(here, target)
            relays.append(Relay(node, in_if, hop[0].ends[node][0] if hop else ""))
        return relays, asymmetric


def ring_plan(cabling: CablingMap, facts: Mapping[str, NodeFacts]) -> RingPlan | None:
    """The routes, relays and reverse paths a ring (or chain) of the cabling map needs; None for another topology."""
    if cabling.topology not in ("ring", "chain") or len(cabling.order) < 3:
        return None
    order, closed = cabling.order, cabling.topology == "ring"
    links, unaddressed = _half_links(cabling, facts)
    ring = RingPaths(order, closed, links)
    routes: list[PlannedRoute] = []
    relays: dict[str, set[tuple[str, str]]] = {}
    asymmetric: dict[str, set[str]] = {}
    if len(order) > 3 or not closed:  # in a ring of three every pair shares a cable
        for pos, node in enumerate(order):
            for target in links:
                hop = ring.out(pos, target)
                if hop is None:
                    continue
                link, neighbour = hop
                # The request leaves from the address of the interface its route names (the kernel's choice); the
                # answer comes back from the address asked, at either end of the target link.
                flows = [(pos, link, target)]
                flows += [(order.index(end), target, link) for end in target.ends if end not in link.ends]
                passed: list[Relay] = []
                for start, source, towards in flows:
                    relayed, dropped = ring.follow(start, source, towards)
                    passed = passed or relayed
                    for relay in relayed:
                        if relay.out_if:  # "": the cable onwards has no addressed half (named in `unaddressed`)
                            relays.setdefault(relay.node, set()).add((relay.in_if, relay.out_if))
                    for where, in_if in dropped:
                        asymmetric.setdefault(where, set()).add(in_if)
                routes.append(
                    PlannedRoute(
                        node,
                        str(target.subnet),
                        link.ends[order[neighbour]][1],
                        link.ends[node][0],
                        tuple(relay.node for relay in passed),
                    )
                )
    return RingPlan(
        order=order,
        closed=closed,
        links=tuple(links),
        routes=tuple(routes),
        relays={n: frozenset(d) for n, d in relays.items()},
        asymmetric={n: tuple(sorted(i)) for n, i in asymmetric.items()},
        unaddressed=tuple(unaddressed),
    )


def _route_now(facts: NodeFacts, dst: str) -> Route | None:
    routes = facts.routes if not isinstance(facts.routes, Unknown) else ()
    return next((r for r in routes if r.dst == dst), None)


def _route_text(route: Route | None) -> str:
    if route is None:
        return "none"
    return " ".join(
        part for part in (f"via {route.via}" if route.via else "", f"dev {route.dev}" if route.dev else "") if part
    )


def missing_routes(data: CheckInput) -> dict[str, list[PlannedRoute]]:
    """Per node, the planned routes it lacks or has otherwise (what `fix` replaces); empty where all are there."""
    plan = ring_plan(data.cabling, data.facts)
    missing: dict[str, list[PlannedRoute]] = {}
    if plan is None:
        return missing
    for route in plan.routes:
        facts = data.facts.get(route.node)
        if facts is None or isinstance(facts.routes, Unknown):
            continue
        now = _route_now(facts, route.dst)
        if now is None or now.via != route.via or now.dev != route.dev:
            missing.setdefault(route.node, []).append(route)
    return missing


def _shape(plan: RingPlan) -> str:
    kind = "ring" if plan.closed else "cut ring (chain)"
    return f"{kind} of {len(plan.order)}: {' → '.join(plan.order)}"


@check(ROUTES, "every fabric subnet of a ring reachable through the ring")
def ring_routes(data: CheckInput) -> CheckResult:
    plan = ring_plan(data.cabling, data.facts)
    if plan is None:
        return skip(ROUTES, f"not a ring of three or more nodes (cabling: {data.cabling.topology})")
    if not plan.routes:
        note = f"; halves without a shared subnet: {joined(list(plan.unaddressed), 2)}" if plan.unaddressed else ""
        return result(ROUTES, CheckStatus.PASS, f"{_shape(plan)}: every pair shares a cable{note}")
    unread = sorted(n for n in plan.order if n in data.facts and isinstance(data.facts[n].routes, Unknown))
    if len(unread) == len(plan.order):
        return skip(ROUTES, f"no node's routing table could be read ({_unknown_reason(data, unread[0])})")
    missing = missing_routes(data)
    evidence: list[Evidence] = []
    fixes: list[Fix] = []
    for node in plan.order:
        for route in missing.get(node, []):
            now = _route_now(data.facts[node], route.dst)
            evidence.append(
                Evidence(
                    node,
                    route.dst,
                    f"route (planned: {route.value}, relayed by {', '.join(route.relays)})",
                    _route_text(now),
                )
            )
        if node in missing:
            fixes.append(
                Fix(
                    node,
                    f"route the fabric subnets {node} has no address on through its ring neighbours "
                    "(`wirespeed fix` adds them now; they last until reboot: keep them in netplan's `routes:` or "
                    "a NetworkManager profile)",
                    tuple(r.command for r in missing[node]),
                )
            )
    note = f"; routing table not read on {joined(unread)}" if unread else ""
    note += f"; halves without a shared subnet: {joined(list(plan.unaddressed), 2)}" if plan.unaddressed else ""
    if not evidence:
        return result(ROUTES, CheckStatus.PASS, f"{_shape(plan)}: all {len(plan.routes)} routes in place{note}")
    count = sum(len(v) for v in missing.values())
    summary = (
        f"{_shape(plan)}: {count} of {len(plan.routes)} routes missing or different on {joined(sorted(missing))}: "
        f"pairs that share no cable cannot reach each other{note}"
    )
    return result(ROUTES, CheckStatus.FAIL, summary, evidence, fixes)


def _unknown_reason(data: CheckInput, node: str) -> str:
    routes = data.facts[node].routes
    return routes.reason if isinstance(routes, Unknown) else "read"


# ------------------------------------------------------------------------------------------------- forwarding
_NFT_FORWARD_DROP = re.compile(r"hook\s+forward\b[^;]*;\s*policy\s+drop", re.I)


@dataclass(frozen=True)
class ForwardFilter:
    """What a node's firewall does to forwarded fabric traffic."""

    tool: str  # "iptables" or "nft"
    drops: tuple[str, ...]  # the policy or rule lines that drop it
    docker: bool  # Docker's chains are there (its FORWARD policy DROP; DOCKER-USER is where to accept)
    table_chain: tuple[str, str] | None = None  # nft: the table ("inet filter") and chain of the forward hook


def _iptables_accepts(rules: Sequence[str], in_if: str, out_if: str) -> bool:
    """Whether an ACCEPT rule of FORWARD or DOCKER-USER, with no match but interfaces and addresses, takes the
    traffic from `in_if` to `out_if` (rules are read as listed by `iptables -S`)."""
    for line in rules:
        words = shlex.split(line)
        if len(words) < 3 or words[0] != "-A" or words[1] not in ("FORWARD", "DOCKER-USER"):
            continue
        options = dict(zip(words[2::2], words[3::2], strict=False))
        if options.get("-j") != "ACCEPT" or set(options) - {"-i", "-o", "-s", "-d", "-j"}:
            continue
        if options.get("-i", in_if) == in_if and options.get("-o", out_if) == out_if:
            return True
    return False


def forward_filter(facts: NodeFacts, directions: Sequence[tuple[str, str]]) -> ForwardFilter | None:
    """The firewall's verdict on forwarding `directions` ((in, out) interface pairs); None when it lets them by."""
    iptables = facts.firewall.get("iptables", "")
    if iptables.strip():
        lines = [line.strip() for line in iptables.splitlines() if line.strip()]
        docker = any(line.startswith(("-N DOCKER", "-A DOCKER")) for line in lines)
        drops = [line for line in lines if line == "-P FORWARD DROP" or line == "-P FORWARD REJECT"]
        drops += [line for line in lines if re.fullmatch(r"-A FORWARD -j (DROP|REJECT)( .*)?", line)]
        open_ = all(_iptables_accepts(lines, i, o) for i, o in directions)
        return ForwardFilter("iptables", tuple(drops), docker) if drops and not open_ else None
    nft = facts.firewall.get("nft", "")
    match = _NFT_FORWARD_DROP.search(nft)
    if match is None:
        return None
    before = nft[: match.start()]
    tables = re.findall(r"^\s*table\s+(\S+)\s+(\S+)\s*\{", before, re.M)
    chains = re.findall(r"^\s*chain\s+(\S+)\s*\{", before, re.M)
    accepted = all(re.search(rf'iifname "?{re.escape(i)}"?.*accept', nft) for i, _ in directions)
    if accepted:
        return None
    where = (f"{tables[-1][0]} {tables[-1][1]}", chains[-1]) if tables and chains else None
    return ForwardFilter("nft", (match.group(0),), "docker" in nft.lower(), where)


def _filter_commands(found: ForwardFilter, directions: Sequence[tuple[str, str]]) -> list[str]:
    if found.tool == "nft":
        table, chain = found.table_chain or ("inet filter", "forward")
        return [f"sudo nft insert rule {table} {chain} iifname {i} oifname {o} accept" for i, o in directions]
    chain = "DOCKER-USER" if found.docker else "FORWARD"
    return [
        f"sudo iptables -C {chain} {rule} 2>/dev/null || sudo iptables -I {chain} 1 {rule}"
        for rule in (f"-i {i} -o {o} -j ACCEPT" for i, o in directions)
    ]


def forward_file(facts: NodeFacts, loose: bool) -> str:
    """The sysctl.d drop-in that makes a relay forward (and, where its paths are asymmetric, filter loosely)."""
    lines = [f"# {FORWARD_FILE} (wirespeed): this node relays a ring's traffic between its cables", f"{IP_FORWARD} = 1"]
    if loose:
        lines.append(f"{RP_ALL} = {RP_LOOSE}")
        lines += [f"net.ipv4.conf.{i}.rp_filter = {RP_LOOSE}" for i in facts.fabric if _rp(facts, i, "") == "1"]
    return "\n".join(lines) + "\n"


def _rp(facts: NodeFacts, iface: str, default: str) -> str:
    return facts.sysctls.get(f"net.ipv4.conf.{iface}.rp_filter", default)


def _strict(facts: NodeFacts, iface: str) -> bool | None:
    """Whether strict reverse-path filtering applies on `iface` (the kernel takes the larger of `all` and the
    interface's own value); None when neither was read."""
    values = [v for v in (facts.sysctls.get(RP_ALL), facts.sysctls.get(f"net.ipv4.conf.{iface}.rp_filter")) if v]
    if not values:
        return None
    return max(int(v) for v in values if v.isdigit()) == 1 if any(v.isdigit() for v in values) else None


@check(FORWARD, "every ring relay forwards: ip_forward, FORWARD chain, rp_filter, one MTU along the paths")
def ring_forward(data: CheckInput) -> CheckResult:
    plan = ring_plan(data.cabling, data.facts)
    if plan is None:
        return skip(FORWARD, f"not a ring of three or more nodes (cabling: {data.cabling.topology})")
    if not plan.relays:
        return result(FORWARD, CheckStatus.PASS, f"{_shape(plan)}: no node relays (every pair shares a cable)")
    evidence: list[Evidence] = []
    fixes: list[Fix] = []
    failing: list[str] = []
    unread: list[str] = []
    for node in plan.order:
        facts = data.facts.get(node)
        directions = sorted(plan.relays.get(node, ()))
        if facts is None or not directions:
            continue
        problems: list[str] = []
        forward = facts.sysctls.get(IP_FORWARD)
        if forward is None:
            unread.append(f"{node} {IP_FORWARD}")
        elif forward != "1":
            problems.append("ip_forward")
            evidence.append(Evidence(node, IP_FORWARD, "sysctl (a relay forwards only with 1)", forward))
        strict = [i for i in plan.asymmetric.get(node, ()) if _strict(facts, i)]
        why = "rp_filter strict (1), and the way back leaves by another interface: the kernel drops what comes in here"
        evidence += [Evidence(node, iface, why, _rp(facts, iface, "")) for iface in strict]
        if strict:
            problems.append("rp_filter")
        found = forward_filter(facts, directions) if facts.firewall else None
        if not facts.firewall:
            unread.append(f"{node} firewall")
        if found is not None:
            problems.append("firewall")
            owner = "Docker's FORWARD policy DROP" if found.docker else f"{found.tool} FORWARD drops"
            evidence += [Evidence(node, found.tool, f"{owner}: forwarded fabric traffic is dropped", line)
                         for line in found.drops]  # fmt: skip
        files: tuple[tuple[str, str], ...] = ()
        commands: list[str] = []
        if "ip_forward" in problems or "rp_filter" in problems:
            files = ((FORWARD_FILE, forward_file(facts, bool(strict))),)
            commands.append("sudo sysctl --system")
        if found is not None:
            commands += _filter_commands(found, directions)
            if found.tool == "iptables":
                commands.append("sudo netfilter-persistent save   # keep the rules (iptables-persistent)")
        if problems:
            failing.append(node)
            fixes.append(
                Fix(
                    node,
                    f"let {node} relay the ring's traffic ({', '.join(problems)}; `wirespeed fix` writes and "
                    "loads the sysctl file, the firewall rules are yours to add)",
                    tuple(commands),
                    files,
                )
            )
    mtus = _path_mtus(plan, data.facts)
    if len(set(mtus.values())) > 1:
        evidence += [Evidence(n, i, "MTU along the ring's paths", m) for (n, i), m in sorted(mtus.items())]
    note = f"; not read: {joined(unread, 2)}" if unread else ""
    relays = sorted(plan.relays, key=plan.order.index)
    if failing:
        summary = f"{_shape(plan)}: {joined(failing)} cannot relay for the pairs that share no cable{note}"
        return result(FORWARD, CheckStatus.FAIL, summary, evidence, fixes)
    if len(set(mtus.values())) > 1:
        top = max(mtus.values())
        low = sorted({n for (n, _), m in mtus.items() if m < top}, key=plan.order.index)
        mtu_fixes = []
        for n in low:
            lines = tuple(
                f"sudo ip link set dev {i} mtu {top}" for (m, i), v in sorted(mtus.items()) if m == n and v < top
            )
            mtu_fixes.append(
                Fix(n, f"one MTU along the ring: {top} on every fabric half of {n} (mtu.host's fix)", lines)
            )
        summary = (
            f"{_shape(plan)}: MTUs differ along the relayed paths ({joined(sorted(map(str, set(mtus.values()))))})"
        )
        summary += f": a relay drops or fragments the larger frames{note}"
        return result(FORWARD, CheckStatus.WARN, summary, evidence, mtu_fixes)
    return result(FORWARD, CheckStatus.PASS, f"{_shape(plan)}: {joined(relays)} forward{note}", evidence)


def _path_mtus(plan: RingPlan, facts: Mapping[str, NodeFacts]) -> dict[tuple[str, str], int]:
    found: dict[tuple[str, str], int] = {}
    for link in plan.links:
        for node, (iface, _) in link.ends.items():
            netdev = facts[node].netdev(iface) if node in facts else None
            if netdev is not None and isinstance(netdev.mtu, int):
                found[(node, iface)] = netdev.mtu
    return found
