"""`wirespeed check` on the emulated cluster: healthy passes, each injected fault fails with evidence and a fix."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulators.routeros_rest import RouterOSEmulator
from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.checks.model import CheckResult, CheckStatus
from wirespeed.engine import checks
from wirespeed.engine.discover import discover_live
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build

from .helpers import running_testbed

pytestmark = pytest.mark.root
LINK_CHECKS = ["link.halves", "addr.subnets", "mtu.host", "mtu.path", "ipv6.fabric"]


def run(remote: Remote, ids: list[str]) -> dict[str, CheckResult]:
    found = discover_live(remote)
    outcome = checks.run_checks(found, ids, checks.measure_active(remote, found, ids))
    assert outcome.errors == []
    return {r.id: r for r in outcome.results}


@pytest.fixture(scope="module")
def switch() -> Iterator[Remote]:
    with running_testbed("wcs-", nodes=3, topology="switch") as (_, remote):
        yield remote


def test_healthy_cluster_passes_the_link_checks(switch: Remote) -> None:
    results = run(switch, LINK_CHECKS)
    assert {i: r.status for i, r in results.items()} == {i: CheckStatus.PASS for i in LINK_CHECKS}


def test_switch_port_with_a_small_mtu_fails_mtu_path(switch: Remote) -> None:
    build.fault("wcs-", "switch", "n2p1h1", build.Fault(mtu=1500))
    try:
        results = run(switch, ["mtu.path", "mtu.host"])
    finally:
        build.revert("wcs-", "switch", "n2p1h1")
    assert results["mtu.host"].status is CheckStatus.PASS  # the hosts agree; the path does not
    path = results["mtu.path"]
    assert path.status is CheckStatus.FAIL and path.fixes
    assert any(e.node == "wcs-2" or "198.19.3.2" in str(e.value) + str(e.subject) for e in path.evidence)


def test_host_mtu_fault_fails_mtu_host(switch: Remote) -> None:
    build.fault("wcs-", "wcs-3", "enp1s0f1np1", build.Fault(mtu=1500))
    try:
        results = run(switch, ["mtu.host"])
    finally:
        build.revert("wcs-", "wcs-3", "enp1s0f1np1")
    result = results["mtu.host"]
    assert result.status is CheckStatus.FAIL
    assert any(e.node == "wcs-3" and e.subject == "enp1s0f1np1" and e.value == 1500 for e in result.evidence)


def test_unaddressed_half_fails_link_halves(switch: Remote) -> None:
    build.fault("wcs-", "wcs-1", "enP2p1s0f1np1", build.Fault(unaddress=True))
    try:
        results = run(switch, ["link.halves"])
    finally:
        build.revert("wcs-", "wcs-1", "enP2p1s0f1np1")
    result = results["link.halves"]
    assert result.status is CheckStatus.FAIL
    assert any(e.node == "wcs-1" and e.subject == "enP2p1s0f1np1" for e in result.evidence)
    assert any("enP2p1s0f1np1" in " ".join(f.commands) + " ".join(c for _, c in f.files) for f in result.fixes)


def test_ipv6_on_a_half_warns(switch: Remote) -> None:
    build.fault("wcs-", "wcs-2", "enp1s0f1np1", build.Fault(ipv6=True))
    try:
        import time

        time.sleep(1.5)  # the link-local address appears after duplicate address detection
        results = run(switch, ["ipv6.fabric"])
    finally:
        build.revert("wcs-", "wcs-2", "enp1s0f1np1")
    result = results["ipv6.fabric"]
    assert result.status is CheckStatus.WARN
    assert any(e.node == "wcs-2" and e.subject == "enp1s0f1np1" for e in result.evidence)


def test_check_cli_exit_status_and_json(switch: Remote) -> None:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(["check", "--cluster", switch.cluster.source, "--only", "mtu.host,ssh.mesh", "--json"], env)
    data = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    statuses = {r["id"]: r["status"] for r in data["results"]}
    assert statuses["mtu.host"] == "pass"
    # The testbed's nodes have no ssh keys for each other: a fresh cluster, as `wirespeed init` will find it.
    assert statuses["ssh.mesh"] == "fail" and code == 1 == data["exit_status"]
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    assert main(["check", "--cluster", switch.cluster.source, "--only", "no.such"], env) == 2
    assert "unknown check id(s): no.such" in env.stderr.getvalue()  # type: ignore[attr-defined]


def test_check_reads_the_switch_and_names_the_port_that_clamps_the_path(
    switch: Remote, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The testbed's switch port for wcs-2 carries 1500-byte frames; the RouterOS emulator stands in for that switch's
    management side, reporting L2MTU 1584 on wcs-2's port and a lane at 100G on wcs-3's."""
    monkeypatch.setenv("WIRESPEED_SWITCH_PASSWORD", "integration-pw")
    with RouterOSEmulator(password="integration-pw") as emu:
        ports = {"wcs-1": "qsfp56-dd-1-1", "wcs-2": "qsfp56-dd-1-5", "wcs-3": "qsfp56-dd-2-1"}
        for name in ports.values():
            port = emu.port(name)
            port.l2mtu, port.mtu, port.fec_mode = 9216, 9000, "fec91"
            port.auto_negotiation, port.speed = False, "200G-baseCR4"
            port.settle()
        emu.port("qsfp56-dd-1-5").l2mtu = 1584
        emu.port("qsfp56-dd-2-1").set_link("100Gbps")
        table = ", ".join(f'{node} = ["{port}"]' for node, port in ports.items())
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(
            Path(switch.cluster.source).read_text()
            + f'\n[switch]\nkind = "routeros"\naddress = "{emu.url.split("://")[1]}"\nca_file = "{emu.ca_file}"\n'
            + f"ports = {{ {table} }}\n"
        )
        build.fault("wcs-", "switch", "n2p1h1", build.Fault(mtu=1500))
        try:
            env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
            code = main(["check", "--cluster", str(cluster), "--only", "switch.ports,mtu.path", "--json"], env)
        finally:
            build.revert("wcs-", "switch", "n2p1h1")
    data = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
    results = {r["id"]: r for r in data["results"]}
    assert code == 1 and data["errors"] == []
    ports_check = results["switch.ports"]
    assert ports_check["status"] == "fail"
    assert {(e["node"], e["subject"], e["value"]) for e in ports_check["evidence"]} == {
        ("wcs-2", "qsfp56-dd-1-5", "1584"), ("wcs-3", "qsfp56-dd-2-1", "100Gbps"),
    }  # fmt: skip
    path = results["mtu.path"]
    assert path["status"] == "fail" and "the switch explains it: qsfp56-dd-1-5 (wcs-2) l2mtu 1584" in path["summary"]
    assert "integration-pw" not in env.stdout.getvalue() + env.stderr.getvalue()  # type: ignore[attr-defined]
