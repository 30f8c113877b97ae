"""Rings on the emulated cluster as a user meets them (issue 39): six nodes discovered, fixed and reverted, and on
four nodes the faults a ring's relays suffer, each named by `check` with the node and the fix: a cable cut (the
ring becomes a chain and the routes go the long way), a relay that stopped forwarding, Docker's FORWARD DROP."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.checks.ring import FORWARD_FILE, IP_FORWARD
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build

from .helpers import running_testbed

pytestmark = pytest.mark.root

SIX = "rf6-"
FOUR = "rft-"
HALVES = {(0, 0): "enp1s0f0np0", (0, 1): "enP2p1s0f0np0", (1, 0): "enp1s0f1np1", (1, 1): "enP2p1s0f1np1"}
FIREWALL = next((tool for tool in ("iptables", "nft") if shutil.which(tool)), None)


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, count + 1)]


def address(count: int, index: int, port: int, half: int) -> str:
    """Node `index`'s (1-based) fabric address: port 0 on cable index-1, port 1 on the cable before."""
    cable = (index - 1) % count if port == 0 else (index - 2) % count
    return f"198.19.{2 * cable + half}.{index}"


def addresses(count: int, index: int) -> list[str]:
    return [address(count, index, port, half) for port in (0, 1) for half in (0, 1)]


def run(remote: Remote, node: str, *argv: str) -> str:
    result = remote.run(remote.cluster.node(node), list(argv), timeout_s=60)
    assert result.ok, result.message
    return result.stdout


def pings(remote: Remote, node: str, targets: list[str]) -> list[str]:
    """The targets that did not answer one ping from `node`."""
    script = "for a in " + " ".join(targets) + '; do ping -n -q -c1 -W2 "$a" >/dev/null 2>&1 || echo "$a"; done'
    return run(remote, node, "sh", "-c", script).split()


def unreachable(remote: Remote, prefix: str, count: int, skip: frozenset[str] = frozenset()) -> list[str]:
    """Every node pings every fabric address of every other node (but those in `skip`) once: the silent ones."""
    failed: list[str] = []
    for index, node in enumerate(names(prefix, count), start=1):
        targets = [a for o in range(1, count + 1) if o != index for a in addresses(count, o) if a not in skip]
        failed += [f"{node} -> {a}" for a in pings(remote, node, targets)]
    return failed


def statuses(cluster: str) -> dict[str, dict[str, Any]]:
    code, out, err = cli("check", "--cluster", cluster, "--only", "ring.routes,ring.forward", "--json")
    assert code in (0, 1), err
    return {r["id"]: r for r in json.loads(out)["results"]}


def fixes_of(found: dict[str, Any]) -> dict[str, list[str]]:
    return {f["node"]: list(f["commands"]) for f in found.get("fixes") or []}


def etc_root(node: str) -> Path:
    """The node's own root of files (its /etc is this folder's etc/): what `fix` wrote there."""
    from wirespeed.testbed import state as testbed_state

    return testbed_state.testbed_dir(SIX) / "nodes" / node / "root"


def fix(cluster: str, record: Path, *extra: str) -> None:
    code, _out, err = cli("fix", "--cluster", cluster, "--yes", "--json", "--record", str(record), *extra)
    assert code == 0, err


def ip_forward(remote: Remote, node: str) -> str:
    return run(remote, node, "cat", "/proc/sys/net/ipv4/ip_forward").strip()


def ring_routes(remote: Remote, node: str) -> list[str]:
    """The fabric routes through a gateway on `node` (the ones `fix` adds), as `dst via gateway dev dev`."""
    routes = json.loads(run(remote, node, "ip", "-j", "-4", "route", "show"))
    return [f"{r['dst']} via {r['gateway']} dev {r['dev']}" for r in routes if r["dst"].startswith("198.19.") and
            "gateway" in r]  # fmt: skip


