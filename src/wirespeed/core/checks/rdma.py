"""gid.rocev2, mem.lock and container.rdma: what RDMA itself needs on every node.

RoCE v2 needs a GID carrying the interface's IPv4 address; its index differs per node and drifts, so a pinned
NCCL_IB_GID_INDEX fails on one HCA only (spark-facts section 3, problem 2). RDMA pins memory: a memlock limit
makes registrations fail. A container needs host networking, /dev/infiniband and memlock=-1 (1.6, problem 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from wirespeed.core.checks.common import FIND_ENV, NcclList, any_rdma, joined, no_rdma_reason
from wirespeed.core.checks.model import CheckInput, CheckResult, CheckStatus, Evidence, Fix, check, result, skip
from wirespeed.core.checks.plan import address_plan, plan_fix
from wirespeed.core.fabric.facts import NodeFacts, RdmaDevice, RdmaPort, Unknown

GID = "gid.rocev2"
MEMLOCK = "mem.lock"
CONTAINER = "container.rdma"
MEMLOCK_FLOOR = 1 << 30  # 1 GiB: NCCL and perftest pin their buffers; unlimited is what NVIDIA's playbooks use
LIMITS_FILE = "/etc/security/limits.d/90-wirespeed-memlock.conf"
DOCKER_FLAGS = "--network host --device /dev/infiniband --ulimit memlock=-1"


@dataclass(frozen=True)
class RocePort:
    node: str
    device: RdmaDevice
    port: RdmaPort

    @property
    def netdevs(self) -> str:
        return ", ".join(self.device.netdevs) or "no netdev"


def active_roce_ports(facts: NodeFacts) -> list[RocePort]:
    """RoCE ports that are up: state ACTIVE and Ethernet link layer (InfiniBand has no RoCE GIDs)."""
    return [
        RocePort(facts.node, device, port)
        for device in facts.rdma
        for port in device.ports
        if port.state == "ACTIVE" and port.link_layer == "Ethernet"
    ]


def _pin_problem(facts: NodeFacts, ports: list[RocePort]) -> tuple[list[Evidence], Fix] | None:
    """NCCL_IB_GID_INDEX in a node's environment: never empty, and equal to the index of every device it uses."""
    env = facts.environment
    value = env.get("NCCL_IB_GID_INDEX", "-1").strip()
    if value == "-1":
        return None
    hca = NcclList.parse(env["NCCL_IB_HCA"]) if env.get("NCCL_IB_HCA", "").strip() else None
    used = [p for p in ports if p.node == facts.node and (hca is None or hca.selects(p.device.name))]
    wrong = [p for p in used if not value.isdigit() or p.port.rocev2_ipv4_index != int(value)]
    if value and not wrong:
        return None
    evidence = [Evidence(facts.node, "NCCL_IB_GID_INDEX", "in the environment of an ssh session", value)]
    evidence += [
        Evidence(facts.node, p.device.name, f"RoCE v2 IPv4 GID index ({p.netdevs})", _index(p.port)) for p in wrong
    ]
    why = " is empty (read as 0, the fe80 GID)" if not value else f"={value} does not match {_indices(wrong)}"
    fix = Fix(
        facts.node,
        f"NCCL_IB_GID_INDEX{why}: unset it where it is set, so that NCCL picks each device's own index",
        (FIND_ENV.format(var="NCCL_IB_GID_INDEX"), "unset NCCL_IB_GID_INDEX"),
    )
    return evidence, fix


def _pinned(data: CheckInput, ports: list[RocePort]) -> tuple[list[Evidence], list[Fix]]:
    problems = [p for node in sorted(data.facts) if (p := _pin_problem(data.facts[node], ports))]
    return [e for evidence, _ in problems for e in evidence], [fix for _, fix in problems]


def _index(port: RdmaPort) -> int | str:
    index = port.rocev2_ipv4_index
    return index if isinstance(index, int) else index.reason


def _indices(ports: list[RocePort]) -> str:
    return ", ".join(f"{p.device.name}'s index {_index(p.port)}" for p in ports)


