"""The NCCL rung, planned and read back. Pure.

Planning: which nodes run how many ranks, the environment NCCL gets (derived from discovery: every linked half's
RDMA device in `NCCL_IB_HCA`, the linked halves in `NCCL_SOCKET_IFNAME`, their subnets for OpenMPI's TCP), the
largest message each node's free memory allows (a 16 GiB all_gather froze a Spark: unified memory), and mpirun's
argv. Reading: the nccl-tests stdout (its NCCL INFO lines say which transport ran) and its own `-J` JSON, which is
the figure of record for busbw when present.
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from wirespeed.core.fabric.cabling import CablingMap
from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.fabric.gdr import explain_hosts
from wirespeed.core.fabric.gdr import used as gdr_used
from wirespeed.core.mpi_failure import read_failure
from wirespeed.core.parsers import nccl_info
from wirespeed.core.parsers.ldd import default_directory
from wirespeed.core.records.results import CollectiveSummary, NotRunnable, SizeFigures
from wirespeed.core.tools import nccl_tests

DEFAULT_COLLECTIVES = ("sendrecv", "all_gather", "all_reduce")
MEMORY_SHARE = 8  # a rank's largest message is at most 1/8 of its free memory (send, receive, check buffers + margin)
# What of nccl-tests' JSON `env` (the whole environment of rank 0) is kept in the run directory: never credentials.
STORED_ENV_PREFIXES = (
    "NCCL_",
    "UCX_",
    "CUDA_VISIBLE_DEVICES=",
    "NVIDIA_VISIBLE_DEVICES=",
    "OMPI_MCA_btl",
    "OMPI_MCA_oob",
)


@dataclass(frozen=True)
class NcclOptions:
    collectives: tuple[str, ...] = DEFAULT_COLLECTIVES
    min_bytes: int = 1 << 20
    max_bytes: int = 1 << 30
    iterations: int = 20
    warmup: int = 5
    env: tuple[tuple[str, str | None], ...] = ()  # --env NAME=VALUE (or NAME: pass the launcher's value); wins
    timeout_s: float = 900.0


@dataclass(frozen=True)
class NodeMemory:
    """Free memory a node reported just before the rung: per GPU (None where nvidia-smi cannot say: unified
    memory, as on GB10) and the kernel's MemAvailable."""

    gpu_free_bytes: tuple[int | None, ...]
    available_bytes: int | None


@dataclass(frozen=True)
class NcclPlan:
    launcher: str  # the node that runs mpirun (rank 0)
    nodes: tuple[str, ...]
    hosts: tuple[tuple[str, int], ...]  # (address as the launcher reaches it, ranks there)
    binary: str
    env: tuple[tuple[str, str | None], ...]
    mca: tuple[tuple[str, str], ...]
    min_bytes: int
    max_bytes: int
    capped: str | None = None  # why max_bytes is below what was asked
    rdma_devices: tuple[str, ...] = ()  # `dev:port` of every linked half, for the diagnosis
    fabric_interfaces: tuple[str, ...] = ()
    line_rate_gbps: float | None = None  # one node's linked halves together, per direction
    notes: tuple[str, ...] = ()  # settings chosen for the topology, and why
    launch_env: tuple[tuple[str, str], ...] = ()  # mpirun's own environment (not passed to the ranks)
    # Where the launcher's binary loads NCCL and CUDA from (its build tree's library_path, then the directories of
    # the libnccl and libcudart ldd resolved): every rank gets them as LD_LIBRARY_PATH, since a rank started over
    # ssh gets no login environment and nccl-tests has no rpath.
    library_path: tuple[str, ...] = ()

    @property
    def ranks(self) -> int:
        return sum(slots for _, slots in self.hosts)


def node_memory(facts: NodeFacts) -> NodeMemory:
    """The free memory discovery read on a node (nvidia-smi's memory.free per GPU, MemAvailable), for the size cap;
    what it could not read counts as unknown, which caps nothing."""
    gpus = () if isinstance(facts.gpus, Unknown) else facts.gpus
    free = tuple(g.memory_free_mib * 2**20 if isinstance(g.memory_free_mib, int) else None for g in gpus)
    available = facts.mem_available_kb
    return NodeMemory(free, available * 1024 if isinstance(available, int) else None)