# ------------------------------------------------------------------------------------------------ six nodes
def test_six_node_ring_discovered_fixed_and_reverted(tmp_path: Path) -> None:
    nodes = names(SIX, 6)
    with running_testbed(SIX, nodes=6, topology="ring") as (_, remote):
        cluster = remote.cluster.source

        code, out, err = cli("discover", "--cluster", cluster)
        assert code == 0, err
        assert f"ring: {' → '.join([*nodes, nodes[0]])}" in out
        assert "cabling: ring, 6 cable(s)" in out

        before = statuses(cluster)
        assert before["ring.routes"]["status"] == "fail", before
        assert "ring of 6" in before["ring.routes"]["summary"]
        routes = fixes_of(before["ring.routes"])
        assert set(routes) == set(nodes)
        # rf6-1 reaches cable 2 (rf6-3 - rf6-4) through rf6-2, and cable 3 (rf6-4 - rf6-5) the other way, through rf6-6
        assert "sudo ip route replace 198.19.4.0/24 via 198.19.0.2 dev enp1s0f0np0" in routes[nodes[0]]
        assert "sudo ip route replace 198.19.7.0/24 via 198.19.11.6 dev enP2p1s0f1np1" in routes[nodes[0]]
        assert before["ring.forward"]["status"] == "fail", before
        assert set(fixes_of(before["ring.forward"])) == set(nodes)  # every node relays, none forwards yet

        record = tmp_path / "fix.json"
        fix(cluster, record)
        assert unreachable(remote, SIX, 6) == []
        far = address(6, 4, 0, 0)  # the opposite node, three hops either way: half 0 of its port 0
        route = json.loads(run(remote, nodes[0], "ip", "-j", "route", "get", far))[0]
        ways = {(address(6, 2, 1, 0), HALVES[0, 0]), (address(6, 6, 0, 0), HALVES[1, 0])}  # by rf6-2 or by rf6-6
        assert (route["gateway"], route["dev"]) in ways, route
        kept = {node: etc_root(node) / FORWARD_FILE.lstrip("/") for node in nodes}  # forwarding kept for a reboot
        assert all(f"{IP_FORWARD} = 1" in path.read_text() for path in kept.values()), kept
        after = statuses(cluster)
        assert (after["ring.routes"]["status"], after["ring.forward"]["status"]) == ("pass", "pass"), after

        fix(cluster, record, "--revert")
        for node in nodes:
            assert ring_routes(remote, node) == [], node
            assert ip_forward(remote, node) == "0", node
            assert not kept[node].exists(), node
        assert statuses(cluster)["ring.routes"]["status"] == "fail"
        assert pings(remote, nodes[0], [address(6, 4, 0, 0)]) == [address(6, 4, 0, 0)]  # the opposite node, again


# ------------------------------------------------------------------------------------------------ four nodes
@pytest.fixture(scope="module")
def ring4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Remote, str]]:
    """A four-node ring that `fix` made whole: every pair reaches every other through the ring."""
    with running_testbed(FOUR, nodes=4, topology="ring") as (_, remote):
        cluster = remote.cluster.source
        fix(cluster, tmp_path_factory.mktemp("ring4") / "fix.json")
        found = statuses(cluster)
        assert (found["ring.routes"]["status"], found["ring.forward"]["status"]) == ("pass", "pass"), found
        yield remote, cluster


def netns(node: str, *argv: str) -> None:
    subprocess.run(["ip", "netns", "exec", node, *argv], check=True, capture_output=True, text=True)


def test_relay_with_ip_forward_off_is_named_with_its_fix(ring4: tuple[Remote, str], tmp_path: Path) -> None:
    remote, cluster = ring4
    relay, far = f"{FOUR}2", address(4, 3, 1, 0)  # rft-1 reaches rft-3's port 1 through rft-2
    try:
        netns(relay, "sysctl", "-qw", f"{IP_FORWARD}=0")
        assert pings(remote, f"{FOUR}1", [far]) == [far]

        found = statuses(cluster)
        assert found["ring.routes"]["status"] == "pass", found
        forward = found["ring.forward"]
        assert forward["status"] == "fail" and f"{relay} cannot relay" in forward["summary"], forward
        assert [(e["node"], e["subject"], e["value"]) for e in forward["evidence"]] == [(relay, IP_FORWARD, "0")]
        (named,) = forward["fixes"]
        assert named["node"] == relay and "sudo sysctl --system" in named["commands"]
        assert [path for path, _text in named["files"]] == [FORWARD_FILE]
        assert f"let {relay} relay the ring's traffic (ip_forward" in named["description"]

        fix(cluster, tmp_path / "fix.json")
        assert ip_forward(remote, relay) == "1"
        assert pings(remote, f"{FOUR}1", [far]) == []
        assert statuses(cluster)["ring.forward"]["status"] == "pass"
    finally:
        netns(relay, "sysctl", "-qw", f"{IP_FORWARD}=1")


def docker_forward_drop(node: str) -> None:
    """What Docker leaves in a host's filter table: its chains, and FORWARD's policy DROP."""
    if FIREWALL == "iptables":
        for argv in (["-N", "DOCKER"], ["-N", "DOCKER-USER"], ["-A", "FORWARD", "-j", "DOCKER-USER"],
                     ["-A", "DOCKER-USER", "-j", "RETURN"], ["-P", "FORWARD", "DROP"]):  # fmt: skip
            netns(node, "iptables", *argv)
    else:
        hook = "add chain ip filter FORWARD { type filter hook forward priority 0; policy drop; }"
        netns(node, "nft", f"add table ip filter; add chain ip filter DOCKER; add chain ip filter DOCKER-USER; {hook}")


def no_firewall(node: str) -> None:
    if FIREWALL == "iptables":
        for argv in (["-P", "FORWARD", "ACCEPT"], ["-F"], ["-X"]):
            subprocess.run(["ip", "netns", "exec", node, "iptables", *argv], check=False, capture_output=True)
    else:
        subprocess.run(["ip", "netns", "exec", node, "nft", "flush", "ruleset"], check=False, capture_output=True)