def _missing_fixes(data: CheckInput, missing: list[RocePort]) -> list[Fix]:
    plan = address_plan(data)
    return [
        plan_fix(
            data,
            node,
            plan,
            f"give {joined(sorted({p.netdevs for p in missing if p.node == node}))} an IPv4 address: RoCE v2 "
            "needs a GID that carries it",
        )
        for node in sorted({p.node for p in missing})
    ]


def _unpin_fix(data: CheckInput) -> Fix:
    nodes_with_v6 = sorted(
        (node, d.name) for node, f in data.facts.items() for d in f.netdevs if d.rdma_devices and d.ipv6
    )
    commands = ["unset NCCL_IB_GID_INDEX   # NCCL's default (-1) picks the RoCE v2 IPv4 GID per device"]
    commands += [
        f"sudo sysctl -w net.ipv6.conf.{i}.disable_ipv6=1   # on {n} (see ipv6.fabric)" for n, i in nodes_with_v6
    ]
    return Fix(
        None,
        "do not pin NCCL_IB_GID_INDEX (the index differs per device); perftest needs `-x INDEX` per device; "
        "turning IPv6 off on the fabric makes the indices equal again",
        tuple(commands),
    )


@check(GID, "every active RoCE port has a RoCE v2 IPv4 GID; NCCL_IB_GID_INDEX not pinned wrong")
def gid_rocev2(data: CheckInput) -> CheckResult:
    if not any_rdma(data.facts):
        return skip(GID, no_rdma_reason(data.facts))
    ports = [p for node in sorted(data.facts) for p in active_roce_ports(data.facts[node])]
    if not ports:
        return skip(GID, "no active RoCE port (InfiniBand link layer, or no port up)")
    missing = [p for p in ports if isinstance(p.port.rocev2_ipv4_index, Unknown)]
    pin_evidence, pin_fixes = _pinned(data, ports)
    evidence = [
        Evidence(p.node, p.device.name, f"RoCE v2 IPv4 GID index ({p.netdevs})", _index(p.port)) for p in missing
    ]
    indices = sorted({p.port.rocev2_ipv4_index for p in ports if isinstance(p.port.rocev2_ipv4_index, int)})
    differ = f"RoCE v2 IPv4 GID index differs ({', '.join(map(str, indices))}): do not pin NCCL_IB_GID_INDEX"
    seen = [Evidence(p.node, p.device.name, f"RoCE v2 IPv4 GID index ({p.netdevs})", _index(p.port)) for p in ports]
    if missing or pin_evidence:
        parts = []
        if missing:
            parts.append(f"no RoCE v2 IPv4 GID on {joined([f'{p.node} {p.device.name}' for p in missing])}")
        if pin_evidence:
            parts.append(f"NCCL_IB_GID_INDEX pinned wrong on {joined(sorted({e.node or '' for e in pin_evidence}))}")
        fixes = _missing_fixes(data, missing) + pin_fixes
        if len(indices) > 1:
            parts.append(differ)
            evidence += [e for e in seen if e not in evidence and e not in pin_evidence]
            fixes.append(_unpin_fix(data))
        return result(GID, CheckStatus.FAIL, "; ".join(parts), evidence + pin_evidence, fixes)
    if len(indices) > 1:
        return result(GID, CheckStatus.WARN, differ, seen, [_unpin_fix(data)])
    return result(GID, CheckStatus.PASS, f"all {len(ports)} active RoCE ports: RoCE v2 IPv4 GID index {indices[0]}")


# ------------------------------------------------------------------------------------------------------ mem.lock
def _limit(value: int | Unknown | None) -> str:
    if value is None:
        return "unlimited"
    return value.reason if isinstance(value, Unknown) else _human(value)


def _human(size: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:g} {unit}"
    return f"{size} B"


