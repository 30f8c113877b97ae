"""Run the checks on a cluster (live, with the active measurements) or on snapshots."""

from __future__ import annotations

import importlib
import ipaddress
import json
import math
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from wirespeed.core.checks import mesh
from wirespeed.core.checks.model import (
    REGISTRY,
    SEVERITY_ORDER,
    ActiveResults,
    CheckInput,
    CheckResult,
    CheckRun,
    SwitchReading,
)
from wirespeed.core.cluster.inventory import Node
from wirespeed.core.errors import UsageError
from wirespeed.core.fabric.counters import iface_rate
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.fabric.meter import layout_from_facts, sample_from_json
from wirespeed.engine.remote import Remote

CHECK_MODULES = ("wirespeed.core.checks.mesh", "wirespeed.core.checks.all")


def load_checks() -> None:
    """Import every check module so that each registers itself."""
    for name in CHECK_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


def select(only: Iterable[str], skip: Iterable[str]) -> list[str]:
    load_checks()
    only_ids, skip_ids = [i for i in only if i], [i for i in skip if i]
    unknown = sorted(set(only_ids + skip_ids) - set(REGISTRY))
    if unknown:
        raise UsageError(f"unknown check id(s): {', '.join(unknown)}", hint=f"ids are: {', '.join(sorted(REGISTRY))}")
    chosen = only_ids or sorted(REGISTRY)
    return [i for i in chosen if i not in skip_ids]


SWITCH_CHECKS = ("switch.ports", "mtu.path")


def run_checks(
    discovery: Discovery,
    ids: list[str],
    active: ActiveResults | None = None,
    switch: SwitchReading | None = None,
    nccl_env: tuple[tuple[str, str], ...] = (),
) -> CheckRun:
    """`nccl_env`: the cluster file's `[nccl.env]`, which wirespeed's own NCCL runs pass to every rank."""
    load_checks()
    data = CheckInput(discovery.facts, discovery.cabling, active or ActiveResults(), switch, cluster_nccl_env=nccl_env)
    results: list[CheckResult] = []
    errors = list(discovery.errors.values())
    if switch is not None and switch.error is not None:
        errors.append(switch.error)
    for check_id in ids:
        spec = REGISTRY[check_id]
        try:
            results.append(spec.run(data))
        except Exception as exc:  # a check that crashes is our bug: say so, keep the others
            errors.append(f"check {check_id} could not run: {type(exc).__name__}: {exc}")
    results.sort(key=lambda r: (SEVERITY_ORDER[r.status], r.id))
    return CheckRun(results, discovery, errors)


# ----------------------------------------------------------------------------------------- active measurements
def _ipv4(facts: NodeFacts, iface: str) -> str | None:
    netdev = facts.netdev(iface)
    return netdev.ipv4[0].split("/")[0] if netdev and netdev.ipv4 else None


def measure_mtu_paths(remote: Remote, discovery: Discovery) -> dict[tuple[str, str, str, str], bool]:
    """A don't-fragment ping at the sender's full MTU across every link, in both directions."""
    jobs: list[tuple[str, str, str, str, int]] = []
    for (a_node, a_if), (b_node, b_if) in discovery.cabling.links:
        for (src, src_if), (dst, dst_if) in (((a_node, a_if), (b_node, b_if)), ((b_node, b_if), (a_node, a_if))):
            src_facts, dst_facts = discovery.facts.get(src), discovery.facts.get(dst)
            if src_facts is None or dst_facts is None:
                continue
            target = _ipv4(dst_facts, dst_if)
            netdev = src_facts.netdev(src_if)
            if target is None or netdev is None or isinstance(netdev.mtu, Unknown):
                continue
            # Through a switch every half hears every other; only peers on its own subnet are its path.
            if not any(ipaddress.IPv4Address(target) in ipaddress.IPv4Interface(c).network for c in netdev.ipv4):
                continue
            jobs.append((src, src_if, dst, target, netdev.mtu))

    def ping(job: tuple[str, str, str, str, int]) -> tuple[tuple[str, str, str, str], bool]:
        src, src_if, dst, target, mtu = job
        argv = ["ping", "-M", "do", "-s", str(mtu - 28), "-c", "2", "-i", "0.2", "-W", "1", "-I", src_if, target]
        return (src, src_if, dst, target), remote.run(remote.cluster.node(src), argv, timeout_s=15).ok

    if not jobs:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(jobs))) as pool:
        return dict(pool.map(ping, jobs))


