"""A real Slurm on the emulated cluster: munged and slurmctld on this host, one slurmd inside each node.

Each slurmd runs in its node's network and UTS namespaces (as sshd does), so a job step started there sees the
node's interfaces and host name, exactly as wirespeed's processes do over ssh. Everything lives under the
testbed's directory (`slurm/`): `testbed down` finds the daemons by that path and by namespace, and removes it.
Users of the testbed run `SLURM_CONF=<dir>/slurm/slurm.conf salloc -N 3 wirespeed bench ...`.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path

from wirespeed.core.errors import TestbedError
from wirespeed.testbed.build import node_argv
from wirespeed.testbed.plan import TestbedPlan
from wirespeed.testbed.state import TestbedState
from wirespeed.testbed.system import pid_alive, run

SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "srun", "salloc")
SLURMD_PORT = 6818  # inside each node's own namespace: no clash with the host's
CTLD_BASE_PORT = 16817  # on the host: off Slurm's default so a real controller there is left alone

# slurmd (22.05+) will not start without a cgroup hierarchy it recognises, and `ip netns exec` mounts a fresh /sys
# without one: give the node's private mount namespace a v1 layout (freezer for process tracking, the named
# systemd hierarchy the plugin checks for).
_SLURMD_SCRIPT = r"""set -e
mount -t tmpfs wirespeed-cgroup /sys/fs/cgroup
mkdir -p /sys/fs/cgroup/freezer /sys/fs/cgroup/systemd
mount -t cgroup -o freezer freezer /sys/fs/cgroup/freezer
mount -t cgroup -o none,name=systemd systemd /sys/fs/cgroup/systemd
exec "$@"
"""


def slurm_dir(state: TestbedState) -> Path:
    return state.directory / "slurm"


def slurm_conf_path(state: TestbedState) -> Path:
    return slurm_dir(state) / "slurm.conf"


def controller_name(plan: TestbedPlan) -> str:
    return f"{plan.prefix.rstrip('-')}-ctl"


def controller_port(plan: TestbedPlan) -> int:
    return CTLD_BASE_PORT + plan.mgmt_index


def render_slurm_conf(plan: TestbedPlan, directory: Path, cpus: int) -> str:
    """slurm.conf for the testbed: munge on a private socket, no cgroup confinement, every node in one partition."""
    host_address = plan.host_mgmt_address.split("/")[0]
    lines = [
        f"# wirespeed testbed {plan.prefix!r}: written by `wirespeed testbed up --slurm`, removed by `down`",
        f"ClusterName={plan.prefix.rstrip('-')}",
        f"SlurmctldHost={controller_name(plan)}({host_address})",
        f"SlurmctldPort={controller_port(plan)}",
        f"SlurmdPort={SLURMD_PORT}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={directory / 'munge.socket'}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={directory / 'state'}",
        f"SlurmdSpoolDir={directory / 'spool'}/%n",
        f"SlurmctldPidFile={directory / 'slurmctld.pid'}",
        f"SlurmdPidFile={directory / 'spool'}/%n.pid",
        f"SlurmctldLogFile={directory / 'slurmctld.log'}",
        f"SlurmdLogFile={directory / 'spool'}/%n.log",
        f"TaskProlog={directory / 'task_prolog'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "MpiDefault=none",
        "SlurmdTimeout=60",
    ]
    for node in plan.nodes:
        address = node.mgmt_address.split("/")[0]
        lines.append(f"NodeName={node.name} NodeAddr={address} CPUs={cpus} State=UNKNOWN")
    lines.append(f"PartitionName={plan.prefix.rstrip('-')} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def render_task_prolog(state: TestbedState) -> str:
    """What sshd's SetEnv gives a testbed node's sessions, given to its job steps (TaskProlog `export` lines)."""
    nodes = state.directory / "nodes"
    return "\n".join(
        [
            "#!/bin/sh",
            "# wirespeed testbed: a job step on a node gets that node's environment, as an ssh session there does",
            'echo "export WIRESPEED_EMULATED=1"',
            f'echo "export WIRESPEED_CONFIG_ROOT={nodes}/$SLURMD_NODENAME/root"',
            "",
        ]
    )


def require_slurm() -> None:
    missing = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None]
    if missing:
        raise TestbedError(
            f"missing program(s) for the testbed's Slurm: {', '.join(missing)}",
            hint="apt install slurmctld slurmd slurm-client munge (`make install` does)",
        )


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def slurm_running(state: TestbedState) -> bool:
    pid = _pid(slurm_dir(state) / "slurmctld.pid")
    return pid is not None and pid_alive(pid)


def start_slurm(state: TestbedState) -> Path:
    """Start munged, slurmctld and every node's slurmd, unless running; wait until all nodes are idle.
    Returns the path of slurm.conf."""
    require_slurm()
    plan = state.plan
    directory = slurm_dir(state)
    conf = slurm_conf_path(state)
    if slurm_running(state) and conf.exists():
        return conf
    for sub in ("state", "spool"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)  # munged refuses a key or socket directory others can write
    key = directory / "munge.key"
    if not key.exists():
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
    conf.write_text(render_slurm_conf(plan, directory, os.cpu_count() or 1))
    prolog = directory / "task_prolog"
    prolog.write_text(render_task_prolog(state))
    prolog.chmod(0o755)
    run(
        [
            "munged",
            f"--key-file={key}",
            f"--socket={directory / 'munge.socket'}",
            f"--pid-file={directory / 'munged.pid'}",
            f"--log-file={directory / 'munged.log'}",
            f"--seed-file={directory / 'munged.seed'}",
            "--force",
        ],
        "starting munged",
    )
    # slurmctld accepts to run only on the host its SlurmctldHost names: give it a UTS namespace of that name.
    run(
        [
            "unshare",
            "--uts",
            "sh",
            "-c",
            'hostname "$1" && shift && exec "$@"',
            "wirespeed-slurmctld",
            controller_name(plan),
            "slurmctld",
            "-f",
            str(conf),
        ],
        "starting slurmctld",
    )
    for node in plan.nodes:
        run(
            node_argv(state, node.name, ["sh", "-c", _SLURMD_SCRIPT, "wirespeed-slurmd", "slurmd", "-f", str(conf)]),
            f"{node.name}: starting slurmd",
        )
    wait_for_nodes(state)
    return conf


def wait_for_nodes(state: TestbedState, timeout_s: float = 30.0) -> None:
    """Until slurmctld answers and every slurmd has registered (sinfo shows no node down or unknown)."""
    conf = slurm_conf_path(state)
    env_argv = ["env", f"SLURM_CONF={conf}", "sinfo", "--noheader", "--Node", "--format=%N %t"]
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        if _port_open(state.plan.host_mgmt_address.split("/")[0], controller_port(state.plan)):
            last = run(env_argv, "asking sinfo", check=False)
            states = dict(line.split() for line in last.splitlines() if len(line.split()) == 2)
            if len(states) == len(state.plan.nodes) and all(s.rstrip("*~#") == "idle" for s in states.values()):
                return
        time.sleep(0.3)
    raise TestbedError(
        f"Slurm nodes not idle after {timeout_s:g} s: {last.strip() or 'slurmctld does not answer'}",
        hint=f"see {slurm_dir(state)}/slurmctld.log and spool/*.log",
    )


def _port_open(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False