def memlock_fix(facts: NodeFacts) -> Fix:
    if facts.in_container is True:
        return Fix(
            facts.node,
            "the container has a memlock limit: start it with --ulimit memlock=-1 (docker run, or ulimits in compose)",
            (f"docker run {DOCKER_FLAGS} ... IMAGE",),
        )
    return Fix(
        facts.node,
        "lift the locked-memory limit for logins (pam_limits; services need LimitMEMLOCK=infinity, containers "
        "--ulimit memlock=-1), then log in again",
        ("ulimit -l   # in a new ssh session: expect unlimited",),
        ((LIMITS_FILE, "# wirespeed: RDMA pins its buffers\n* - memlock unlimited\n"),),
    )


@check(MEMLOCK, "locked-memory limit high enough for RDMA")
def mem_lock(data: CheckInput) -> CheckResult:
    nodes = [f for _, f in sorted(data.facts.items()) if f.rdma]
    if not nodes:
        return skip(MEMLOCK, no_rdma_reason(data.facts))
    read = [f for f in nodes if not isinstance(f.memlock_bytes, Unknown)]
    if not read:
        return skip(MEMLOCK, f"memlock limit not read: {nodes[0].memlock_bytes}")
    low = [f for f in read if isinstance(f.memlock_bytes, int) and f.memlock_bytes < MEMLOCK_FLOOR]
    unread = [f.node for f in nodes if f not in read]
    note = f"; not read on {joined(unread)}" if unread else ""
    if not low:
        limits = sorted({_limit(f.memlock_bytes) for f in read})
        return result(MEMLOCK, CheckStatus.PASS, f"memlock {', '.join(limits)} on {len(read)} RDMA nodes{note}")
    what = "limit in bytes (ulimit -l of an ssh session)"
    evidence = [Evidence(f.node, "memlock", what, f.memlock_bytes) for f in low]
    names = joined([f"{f.node} {_limit(f.memlock_bytes)}" for f in low])
    summary = f"locked memory limited (RDMA registrations fail; unlimited recommended): {names}{note}"
    return result(MEMLOCK, CheckStatus.FAIL, summary, evidence, [memlock_fix(f) for f in low])


# ------------------------------------------------------------------------------------------------ container.rdma
def _container_problems(facts: NodeFacts) -> list[Evidence]:
    problems: list[Evidence] = []
    devices = facts.dev_infiniband
    if isinstance(devices, Unknown) or not any(d.startswith("uverbs") for d in devices):
        shown = devices.reason if isinstance(devices, Unknown) else (", ".join(devices) or "empty")
        problems.append(Evidence(facts.node, "/dev/infiniband", "RDMA device files in the container", shown))
    if facts.memlock_bytes is not None and not isinstance(facts.memlock_bytes, Unknown):
        problems.append(Evidence(facts.node, "memlock", "limit in bytes in the container", facts.memlock_bytes))
    return problems


@check(CONTAINER, "a container running RDMA has host networking, /dev/infiniband and memlock=-1")
def container_rdma(data: CheckInput) -> CheckResult:
    inside = [f for _, f in sorted(data.facts.items()) if f.in_container is True]
    if not inside:
        unknown = [n for n, f in sorted(data.facts.items()) if isinstance(f.in_container, Unknown)]
        if unknown:
            return skip(CONTAINER, f"not known whether {joined(unknown)} run in a container")
        return skip(CONTAINER, "no node runs in a container")
    with_rdma = [f for f in inside if f.rdma]
    if not with_rdma:
        return skip(CONTAINER, f"no RDMA devices visible in the container on {joined([f.node for f in inside])}")
    evidence = [e for f in with_rdma for e in _container_problems(f)]
    if not evidence:
        names = joined([f.node for f in with_rdma])
        return result(CONTAINER, CheckStatus.PASS, f"containers on {names}: /dev/infiniband present, memlock unlimited")
    nodes = sorted({e.node or "" for e in evidence})
    fixes = [
        Fix(
            node,
            "restart the container with host networking, the RDMA device files and unlimited locked memory "
            "(--privileged also exposes /dev/infiniband)",
            (f"docker run {DOCKER_FLAGS} ... IMAGE",),
        )
        for node in nodes
    ]
    return result(CONTAINER, CheckStatus.FAIL, f"container cannot use RDMA fully on {joined(nodes)}", evidence, fixes)