def measure_ssh_mesh(remote: Remote, discovery: Discovery) -> dict[tuple[str, str, str], str | None]:
    """From every node, `ssh -oBatchMode=yes ADDRESS true` to every other node at its management address and at the
    fabric address mpirun's `-H` names it by (`mesh.targets`): plain ssh, so the user's config and known_hosts
    decide, as they will for mpirun."""
    targets = mesh.targets(discovery.facts, discovery.cabling)
    jobs = [(a, b, address) for a in discovery.facts for b in targets if a != b for address in targets[b]]

    def attempt(job: tuple[str, str, str]) -> tuple[tuple[str, str, str], str | None]:
        a, _, address = job
        argv = ["ssh", "-oBatchMode=yes", "-oConnectTimeout=5", "-oStrictHostKeyChecking=yes", address, "true"]
        outcome = remote.run(remote.cluster.node(a), argv, timeout_s=20)
        if outcome.ok:
            return job, None
        lines = [line for line in (outcome.stderr or outcome.stdout).strip().splitlines() if line.strip()]
        return job, lines[-1] if lines else outcome.message

    if not jobs:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(jobs))) as pool:
        return dict(pool.map(attempt, jobs))


def measure_clocks(remote: Remote, discovery: Discovery) -> dict[str, tuple[float, float] | str]:
    """Each node's wall clock against this controller's: `date +%s.%N` there, bracketed by two readings here.
    Per node (offset in seconds, its uncertainty: half the round trip), or why it could not be read."""

    def read(name: str) -> tuple[str, tuple[float, float] | str]:
        before = time.time()
        outcome = remote.run(remote.cluster.node(name), ["date", "+%s.%N"], timeout_s=20)
        after = time.time()
        if not outcome.ok:
            return name, outcome.message
        try:
            there = float(outcome.stdout.strip().replace("N", "0"))  # a date without %N prints `N`
        except ValueError:
            return name, f"date printed {outcome.stdout.strip()[:40]!r}"
        if not math.isfinite(there):
            return name, f"date printed {outcome.stdout.strip()[:40]!r}"
        return name, (there - (before + after) / 2, (after - before) / 2)

    names = list(discovery.facts)
    if not names:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(names))) as pool:
        return dict(pool.map(read, names))


GROWTH_WINDOW_S = 2.0


def measure_counter_growth(
    remote: Remote, discovery: Discovery, seconds: float = GROWTH_WINDOW_S
) -> dict[tuple[str, str], dict[str, int]]:
    """Two readings of every cabled fabric interface, `seconds` apart, on all nodes at once: what grew."""
    layouts = {node: layout_from_facts(facts) for node, facts in discovery.facts.items()}

    def argv(node: Node) -> list[str]:
        ifaces = ",".join(layouts[node.name].interfaces) or "lo"
        return [*remote.agent_argv(node), "agent", "sample", "--node", node.name, "--ifaces", ifaces]

    results = remote.run_all(
        lambda n: [*argv(n), "--count", "2", "--interval", str(seconds)],
        nodes=[remote.cluster.node(n) for n in layouts if layouts[n].interfaces],
        timeout_s=seconds + 30,
    )
    growth: dict[tuple[str, str], dict[str, int]] = {}
    for outcome in results:
        try:
            first, second = (sample_from_json(json.loads(line)) for line in outcome.stdout.splitlines()[:2])
        except (ValueError, KeyError, TypeError):
            continue  # the node could not be sampled: the check says how many were
        for iface, reading in second.ifaces.items():
            if iface in first.ifaces:
                rate = iface_rate(first.ifaces[iface], reading, second.t - first.t)
                growth[(outcome.node, iface)] = dict(rate.errors)
    return growth


def measure_active(remote: Remote, discovery: Discovery, ids: list[str]) -> ActiveResults:
    return ActiveResults(
        mtu_pings=measure_mtu_paths(remote, discovery) if "mtu.path" in ids else None,
        ssh_mesh=measure_ssh_mesh(remote, discovery) if "ssh.mesh" in ids else None,
        counter_growth=measure_counter_growth(remote, discovery) if "nic.errors" in ids else None,
        growth_window_s=GROWTH_WINDOW_S,
        clocks=measure_clocks(remote, discovery) if "clock.skew" in ids else None,
    )
