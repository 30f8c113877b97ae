"""Slurm as a launcher: the allocation's nodes from its environment, and the srun line that starts a process on one.

Inside `salloc`/`sbatch` Slurm says which nodes the job holds (`SLURM_JOB_NODELIST`, a hostlist expression such as
`spark-[1-3,5]`). wirespeed then needs no ssh: each command on a node is a job step,
`srun --overlap --nodes=1 --ntasks=1 --nodelist=NODE -- argv`, which runs beside the other steps (`--overlap`,
Slurm >= 20.11) and inherits the node's own namespaces and environment from slurmd. Pure; no system access.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import product

from wirespeed.core.errors import InventoryError, UsageError
from wirespeed.core.inventory import Cluster, Node
from wirespeed.core.nodeset import fold_names

NODELIST_VARS = ("SLURM_JOB_NODELIST", "SLURM_NODELIST")
JOB_ID_VARS = ("SLURM_JOB_ID", "SLURM_JOBID")
MAX_EXPANDED = 65536  # a typo such as spark-[1-1000000] must not eat the controller's memory
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")
_JOB_ID_RE = re.compile(r"^\d+(?:_\d+)?$")  # 123, or an array task 123_4


class Launcher(StrEnum):
    """How commands reach the nodes: `auto` picks Slurm inside an allocation that holds them, else ssh."""

    AUTO = "auto"
    SSH = "ssh"
    SLURM = "slurm"


def _split_top_level(spec: str, source: str) -> list[str]:
    """Split on commas outside brackets: `a[1,3],b` -> ['a[1,3]', 'b']."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in spec:
        if char == "[":
            depth += 1
            if depth > 1:
                raise InventoryError(f"{source}: nested brackets in {spec!r}", hint="write spark-[1-3],gpu-[1-2]")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise InventoryError(f"{source}: unbalanced ']' in {spec!r}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    if depth != 0:
        raise InventoryError(f"{source}: unbalanced '[' in {spec!r}")
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _expand_range(body: str, source: str, spec: str) -> list[str]:
    """`1-3,07` -> ['1', '2', '3', '07']; a zero-padded start keeps its width (`[01-10]` -> 01..10)."""
    numbers: list[str] = []
    for item in body.split(","):
        match = _RANGE_RE.fullmatch(item.strip())
        if not match:
            raise InventoryError(f"{source}: {item!r} is not a number or range in {spec!r}", hint="write [1-4,7]")
        start_text, end_text = match.group(1), match.group(2)
        if end_text is None:
            numbers.append(start_text)
            continue
        start, end = int(start_text), int(end_text)
        if end < start:
            raise InventoryError(f"{source}: range {item!r} runs backwards in {spec!r}")
        if end - start >= MAX_EXPANDED:
            raise InventoryError(f"{source}: range {item!r} names more than {MAX_EXPANDED} nodes")
        width = len(start_text) if start_text.startswith("0") else 0
        numbers += [str(n).zfill(width) for n in range(start, end + 1)]
    return numbers


def expand_hostlist(spec: str, source: str = "SLURM_JOB_NODELIST") -> list[str]:
    """A Slurm hostlist expression as node names, in its order: `spark-[1-2],gpu[01-02]-ib` ->
    spark-1, spark-2, gpu01-ib, gpu02-ib. Several bracket groups in one name multiply (`r[1-2]n[1-2]`)."""
    names: list[str] = []
    for part in _split_top_level(spec, source):
        pieces = re.split(r"(\[[^\]]*\])", part)
        choices: list[list[str]] = []
        for piece in pieces:
            if piece.startswith("[") and piece.endswith("]"):
                choices.append(_expand_range(piece[1:-1], source, spec))
            elif "[" in piece or "]" in piece:
                raise InventoryError(f"{source}: unbalanced brackets in {spec!r}")
            elif piece:
                choices.append([piece])
        for combo in product(*choices):
            names.append("".join(combo))
            if len(names) > MAX_EXPANDED:
                raise InventoryError(f"{source}: {spec!r} names more than {MAX_EXPANDED} nodes")
    if not names:
        raise InventoryError(f"{source}: no nodes in {spec!r}")
    return list(dict.fromkeys(names))  # a node named twice is one node


@dataclass(frozen=True)
class SlurmAllocation:
    """The job this process runs in, and the nodes it holds (Slurm's node names, in Slurm's order)."""

    job_id: str
    nodes: tuple[str, ...]

    @property
    def nodelist(self) -> str:
        return fold_names(self.nodes)


def allocation_from_env(env: Mapping[str, str]) -> SlurmAllocation | None:
    """The allocation named by Slurm's environment, or None outside one."""
    job_id = next((env[name] for name in JOB_ID_VARS if env.get(name)), None)
    var = next((name for name in NODELIST_VARS if env.get(name)), None)
    if job_id is None or var is None:
        return None
    if not _JOB_ID_RE.fullmatch(job_id):
        raise InventoryError(f"SLURM_JOB_ID: {job_id!r} is not a job id", hint="run inside salloc or sbatch")
    return SlurmAllocation(job_id, tuple(expand_hostlist(env[var], var)))


def allocation_cluster(allocation: SlurmAllocation) -> Cluster:
    """The allocation as a cluster: each Slurm node is a wirespeed node of the same name."""
    nodes = tuple(Node(name=name, host=name) for name in allocation.nodes)
    return Cluster(name=f"slurm-{allocation.job_id}", nodes=nodes, source=f"Slurm job {allocation.job_id}")


def slurm_names(cluster: Cluster, allocation: SlurmAllocation) -> dict[str, str] | list[str]:
    """Each cluster node's Slurm node name (matched by name, then by host, then by short host name), or the
    cluster's nodes that the allocation does not hold."""
    held = set(allocation.nodes)
    mapping: dict[str, str] = {}
    missing: list[str] = []
    for node in cluster.nodes:
        candidates = (node.name, node.host, node.host.split(".")[0])
        match = next((c for c in candidates if c in held), None)
        if match is None:
            missing.append(node.name)
        else:
            mapping[node.name] = match
    return missing if missing else mapping


@dataclass(frozen=True)
class SlurmChoice:
    """Commands start as steps of `job_id`; `slurm_names` maps each node to its Slurm name."""

    job_id: str
    slurm_names: dict[str, str]


@dataclass(frozen=True)
class LaunchChoice:
    """What a command acts on and how: `cluster` None means "not decided here" (a testbed, or localhost);
    `slurm` None means ssh; `note` is said on stderr."""

    cluster: Cluster | None
    slurm: SlurmChoice | None
    note: str | None


def choose_launch(
    launcher: Launcher, named: Cluster | None, allocation: SlurmAllocation | None, srun_found: bool
) -> LaunchChoice:
    """Whether commands start with srun, and on which nodes.

    `named` is the cluster the user gave (None: none given, so the allocation's nodes are used). `auto` takes srun
    inside an allocation that holds every node and says why when it keeps ssh; `slurm` refuses what it cannot do.
    """
    if allocation is None:
        if launcher is Launcher.SLURM:
            raise UsageError(
                "--launcher slurm: not inside a Slurm allocation (no SLURM_JOB_ID and SLURM_JOB_NODELIST)",
                hint="run wirespeed inside salloc or sbatch, or use --launcher ssh",
            )
        return LaunchChoice(named, None, None)
    job = f"Slurm job {allocation.job_id} ({allocation.nodelist})"
    target = named if named is not None else allocation_cluster(allocation)
    implicit = named is None
    if launcher is Launcher.SSH:
        return LaunchChoice(target, None, f"using the nodes of {job} over ssh" if implicit else None)
    if not srun_found:
        if launcher is Launcher.SLURM:
            raise UsageError("--launcher slurm: srun not found on this machine", hint="install slurm-client")
        return LaunchChoice(target, None, f"srun not found: reaching the nodes of {job} over ssh" if implicit else None)
    names = slurm_names(target, allocation)
    if isinstance(names, list):
        outside = ", ".join(names)
        if launcher is Launcher.SLURM:
            raise UsageError(
                f"--launcher slurm: {outside} not in {job}",
                hint="allocate those nodes (salloc -w) or leave them out of the cluster file",
            )
        return LaunchChoice(target, None, f"{outside} not in {job}: using ssh")
    choice = SlurmChoice(allocation.job_id, names)
    return LaunchChoice(target, choice, f"starting processes with srun in {job}")


def srun_argv(job_id: str, slurm_node: str, argv: Sequence[str]) -> list[str]:
    """One job step of one task on one node, beside the job's other steps; its stdin stays open so the
    watchdog around argv sees our end close."""
    return [
        "srun",
        f"--jobid={job_id}",
        "--overlap",
        "--nodes=1",
        "--ntasks=1",
        f"--nodelist={slurm_node}",
        "--input=all",
        "--quiet",
        "--",
        *argv,
    ]
