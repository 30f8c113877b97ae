"""`testbed up --as-shipped` (a Spark as NVIDIA's link-local netplan leaves it), fabric links that report their
shaped rate as their link speed, and the demo's closing lines. Pure, or with the system commands captured."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest

from wirespeed import demo
from wirespeed.core.records.options import RunOptions
from wirespeed.testbed import build, system
from wirespeed.testbed.plan import Topology, links, make_plan, plan_from_json

LINK_LOCAL = ipaddress.IPv4Network("169.254.0.0/16")


def test_as_shipped_addresses_one_half_of_each_port_link_local_and_leaves_its_twin_unaddressed() -> None:
    plan = make_plan(cables=2, mtu=1500, as_shipped=True)
    addresses = []
    for node in plan.nodes:
        for half in node.fabric:
            if half.half == 1:
                assert half.address is None, half  # IPv6 link-local only
            else:
                assert half.address is not None and ipaddress.IPv4Interface(half.address).network == LINK_LOCAL
                addresses.append(ipaddress.IPv4Interface(half.address).ip)
    assert len(addresses) == len(set(addresses)) == 4  # two nodes, the first half of two ports each
    assert plan.node("spark-1").iface("enp1s0f0np0").address == "169.254.1.1/16"  # NVIDIA's netplan names these
    assert plan.node("spark-2").iface("enp1s0f1np1").address == "169.254.3.2/16"
    assert plan.mtu == 1500 and plan.as_shipped
    assert plan_from_json(json.loads(json.dumps(plan.to_json()))) == plan


@pytest.mark.parametrize("topology,nodes", [(Topology.RING, 3), (Topology.SWITCH, 4)])
def test_as_shipped_addresses_stay_link_local_and_unique_in_every_topology(topology: Topology, nodes: int) -> None:
    plan = make_plan(topology=topology, nodes=nodes, cables=2, as_shipped=True)
    cidrs = [h.address for n in plan.nodes for h in n.fabric if h.address]
    assert cidrs and all(ipaddress.IPv4Interface(c).network == LINK_LOCAL for c in cidrs)
    assert len({ipaddress.IPv4Interface(c).ip for c in cidrs}) == len(cidrs)
    assert all(h.address is None for n in plan.nodes for h in n.fabric if h.half == 1)


def test_the_default_testbed_is_unchanged() -> None:
    plan = make_plan(cables=2)
    assert not plan.as_shipped
    assert all(h.address and h.address.startswith("198.19.") for n in plan.nodes for h in n.fabric)
    assert plan_from_json({k: v for k, v in plan.to_json().items() if k != "as_shipped"}) == plan  # older state


def test_shaped_node_to_node_links_of_an_account_are_rated_and_a_switch_or_root_or_unshaped_are_not() -> None:
    direct = make_plan(cables=2, user="spark")
    wires = build.rated_links(direct)
    assert len(wires) == 8 and len(set(wires.values())) == 4  # both ends of each of the four halves
    assert wires[("spark-1", "enp1s0f0np0")] == wires[("spark-2", "enp1s0f0np0")]
    ring = make_plan(topology=Topology.RING, nodes=3, user="spark")
    assert len(build.rated_links(ring)) == 2 * len(links(ring))
    assert build.rated_links(make_plan(topology=Topology.SWITCH, nodes=3, user="spark")) == {}
    assert build.rated_links(make_plan(half_rate_bps=0, user="spark")) == {}
    assert build.rated_links(make_plan(cables=2)) == {}  # root's testbed: veth pairs, which drop past the MTU


def test_link_speed_in_whole_megabits() -> None:
    assert build.link_speed_mbps(10**9) == 1000
    assert build.link_speed_mbps(25 * 10**7) == 250
    assert build.link_speed_mbps(1000) == 1


def test_the_fabric_is_built_of_taps_at_the_shaped_rate_with_a_macvlan_at_each_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    commands: list[list[str]] = []

    def run(argv: list[str], what: str, *, check: bool = True, timeout_s: float = 30.0) -> str:
        commands.append(list(argv))
        return ""

    monkeypatch.setattr(system, "run", run)
    plan = make_plan(prefix="unit-", cables=1, half_rate_bps=10**9, as_shipped=True, mtu=1500, user="spark")
    builder = build._Builder(plan, "/usr/sbin/sshd", lambda _: None)
    builder.dir = tmp_path
    builder.fabric()
    text = [" ".join(c) for c in commands]
    assert not any("type veth peer name enp1s0f1np1" in t for t in text)  # cabled halves: no veth pairs
    assert "ip -n unit-mgmt tuntap add dev wire0 mode tap" in text
    assert "ip netns exec unit-mgmt ethtool -s wire0 speed 1000 duplex full" in text
    for node in ("unit-1", "unit-2"):
        assert f"ip -n unit-mgmt link add link wire0 name enp1s0f1np1 netns {node} type macvlan mode bridge" in text
        assert f"ip netns exec {node} sysctl -qw net.ipv6.conf.enP2p1s0f1np1.disable_ipv6=0" in text  # the twin
        assert f"ip -n {node} addr add 169.254.3.{node[-1]}/16 dev enp1s0f1np1" in text
    holder = next(c for c in commands if "wirespeed-wires" in c)
    assert holder[:4] == ["ip", "netns", "exec", "unit-mgmt"]
    assert holder[-3:] == [str(tmp_path / build.WIRE_HOLDER_PID), "wire0", "wire1"]  # it writes its pid there


def test_the_holder_keeps_its_taps_open_and_says_its_pid(tmp_path: Path) -> None:
    """WIRE_HOLDER as the testbed starts it, on no tap at all: it writes its pid and waits to be ended."""
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "wires.pid"
    holder = subprocess.Popen([sys.executable, "-c", build.WIRE_HOLDER, str(pid_file)])
    try:
        deadline = time.monotonic() + 10
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid_file.read_text() == f"{holder.pid}\n"
        assert holder.poll() is None
    finally:
        holder.terminate()
        holder.wait(timeout=10)


def _rung(directory: Path, phase: str, gbps: float, ceiling: str, why: str, halves: list[str]) -> None:
    """A commission's run directory as it writes it: run.json, and tcp-halves of one phase with a flow per half."""
    from wirespeed.core.records.results import Ceiling, Direction, Flow, FlowResult, RungResult, RungStatus
    from wirespeed.core.records.run import NodeRef, RunRecord, RunStatus

    share = gbps / len(halves)
    flows = tuple(
        FlowResult(Flow(("spark-1", h), ("spark-2", h), "198.19.0.1", "198.19.0.2", 1.0), Direction.FORWARD, share)
        for h in halves
    )
    record = RungResult("tcp-halves", RungStatus.RAN, flows=flows, ceiling=Ceiling(ceiling, (why,)), phase=phase)
    run = RunRecord("0.2.0", ("commission",), "commission", RunOptions(), "demo", (NodeRef("spark-1", "spark-1"),),
                    "2026-11-26T10:00:00Z", RunStatus.COMPLETE, phases=("before", "after"))  # fmt: skip
    (directory / "run.json").write_text(json.dumps(run.to_json()))
    (directory / phase).mkdir(parents=True)
    (directory / phase / "tcp-halves.json").write_text(json.dumps(record.to_json()))


