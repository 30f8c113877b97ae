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

from wirespeed.core.cluster.inventory import Cluster, Node
from wirespeed.core.cluster.nodeset import expand_names, fold_names
from wirespeed.core.errors import InventoryError, UsageError

NODELIST_VARS = ("SLURM_JOB_NODELIST", "SLURM_NODELIST")
JOB_ID_VARS = ("SLURM_JOB_ID", "SLURM_JOBID")
_JOB_ID_RE = re.compile(r"^\d+(?:_\d+)?$")  # 123, or an array task 123_4


class Launcher(StrEnum):
    """How commands reach the nodes: `auto` picks Slurm inside an allocation that holds them, else ssh."""

    AUTO = "auto"
    SSH = "ssh"
    SLURM = "slurm"


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
    return SlurmAllocation(job_id, tuple(expand_names(env[var], var)))


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