def _pow2_floor(value: int) -> int:
    return 1 << (value.bit_length() - 1) if value > 0 else 0


def size_cap(memory: Mapping[str, NodeMemory], ranks: Mapping[str, int]) -> tuple[int, str] | None:
    """The largest message every rank can hold (a power of two), with the node that limits it; None when no node
    said how much memory it has."""
    best: tuple[int, str] | None = None
    for node, mem in sorted(memory.items()):
        known = [b for b in mem.gpu_free_bytes if b is not None]
        if known:
            per_rank = min(known)
        elif mem.available_bytes is not None:
            per_rank = mem.available_bytes // max(1, ranks.get(node, 1))  # unified memory: ranks share it
        else:
            continue
        cap = _pow2_floor(per_rank // MEMORY_SHARE)
        if best is None or cap < best[0]:
            best = (cap, f"{node}: {per_rank / 2**30:.1f} GiB free per rank")
    return best


def _linked_halves(facts: NodeFacts, cabling: CablingMap) -> list[str]:
    linked = {end[1] for link in cabling.links for end in link if end[0] == facts.node}
    return [half for port in facts.ports for half in port.halves if half in linked]


def _address(facts: NodeFacts, iface: str) -> str | None:
    netdev = facts.netdev(iface)
    return netdev.ipv4[0] if netdev and netdev.ipv4 else None


def launch_address(facts: NodeFacts, cabling: CablingMap) -> str | None:
    """The address mpirun's `-H` names a node by: the first IPv4 of its first linked, addressed fabric half. Its
    daemons are started over ssh to it, so `ssh.mesh` tries this address too."""
    return next((a.split("/")[0] for h in _linked_halves(facts, cabling) if (a := _address(facts, h))), None)


def _library_path(facts: NodeFacts, binary: str) -> tuple[str, ...]:
    """Where `binary` loads NCCL and CUDA from on this node: its build tree's library_path (what ldd ran with), then
    the directories of the libnccl and libcudart ldd resolved, less those the loader searches anyway."""
    tool = next((t for t in facts.tools if t.name == binary and t.path), None)
    if tool is None:
        return ()
    libraries = (tool.nccl_library, tool.cudart_library)
    resolved = [posixpath.dirname(p) for p in libraries if isinstance(p, str) and p.startswith("/")]
    return tuple(dict.fromkeys([*tool.library_path, *(d for d in resolved if not default_directory(d))]))


def forwarded_library_path(plan: NcclPlan) -> str | None:
    """The LD_LIBRARY_PATH wirespeed gives every rank; None when there is none, or when --env (or the cluster
    file's [nccl.env]) names LD_LIBRARY_PATH: the user's wins."""
    if not plan.library_path or any(name == "LD_LIBRARY_PATH" for name, _ in plan.env):
        return None
    return ":".join(plan.library_path)


def library_path_note(plan: NcclPlan) -> str | None:
    """What the report says of the ranks' LD_LIBRARY_PATH."""
    if not plan.library_path:
        return None
    shown = ":".join(plan.library_path)
    if forwarded_library_path(plan) is None:
        return f"LD_LIBRARY_PATH as --env gives it, not {shown} (where {plan.launcher}'s nccl-tests loads NCCL from)"
    return (
        f"-x LD_LIBRARY_PATH={shown}: where {plan.launcher}'s nccl-tests loads NCCL and CUDA from (a rank started "
        "over ssh gets no login environment, and nccl-tests has no rpath)"
    )


def _tool_path(facts: NodeFacts, binary: str) -> tuple[str | None, str | None]:
    for tool in facts.tools:
        if tool.name == binary and tool.path:
            return tool.path, tool.detail
    return None, None


def plan_nccl(
    facts: Mapping[str, NodeFacts],
    cabling: CablingMap,
    collective: str,
    options: NcclOptions,
    memory: Mapping[str, NodeMemory] | None = None,
) -> NcclPlan | NotRunnable:
    """How to run `collective` across every node discovered: one rank per GPU, launched from the first node. In a
    ring the ranks follow the cables (NCCL's ring goes rank to rank: each step then is one cable, never a relay)."""
    nodes = sorted(facts)
    if cabling.topology in ("ring", "chain") and sorted(cabling.order) == nodes:
        nodes = list(cabling.order)
    if not nodes:
        return NotRunnable("no node was discovered", "run `wirespeed discover`")
    binary = f"{collective}_perf"
    ranks: dict[str, int] = {}
    paths: dict[str, str] = {}
    for node in nodes:
        gpus = facts[node].gpus
        if isinstance(gpus, Unknown):
            return NotRunnable(f"{node}: no GPU found ({gpus.reason})", "install the NVIDIA driver (nvidia-smi)")
        if not gpus:
            return NotRunnable(f"{node} has no GPU", "run the nccl rung on GPU nodes only")
        path, detail = _tool_path(facts[node], binary)
        if path is None:
            return NotRunnable(
                f"{node}: nccl-tests' {binary} not found",
                nccl_tests.INSTALL_HINT,
            )
        if detail == "mpi=no":
            return NotRunnable(f"{node}: {path} was built without MPI", "rebuild nccl-tests with `make MPI=1`")
        ranks[node], paths[node] = len(gpus), path
    launcher = nodes[0]
    if sum(ranks.values()) < 2:
        # One rank talks to no one: nccl-tests still prints a busbw (sendrecv to itself is a GPU copy, all_reduce's
        # is 0), and NCCL still names a network it never used. Neither is a figure of any interconnect.
        return NotRunnable(
            f"one rank in all ({launcher}: {ranks[launcher]} GPU): a collective of one rank crosses no network",
            "run across two or more nodes (or on a node with two GPUs)",
        )
    if len(set(paths.values())) > 1:
        shown = ", ".join(f"{n} {p}" for n, p in sorted(paths.items()))
        return NotRunnable(f"{binary} is at different paths ({shown})", "install nccl-tests at one path on every node")
    if not any(t.name == "mpirun" and isinstance(t.version, str) for t in facts[launcher].tools):
        return NotRunnable(f"{launcher}: mpirun not found", "apt install openmpi-bin (the same MPI on every node)")

    halves = {node: _linked_halves(facts[node], cabling) for node in nodes}
    hosts: list[tuple[str, int]] = []
    if len(nodes) == 1:
        hosts.append(("localhost", ranks[launcher]))
    else:
        for node in nodes:
            address = launch_address(facts[node], cabling)
            if address is None:
                return NotRunnable(f"{node}: no addressed fabric half linked to the others", "wirespeed fix")
            hosts.append((address, ranks[node]))

    rdma = sorted(
        {
            f"{device.name}:{port.number}"
            for node in nodes
            for device in facts[node].rdma
            if set(device.netdevs) & set(halves[node])
            for port in device.ports
        }
    )
    fabric = sorted({h for node in nodes for h in halves[node]})
    env: dict[str, str | None] = {"NCCL_DEBUG": "INFO"}
    mca: list[tuple[str, str]] = []
    if rdma:
        env["NCCL_IB_HCA"] = "=" + ",".join(rdma)  # `=`: exact names (mlx5_1 would otherwise match mlx5_10)
    if len(nodes) > 1 and fabric:
        env["NCCL_SOCKET_IFNAME"] = "=" + ",".join(fabric)
        subnets = sorted(
            {
                str(ipaddress.ip_interface(a).network)
                for node in nodes
                for h in halves[node]
                if (a := _address(facts[node], h))
            }
        )
        mpi_subnets = _management_subnets(facts, nodes) if _relays_between(cabling, nodes) else None
        subnets = mpi_subnets or subnets
        mca += [("btl_tcp_if_include", ",".join(subnets)), ("oob_tcp_if_include", ",".join(subnets))]
    notes: list[str] = []
    if cabling.topology in ("ring", "chain") and len(nodes) >= 3:
        notes += ring_settings(facts, nodes, env)
    if cabling.topology == "chain" and len(nodes) >= 3:
        between = ", ".join(reversed(nodes[1:-1]))
        notes.append(
            f"a cut ring: NCCL's ring closes from {nodes[-1]} back to {nodes[0]} through {between}, which forward "
            "that step in the cables' otherwise idle direction (their routes and ip_forward: `wirespeed check`)"
        )
    for name, value in options.env:
        env[name] = value

    low, high, capped = options.min_bytes, options.max_bytes, None
    cap = size_cap(memory or {}, ranks)
    if cap is not None and cap[0] < high:
        high, capped = max(cap[0], 1), f"largest message lowered to {_bytes(cap[0])}: {cap[1]}"
        low = min(low, high)
    ports = [p.halves for p in facts[launcher].ports if set(p.halves) & set(halves[launcher])]
    rates = [r for p in ports if (r := facts[launcher].port_rate_gbps(p)) is not None]
    plan = NcclPlan(
        launcher=launcher,
        nodes=tuple(nodes),
        hosts=tuple(hosts),
        binary=paths[launcher],
        env=tuple(env.items()),
        mca=tuple(mca),
        min_bytes=low,
        max_bytes=high,
        capped=capped,
        rdma_devices=tuple(rdma),
        fabric_interfaces=tuple(fabric),
        line_rate_gbps=sum(rates) if rates and len(rates) == len(ports) else None,
        notes=tuple(notes),
        library_path=_library_path(facts[launcher], binary),
    )
    note = library_path_note(plan)
    return replace(plan, notes=(*plan.notes, note)) if note else plan


def _relays_between(cabling: CablingMap, nodes: Sequence[str]) -> bool:
    """Whether some pair of the rung's nodes shares no cable (a ring of four or more, or a cut ring)."""
    return cabling.topology in ("ring", "chain") and len(nodes) >= (3 if cabling.topology == "chain" else 4)


def _management_subnets(facts: Mapping[str, NodeFacts], nodes: Sequence[str]) -> list[str] | None:
    """The management subnets, when every node has an address on one of them: where pairs of nodes share no cable,
    MPI's own messages (its daemons' wiring, nccl-tests' first allgather) take the network that joins every node
    directly, not the ring's relays (OpenMPI binds each connection to one interface's address, whose way back
    through a ring may be another). None: some node has none, and MPI stays on the fabric."""
    found = []
    for node in nodes:
        management = facts[node].management
        netdev = None if isinstance(management, Unknown) else facts[node].netdev(management)
        if netdev is None or not netdev.ipv4:
            return None
        found.append(str(ipaddress.ip_interface(netdev.ipv4[0]).network))
    return sorted(set(found))


# NCCL reads NCCL_IB_SUBNET_AWARE_ROUTING from 2.30.7 (NVIDIA/nccl tag v2.30.7-1, commit 5c1c4288 "Add subnet-aware
# routing for DGX Spark multi-node ring connection", src/transport/net_ib/connect.cc); 2.30.3 and 2.30.4 lack it.
RING_MIN_NCCL = (2, 30, 7)


def nccl_version_tuple(text: object) -> tuple[int, ...] | None:
    """`2.28.9` (or `2.28.9+cuda13.0`, `NCCL version 2.30.1`) -> (2, 28, 9)."""
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text) if isinstance(text, str) else None
    return tuple(int(g) for g in match.groups() if g is not None) if match else None


