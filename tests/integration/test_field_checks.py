"""Issue 22 on the emulated cluster: a stale /etc/nccl.conf in a node's own /etc fails nccl.conf, and a
docker0-like bridge with the same address on two nodes warns bootstrap.iface; `check --snapshot` on what
`wirespeed snapshot` recorded says the same."""

from __future__ import annotations

import io
import json
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.checks.model import CheckResult, CheckStatus
from wirespeed.engine import checks
from wirespeed.engine.discover import discover_live
from wirespeed.engine.remote import Remote
from wirespeed.testbed import state as testbed_state

from .helpers import running_testbed

pytestmark = pytest.mark.root
PREFIX = "wfp-"
IDS = ["nccl.conf", "bootstrap.iface"]
BRIDGE_ADDRESS = "198.19.250.1/24"  # the same on both nodes, as docker0's 172.17.0.1/16 is (inside our namespaces)
STALE = "# left by an image\nNCCL_SOCKET_IFNAME=eth0\nNCCL_IB_USE_INLINE=1\n"


def ip(netns: str, *argv: str) -> None:
    subprocess.run(["ip", "-n", netns, *argv], check=True, capture_output=True)


def bridge_up(netns: str) -> None:
    """A docker0-like bridge with a veth port, as docker0 has with a container running: so it has carrier."""
    ip(netns, "link", "add", "wsdocker0", "type", "bridge", "stp_state", "0", "forward_delay", "0")
    ip(netns, "link", "add", "wsveth0", "type", "veth", "peer", "name", "wsveth1")
    ip(netns, "link", "set", "wsveth0", "master", "wsdocker0")
    ip(netns, "addr", "add", BRIDGE_ADDRESS, "dev", "wsdocker0")
    # Wait for the event, not for a time: `ip monitor` prints the bridge's link change when carrier comes; its
    # output only wakes the check (the deadline bounds a monitor that subscribed after the change).
    with subprocess.Popen(
        ["ip", "-n", netns, "monitor", "link", "dev", "wsdocker0"], stdout=subprocess.PIPE, text=True
    ) as monitor:
        try:
            ip(netns, "link", "set", "wsveth1", "up")
            ip(netns, "link", "set", "wsveth0", "up")
            ip(netns, "link", "set", "wsdocker0", "up")
            deadline = time.monotonic() + 15
            while not _has_carrier(netns) and time.monotonic() < deadline:
                ready, _, _ = select.select([monitor.stdout], [], [], 0.5)
                if ready and monitor.stdout is not None:
                    monitor.stdout.readline()
        finally:
            monitor.terminate()
    assert _has_carrier(netns)


def _has_carrier(netns: str) -> bool:
    out = subprocess.run(["ip", "-n", netns, "-j", "link", "show", "wsdocker0"], capture_output=True, text=True)
    links = json.loads(out.stdout or "[]")
    return bool(links) and "LOWER_UP" in links[0].get("flags", [])


@pytest.fixture(scope="module")
def cluster() -> Iterator[Remote]:
    with running_testbed(PREFIX, nodes=2, topology="direct") as (_, remote):
        etc = testbed_state.testbed_dir(PREFIX) / "nodes" / f"{PREFIX}1" / "root" / "etc"
        (etc / "nccl.conf").write_text(STALE)
        for node in (f"{PREFIX}1", f"{PREFIX}2"):
            bridge_up(node)
        yield remote


def run(remote: Remote) -> dict[str, CheckResult]:
    found = discover_live(remote)
    outcome = checks.run_checks(found, IDS, checks.measure_active(remote, found, IDS))
    assert outcome.errors == []
    return {r.id: r for r in outcome.results}


def test_a_stale_nccl_conf_in_the_nodes_own_etc_fails(cluster: Remote) -> None:
    result = run(cluster)["nccl.conf"]
    assert result.status is CheckStatus.FAIL
    subjects = {(e.node, e.subject) for e in result.evidence}
    assert (f"{PREFIX}1", "/etc/nccl.conf:2 NCCL_SOCKET_IFNAME") in subjects  # eth0: no such interface
    assert (f"{PREFIX}1", "/etc/nccl.conf:3 NCCL_IB_USE_INLINE") in subjects
    assert all(e.node == f"{PREFIX}1" for e in result.evidence)  # the host's /etc and node 2's are not read
    assert any("sudo sed -i '3s/^/# /' /etc/nccl.conf" in c for f in result.fixes for c in f.commands)


def test_a_bridge_with_the_same_address_on_two_nodes_warns(cluster: Remote) -> None:
    result = run(cluster)["bootstrap.iface"]
    assert result.status is CheckStatus.WARN
    seen = {(e.node, e.subject, e.value) for e in result.evidence}
    assert {(f"{PREFIX}1", "wsdocker0", BRIDGE_ADDRESS), (f"{PREFIX}2", "wsdocker0", BRIDGE_ADDRESS)} <= seen
    text = "\n".join(c for f in result.fixes for c in f.commands)
    assert "NCCL_SOCKET_IFNAME=" in text and "btl_tcp_if_include = " in text and "--node-ip-address=" in text


def test_the_snapshot_gives_the_same_findings(cluster: Remote, tmp_path: Path) -> None:
    live = run(cluster)
    cluster_file = str(testbed_state.testbed_dir(PREFIX) / "cluster.toml")
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    status = main(["snapshot", "--cluster", cluster_file, "-o", str(tmp_path), "--no-probe"], env)
    assert isinstance(env.stderr, io.StringIO) and isinstance(env.stdout, io.StringIO)
    assert status == 0, env.stderr.getvalue() + env.stdout.getvalue()
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    main(
        [
            "check",
            "--snapshot",
            str(tmp_path),  # every node's snapshot in it
            "--only",
            ",".join(IDS),
            "--json",
        ],
        env,
    )
    assert isinstance(env.stdout, io.StringIO) and isinstance(env.stderr, io.StringIO)
    assert env.stdout.getvalue(), env.stderr.getvalue() + str(sorted(tmp_path.rglob("meta.json")))
    offline = {r["id"]: r for r in json.loads(env.stdout.getvalue())["results"]}
    for check_id, result in live.items():
        assert offline[check_id]["status"] == result.status.value
        assert {(e["node"], e["subject"]) for e in offline[check_id]["evidence"]} == {
            (e.node, e.subject) for e in result.evidence
        }
