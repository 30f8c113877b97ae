"""A four-node ring on the emulated cluster: `discover` finds it in order, `check` fails the missing routes and the
relays that do not forward, `fix --yes` makes every pair reachable through the ring (the kernel of each relay's
namespace forwarding), and `fix --revert` puts everything back."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import junitparser
import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.engine.remote import Remote
from wirespeed.testbed import state as testbed_state

from .helpers import running_testbed

pytestmark = pytest.mark.root

PREFIX = "wrg-"
COUNT = 4
NODES = [f"{PREFIX}{i}" for i in range(1, COUNT + 1)]
FORWARD_FILE = "etc/sysctl.d/93-wirespeed-forward.conf"


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def addresses(index: int) -> list[str]:
    """Node `index`'s (1-based) four fabric addresses: port 0 on cable index-1, port 1 on the cable before."""
    cables = ((index - 1) % COUNT, (index - 2) % COUNT)
    return [f"198.19.{2 * cable + half}.{index}" for cable in cables for half in (0, 1)]


def run(remote: Remote, node: str, *argv: str) -> str:
    result = remote.run(remote.cluster.node(node), list(argv), timeout_s=60)
    assert result.ok, result.message
    return result.stdout


def unreachable(remote: Remote) -> list[str]:
    """Every node pings every fabric address of every other node once: the ones that did not answer."""
    failed: list[str] = []
    for index, node in enumerate(NODES, start=1):
        targets = [a for other in range(1, COUNT + 1) if other != index for a in addresses(other)]
        script = "for a in " + " ".join(targets) + '; do ping -n -q -c1 -W2 "$a" >/dev/null 2>&1 || echo "$a"; done'
        failed += [f"{node} -> {a}" for a in run(remote, node, "sh", "-c", script).split()]
    return failed


def statuses(cluster: str) -> dict[str, dict[str, object]]:
    code, out, err = cli("check", "--cluster", cluster, "--only", "ring.routes,ring.forward", "--json")
    assert code in (0, 1), err
    return {r["id"]: r for r in json.loads(out)["results"]}


def test_four_node_ring_discovered_fixed_and_reverted(tmp_path: Path) -> None:
    with running_testbed(PREFIX, nodes=COUNT, topology="ring") as (_, remote):
        cluster = remote.cluster.source
        etc_of = {n: testbed_state.testbed_dir(PREFIX) / "nodes" / n / "root" for n in NODES}

        code, out, err = cli("discover", "--cluster", cluster)
        assert code == 0, err
        assert f"ring: {' → '.join([*NODES, NODES[0]])}" in out
        assert "cabling: ring, 4 cable(s)" in out
        assert f"{NODES[3]} port 0 ════ {NODES[0]} port 1" in out

        far = addresses(3)[2]  # wrg-3's port 1, half 0: on the cable from wrg-2
        assert far == "198.19.2.3"
        assert not remote.run(remote.cluster.node(NODES[0]), ["ping", "-n", "-c1", "-W1", far], timeout_s=30).ok

        before = statuses(cluster)
        assert before["ring.routes"]["status"] == "fail"
        fixes = {f["node"]: f["commands"] for f in before["ring.routes"]["fixes"]}  # type: ignore[union-attr]
        assert "sudo ip route replace 198.19.2.0/24 via 198.19.0.2 dev enp1s0f0np0" in fixes[NODES[0]]
        assert before["ring.forward"]["status"] == "fail"  # every node relays, none forwards yet
        assert run(remote, NODES[1], "cat", "/proc/sys/net/ipv4/ip_forward").strip() == "0"

        record = tmp_path / "fix.json"
        code, out, err = cli("fix", "--cluster", cluster, "--yes", "--json", "--record", str(record))
        assert code == 0, err
        route = json.loads(run(remote, NODES[0], "ip", "-j", "route", "get", far))[0]
        assert (route["gateway"], route["dev"]) == ("198.19.0.2", "enp1s0f0np0")  # through wrg-2
        assert run(remote, NODES[0], "ping", "-n", "-c1", "-W2", far)
        assert unreachable(remote) == []
        assert run(remote, NODES[1], "cat", "/proc/sys/net/ipv4/ip_forward").strip() == "1"
        assert "net.ipv4.ip_forward = 1" in (etc_of[NODES[1]] / FORWARD_FILE).read_text()
        after = statuses(cluster)
        assert (after["ring.routes"]["status"], after["ring.forward"]["status"]) == ("pass", "pass"), after

        code, out, err = cli("fix", "--cluster", cluster, "--revert", "--yes", "--json", "--record", str(record))
        assert code == 0, err
        assert not remote.run(remote.cluster.node(NODES[0]), ["ping", "-n", "-c1", "-W1", far], timeout_s=30).ok
        assert "198.19.2.0/24" not in run(remote, NODES[0], "ip", "route", "show")
        for node in NODES:
            assert run(remote, node, "cat", "/proc/sys/net/ipv4/ip_forward").strip() == "0"
            assert not (etc_of[node] / FORWARD_FILE).exists()
        assert statuses(cluster)["ring.routes"]["status"] == "fail"


