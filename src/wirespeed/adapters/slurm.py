"""Reaching a node as a Slurm job step: `srun --overlap` inside the allocation this process runs in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wirespeed.core.cluster.inventory import Node
from wirespeed.core.cluster.slurm import srun_argv


@dataclass
class SrunTransport:
    """Starts each command as a one-task step on its node; `slurm_names` maps wirespeed's node names to Slurm's."""

    job_id: str
    slurm_names: Mapping[str, str] = field(default_factory=dict)
    via_ssh: bool = False
    via_srun: bool = True

    def slurm_name(self, node: Node) -> str:
        return self.slurm_names.get(node.name, node.host)

    def destination(self, node: Node) -> str:
        return f"{self.slurm_name(node)} in Slurm job {self.job_id}"

    def wrap(self, node: Node, argv: Sequence[str]) -> list[str]:
        return srun_argv(self.job_id, self.slurm_name(node), argv)
