"""Which nodes a command acts on, named on purpose (--cluster FILE, --hosts LIST, $WIRESPEED_CLUSTER, a Slurm
allocation, or the file `wirespeed init` wrote), and how commands reach them (ssh, or srun inside the allocation).

Nothing is picked behind the user's back: not an emulated cluster that happens to be up (it may be someone else's),
not this machine. With none of the above, a command stops with one line that says how to name the nodes."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wirespeed.adapters import files
from wirespeed.core.cluster.inventory import Cluster, loads_toml, parse_cluster_toml, parse_host_list
from wirespeed.core.cluster.routeros import SwitchConfig, parse_switch_table
from wirespeed.core.cluster.slurm import Launcher, SlurmChoice, allocation_from_env, choose_launch
from wirespeed.core.errors import InventoryError, UsageError

CLUSTER_ENV = "WIRESPEED_CLUSTER"
NO_CLUSTER = "no cluster: run `wirespeed init` on a node, or pass --cluster/--hosts"
MAX_CLUSTER_BYTES = 16 * 2**20  # a node takes a few lines: 16 MiB is far past any cluster's file


@dataclass(frozen=True)
class ResolvedCluster:
    cluster: Cluster
    note: str | None  # said on stderr when the choice was not on the command line
    slurm: SlurmChoice | None = None  # set when srun starts the processes


def init_cluster_path(env: Mapping[str, str] | None = None) -> Path:
    """Where `wirespeed init` writes the cluster file when $WIRESPEED_CLUSTER does not say otherwise:
    `$XDG_CONFIG_HOME/wirespeed/cluster.toml`, else `~/.config/wirespeed/cluster.toml`."""
    environment = os.environ if env is None else env
    home = Path(environment["HOME"]) if environment.get("HOME") else Path.home()
    base = Path(environment.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "wirespeed" / "cluster.toml"


def default_cluster_path(env: Mapping[str, str] | None = None) -> Path:
    """Where `wirespeed init` writes the cluster file: $WIRESPEED_CLUSTER, else `init_cluster_path`."""
    environment = os.environ if env is None else env
    if environment.get(CLUSTER_ENV):
        return Path(environment[CLUSTER_ENV])
    return init_cluster_path(environment)


def read_cluster_text(path: Path) -> str:
    """A cluster file's text: a regular UTF-8 file of at most MAX_CLUSTER_BYTES (a FIFO or a device named by mistake
    is refused at once rather than waited on); InventoryError naming the file otherwise."""
    try:
        return files.read_text(path, MAX_CLUSTER_BYTES, too_large=" for a cluster file")
    except files.Unreadable as exc:
        if str(exc) == "no such file":
            raise InventoryError(f"{path}: cluster file not found", hint="check the path given to --cluster") from None
        hint = None
        if "regular file" in str(exc):
            hint = "give the path of the cluster file itself, as `wirespeed init` writes it"
        elif "UTF-8" in str(exc):
            hint = "save the cluster file as UTF-8 text"
        raise InventoryError(f"{path}: cannot read cluster file: {exc}", hint=hint) from None


def load_cluster_file(path: Path) -> Cluster:
    return parse_cluster_toml(read_cluster_text(path), str(path))


def _from_env_var(path: Path) -> Cluster:
    if not path.exists():
        raise InventoryError(
            f"${CLUSTER_ENV}={path}: no such cluster file",
            hint=f"unset {CLUSTER_ENV}, or point it at the file `wirespeed init` wrote",
        )
    return load_cluster_file(path)


def resolve_cluster(
    cluster_file: Path | None,
    hosts: str | None,
    user: str | None = None,
    launcher: Launcher = Launcher.AUTO,
    env: Mapping[str, str] | None = None,
) -> ResolvedCluster:
    """The nodes, from the first of: --cluster, --hosts, $WIRESPEED_CLUSTER, the Slurm allocation this runs in,
    the cluster file `wirespeed init` wrote (`init_cluster_path`); else a UsageError (`NO_CLUSTER`). A choice not
    made on the command line is said (the note). Inside an allocation that holds every node, srun starts the
    processes (`--launcher ssh` keeps ssh)."""
    if cluster_file and hosts:
        raise UsageError("give --cluster or --hosts, not both")
    environment = os.environ if env is None else env
    named: Cluster | None = None
    said: str | None = None
    if cluster_file:
        named = load_cluster_file(cluster_file)
    elif hosts:
        named = parse_host_list(hosts, user)
    elif environment.get(CLUSTER_ENV):
        path = Path(environment[CLUSTER_ENV])
        named = _from_env_var(path)
        said = f"using ${CLUSTER_ENV}={path}"
    choice = choose_launch(launcher, named, allocation_from_env(environment), shutil.which("srun") is not None)
    if choice.cluster is not None:
        note = "; ".join(text for text in (said, choice.note) if text) or None
        return ResolvedCluster(choice.cluster, note, choice.slurm)
    written = init_cluster_path(environment)
    if written.is_file():
        return ResolvedCluster(load_cluster_file(written), f"using {written} (written by wirespeed init)")
    raise UsageError(NO_CLUSTER)


def load_switch(path: Path, cluster: Cluster) -> SwitchConfig | None:
    """The `[switch]` table of a cluster file, or None when it names no switch."""
    data = loads_toml(read_cluster_text(path), str(path))
    table = data.get("switch")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise InventoryError(f"{path}: [switch] must be a table")
    return parse_switch_table(table, str(path), cluster.names)