def ring_settings(facts: Mapping[str, NodeFacts], nodes: Sequence[str], env: dict[str, str | None]) -> list[str]:
    """A ring of Sparks (spark-facts problem 9): each node reaches its two neighbours on different subnets, and no
    L2 path joins non-adjacent nodes, so NCCL must route by subnet and keep the NICs apart; rings of 4+ also need
    the Ring algorithm. NCCL before 2.30.7 lacks subnet-aware routing (NVIDIA's 3-node ring used a patched branch)."""
    env["NCCL_IB_SUBNET_AWARE_ROUTING"] = "1"
    env["NCCL_IB_MERGE_NICS"] = "0"
    env["NCCL_NET_PLUGIN"] = "none"
    said = "NCCL_IB_SUBNET_AWARE_ROUTING=1 NCCL_IB_MERGE_NICS=0 NCCL_NET_PLUGIN=none"
    if len(nodes) >= 4:
        env["NCCL_ALGO"] = "Ring"
        said += " NCCL_ALGO=Ring"
    notes = [f"ring of {len(nodes)}: {said} (subnet-aware routing between neighbours, merged NICs off)"]
    old = []
    for node in nodes:
        version = nccl_version_tuple(facts[node].nccl_version)
        if version is None or version < RING_MIN_NCCL:
            shown = facts[node].nccl_version if isinstance(facts[node].nccl_version, str) else "unknown"
            old.append(f"{node} {shown}")
    if old:
        notes.append(
            f"NCCL below 2.30.7 on {', '.join(old)}: a ring needs NCCL >= 2.30.7 (or NVIDIA's dgxspark-3node-ring "
            "branch) for subnet-aware routing; expect failures or TCP fallback until it is upgraded"
        )
    return notes


