"""The emulated cluster end to end: topologies, ssh through the inventory, shaped halves, faults, teardown.

Needs root (network namespaces); skipped with the reason otherwise. Every testbed is removed in a `finally`,
and each test checks that `down` left nothing behind.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.cluster.inventory import Node
from wirespeed.core.outcome import Status
from wirespeed.engine.remote import Remote, check_agents
from wirespeed.testbed import build, system
from wirespeed.testbed.state import TestbedState as BedState

from .helpers import iperf3_gbps, leftovers, parallel_gbps, running_testbed

pytestmark = pytest.mark.root
HALF_RATE = 10**9  # the default --half-rate, 1gbit


def addr(state: BedState, node: str, iface: str) -> str:
    address = state.plan.node(node).iface(iface).address
    assert address is not None
    return address.split("/")[0]


def run_cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def direct() -> Iterator[tuple[BedState, Remote]]:
    with running_testbed("wtd-", nodes=2, topology="direct", cables=2) as bed:
        yield bed


def test_direct_nodes_answer_through_the_inventory(direct: tuple[BedState, Remote]) -> None:
    _, remote = direct
    results = remote.run_all(["hostname"])
    assert [r.status for r in results] == [Status.OK, Status.OK]
    assert [r.stdout.strip() for r in results] == ["wtd-1", "wtd-2"]  # each node has its own UTS namespace
    links = remote.run_all(["ip", "-j", "link", "show"])
    for result in links:
        names = {link["ifname"] for link in json.loads(result.stdout)}
        assert {"enP7s7", "enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"} <= names
    sysfs = remote.run(remote.cluster.node("wtd-2"), ["cat", "/sys/class/net/enP2p1s0f1np1/mtu"])
    assert sysfs.stdout.strip() == "9000"  # the node's own /sys, as discovery will read it


def test_wirespeed_runs_on_the_nodes(direct: tuple[BedState, Remote]) -> None:
    _, remote = direct
    checks = check_agents(remote)
    assert [c.ok for c in checks] == [True, True], [c.message for c in checks]


def test_exec_command_uses_the_up_testbed(direct: tuple[BedState, Remote]) -> None:
    state, _ = direct
    code, out, err = run_cli(
        "exec", "--cluster", str(state.cluster_file), "--json", "--", "cat", "/proc/sys/kernel/hostname"
    )
    assert code == 0, err
    data = json.loads(out)
    assert [r["stdout"].strip() for r in data["results"]] == ["wtd-1", "wtd-2"]


def test_a_shaped_half_carries_its_rate(direct: tuple[BedState, Remote]) -> None:
    state, remote = direct
    gbps = iperf3_gbps(remote, "wtd-1", "wtd-2", addr(state, "wtd-2", "enp1s0f1np1"), 5201)
    assert gbps == pytest.approx(HALF_RATE / 1e9, rel=0.10)


def test_two_halves_carry_twice_the_rate(direct: tuple[BedState, Remote]) -> None:
    state, remote = direct
    flows = [
        ("wtd-1", "wtd-2", addr(state, "wtd-2", "enp1s0f1np1"), 5202),
        ("wtd-1", "wtd-2", addr(state, "wtd-2", "enP2p1s0f1np1"), 5203),
    ]
    per_half = parallel_gbps(remote, flows)
    assert all(g == pytest.approx(HALF_RATE / 1e9, rel=0.10) for g in per_half), per_half
    assert sum(per_half) == pytest.approx(2 * HALF_RATE / 1e9, rel=0.10)


def ping(remote: Remote, node: str, target: str, size: int | None = None) -> bool:
    argv = ["ping", "-c", "1", "-W", "1", target]
    if size is not None:
        argv[1:1] = ["-M", "do", "-s", str(size)]
    return remote.run(remote.cluster.node(node), argv, timeout_s=10).ok


def test_fault_mtu_and_revert(direct: tuple[BedState, Remote]) -> None:
    state, remote = direct
    target = addr(state, "wtd-2", "enp1s0f0np0")
    assert ping(remote, "wtd-1", target, size=8972)  # 9000 minus IPv4 and ICMP headers
    build.fault("wtd-", "wtd-2", "enp1s0f0np0", build.Fault(mtu=1500))
    try:
        assert build.status("wtd-")["faults"] == {"wtd-2/enp1s0f0np0": {"mtu": 1500}}
        assert not ping(remote, "wtd-1", target, size=8972)
        assert ping(remote, "wtd-1", target, size=1472)
    finally:
        build.revert("wtd-", "wtd-2", "enp1s0f0np0")
    assert ping(remote, "wtd-1", target, size=8972)
    assert build.status("wtd-")["faults"] == {}


def iface_row(prefix: str, node: str, iface: str) -> dict[str, object]:
    for entry in build.status(prefix)["nodes"]:
        if entry["name"] == node:
            for row in entry["interfaces"]:
                if row["iface"] == iface:
                    return dict(row)
    raise AssertionError(f"{node}/{iface} not in status")


def test_fault_down_unaddress_ipv6_and_revert(direct: tuple[BedState, Remote]) -> None:
    state, remote = direct
    target = addr(state, "wtd-1", "enP2p1s0f0np0")
    code, _, err = run_cli("testbed", "fault", "--prefix", "wtd-", "wtd-1", "enP2p1s0f0np0", "--down")
    assert code == 0, err
    assert "UP" not in iface_row("wtd-", "wtd-1", "enP2p1s0f0np0")["flags"]  # type: ignore[operator]
    assert not ping(remote, "wtd-2", target)
    run_cli("testbed", "fault", "--prefix", "wtd-", "wtd-1", "enP2p1s0f0np0", "--revert")
    assert ping(remote, "wtd-2", target)

    build.fault("wtd-", "wtd-1", "enP2p1s0f0np0", build.Fault(unaddress=True))
    assert iface_row("wtd-", "wtd-1", "enP2p1s0f0np0")["ipv4"] == []
    build.fault("wtd-", "wtd-1", "enP2p1s0f0np0", build.Fault(ipv6=True))
    deadline = time.monotonic() + 5
    while not iface_row("wtd-", "wtd-1", "enP2p1s0f0np0")["ipv6"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any(str(a).startswith("fe80:") for a in iface_row("wtd-", "wtd-1", "enP2p1s0f0np0")["ipv6"])  # type: ignore[attr-defined]
    build.revert("wtd-", "wtd-1", "enP2p1s0f0np0")
    row = iface_row("wtd-", "wtd-1", "enP2p1s0f0np0")
    assert row["ipv4"] == [f"{target}/24"] and row["ipv6"] == []
    assert ping(remote, "wtd-2", target)


def test_fault_rate_degrades_a_half(direct: tuple[BedState, Remote]) -> None:
    state, remote = direct
    build.fault("wtd-", "wtd-1", "enp1s0f0np0", build.Fault(rate_bps=300_000_000))
    try:
        assert iface_row("wtd-", "wtd-1", "enp1s0f0np0")["rate_bps"] == 300_000_000
        gbps = iperf3_gbps(remote, "wtd-1", "wtd-2", addr(state, "wtd-2", "enp1s0f0np0"), 5204)
        assert gbps == pytest.approx(0.3, rel=0.10)
    finally:
        build.revert("wtd-", "wtd-1", "enp1s0f0np0")
    assert iface_row("wtd-", "wtd-1", "enp1s0f0np0")["rate_bps"] == HALF_RATE


def test_unreachable_node_is_one_line(direct: tuple[BedState, Remote]) -> None:
    _, remote = direct
    node = Node(name="ghost", host="wtd-1", port=2)  # nothing listens on port 2
    result = remote.run(node, ["true"], timeout_s=20)
    assert result.status is Status.UNREACHABLE
    assert result.message.startswith("ghost: unreachable") and "\n" not in result.message


def test_wrong_user_is_one_line(direct: tuple[BedState, Remote]) -> None:
    _, remote = direct
    result = remote.run(Node(name="wtd-1", host="wtd-1", user="nobody-here"), ["true"], timeout_s=20)
    assert result.status is Status.AUTH_FAILED
    assert result.message.startswith("wtd-1: authentication failed") and "\n" not in result.message


def test_missing_command_is_one_line(direct: tuple[BedState, Remote]) -> None:
    _, remote = direct
    results = remote.run_all(["no-such-command-wirespeed"])
    assert [r.status for r in results] == [Status.NOT_FOUND, Status.NOT_FOUND]
    assert results[0].message == "wtd-1: command not found: no-such-command-wirespeed"


def test_timeout_is_one_line_and_leaves_nothing_running(direct: tuple[BedState, Remote]) -> None:
    _, remote = direct
    started = time.monotonic()
    results = remote.run_all(["sleep", "97"], timeout_s=1.5)
    assert time.monotonic() - started < 10
    assert [r.status for r in results] == [Status.TIMED_OUT, Status.TIMED_OUT]
    assert results[1].message == "wtd-2: timed out after 1.5 s running sleep"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        left = [p for ns in ("wtd-1", "wtd-2") for p in system.netns_pids(ns) if _cmdline(p).startswith(b"sleep\x0097")]
        if not left:
            break
        time.sleep(0.1)
    assert left == []


def test_one_bad_node_does_not_stop_the_others(direct: tuple[BedState, Remote]) -> None:
    state, _ = direct
    cluster_text = state.cluster_file.read_text() + '\n[[nodes]]\nname = "ghost"\nhost = "wtd-1"\nport = 2\n'
    path = state.directory / "with-ghost.toml"
    path.write_text(cluster_text)
    code, out, err = run_cli("exec", "--cluster", str(path), "--json", "--", "hostname")
    assert code == 255  # the worst node's status, as ssh reports an unreachable host
    statuses = {r["node"]: r["status"] for r in json.loads(out)["results"]}
    assert statuses == {"wtd-1": "ok", "wtd-2": "ok", "ghost": "unreachable"}
    assert "wirespeed: ghost: unreachable" in err and "Traceback" not in err


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def test_ring_of_three_cables_port0_to_next_port1() -> None:
    with running_testbed("wtr-", nodes=3, topology="ring") as (state, remote):
        for index in (1, 2, 3):
            here, there = f"wtr-{index}", f"wtr-{index % 3 + 1}"
            for half_iface, peer_iface in (("enp1s0f0np0", "enp1s0f1np1"), ("enP2p1s0f0np0", "enP2p1s0f1np1")):
                assert state.plan.node(here).iface(half_iface).peer is not None
                assert ping(remote, here, addr(state, there, peer_iface)), (here, half_iface, there)
        # Cable 0 joins node 1 and node 2 only: node 3 has no interface on its subnet.
        assert not ping(remote, "wtr-3", addr(state, "wtr-1", "enp1s0f0np0"))


def test_switch_reaches_every_pair_and_emulates_a_small_switch_mtu() -> None:
    with running_testbed("wts-", nodes=4, topology="switch") as (state, remote):
        for a in range(1, 5):
            for b in range(1, 5):
                if a != b:
                    for iface in ("enp1s0f1np1", "enP2p1s0f1np1"):
                        assert ping(remote, f"wts-{a}", addr(state, f"wts-{b}", iface)), (a, b, iface)
        target = addr(state, "wts-3", "enp1s0f1np1")
        assert ping(remote, "wts-1", target, size=8972)
        build.fault("wts-", "switch", "n3p1h0", build.Fault(mtu=1500))
        assert not ping(remote, "wts-1", target, size=8972)  # the switch port drops jumbo frames
        assert ping(remote, "wts-1", target, size=1472)
        build.revert("wts-", "switch", "n3p1h0")
        assert ping(remote, "wts-1", target, size=8972)


def test_down_cleans_up_after_an_interrupted_up_and_up_recovers() -> None:
    prefix = "wtk-"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wirespeed",
            "testbed",
            "up",
            "--prefix",
            prefix,
            "--topology",
            "switch",
            "--nodes",
            "6",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(ns.startswith(prefix) for ns in system.netns_list()):
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)  # midway: some namespaces exist, others not yet
        proc.wait()
        assert any(ns.startswith(prefix) for ns in system.netns_list())
        state = build.up(prefix=prefix, nodes=2, topology="direct")  # recovers instead of failing
        assert state.phase == "up" and build.health_problems(state) == []
    finally:
        build.down(prefix)
    assert leftovers(prefix) == []
    build.down(prefix)  # idempotent
    assert leftovers(prefix) == []


def test_up_twice_keeps_a_healthy_testbed() -> None:
    with running_testbed("wtu-", nodes=2, topology="direct") as (state, _):
        again = build.up(prefix="wtu-", nodes=2, topology="direct")
        assert again.plan == state.plan
        code, out, _ = run_cli("testbed", "status", "--prefix", "wtu-", "--json")
        assert code == 0 and json.loads(out)["phase"] == "up"


CONTROLLER = """
import sys, time
from pathlib import Path
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.remote import Remote
remote = Remote(load_cluster_file(Path(sys.argv[1])))
for node in remote.cluster.nodes:
    remote.start(node, ["sleep", "313"])
print("started", flush=True)
time.sleep(600)
"""


def test_remote_processes_die_with_a_killed_controller() -> None:
    with running_testbed("wtc-", nodes=2, topology="direct") as (state, _):
        controller = subprocess.Popen(
            [sys.executable, "-c", CONTROLLER, str(state.cluster_file)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert controller.stdout is not None and controller.stdout.readline().strip() == "started"

            def sleepers() -> list[int]:
                return [
                    p
                    for ns in ("wtc-1", "wtc-2")
                    for p in system.netns_pids(ns)
                    if _cmdline(p).startswith(b"sleep\x00313")
                ]

            deadline = time.monotonic() + 10
            while len(sleepers()) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(sleepers()) == 2
            controller.kill()  # SIGKILL: no clean-up code runs in the controller
            controller.wait()
            deadline = time.monotonic() + 10
            while sleepers() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert sleepers() == []
        finally:
            controller.kill()
            controller.wait()
