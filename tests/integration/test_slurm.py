"""wirespeed inside a real Slurm allocation on the emulated cluster: slurmctld on this host, a slurmd inside every
node. Nodes come from the allocation, processes start with srun (no ssh), the fabric is measured (not the
management network srun arrives on), mpirun's launch reaches every node, and an interrupted run leaves nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from wirespeed.core.nccl import NcclOptions, NcclPlan, for_slurm, mpirun_argv
from wirespeed.testbed import system
from wirespeed.testbed.slurm import SLURM_TOOLS, slurm_dir, start_slurm

from .helpers import running_testbed

_missing = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None]
pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(bool(_missing), reason=f"needs Slurm ({', '.join(_missing)}): run `make install`"),
]
PREFIX = "wsm-"
NODES = ("wsm-1", "wsm-2", "wsm-3")
HALF_BPS = 300_000_000


@dataclass(frozen=True)
class SlurmBed:
    cluster_file: Path
    directory: Path  # the testbed's slurm/ directory
    env: dict[str, str]  # SLURM_CONF, and PATH with this interpreter's wirespeed first (srun passes it on)


@pytest.fixture(scope="module")
def bed() -> Iterator[SlurmBed]:
    with running_testbed(PREFIX, nodes=3, topology="switch", half_rate_bps=HALF_BPS) as (state, _):
        conf = start_slurm(state)
        directory = slurm_dir(state)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")},
            "SLURM_CONF": str(conf),
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        }
        yield SlurmBed(state.cluster_file, directory, env)
    # `testbed down` stopped munged, slurmctld, every slurmd and step: nothing names the testbed any more
    assert system.pids_mentioning(str(directory)) == []


@pytest.fixture()
def job(bed: SlurmBed) -> Iterator[dict[str, str]]:
    """An allocation of all three nodes without a shell: the environment salloc would give a command in it."""
    granted = subprocess.run(
        ["salloc", "--no-shell", "-N", "3", "--job-name=wirespeed-test"],
        env=bed.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    match = re.search(r"Granted job allocation (\d+)", granted.stderr)
    assert match, granted.stderr
    job_id = match.group(1)
    try:
        yield {**bed.env, "SLURM_JOB_ID": job_id, "SLURM_JOB_NODELIST": "wsm-[1-3]"}
    finally:
        subprocess.run(["scancel", job_id], env=bed.env, check=False, timeout=30)


def wirespeed(*args: str) -> list[str]:
    return [sys.executable, "-m", "wirespeed", *args]


def in_salloc(bed: SlurmBed, salloc: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    """`salloc SALLOC -- wirespeed ARGS`, as a user runs it."""
    argv = ["salloc", *salloc, "--", *wirespeed(*args)]
    return subprocess.run(argv, env=bed.env, capture_output=True, text=True, timeout=120)


def test_salloc_gives_the_nodes_and_srun_runs_there(bed: SlurmBed) -> None:
    done = in_salloc(bed, ["-N", "3"], "exec", "--json", "--", "sh", "-c", "hostname; ip -br -4 addr")
    assert done.returncode == 0, done.stderr
    assert re.search(r"starting processes with srun in Slurm job \d+ \(wsm-\[1-3\]\)", done.stderr)
    data = json.loads(done.stdout)
    assert data["cluster"].startswith("slurm-")
    for result, name in zip(data["results"], NODES, strict=True):
        assert result["node"] == name and result["status"] == "ok"
        lines = result["stdout"].splitlines()
        assert lines[0] == name  # the node's own host name and namespace
        index = NODES.index(name) + 1
        assert any(re.search(rf"^enP7s7\S*\s+UP\s+198\.18\.\d+\.{10 + index}/24", line) for line in lines[1:])
        assert any(line.startswith("enp1s0f1np1") and f".{index}/24" in line for line in lines[1:])


def test_matrix_inside_the_allocation_measures_the_fabric(job: dict[str, str], tmp_path: Path) -> None:
    done = subprocess.run(
        wirespeed("bench", "matrix", "--seconds", "2", "--runs", str(tmp_path), "--json"),
        env=job,
        capture_output=True,
        text=True,
        timeout=180,
    )
    data = json.loads(done.stdout)
    tcp = data["matrices"][0]
    assert (tcp["status"], tcp["pairs"], len(tcp["rounds"])) == ("ran", 3, 3), done.stderr
    for cell in tcp["cells"]:
        # two halves shaped to 300 Mb/s each: never the 10 Gb/s of the unshaped management link srun came in on
        assert 0.8 * 2 * HALF_BPS / 1e9 < cell["tool_gbps"] < 1.1 * 2 * HALF_BPS / 1e9, cell
        assert "enP7s7" not in cell["halves"], cell


def test_launcher_slurm_refuses_a_node_outside_the_allocation(bed: SlurmBed) -> None:
    cluster = str(bed.cluster_file)
    done = in_salloc(bed, ["-N", "2", "-w", "wsm-1,wsm-2"], "exec", "--cluster", cluster, "--launcher", "slurm", "true")
    errors = [line for line in done.stderr.splitlines() if line.startswith("wirespeed:")]
    assert done.returncode == 2, done.stderr
    assert len(errors) == 1 and "wsm-3 not in Slurm job" in errors[0] and "hint: allocate" in errors[0]
    assert "Traceback" not in done.stderr


def test_a_cluster_file_maps_to_slurm_names_and_a_dead_step_reads_as_one_line(bed: SlurmBed) -> None:
    cluster = str(bed.cluster_file)
    done = in_salloc(bed, ["-N", "3"], "exec", "--cluster", cluster, "--json", "--", "sh", "-c", "echo why >&2; exit 3")
    data = json.loads(done.stdout)
    assert done.returncode == 3
    assert [r["message"] for r in data["results"]] == [f"{n}: sh exited with status 3: why" for n in NODES]


def test_mpirun_started_by_srun_reaches_every_node_by_slurm_name(bed: SlurmBed) -> None:
    """The NCCL rung's launch, with a script in place of nccl-tests (no GPUs here): mpirun runs as a step on the
    first node and starts a rank on each node through Slurm."""
    script = bed.directory / "rank.sh"
    script.write_text("#!/bin/sh\nhostname\n")
    script.chmod(0o755)
    plan = NcclPlan(
        launcher="wsm-1",
        nodes=NODES,
        hosts=(("198.19.2.1", 1), ("198.19.2.2", 1), ("198.19.2.3", 1)),  # fabric addresses, as ssh would use
        binary=str(script),
        env=(),
        mca=(),
        min_bytes=1,
        max_bytes=2,
    )
    argv = mpirun_argv(for_slurm(plan, {name: name for name in NODES}, "1"), NcclOptions(), None, as_root=True)
    assert argv[:2] == ["env", "SLURM_OVERLAP=1"] and "wsm-2:1" in argv[argv.index("-H") + 1]
    done = in_salloc(bed, ["-N", "3"], "exec", "--hosts", "wsm-1", "--json", "--", *argv)
    (result,) = json.loads(done.stdout)["results"]
    assert result["status"] == "ok", result["message"] + result["stdout"]
    assert sorted(result["stdout"].split()) == list(NODES)


def test_an_interrupted_run_inside_the_allocation_leaves_no_process(job: dict[str, str], tmp_path: Path) -> None:
    process = subprocess.Popen(
        wirespeed("bench", "tcp", "--seconds", "30", "--runs", str(tmp_path)),
        env=job,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not any(_iperf3_in(node) for node in NODES):
            assert time.monotonic() < deadline, "iperf3 never started"
            assert process.poll() is None, process.communicate()
            time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "interrupted" in stderr, stderr
    deadline = time.monotonic() + 15
    while any(_iperf3_in(node) for node in NODES) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [node for node in NODES if _iperf3_in(node)] == []
    assert system.pids_mentioning(f"--jobid={job['SLURM_JOB_ID']}") == []  # no srun of ours either
    assert any(tmp_path.rglob("discovery.json"))  # what was done before the interrupt is kept


def _iperf3_in(netns: str) -> bool:
    """An iperf3 server or client in the node (discovery's `iperf3 --version` does not count)."""
    for pid in system.netns_pids(netns):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if Path(argv[0].decode(errors="replace")).name == "iperf3" and (b"-s" in argv or b"-c" in argv):
            return True
    return False
