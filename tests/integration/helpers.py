"""Helpers for tests on the emulated cluster: measure a half with iperf3, list what a testbed left behind."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wirespeed.core.cluster.inventory import Cluster
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build, system
from wirespeed.testbed.plan import host_iface_name
from wirespeed.testbed.state import TestbedState, testbed_dir


def iperf3_gbps(remote: Remote, client: str, server: str, server_addr: str, port: int, seconds: int = 4) -> float:
    """Receiver-side TCP throughput in Gb/s (10^9 bit/s) from `client` to `server_addr` on `server`."""
    cluster = remote.cluster
    server_proc = remote.start(cluster.node(server), ["iperf3", "-s", "-1", "-B", server_addr, "-p", str(port)])
    try:
        result = None
        for _ in range(20):  # the server needs a moment to listen
            result = remote.run(
                cluster.node(client),
                ["iperf3", "-c", server_addr, "-p", str(port), "-t", str(seconds), "-O", "1", "-J"],
                timeout_s=seconds + 20,
            )
            if "Connection refused" not in result.stdout + result.stderr:  # iperf3 -J may exit 0 on it
                break
            subprocess.run(["sleep", "0.2"], check=True)
        assert result is not None and result.ok, result.message if result else "no result"
        data = json.loads(result.stdout)
        assert "sum_received" in data.get("end", {}), data.get("error", result.stdout[-2000:])
        return float(data["end"]["sum_received"]["bits_per_second"]) / 1e9
    finally:
        server_proc.stop()


def parallel_gbps(remote: Remote, flows: list[tuple[str, str, str, int]], seconds: int = 4) -> list[float]:
    """Several iperf3 flows at once: (client, server, server address, port) each; Gb/s per flow."""
    results: list[float] = [0.0] * len(flows)
    errors: list[BaseException] = []

    def one(index: int, flow: tuple[str, str, str, int]) -> None:
        try:
            results[index] = iperf3_gbps(remote, *flow, seconds=seconds)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i, f)) for i, f in enumerate(flows)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def leftovers(prefix: str) -> list[str]:
    """Everything of a testbed that still exists after `down`: namespaces, the host link, processes, files."""
    found: list[str] = []
    for netns in system.netns_list():
        if netns.startswith(prefix):
            found.append(f"namespace {netns}")
    if system.link_exists(host_iface_name(prefix)):
        found.append(f"host link {host_iface_name(prefix)}")
    directory = testbed_dir(prefix)
    if directory.exists():
        found.append(f"directory {directory}")
        found += [f"process {pid}" for pid in system.pids_mentioning(str(directory))]
    mounts = Path("/proc/self/mountinfo").read_text()
    if str(directory) in mounts:
        found.append(f"mount under {directory}")
    return found


def cluster_remote(cluster: Cluster) -> Remote:
    return Remote(cluster)


@contextmanager
def running_testbed(prefix: str, **kwargs: object) -> Iterator[tuple[TestbedState, Remote]]:
    """A testbed for one test or module, reached through its cluster file; always removed, and checked gone."""
    try:
        state = build.up(prefix=prefix, **kwargs)  # type: ignore[arg-type]
        remote = Remote(load_cluster_file(state.cluster_file))
        with remote.owned():
            yield state, remote
    finally:
        build.down(prefix)
        assert leftovers(prefix) == []


def processes_in(netns: str, pattern: str) -> list[str]:
    """The command lines of the processes in namespace `netns` (an emulated node) that match `pattern`: what a
    test left running on a node of its own testbed, whatever else runs on the machine."""
    import re

    found = []
    pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, check=False).stdout
    for pid in pids.split():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if re.search(pattern, argv):
            found.append(argv)
    return found