def _bytes(value: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale} {unit}"
    return f"{value} B"


def for_slurm(plan: NcclPlan, slurm_names: Mapping[str, str], job_id: str) -> NcclPlan:
    """The plan when mpirun itself runs as a step of a Slurm job: OpenMPI then starts its daemons with srun, which
    wants Slurm's node names; its host list must come from -H, not from the one-node step it runs in; and its
    srun must share the nodes with wirespeed's own steps."""
    if len(plan.nodes) < 2:
        return plan
    pairs = zip(plan.nodes, plan.hosts, strict=True)
    hosts = tuple((slurm_names.get(node, host), slots) for node, (host, slots) in pairs)
    note = (
        f"inside Slurm job {job_id}: mpirun starts its daemons with srun (hosts by Slurm name, --mca ras ^slurm "
        "so -H gives them, SLURM_OVERLAP=1 beside wirespeed's steps)"
    )
    return replace(
        plan,
        hosts=hosts,
        mca=(*plan.mca, ("ras", "^slurm")),
        launch_env=(*plan.launch_env, ("SLURM_OVERLAP", "1")),
        notes=(*plan.notes, note),
    )


def mpirun_argv(plan: NcclPlan, options: NcclOptions, json_path: str | None, as_root: bool = False) -> list[str]:
    """mpirun's argv on the launcher: hosts with their slots, OpenMPI's TCP subnets, the library path and NCCL's
    environment with `-x`, then the nccl-tests binary with identical arguments for every rank."""
    argv = ["env", *(f"{name}={value}" for name, value in plan.launch_env)] if plan.launch_env else []
    argv.append("mpirun")
    if as_root:
        argv.append("--allow-run-as-root")
    argv += ["--bind-to", "none", "-np", str(plan.ranks), "-H", ",".join(f"{h}:{n}" for h, n in plan.hosts)]
    for mca_name, mca_value in plan.mca:
        argv += ["--mca", mca_name, mca_value]
    if (library_path := forwarded_library_path(plan)) is not None:
        argv += ["-x", f"LD_LIBRARY_PATH={library_path}"]
    for name, value in plan.env:
        argv += ["-x", name if value is None else f"{name}={value}"]
    return argv + nccl_tests.binary_argv(
        plan.binary, min_bytes=plan.min_bytes, max_bytes=plan.max_bytes, iterations=options.iterations,
        warmup=options.warmup, json_path=json_path,
    )  # fmt: skip


