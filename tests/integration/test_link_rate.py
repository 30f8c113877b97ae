"""The emulated cluster's fabric halves report their shaped rate as their link speed, as a NIC reports its own:
an ordinary account (`testbed up --user spark`), which cannot read the tc qdisc, sees the same line rate as root,
and `commission --become` as that account names the same ceilings as root does on the same cluster. Also: a
testbed that starts as Sparks ship (`--as-shipped`) and what wirespeed's fixes make of it."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from wirespeed.core.errors import UsageError
from wirespeed.testbed import build
from wirespeed.testbed.login import shell_argv

from .helpers import running_testbed

if TYPE_CHECKING:
    from wirespeed.testbed.state import TestbedState

pytestmark = pytest.mark.root
CABLED = ("enp1s0f1np1", "enP2p1s0f1np1")  # port 1, the one cable
BANDWIDTH = ("tcp-single", "tcp-multi", "tcp-halves")


def shell(state: TestbedState, node: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(shell_argv(state, node, list(argv), tty=False), capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip


def ceilings(runs: Path) -> dict[tuple[str, str], str]:
    """(phase, rung) -> the ceiling it named, for the bandwidth rungs of the one run under `runs`."""
    [run] = [p for p in runs.iterdir() if (p / "run.json").exists()]
    named = {}
    for phase in ("before", "after"):
        for rung in BANDWIDTH:
            path = run / phase / f"{rung}.json"
            if path.exists():
                named[(phase, rung)] = json.loads(path.read_text())["ceiling"]["name"]
    return named


def test_an_ordinary_account_reads_the_shaped_rate_and_names_the_ceilings_root_names(tmp_path: Path) -> None:
    # The account writes its run where it may: pytest's own directories are root's alone.
    runs_user = Path(tempfile.mkdtemp(prefix="wirespeed-link-rate-"))
    runs_user.chmod(0o777)
    try:
        user_bed = running_testbed("wru-", nodes=2, topology="direct", cables=1, user="spark", sudo="nopasswd")
        with user_bed as (state, remote):
            for node in remote.cluster.nodes:
                for iface in CABLED:
                    done = remote.run(node, ["cat", f"/sys/class/net/{iface}/speed"])
                    assert done.ok and done.stdout.strip() == "1000", (node.name, iface, done.stdout, done.stderr)
            with pytest.raises(UsageError, match="macvlans over a tap"):  # a fault that could not show is refused
                build.fault("wru-", "wru-1", CABLED[0], build.Fault(mtu=1500))
            assert shell(state, "wru-1", "wirespeed", "init", "--yes").returncode == 0
            done = shell(state, "wru-1", "wirespeed", "commission", "--become", "--no-fix", "--rungs",
                         "tcp", "--seconds", "2", "--runs", str(runs_user))  # fmt: skip
            said = done.stdout + done.stderr
            assert done.returncode == 0, said[-4000:]
            assert "of its 10 Gb/s" not in said and "Traceback" not in said
        as_user = ceilings(runs_user)
    finally:
        shutil.rmtree(runs_user, ignore_errors=True)

    with running_testbed("wrr-", nodes=2, topology="direct", cables=1) as (state, _):  # the same cluster, as root
        assert shell(state, "wrr-1", "wirespeed", "init", "--yes").returncode == 0
        done = shell(state, "wrr-1", "wirespeed", "commission", "--no-fix", "--rungs", "tcp", "--seconds", "2",
                     "--runs", str(tmp_path / "root"))  # fmt: skip
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    as_root = ceilings(tmp_path / "root")
    assert as_user == as_root
    assert as_root[("before", "tcp-halves")] == "wire"


def test_as_shipped_half_the_halves_carry_and_after_the_fixes_every_half_does(tmp_path: Path) -> None:
    shipped = running_testbed("wsx-", nodes=2, topology="direct", cables=1, mtu=1500, as_shipped=True, mdns=True)
    with shipped as (state, _):
        for node in ("wsx-1", "wsx-2"):
            links = json.loads(subprocess.run(["ip", "-n", node, "-j", "addr", "show"], capture_output=True,
                                              text=True, check=True).stdout)  # fmt: skip
            addresses = {link["ifname"]: link for link in links}
            first, twin = (addresses[i] for i in CABLED)
            assert next(a["local"] for a in first["addr_info"] if a["family"] == "inet").startswith("169.254.")
            assert [a for a in twin["addr_info"] if a["family"] == "inet"] == []
            assert next(a["local"] for a in twin["addr_info"] if a["family"] == "inet6").startswith("fe80:")
            assert first["mtu"] == twin["mtu"] == 1500
        # As a Spark owner: init finds the other node over mDNS (a 169.254/16 is too wide to probe), then commission.
        assert shell(state, "wsx-1", "wirespeed", "init", "--yes", "--no-check").returncode == 0
        done = shell(state, "wsx-1", "wirespeed", "commission", "--yes", "--rungs", "tcp-halves", "--seconds", "3",
                     "--runs", str(tmp_path))  # fmt: skip
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    [run] = [p for p in tmp_path.iterdir() if (p / "run.json").exists()]
    before, after = (json.loads((run / phase / "tcp-halves.json").read_text()) for phase in ("before", "after"))
    assert before["ceiling"]["name"] == "half-port", before["ceiling"]
    assert "on 1 of 2 cabled halves" in before["ceiling"]["evidence"][0]
    assert after["ceiling"]["name"] == "wire", after["ceiling"]
    assert {f["client"][1] for f in after["flows"] if f["receiver_gbps"]} == set(CABLED)
    assert after["forward_gbps"] >= 1.8 * before["forward_gbps"]
    fixed = json.loads((run / "fix.json").read_text())["plan"]
    addressed = [op["value"] for ops in fixed.values() for op in ops if op["kind"] == "addr"]
    assert addressed and all(value.startswith("198.19.") for value in addressed)  # never outside the testbed's space
    after_checks = {r["id"]: r for r in json.loads((run / "after" / "checks.json").read_text())["results"]}
    # The readdressed halves are pinned in init's ssh mesh, and their ARP settings came with the same fix.
    assert after_checks["ssh.mesh"]["status"] == "pass", after_checks["ssh.mesh"]["summary"]
    assert after_checks["sysctl.arp"]["status"] == "pass", after_checks["sysctl.arp"]["summary"]
