"""Which nodes a command acts on (--cluster FILE, --hosts LIST, a Slurm allocation, an up testbed, or this machine)
and how commands reach them (ssh, or srun inside the allocation)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wirespeed.core.errors import InventoryError, UsageError
from wirespeed.core.inventory import Cluster, local_cluster, parse_cluster_toml, parse_host_list
from wirespeed.core.routeros import SwitchConfig, parse_switch_table
from wirespeed.core.slurm import Launcher, SlurmChoice, allocation_from_env, choose_launch


@dataclass(frozen=True)
class ResolvedCluster:
    cluster: Cluster
    note: str | None  # said on stderr when the choice was implicit
    slurm: SlurmChoice | None = None  # set when srun starts the processes


def default_cluster_path(env: Mapping[str, str] | None = None) -> Path:
    """Where `wirespeed init` writes the cluster file, and where commands look when none is named."""
    environment = os.environ if env is None else env
    if environment.get("WIRESPEED_CLUSTER"):
        return Path(environment["WIRESPEED_CLUSTER"])
    base = Path(environment.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "wirespeed" / "cluster.toml"


def load_cluster_file(path: Path) -> Cluster:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InventoryError(f"{path}: cluster file not found", hint="check the path given to --cluster") from None
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read cluster file: {exc.strerror}") from None
    return parse_cluster_toml(text, str(path))


def resolve_cluster(
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None = None,
    launcher: Launcher = Launcher.AUTO,
    env: Mapping[str, str] | None = None,
) -> ResolvedCluster:
    """Explicit beats implicit; with nothing given, a Slurm allocation this runs in gives the nodes, else the
    cluster file `wirespeed init` wrote, else an up testbed (said on stderr), else localhost. Inside an allocation
    that holds every node, srun starts the processes (`--launcher ssh` keeps ssh)."""
    if cluster_file and hosts:
        raise UsageError("give --cluster or --hosts, not both")
    named: Cluster | None = None
    if cluster_file:
        named = load_cluster_file(cluster_file)
    elif hosts:
        named = parse_host_list(hosts, user)
    environment = os.environ if env is None else env
    choice = choose_launch(launcher, named, allocation_from_env(environment), shutil.which("srun") is not None)
    if choice.cluster is not None:
        return ResolvedCluster(choice.cluster, choice.note, choice.slurm)
    default = default_cluster_path(environment)
    if default.is_file():
        return ResolvedCluster(load_cluster_file(default), f"using {default} (written by `wirespeed init`)")
    from wirespeed.testbed.build import find_up_testbeds

    up = find_up_testbeds()
    if len(up) == 1:
        path = up[0].cluster_file
        return ResolvedCluster(load_cluster_file(path), f"using the emulated cluster {up[0].plan.prefix!r} ({path})")
    if len(up) > 1:
        names = ", ".join(str(s.cluster_file) for s in up)
        raise UsageError("several testbeds are up", hint=f"pick one with --cluster: {names}")
    return ResolvedCluster(local_cluster(), "no --cluster or --hosts given and no testbed up: using localhost")


def load_switch(path: Path, cluster: Cluster) -> SwitchConfig | None:
    """The `[switch]` table of a cluster file, or None when it names no switch."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InventoryError(f"{path}: cannot read the cluster file: {exc}") from None
    table = data.get("switch")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise InventoryError(f"{path}: [switch] must be a table")
    return parse_switch_table(table, str(path), cluster.names)