def test_the_demo_ends_saying_what_moved_and_why(tmp_path: Path) -> None:
    _rung(tmp_path, "before", 1.97, "half-port", "1.97 Gb/s on 2 of the 4 halves", ["enp1s0f0np0", "enp1s0f1np1"])
    _rung(tmp_path, "after", 3.96, "wire", "3.96 Gb/s of 4 Gb/s line rate (99%) on every cabled half (4)",
          ["enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"])  # fmt: skip
    from wirespeed.core.fixplan import Operation
    from wirespeed.core.records.fixrecord import FixRecord

    ops = (
        Operation("addr", "enP2p1s0f0np0", "198.19.101.10/24", "addr.halves"),
        Operation("mtu", "enP2p1s0f0np0", "9000", "mtu.host"),
        Operation("sysctl", "net.ipv4.tcp_rmem", "4096 131072 134217728", "sysctl.tcp"),
    )
    (tmp_path / "fix.json").write_text(json.dumps(FixRecord({"spark-1": ops, "spark-2": ops}).to_json()))
    lines = demo.story(tmp_path)
    assert lines[0] == (
        "tcp-halves (TCP on every half at once): 1.97 Gb/s on 2 half(s), ceiling half-port"
        " -> 3.96 Gb/s on 4 half(s), ceiling wire (2.0x)"
    )
    text = "\n".join(lines)
    assert "only 2 of the 4 halves carried traffic" in text
    assert "gave every half an address on a subnet of its own (2 interfaces readdressed), raised" in text
    assert "raised the fabric MTU to 9000" in text
    assert "(fewer, larger packets) and enlarged the TCP socket buffers." in text
    assert "line rate is the limit" in text


def test_the_demo_says_nothing_of_a_rung_that_did_not_run_in_both_phases(tmp_path: Path) -> None:
    _rung(tmp_path, "before", 1.97, "half-port", "why", ["enp1s0f0np0"])
    assert demo.story(tmp_path) == []


def test_as_shipped_nodes_keep_the_kernels_arp_and_tcp_buffer_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    commands: list[str] = []

    def run(argv: list[str], what: str, *, check: bool = True, timeout_s: float = 30.0) -> str:
        commands.append(" ".join(argv))
        return ""

    monkeypatch.setattr(system, "run", run)
    for shipped, arp in ((True, ("0", "0")), (False, ("1", "2"))):
        commands.clear()
        build._Builder(make_plan(prefix="unit-", as_shipped=shipped), "sshd", lambda _: None).namespaces()
        assert f"ip netns exec unit-1 sysctl -qw net.ipv4.conf.all.arp_ignore={arp[0]}" in commands
        assert f"ip netns exec unit-2 sysctl -qw net.ipv4.conf.all.arp_announce={arp[1]}" in commands
        buffers = "ip netns exec unit-1 sysctl -qw net.ipv4.tcp_rmem=4096 131072 6291456"
        assert (buffers in commands) is shipped


def test_roots_testbed_keeps_veth_pairs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    commands: list[str] = []

    def run(argv: list[str], what: str, *, check: bool = True, timeout_s: float = 30.0) -> str:
        commands.append(" ".join(argv))
        return ""

    monkeypatch.setattr(system, "run", run)
    builder = build._Builder(make_plan(prefix="unit-", cables=1, as_shipped=True), "sshd", lambda _: None)
    builder.dir = tmp_path
    builder.fabric()
    assert "ip -n unit-1 link add enp1s0f1np1 type veth peer name enp1s0f1np1 netns unit-2" in commands
    assert not any("tuntap" in c or "macvlan" in c or "wirespeed-wires" in c for c in commands)
