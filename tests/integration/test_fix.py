"""`wirespeed fix` on the emulated cluster: plan, apply with --yes, revert exactly, and the self-rollback."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.fixplan import Operation
from wirespeed.engine import fix
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build
from wirespeed.testbed import state as testbed_state

from .helpers import processes_in, running_testbed

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def bed() -> Iterator[Remote]:
    with running_testbed("wfx-", nodes=2, topology="direct") as (_, remote):
        yield remote


def read(remote: Remote, node: str, path: str) -> str:
    result = remote.run(remote.cluster.node(node), ["cat", path])
    assert result.ok, result.message
    return result.stdout.strip()


def cli(*argv: str) -> tuple[int, dict[str, object], str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    out = env.stdout.getvalue()  # type: ignore[attr-defined]
    return code, json.loads(out) if out.strip() else {}, env.stderr.getvalue()  # type: ignore[attr-defined]


def ipv4(remote: Remote, node: str, iface: str) -> list[str]:
    result = remote.run(remote.cluster.node(node), ["ip", "-j", "-4", "addr", "show", "dev", iface])
    assert result.ok, result.message
    return [f"{a['local']}/{a['prefixlen']}" for link in json.loads(result.stdout) for a in link["addr_info"]]


def test_fix_shows_then_applies_then_reverts_exactly(bed: Remote, tmp_path: Path) -> None:
    half, twin = "enp1s0f1np1", "enP2p1s0f1np1"
    etc = testbed_state.testbed_dir("wfx-") / "nodes" / "wfx-2" / "root" / "etc"
    (etc / "netplan" / "40-cx7.yaml").write_text("# the node's own file\n")
    address = ipv4(bed, "wfx-2", twin)
    build.fault("wfx-", "wfx-2", half, build.Fault(mtu=1500, ipv6=True))
    build.fault("wfx-", "wfx-2", twin, build.Fault(unaddress=True))
    record = tmp_path / "fix.json"
    try:
        code, shown, _ = cli("fix", "--cluster", bed.cluster.source, "--json", "--record", str(record))
        assert code == 0 and shown["applied"] is False and not record.exists()
        ops = {(op["kind"], op["target"], op["value"]) for op in shown["plan"]["wfx-2"]}  # type: ignore[index]
        assert ("mtu", half, "9000") in ops and ("sysctl", f"net.ipv6.conf.{half}.disable_ipv6", "1") in ops
        assert ("addr", twin, address[0]) in ops  # the plan gives the half back the address its peer expects
        files = {target for kind, target, _ in ops if kind == "file"}
        assert {"/etc/netplan/40-cx7.yaml", "/etc/sysctl.d/92-wirespeed-no-ipv6.conf"} <= files
        assert read(bed, "wfx-2", f"/sys/class/net/{half}/mtu") == "1500"  # nothing applied without --yes
        assert not (etc / "sysctl.d" / "92-wirespeed-no-ipv6.conf").exists()

        cli("fix", "--cluster", bed.cluster.source, "--yes", "--json", "--record", str(record))
        assert read(bed, "wfx-2", f"/sys/class/net/{half}/mtu") == "9000"
        assert read(bed, "wfx-2", f"/proc/sys/net/ipv6/conf/{half}/disable_ipv6") == "1"
        assert ipv4(bed, "wfx-2", twin) == address
        assert address[0] in (etc / "netplan" / "40-cx7.yaml").read_text()
        assert (
            etc / "sysctl.d" / "92-wirespeed-no-ipv6.conf"
        ).read_text() == f"net.ipv6.conf.{half}.disable_ipv6 = 1\n"
        assert not Path("/etc/sysctl.d/92-wirespeed-no-ipv6.conf").exists()  # never the host's own /etc
        saved = json.loads(record.read_text())["nodes"]["wfx-2"]
        assert {(e["op"]["target"], e["original"]) for e in saved} >= {
            (half, "1500"),
            (f"net.ipv6.conf.{half}.disable_ipv6", "0"),
            (twin, ""),
            ("/etc/netplan/40-cx7.yaml", "# the node's own file\n"),
            ("/etc/sysctl.d/92-wirespeed-no-ipv6.conf", None),
        }

        code, _, err = cli(
            "fix", "--cluster", bed.cluster.source, "--revert", "--yes", "--json", "--record", str(record)
        )
        assert code == 0, err
        assert read(bed, "wfx-2", f"/sys/class/net/{half}/mtu") == "1500"
        assert read(bed, "wfx-2", f"/proc/sys/net/ipv6/conf/{half}/disable_ipv6") == "0"
        assert ipv4(bed, "wfx-2", twin) == []
        assert (etc / "netplan" / "40-cx7.yaml").read_text() == "# the node's own file\n"
        assert not (etc / "sysctl.d" / "92-wirespeed-no-ipv6.conf").exists()
    finally:
        build.revert("wfx-", "wfx-2", half)
        build.revert("wfx-", "wfx-2", twin)
        (etc / "netplan" / "40-cx7.yaml").unlink(missing_ok=True)


def test_a_change_that_cuts_the_node_off_rolls_back_by_itself(bed: Remote) -> None:
    # Taking the management link down cuts the controller off: no confirmation can arrive.
    cut = Operation("link", "enP7s7", "down", "test", network=True)
    started = time.monotonic()
    [outcome] = fix.apply_plan(bed, {"wfx-1": [cut]}, rollback_s=3.0)
    assert outcome.rolled_back and not outcome.confirmed
    assert time.monotonic() - started < 60
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not bed.run(bed.cluster.node("wfx-1"), ["true"], timeout_s=5).ok:
        time.sleep(0.5)
    assert read(bed, "wfx-1", "/sys/class/net/enP7s7/operstate") == "up"


def test_an_unconfirmed_change_is_undone_and_a_confirmed_one_stays(bed: Remote) -> None:
    key = "net.ipv4.conf.all.arp_announce"
    before = read(bed, "wfx-2", f"/proc/sys/{key.replace('.', '/')}")
    change = Operation("sysctl", key, "1" if before != "1" else "0", "test", network=True)
    [lost] = fix.apply_plan(bed, {"wfx-2": [change]}, rollback_s=2.0, confirm=False)
    assert lost.rolled_back and read(bed, "wfx-2", f"/proc/sys/{key.replace('.', '/')}") == before
    # 20 s: the confirmation (apply, a new connection to every node, confirm) must beat the timer on a busy machine
    [kept] = fix.apply_plan(bed, {"wfx-2": [change]}, rollback_s=20.0)
    assert kept.confirmed and not kept.rolled_back, kept
    deadline = time.monotonic() + 30  # the timer sees the confirmation and ends; the value stays
    while processes_in("wfx-2", f"rollback-timer.*{kept.token}"):
        assert time.monotonic() < deadline, "the rollback timer outlived its confirmation"
        time.sleep(0.2)
    assert read(bed, "wfx-2", f"/proc/sys/{key.replace('.', '/')}") == change.value
    fix.apply_plan(bed, {"wfx-2": [Operation("sysctl", key, before, "test")]})