def test_a_four_node_ring_commissioned_as_an_owner_would(tmp_path: Path) -> None:
    """init on node 1 reaches the far node through the management network; commission does not stop at ssh.mesh
    (the far nodes' fabric addresses wait for the routes its own fix adds) and completes, every check after it
    passing but tools.present (this machine's iperf3 and no nccl-tests)."""
    from wirespeed.testbed.login import shell_argv

    with running_testbed("wrc-", nodes=COUNT, topology="ring") as (state, _):

        def shell(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(shell_argv(state, "wrc-1", list(argv), tty=False), capture_output=True,
                                  text=True, timeout=600, check=False)  # fmt: skip

        done = shell("wirespeed", "init", "--yes", "--no-check")  # finds the neighbours only, and says so
        assert done.returncode == 0, done.stdout + done.stderr
        assert (
            "wrc-2 enp1s0f0np0 (198.19.2.0/24)" in done.stderr and "cabled to a node init did not reach" in done.stderr
        )
        assert "(wrc-1, wrc-2, wrc-4)" in done.stderr
        peers = ",".join(n.mgmt_address.split("/")[0] for n in state.plan.nodes[1:])
        done = shell("wirespeed", "init", "--yes", "--no-check", "--peers", peers)
        assert done.returncode == 0, done.stdout + done.stderr
        done = shell("wirespeed", "commission", "--yes", "--rungs", "tcp-halves", "--seconds", "2", "--no-live",
                     "--runs", str(tmp_path), "--junit", str(tmp_path / "junit.xml"))  # fmt: skip
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    [run_dir] = [p for p in tmp_path.iterdir() if (p / "run.json").exists()]
    before, after = (
        {r["id"]: r for r in json.loads((run_dir / phase / "checks.json").read_text())["results"]}
        for phase in ("before", "after")
    )
    assert before["ssh.mesh"]["status"] == "warn" and "wait for the ring's routes" in before["ssh.mesh"]["summary"]
    assert before["ring.routes"]["status"] == "fail"
    failing = {i: r["summary"] for i, r in after.items() if r["status"] in ("fail", "warn") and i != "tools.present"}
    assert failing == {}, failing
    assert json.loads((run_dir / "run.json").read_text())["status"] == "complete"
    # what CI reads: a case per check as the fixes left the cluster, and the rung after them, passed
    [suite] = list(junitparser.JUnitXml.fromfile(str(tmp_path / "junit.xml")))
    cases = {case.name.split(":")[0]: case for case in suite}
    assert set(after) <= set(cases) and cases["tcp-halves (after)"].is_passed
    assert "ceiling wire" in (cases["tcp-halves (after)"].system_out or "") and suite.failures == suite.errors == 0
