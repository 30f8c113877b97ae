"""`wirespeed fix` on the emulated cluster: plan, apply with --yes, revert exactly, and the self-rollback."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.app import main
from wirespeed.cli.output import Environment
from wirespeed.core.fixplan import Operation
from wirespeed.engine import fix
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build

from .helpers import running_testbed

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


def test_fix_shows_then_applies_then_reverts_exactly(bed: Remote, tmp_path: Path) -> None:
    half = "enp1s0f1np1"
    build.fault("wfx-", "wfx-2", half, build.Fault(mtu=1500, ipv6=True))
    record = tmp_path / "fix.json"
    try:
        code, shown, _ = cli("fix", "--cluster", bed.cluster.source, "--json", "--record", str(record))
        assert code == 0 and shown["applied"] is False and not record.exists()
        ops = {(op["kind"], op["target"], op["value"]) for op in shown["plan"]["wfx-2"]}  # type: ignore[index]
        assert ("mtu", half, "9000") in ops and ("sysctl", f"net.ipv6.conf.{half}.disable_ipv6", "1") in ops
        assert read(bed, "wfx-2", f"/sys/class/net/{half}/mtu") == "1500"  # nothing applied without --yes

        cli("fix", "--cluster", bed.cluster.source, "--yes", "--json", "--record", str(record))
        assert read(bed, "wfx-2", f"/sys/class/net/{half}/mtu") == "9000"
        assert read(bed, "wfx-2", f"/proc/sys/net/ipv6/conf/{half}/disable_ipv6") == "1"
        saved = json.loads(record.read_text())["nodes"]["wfx-2"]
        assert {(e["op"]["target"], e["original"]) for e in saved} >= {
            (half, "1500"),
            (f"net.ipv6.conf.{half}.disable_ipv6", "0"),
        }

        code, _, err = cli(
            "fix", "--cluster", bed.cluster.source, "--revert", "--yes", "--json", "--record", str(record)
        )
        assert code == 0, err
        assert read(bed, "wfx-2", f"/sys/class/net/{half}/mtu") == "1500"
        assert read(bed, "wfx-2", f"/proc/sys/net/ipv6/conf/{half}/disable_ipv6") == "0"
    finally:
        build.revert("wfx-", "wfx-2", half)


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
    [kept] = fix.apply_plan(bed, {"wfx-2": [change]}, rollback_s=2.0)
    assert kept.confirmed and not kept.rolled_back
    time.sleep(3.0)  # past the timer: the confirmed value stays
    assert read(bed, "wfx-2", f"/proc/sys/{key.replace('.', '/')}") == change.value
    fix.apply_plan(bed, {"wfx-2": [Operation("sysctl", key, before, "test")]})
