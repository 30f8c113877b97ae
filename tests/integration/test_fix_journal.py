"""`wirespeed fix --yes` SIGKILLed at many points on the emulated cluster: every node ends either with the whole fix
confirmed or with every sysctl, file, address and MTU back as it was (its own timer restores from its journal), and
`fix --revert` with no controller record restores the confirmed ones from their journals.

The kill points come from the controller's test hook (WIRESPEED_TEST_FIX_PAUSE, see `engine/fix.py`): before any
apply, half way through one node's apply (its agent stops after N operations), once every node applied, between
one node's confirmation and the other's, after every confirmation; and, without the hook, at the first line that
says a node applied or confirmed. Every wait is for a state (a line, a journal), never a fixed sleep. And a node
that fails means no node keeps the fix: the others restore at once.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.fixplan import Operation
from wirespeed.engine import fix
from wirespeed.engine.clusters import load_cluster_file
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build
from wirespeed.testbed import state as testbed_state

from .helpers import running_testbed

pytestmark = pytest.mark.root

PREFIX = "wfk-"
NODES = ("wfk-1", "wfk-2")
# One fault on node 1, three on node 2 (as in issue 21): each node gets files, sysctls and a network change.
FAULTS = (
    ("wfk-1", "enp1s0f1np1", build.Fault(mtu=1500)),
    ("wfk-2", "enp1s0f1np1", build.Fault(ipv6=True)),
    ("wfk-2", "enP2p1s0f1np1", build.Fault(unaddress=True)),
)
# Long enough for a node to answer a new ssh connection and confirm on a busy 2-core machine (3 s was not, with
# other tests running beside this one); each kill that leaves a node unconfirmed waits this long for its timer.
ROLLBACK_S = "8"
FINAL = ("confirmed", "rolledback", "reverted")


@dataclass
class Bed:
    cluster: str
    keys: dict[str, list[str]]  # the sysctls the plan sets, per node
    baseline: dict[str, dict[str, Any]]
    fixed: dict[str, dict[str, Any]]


def node_root(node: str) -> Path:
    return testbed_state.testbed_dir(PREFIX) / "nodes" / node / "root"


def journals(node: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in (node_root(node) / "var/lib/wirespeed/fix-journal").glob("*.json"):
        try:
            found[path.stem] = json.loads(path.read_text())
        except ValueError:  # never: each write is a rename; but a reader must not trip on it
            continue
    return found


def snapshot(node: str, keys: list[str]) -> dict[str, Any]:
    """What fix may change on a node: its files, the planned sysctls, and each link's MTU, state and IPv4."""
    etc = node_root(node) / "etc"
    files = {str(p.relative_to(etc)): p.read_text() for p in sorted(etc.rglob("*")) if p.is_file()}
    paths = [f"/proc/sys/{key.replace('.', '/')}" for key in keys]
    read = subprocess.run(["ip", "netns", "exec", node, "cat", *paths], capture_output=True, text=True, check=True)
    sysctls = dict(zip(keys, (" ".join(line.split()) for line in read.stdout.splitlines()), strict=True))
    shown = subprocess.run(["ip", "-n", node, "-j", "addr", "show"], capture_output=True, text=True, check=True)
    links = {
        link["ifname"]: (
            link["mtu"],
            "UP" in link["flags"],
            [f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []) if a.get("family") == "inet"],
        )
        for link in json.loads(shown.stdout)
        if link["ifname"] != "lo"
    }
    return {"files": files, "sysctls": sysctls, "links": links}


def snapshots(bed: Bed) -> dict[str, dict[str, Any]]:
    return {node: snapshot(node, bed.keys[node]) for node in NODES}