def hostfile(plan: NcclPlan) -> str:
    """The same hosts as OpenMPI's hostfile (`mpirun --hostfile FILE`): to rerun the rung by hand, or with srun."""
    lines = [f"# wirespeed: the nodes of this rung, one rank per GPU; launched from {plan.launcher}"]
    lines += [f"{host} slots={slots}" for host, slots in plan.hosts]
    return "\n".join(lines) + "\n"


def stored_json(text: str) -> str:
    """nccl-tests' JSON as kept in the run directory: its `env` (rank 0's whole environment, where a user's
    tokens may live) cut down to NCCL, UCX, OpenMPI transport and device-visibility variables."""
    data = json.loads(text)
    if isinstance(data, dict) and isinstance(data.get("env"), list):
        data["env"] = [e for e in data["env"] if isinstance(e, str) and e.startswith(STORED_ENV_PREFIXES)]
        data["env_filtered_by"] = "wirespeed"
    return json.dumps(data, indent=1) + "\n"


@dataclass(frozen=True)
class NcclReading:
    summary: CollectiveSummary | None
    error: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def read_run(collective: str, stdout: str, json_text: str | None, platform: str | None = None) -> NcclReading:
    """The rung's figures: rows and average from nccl-tests' JSON when it wrote one (the figure of record), else
    from its table; transport, GPUDirect and the devices used from the INFO lines of stdout, and what GPUDirect's
    state means on `platform` (wirespeed.core.fabric.gdr: UNIFIED for GB10, DISCRETE, None unknown)."""
    try:
        text = nccl_tests.parse_text(stdout)
    except ValueError as exc:  # no nccl-tests line at all: mpirun may have failed before it started a rank
        launch = read_failure(stdout)
        return NcclReading(None, launch.line if launch else f"nccl-tests output unreadable: {exc}")
    source, parsed, notes = "text", text, list[str]()
    if json_text:
        try:
            parsed, source = nccl_tests.parse_json(json_text), "json"
        except ValueError as exc:
            notes.append(f"nccl-tests JSON unreadable ({exc}); figures from its table")
    notes += parsed.implausible  # figures no link carries, left out of the rows (one rank's in-place case)
    rows = tuple(
        SizeFigures(r.size_bytes, r.out_of_place.algbw_GBps, r.out_of_place.busbw_GBps, r.out_of_place.time_us)
        for r in parsed.rows
    )
    wrong = sum((r.out_of_place.wrong or 0) + ((r.in_place.wrong or 0) if r.in_place else 0) for r in parsed.rows)
    if not rows:
        return NcclReading(None, _failure_line(stdout) or "nccl-tests printed no result rows", tuple(notes))
    # The per-HCA verdicts, a plugin's claims and `GDR 0/1` on the rings, read by the paste parser of NCCL logs.
    hosts = nccl_info.parse(stdout).hosts
    verdict = explain_hosts(hosts, platform, text.gdr, text.transport)
    gdr = text.gdr if text.gdr is not None else gdr_used(hosts)
    if verdict is not None:
        notes.append(verdict.line)
    summary = CollectiveSummary(
        collective=collective,
        ranks=parsed.ranks or text.ranks,
        rows=rows,
        avg_busbw_GBps=parsed.avg_busbw_GBps,
        transport=text.transport,
        gdr=gdr,
        gdr_note=None if verdict is None else verdict.line,
        gdr_finding=verdict is not None and verdict.finding,
        socket_interfaces=text.socket_interfaces,
        ib_devices=text.ib_devices,
        source=source,
        wrong=wrong,
        complete=parsed.complete,
        nccl_version=text.nccl_version or parsed.nccl_version,
    )
    return NcclReading(summary, None, tuple(notes))


# The program's own words for a run that gave no rows: NCCL's warnings, nccl-tests' `Test NCCL failure`, a test that
# FAILED. mpirun's launch failures (OpenMPI 4.1 and 5) are read first, by `wirespeed.core.mpi_failure`.
_FAILURE_HINTS = re.compile(r"(NCCL WARN.*|.*\bFAILED\b.*|.*failure.*|.*Permission denied.*)", re.IGNORECASE)


def _failure_line(stdout: str) -> str | None:
    """Why a run printed no rows, in one line: mpirun's launch failure with its hint, else the first line that
    says what failed."""
    launch = read_failure(stdout)
    if launch is not None:
        return launch.line
    for line in stdout.splitlines():
        if _FAILURE_HINTS.fullmatch(line.strip()):
            return line.strip()[:200]
    return None
