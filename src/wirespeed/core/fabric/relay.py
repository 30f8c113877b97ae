"""The flows of a ring's pairs that share no cable: through the relays between them, the shorter way round. Pure.

`bench matrix` measures every pair of a ring of four to eight nodes (or a cut ring), once `fix` installed the planned
routes: a pair two or more cables apart talks through the nodes between. Which way a packet goes is the routes'
choice (ring.routes), so a flow picks it by the address it asks for: the server's address on the cable the path
arrives by. Where both ways are as short (an even ring's opposite nodes), the pairs of one round take the ways that
share the fewest directed cable halves, so that each gets a link of its own where it can.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from wirespeed.core.checks.ring import HalfLink, Relay, RingPaths, RingPlan, ring_plan
from wirespeed.core.fabric.cabling import CablingMap
from wirespeed.core.fabric.facts import PCIE_PAYLOAD_EFFICIENCY, NodeFacts
from wirespeed.core.ladder import flows_between
from wirespeed.core.records.results import End, Flow


def _rate(facts: Mapping[str, NodeFacts], ends: Sequence[End], pcie: bool) -> float | None:
    """The slowest of the interfaces along a path: its link speed, or its PCIe payload rate."""
    rates: list[float] = []
    for node, iface in ends:
        if node not in facts:
            continue
        rate = facts[node].pcie_gbps(iface) if pcie else facts[node].line_rate_gbps(iface)
        if rate is not None:
            rates.append(rate * PCIE_PAYLOAD_EFFICIENCY if pcie else rate)
    return min(rates) if rates else None


def _flow(
    facts: Mapping[str, NodeFacts], client: str, server: str, out: HalfLink, target: HalfLink,
    there: Sequence[Relay], back: Sequence[Relay],
) -> Flow:  # fmt: skip
    source, destination = (client, out.ends[client][0]), (server, target.ends[server][0])
    crossed = (source, *((r.node, r.out_if) for r in there))
    crossed_back = (destination, *((r.node, r.out_if) for r in back))
    port = next((p for p in facts[client].ports if source[1] in p.halves), None) if client in facts else None
    return Flow(
        source, destination, out.ends[client][1], target.ends[server][1],
        _rate(facts, crossed + crossed_back, pcie=False), _rate(facts, crossed + crossed_back, pcie=True),
        port.label if port else source[1], facts[client].port_rate_gbps(port.halves) if port else None,
        tuple(r.node for r in there), crossed, crossed_back,
    )  # fmt: skip


def relay_ways(plan: RingPlan, facts: Mapping[str, NodeFacts], client: str, server: str) -> list[tuple[Flow, ...]]:
    """Each shortest way from `client` to `server` through the ring (two at a tie), as one flow per addressed half:
    from the client's address on the half its route leaves by, to the server's address on the cable the path
    arrives by. A way is kept only when the answer comes back the same way (the reverse path through the same
    relays); empty when the two share a cable or no way is routed."""
    ring = RingPaths(plan.order, plan.closed, plan.links)
    start, end = plan.order.index(client), plan.order.index(server)
    ways: dict[tuple[str, ...], list[tuple[int, Flow]]] = {}
    for target in plan.links:
        if server not in target.ends or client in target.ends:
            continue
        hop = ring.out(start, target)
        if hop is None:
            continue
        out = hop[0]
        there, _ = ring.follow(start, out, target)
        back, _ = ring.follow(end, target, out)
        relays = tuple(r.node for r in there)
        if not relays or {client, server} & set(relays) or tuple(r.node for r in back) != relays[::-1]:
            continue  # it reaches the server by another of its cables, or the answer returns another way
        if any(not r.out_if for r in (*there, *back)):
            continue  # a cable on the way has no addressed half
        ways.setdefault(relays, []).append((target.half, _flow(facts, client, server, out, target, there, back)))
    if not ways:
        return []
    shortest = min(len(relays) for relays in ways)
    forward = plan.order[(start + 1) % len(plan.order)]  # ties: the way of the client's port 0 first, as the routes
    kept = sorted((r for r in ways if len(r) == shortest), key=lambda r: r[0] != forward)
    return [tuple(flow for _, flow in sorted(ways[r], key=lambda x: x[0])) for r in kept]


def _crowding(flows: Sequence[Flow], bidir: bool) -> tuple[int, int]:
    """How badly the flows of a round share directed cable halves: the most flows on one, and the flows beyond one
    summed over all of them."""
    count: dict[End, int] = {}
    for flow in flows:
        for half in (*flow.halves_crossed, *(flow.reversed().halves_crossed if bidir else ())):
            count[half] = count.get(half, 0) + 1
    return max(count.values(), default=0), sum(n - 1 for n in count.values() if n > 1)


def _sharing(flows: Sequence[Flow], bidir: bool) -> tuple[int, int, int, int]:
    """Both directions' crowding first; among equals, the clients' own flows' (in a ring of four, both directions
    at once must share a cable: then a flow shares only with another's answer, never two clients one half)."""
    return *_crowding(flows, bidir), *_crowding(flows, False)


def round_flows(
    facts: Mapping[str, NodeFacts], cabling: CablingMap, pairs: Sequence[tuple[str, str]], bidir: bool
) -> list[Flow]:
    """The flows of one round: every pair that shares a cable over its halves, every other pair of a ring or chain
    through its relays, the ways at a tie chosen so that the round's flows share the fewest directed halves."""
    plan = ring_plan(cabling, facts)
    direct: list[Flow] = []
    choices: list[list[tuple[Flow, ...]]] = []
    for client, server in pairs:
        flows = flows_between(facts, cabling, client, server)
        if flows or plan is None or client not in plan.order or server not in plan.order:
            direct += flows
            continue
        ways = relay_ways(plan, facts, client, server)
        if ways:
            choices.append(ways)
    best = min(
        itertools.product(*choices), key=lambda ways: _sharing([*direct, *(f for w in ways for f in w)], bidir)
    )  # the first of the least shared: the routes' own tie-break where nothing is gained
    return [*direct, *(f for way in best for f in way)]


def round_label(pairs: Sequence[tuple[str, str]], flows: Sequence[Flow]) -> str:
    """`a<->b, c<->e via d`: a round's pairs as the live view names them, a relayed pair with the nodes its
    client's flows pass (which cables carry relayed traffic while the round runs)."""
    via: dict[frozenset[str], tuple[str, ...]] = {}
    for flow in flows:
        if flow.relays:
            via.setdefault(frozenset((flow.source[0], flow.target[0])), flow.relays)
    named = []
    for a, b in pairs:
        relays = via.get(frozenset((a, b)))
        named.append(f"{a}<->{b}" + (f" via {', '.join(relays)}" if relays else ""))
    return ", ".join(named)