def wirespeed(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wirespeed", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def until(what: Callable[[], bool], timeout_s: float, why: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not what():
        assert time.monotonic() < deadline, f"timed out waiting for {why}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def bed() -> Iterator[Bed]:
    with running_testbed(PREFIX, nodes=2, topology="direct") as (state, _):
        for node, iface, fault in FAULTS:
            build.fault(PREFIX, node, iface, fault)
        cluster = str(state.cluster_file)
        shown = wirespeed("fix", "--cluster", cluster, "--json")
        assert shown.returncode == 0, shown.stderr
        plan = json.loads(shown.stdout)["plan"]
        keys = {n: sorted({op["target"] for op in plan.get(n, []) if op["kind"] == "sysctl"}) for n in NODES}
        assert all(keys.values()) and all(plan[n] for n in NODES)
        made = Bed(cluster, keys, {}, {})
        made.baseline = snapshots(made)
        with_record = str(testbed_state.testbed_dir(PREFIX) / "whole-fix.json")
        # 20 s: this fix must stay (the kills below use the short timer); confirming beats it on a busy machine
        whole = wirespeed("fix", "--cluster", cluster, "--yes", "--rollback-after", "20", "--record", with_record)
        assert whole.returncode == 0, whole.stderr
        made.fixed = snapshots(made)
        for node in NODES:
            assert made.fixed[node] != made.baseline[node]
            for part in ("files", "sysctls", "links"):
                assert made.fixed[node][part] != made.baseline[node][part], (node, part)
        back = wirespeed("fix", "--cluster", cluster, "--revert", "--yes", "--record", with_record)
        assert back.returncode == 0, back.stderr
        assert snapshots(made) == made.baseline
        yield made


@dataclass(frozen=True)
class Kill:
    name: str
    pause: str | None  # WIRESPEED_TEST_FIX_PAUSE
    line: str | None  # kill at the first stderr line holding this
    paused_node: str | None = None  # kill once this node's agent says (in its journal) it paused half way
    expect: tuple[str | None, ...] | None = None  # each node's journal state afterwards (None: no journal)
    revert_with_record: bool = False  # else `--revert` with no record: from the journals alone


KILLS = (
    Kill("before any apply", "before-apply", "test pause at before-apply", expect=(None, None)),
    # Half way through one node's apply, the other node's apply may not have journalled yet when the controller dies
    # (its agent is stopped with it): nothing changed there, which is whole too.
    Kill("half way through wfk-1's apply", "apply:wfk-1:2", None, "wfk-1", ("rolledback", "rolledback|")),
    Kill("half way through wfk-2's apply", "apply:wfk-2:5", None, "wfk-2", ("rolledback|", "rolledback")),
    Kill("every node applied, none confirmed", "before-confirm", "test pause at", expect=("rolledback", "rolledback")),
    Kill("wfk-1 confirmed, wfk-2 not", "confirm:wfk-2", "wfk-1: confirmed", expect=("confirmed", "rolledback")),
    Kill(
        "wfk-2 confirmed, wfk-1 not",
        "confirm:wfk-1",
        "wfk-2: confirmed",
        expect=("rolledback", "confirmed"),
        revert_with_record=True,
    ),
    Kill("every node confirmed", "after-confirm", "test pause at", expect=("confirmed", "confirmed")),
    Kill("at the first 'applied' line, no hook", None, ": applied "),
    Kill("at the first 'confirmed' line, no hook", None, ": confirmed", revert_with_record=True),
)


@pytest.fixture
def clean(bed: Bed, tmp_path: Path) -> Iterator[Bed]:
    """The bed, put back after the test whatever happened in it (the next test starts from the baseline)."""
    yield bed
    if snapshots(bed) == bed.baseline:
        return

    def decided() -> bool:
        return all(j["state"] in FINAL for node in NODES for j in journals(node).values())

    until(decided, 60, "every node to decide")
    wirespeed("fix", "--cluster", bed.cluster, "--revert", "--yes", "--record", str(tmp_path / "none.json"))


@pytest.mark.parametrize("kill", KILLS, ids=[k.name for k in KILLS])
def test_a_killed_fix_leaves_each_node_confirmed_or_restored(clean: Bed, kill: Kill, tmp_path: Path) -> None:
    bed = clean
    assert snapshots(bed) == bed.baseline
    before = {node: set(journals(node)) for node in NODES}
    record = tmp_path / "fix.json"
    argv = [sys.executable, "-m", "wirespeed", "fix", "--cluster", bed.cluster, "--yes"]
    argv += ["--rollback-after", ROLLBACK_S, "--record", str(record)]
    env = {**os.environ, "COLUMNS": "200"}
    if kill.pause:
        env["WIRESPEED_TEST_FIX_PAUSE"] = kill.pause
    controller = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    said: list[str] = []

    def reader() -> None:
        assert controller.stderr is not None
        for line in controller.stderr:
            lines.put(line)

    reading = threading.Thread(target=reader, daemon=True)
    reading.start()

    def ready() -> bool:
        ended = controller.poll() is not None
        if ended:
            reading.join(timeout=10)  # every line it said, read to the end of its stderr
        while not lines.empty():
            said.append(lines.get())
        if kill.paused_node:
            if any(j.get("paused") for j in journals(kill.paused_node).values()):
                return True
        elif any(kill.line and kill.line in line for line in said):
            return True  # a kill without a hook may come after the controller finished: still confirmed or restored
        if ended:
            raise AssertionError(f"the controller ended (status {controller.returncode}) first: {said}")
        return False

    try:
        until(ready, 120, f"the kill point ({kill.name})")
    finally:
        controller.kill()  # SIGKILL: no cleanup of any kind
        controller.wait()

    def new() -> dict[str, dict[str, Any]]:
        return {node: {token: j for token, j in journals(node).items() if token not in before[node]} for node in NODES}

    until(lambda: all(j["state"] in FINAL for js in new().values() for j in js.values()), 60, "every node to decide")
    after = snapshots(bed)
    states: list[str | None] = []
    for node in NODES:
        [*mine] = new()[node].values()
        assert len(mine) <= 1, mine
        state = mine[0]["state"] if mine else None
        states.append(state)
        wanted = bed.fixed[node] if state == "confirmed" else bed.baseline[node]
        assert after[node] == wanted, f"{node} ({state}) is half changed after '{kill.name}'"
    print(f"{kill.name}: {states}")  # shown with -s: where the kill left each node
    if kill.expect is not None:  # "a|b": either state; an empty alternative is no journal at all
        assert all((state or "") in wanted.split("|") if wanted is not None else state is None
                   for state, wanted in zip(states, kill.expect, strict=True)), (states, kill.expect, said)  # fmt: skip

    # --revert: from the record the controller wrote before confirming, or with none, from the journals alone
    where = str(record) if kill.revert_with_record else str(tmp_path / "no-such-record.json")
    undone = wirespeed("fix", "--cluster", bed.cluster, "--revert", "--yes", "--record", where)
    if "confirmed" in states:
        assert undone.returncode == 0, undone.stderr
        for node, state in zip(NODES, states, strict=True):
            if state == "confirmed":
                source = "the record" if kill.revert_with_record else "its journal"
                assert f"{node}: restored" in undone.stderr and source in undone.stderr, undone.stderr
    elif not kill.revert_with_record:
        assert undone.returncode == 1 and "no fix to revert" in undone.stderr, undone.stderr
    assert snapshots(bed) == bed.baseline, f"after --revert: {undone.stderr}"


def test_a_node_that_fails_means_no_node_keeps_the_fix(clean: Bed) -> None:
    bed = clean
    assert snapshots(bed) == bed.baseline
    key = bed.keys["wfk-1"][0]
    change = Operation("sysctl", key, "4096 65536 33554432", "test")
    refused = Operation("file", "/etc/sysctl.d/../shadow", "x", "test")  # the node's agent refuses the whole list
    remote = Remote(load_cluster_file(Path(bed.cluster)))
    started = time.monotonic()
    with remote.owned():
        one, two = fix.apply_plan(remote, {"wfk-1": [change], "wfk-2": [refused]}, rollback_s=60)
    assert two.error and not two.confirmed
    assert one.rolled_back and not one.confirmed and "wfk-2 failed" in one.why
    assert time.monotonic() - started < 60  # told to restore at once, not left to its timer
    assert snapshots(bed) == bed.baseline


def test_a_fix_whose_timer_was_killed_is_named_by_check_until_restored(clean: Bed) -> None:
    """The controller killed once every node applied, and wfk-2's rollback timer killed too (as a reboot would):
    wfk-2 keeps an unconfirmed fix for good. `check` fails on it naming the node, `discover` says so, and the
    fix's own command line (the agent's journal query on the node) restores it."""
    from .helpers import processes_in

    bed = clean
    env = {**os.environ, "COLUMNS": "200", "WIRESPEED_TEST_FIX_PAUSE": "before-confirm"}
    argv = [sys.executable, "-m", "wirespeed", "fix", "--cluster", bed.cluster, "--yes", "--rollback-after", "15"]
    controller = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert controller.stderr is not None
        for line in controller.stderr:
            if "test pause at before-confirm" in line:
                break
    finally:
        controller.kill()
        controller.wait()
    assert processes_in("wfk-2", "rollback-timer"), "wfk-2 has no rollback timer running"
    pids = subprocess.run(["ip", "netns", "pids", "wfk-2"], capture_output=True, text=True, check=True).stdout.split()
    for pid in pids:
        try:
            if b"rollback-timer" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(int(pid), 9)
        except OSError:
            continue
    until(lambda: not processes_in("wfk-2", "rollback-timer"), 30, "wfk-2's timer to die")

    checked = wirespeed("check", "--cluster", bed.cluster, "--only", "fix.pending")
    said = checked.stdout + checked.stderr
    assert checked.returncode == 1, said
    assert "unconfirmed fix left in place on wfk-2" in said and "agent fix-journal" in said, said
    found = wirespeed("discover", "--cluster", bed.cluster, "--no-probe")
    assert "not confirmed: no timer will restore it" in found.stdout + found.stderr, found.stdout + found.stderr

    remote = Remote(load_cluster_file(Path(bed.cluster)))
    with remote.owned():
        node = remote.cluster.node("wfk-2")
        restored = remote.run(node, [*remote.agent_argv(node), "agent", "fix-journal"], timeout_s=60)
    assert restored.ok, restored.message
    again = wirespeed("check", "--cluster", bed.cluster, "--only", "fix.pending")
    assert again.returncode == 0, again.stdout + again.stderr
    until(lambda: all(j["state"] in FINAL for n in NODES for j in journals(n).values()), 60, "wfk-1's timer")
    assert snapshots(bed) == bed.baseline
