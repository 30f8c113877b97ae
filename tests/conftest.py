"""Shared test settings: integration tests need root and iproute2; they skip with the reason otherwise."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

import pytest

# Tests interrupt their children with SIGINT and expect Ctrl-C's ending. A suite started in the background by a
# shell without job control (`make test &`, nohup) inherits SIGINT ignored, and so would every child: take it back
# (a handled signal is reset to its default in the children wirespeed and the tests start).
signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT_TOOLS = ("ip", "tc", "iperf3", "ping", "ssh", "ssh-keygen", "nsenter", "unshare")


def root_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root: the emulated cluster uses network namespaces, veth, tc and sshd (CI runs as root)"
    missing = [tool for tool in ROOT_TOOLS if shutil.which(tool) is None]
    if not any(os.path.exists(p) for p in ("/usr/sbin/sshd", "/usr/bin/sshd")) and shutil.which("sshd") is None:
        missing.append("sshd")
    if missing:
        return f"needs {', '.join(missing)}: run `make install`"
    return None


def gpu_skip_reason() -> str | None:
    """The NCCL rung's tests need two GPUs, mpirun and nccl-tests built with MPI (the GPU machine has them)."""
    if shutil.which("nvidia-smi") is None:
        return "needs 2 NVIDIA GPUs: nvidia-smi not found (run on the GPU machine, see docs/PERFORMANCE.md)"
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False).stdout
    if sum(line.startswith("GPU ") for line in listed.splitlines()) < 2:
        return "needs 2 NVIDIA GPUs: nvidia-smi -L lists fewer"
    if shutil.which("mpirun") is None:
        return "needs mpirun (OpenMPI)"
    tests_dir = os.environ.get("NCCL_TESTS_DIR", "")
    if shutil.which("sendrecv_perf") is None and not os.access(os.path.join(tests_dir, "sendrecv_perf"), os.X_OK):
        return "needs nccl-tests built with MPI=1 on PATH or in NCCL_TESTS_DIR"
    return None


def gpu_nodes_skip_reason() -> str | None:
    """Emulated nodes that each run one rank on this machine's GPU: a GPU, mpirun, and nccl-tests built with MPI
    where every node's discovery looks (NCCL_TESTS_DIR is not passed over ssh): scripts/device/prepare does it."""
    if shutil.which("nvidia-smi") is None:
        return "needs an NVIDIA GPU: nvidia-smi not found (the GPU machine, after scripts/device/prepare)"
    if shutil.which("mpirun") is None:
        return "needs mpirun (OpenMPI)"
    if not os.access("/opt/nccl-tests/build/sendrecv_perf", os.X_OK):
        return "needs nccl-tests in /opt/nccl-tests/build: run scripts/device/prepare (docs/device.md)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reasons = {"root": root_skip_reason()}
    if any("gpu" in item.keywords for item in items):
        reasons["gpu"] = gpu_skip_reason()
    if any("gpu_nodes" in item.keywords for item in items):
        reasons["gpu_nodes"] = gpu_nodes_skip_reason()
    for item in items:
        for marker, reason in reasons.items():
            if reason is not None and marker in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))