@pytest.mark.skipif(FIREWALL is None, reason="neither iptables nor nft is installed here: no FORWARD chain to drop in")
def test_docker_forward_drop_on_a_relay_is_named_with_its_fix(ring4: tuple[Remote, str]) -> None:
    remote, cluster = ring4
    relay, far = f"{FOUR}2", address(4, 3, 1, 0)
    try:
        docker_forward_drop(relay)
        assert pings(remote, f"{FOUR}1", [far]) == [far]

        forward = statuses(cluster)["ring.forward"]
        assert forward["status"] == "fail" and f"{relay} cannot relay" in forward["summary"], forward
        dropped = [e for e in forward["evidence"] if e["node"] == relay and e["subject"] == FIREWALL]
        assert dropped and "Docker's FORWARD policy DROP" in dropped[0]["what"], forward["evidence"]
        assert [f["node"] for f in forward["fixes"]] == [relay]
        commands = fixes_of(forward)[relay]
        accept = [c for c in commands if "accept" in c.lower() and "persistent" not in c]
        into, out = HALVES[0, 0], HALVES[1, 0]
        if FIREWALL == "iptables":
            rule = f"-i {into} -o {out} -j ACCEPT"
            assert f"sudo iptables -C DOCKER-USER {rule} 2>/dev/null || sudo iptables -I DOCKER-USER 1 {rule}" in accept
        else:
            assert f"sudo nft insert rule ip filter FORWARD iifname {into} oifname {out} accept" in accept

        for command in accept:  # the firewall's part of the fix is the user's to run: run it as root on the relay
            run(remote, relay, "sh", "-c", command.replace("sudo ", ""))
        assert pings(remote, f"{FOUR}1", [far]) == []
        assert statuses(cluster)["ring.forward"]["status"] == "pass"
    finally:
        no_firewall(relay)


def carrier(node: str, dev: str) -> bool:
    found = subprocess.run(["ip", "-n", node, "-j", "link", "show", dev], capture_output=True, text=True, check=True)
    flags = json.loads(found.stdout)[0]["flags"]
    return "LOWER_UP" in flags and "NO-CARRIER" not in flags


def wait_for(condition: Any, what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_cut_cable_makes_a_chain_and_routes_go_the_long_way(ring4: tuple[Remote, str], tmp_path: Path) -> None:
    remote, cluster = ring4
    first, last = f"{FOUR}1", f"{FOUR}4"  # the cable cut: rft-4 port 0 to rft-1 port 1 (cable 3)
    cut = [HALVES[0, half] for half in (0, 1)]
    ends = [HALVES[1, half] for half in (0, 1)]
    record = tmp_path / "fix.json"
    gone = frozenset(a for half in (0, 1) for a in (address(4, 4, 0, half), address(4, 1, 1, half)))
    far = address(4, 4, 1, 0)  # rft-4 on cable 2: rft-1 went there over the cut cable, now three hops the other way
    try:
        for dev in cut:
            build.fault(FOUR, last, dev, build.Fault(down=True))
        wait_for(lambda: not any(carrier(first, dev) for dev in ends), f"{first} to lose its port 1")

        code, out, err = cli("discover", "--cluster", cluster)
        assert code == 0, err
        assert f"chain: {' → '.join(names(FOUR, 4))}" in out
        assert "cabling: chain, 3 cable(s)" in out
        assert f"cut ring: no cable between {last} and {first}" in out

        found = statuses(cluster)
        routes = found["ring.routes"]
        assert routes["status"] == "fail" and "cut ring (chain) of 4" in routes["summary"], routes
        long_way = f"sudo ip route replace 198.19.4.0/24 via 198.19.0.2 dev {HALVES[0, 0]}"
        assert long_way in fixes_of(routes)[first]
        evidence = {(e["node"], e["subject"]): e["value"] for e in routes["evidence"]}
        assert evidence[first, "198.19.4.0/24"] == f"via {address(4, 4, 0, 0)} dev {HALVES[1, 0]}"  # over the cut

        fix(cluster, record)
        route = json.loads(run(remote, first, "ip", "-j", "route", "get", far))[0]
        assert (route["gateway"], route["dev"]) == ("198.19.0.2", HALVES[0, 0])
        assert unreachable(remote, FOUR, 4, skip=gone) == []
        after = statuses(cluster)
        assert (after["ring.routes"]["status"], after["ring.forward"]["status"]) == ("pass", "pass"), after
    finally:
        for dev in cut:
            build.revert(FOUR, last, dev)
        wait_for(lambda: all(carrier(first, dev) for dev in ends), f"{first}'s port 1 to come back")
    # Cabled again, `fix` puts the ring's own routes back: the short way, over the cable. (Not `fix --revert`: the
    # cut's `fix` touched only the nodes whose routes changed, and the others would undo the ring's fix, from their
    # journals; rft-4's routes over the cut cable went when its halves went down, so there is nothing to restore.)
    fix(cluster, tmp_path / "again.json")
    route = json.loads(run(remote, first, "ip", "-j", "route", "get", far))[0]
    assert (route["gateway"], route["dev"]) == (address(4, 4, 0, 0), HALVES[1, 0])
    restored = statuses(cluster)["ring.routes"]
    assert restored["status"] == "pass", json.dumps(restored["evidence"])
