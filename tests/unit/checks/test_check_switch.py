"""switch.ports, and mtu.path explaining a switch that carries smaller frames than the hosts send: the switch is
read over HTTPS from the RouterOS REST emulator, as `wirespeed check` reads it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from builders import P1H0, P1H1, assert_actionable, cluster, fix_text, run, spark

from emulators.routeros_rest import RouterOSEmulator
from wirespeed.core.checks.model import ActiveResults, CheckInput, CheckStatus
from wirespeed.core.cluster.routeros import SwitchConfig
from wirespeed.core.errors import ExitStatus
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.engine import checks, switch

PASSWORD = "check-pw"
PORTS = {"s1": ("qsfp56-dd-1-1",), "s2": ("qsfp56-dd-1-5",)}
ENV = {"WIRESPEED_SWITCH_PASSWORD": PASSWORD}


@pytest.fixture
def emu() -> Iterator[RouterOSEmulator]:
    with RouterOSEmulator(password=PASSWORD) as running:
        for port in ("qsfp56-dd-1-1", "qsfp56-dd-1-5"):  # as `switch apply` leaves them
            state = running.port(port)
            state.l2mtu, state.mtu, state.fec_mode = 9216, 9000, "fec91"
            state.auto_negotiation, state.speed = False, "200G-baseCR4"
            state.settle()
        yield running


def config(emu: RouterOSEmulator) -> SwitchConfig:
    return SwitchConfig("routeros", emu.url.split("://")[1], ports=PORTS, ca_file=emu.ca_file)


def with_switch(emu: RouterOSEmulator, active: ActiveResults | None = None) -> CheckInput:
    reading = switch.read_for_checks(config(emu), environ=ENV)
    assert reading.error is None
    return dataclasses.replace(cluster(spark("s1", 10), spark("s2", 11), active=active), switch=reading)


def test_no_switch_in_the_cluster_file_skips() -> None:
    assert run("switch.ports", cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.SKIP


def test_a_switch_that_cannot_be_read_skips_and_is_an_error_of_the_run(emu: RouterOSEmulator) -> None:
    reading = switch.read_for_checks(config(emu), environ={"WIRESPEED_SWITCH_PASSWORD": "wrong"})
    assert reading.state is None and reading.error is not None and "login refused" in reading.error
    data = cluster(spark("s1", 10), spark("s2", 11))
    outcome = run("switch.ports", dataclasses.replace(data, switch=reading))
    assert outcome.status is CheckStatus.SKIP and "login refused" in outcome.summary
    made = checks.run_checks(Discovery(dict(data.facts), data.cabling, {}), ["switch.ports"], None, reading)
    assert made.exit_status == ExitStatus.NOT_MEASURED == 3 and made.errors == [reading.error]


def test_a_configured_switch_passes(emu: RouterOSEmulator) -> None:
    outcome = run("switch.ports", with_switch(emu))
    assert outcome.status is CheckStatus.PASS
    assert outcome.summary == "all 2 fabric ports up at 200Gbps, FEC fec91, L2MTU >= 9022"


def test_a_port_at_100g_and_an_l2mtu_of_1584_fail(emu: RouterOSEmulator) -> None:
    emu.port("qsfp56-dd-1-1").set_link("100Gbps")
    emu.port("qsfp56-dd-1-5").l2mtu = 1584
    outcome = run("switch.ports", with_switch(emu))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    seen = {(e.node, e.subject, e.value) for e in outcome.evidence}
    assert seen == {("s1", "qsfp56-dd-1-1", "100Gbps"), ("s2", "qsfp56-dd-1-5", "1584")}
    assert "2 problem(s) on the switch" in outcome.summary
    text = fix_text(outcome.fixes)
    assert '[find default-name="qsfp56-dd-1-1"] auto-negotiation=no speed=200G-baseCR4' in text
    assert '[find default-name="qsfp56-dd-1-5"] l2mtu=9216' in text


def test_the_l2mtu_follows_the_hosts_mtu(emu: RouterOSEmulator) -> None:
    emu.port("qsfp56-dd-1-5").l2mtu = 9021
    assert run("switch.ports", with_switch(emu)).status is CheckStatus.FAIL
    emu.port("qsfp56-dd-1-5").l2mtu = 9022
    assert run("switch.ports", with_switch(emu)).status is CheckStatus.PASS


def test_fec_differing_on_a_linked_port_warns_and_shows_the_modes(emu: RouterOSEmulator) -> None:
    emu.port("qsfp56-dd-1-5").fec_mode = "auto"
    outcome = run("switch.ports", with_switch(emu))
    assert outcome.status is CheckStatus.WARN
    assert_actionable(outcome)
    modes = next(e for e in outcome.evidence if e.what == "FEC modes across the fabric ports")
    assert modes.value == "auto on qsfp56-dd-1-5; fec91 on qsfp56-dd-1-1"
    assert "fec-mode=fec91" in fix_text(outcome.fixes)


def test_error_counters_warn_with_a_cable_fix(emu: RouterOSEmulator) -> None:
    emu.port("qsfp56-dd-1-1").rs_fec_uncorrected = 12
    outcome = run("switch.ports", with_switch(emu))
    assert outcome.status is CheckStatus.WARN
    assert_actionable(outcome)
    assert "reseat or replace" in fix_text(outcome.fixes)
    assert ("s1", "qsfp56-dd-1-1", "rs-fec-uncorrected 12") in {(e.node, e.subject, e.value) for e in outcome.evidence}


def test_mtu_path_without_pings_fails_on_a_clamping_switch(emu: RouterOSEmulator) -> None:
    emu.port("qsfp56-dd-1-5").l2mtu = 1584
    outcome = run("mtu.path", with_switch(emu))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert "not pinged" in outcome.summary and "qsfp56-dd-1-5 (s2) l2mtu 1584" in outcome.summary
    assert "l2mtu=9216" in fix_text(outcome.fixes)
    emu.port("qsfp56-dd-1-5").l2mtu = 9216
    assert run("mtu.path", with_switch(emu)).status is CheckStatus.SKIP


def pings(failed_from: str | None) -> ActiveResults:
    keys = [
        ("s1", P1H0, "s2", "192.168.100.11"), ("s2", P1H0, "s1", "192.168.100.10"),
        ("s1", P1H1, "s2", "192.168.101.11"), ("s2", P1H1, "s1", "192.168.101.10"),
    ]  # fmt: skip
    return ActiveResults(mtu_pings={key: key[0] != failed_from for key in keys})


def test_mtu_path_names_the_switch_port_that_drops_the_frames(emu: RouterOSEmulator) -> None:
    emu.port("qsfp56-dd-1-5").l2mtu = 1584
    outcome = run("mtu.path", with_switch(emu, pings("s2")))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert "the switch explains it: qsfp56-dd-1-5 (s2) l2mtu 1584, needs >= 9022" in outcome.summary
    assert ("s2", "qsfp56-dd-1-5", "1584") in {(e.node, e.subject, e.value) for e in outcome.evidence}
    [fix] = outcome.fixes
    assert fix.node is None and fix.commands == (
        '/interface/ethernet/set [find default-name="qsfp56-dd-1-5"] l2mtu=9216',
    )


def test_mtu_path_with_a_healthy_switch_keeps_the_host_side_fix(emu: RouterOSEmulator) -> None:
    outcome = run("mtu.path", with_switch(emu, pings("s2")))
    assert outcome.status is CheckStatus.FAIL and "switch explains" not in outcome.summary
    assert run("mtu.path", with_switch(emu, pings(None))).status is CheckStatus.PASS
