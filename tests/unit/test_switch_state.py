"""The switch's state from REST replies (strings everywhere, counters with console grouping, resource as an object
or a list), the apply diff and its call order, and the problems verify and the check report."""

from __future__ import annotations

import json
from typing import Any

import pytest

from emulators.routeros_rest import EthernetPort, RouterOSEmulator
from wirespeed.core.cluster.routeros import PlanOptions, SwitchConfig, rate_gbps
from wirespeed.core.cluster.switchstate import (
    PortUpdate,
    SwitchReplyError,
    SwitchState,
    monitor_targets,
    parse_int,
    parse_state,
    plan_updates,
    port_problems,
)

PORTS = {"spark-1": ("qsfp56-dd-1-1",), "spark-2": ("qsfp56-dd-1-5",)}
CONFIG = SwitchConfig("routeros", "198.18.0.10", ports=PORTS)


def call(emu: RouterOSEmulator, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """The emulator's answer without a socket: its JSON payload, as the client would decode it."""
    raw = json.dumps(body).encode() if body is not None else b""
    answer = emu.handle(method, "/rest/" + path, "Basic YWRtaW46", raw)  # admin with an empty password
    assert answer.status < 400, answer.payload
    return answer.payload


def read(emu: RouterOSEmulator, config: SwitchConfig = CONFIG) -> SwitchState:
    ethernet = call(emu, "GET", "interface/ethernet")
    names = ",".join(name for name, _ in monitor_targets(ethernet, config))
    return parse_state(
        "198.18.0.10",
        call(emu, "GET", "system/resource"),
        ethernet,
        call(emu, "POST", "interface/ethernet/monitor", {"numbers": names, "once": ""}) if names else [],
        call(emu, "POST", "interface/ethernet/print", {"stats": ""}),
        call(emu, "GET", "interface/bridge/port"),
    )


def configured(emu: RouterOSEmulator, *names: str) -> None:
    for name in names:
        call(emu, "PATCH", f"interface/ethernet/{name}", {"l2mtu": "9216"})
        call(emu, "PATCH", f"interface/ethernet/{name}", {
            "auto-negotiation": "no", "speed": "200G-baseCR4", "fec-mode": "fec91", "mtu": "9000"})  # fmt: skip
        call(emu, "PUT", "interface/bridge/port", {"bridge": "bridge1", "interface": name})


def test_state_at_routeros_defaults_reads_the_strings_as_values() -> None:
    state = read(RouterOSEmulator())
    assert state.version == "7.23.1 (stable)" and state.board_name == "CRS804-4DDQ"
    port = state.port("qsfp56-dd-1-1")
    assert port is not None and port.id == "*1"
    assert (port.mtu, port.l2mtu, port.auto_negotiation, port.fec_mode) == (1500, 1584, True, "auto")
    assert port.status == "no-link" and not port.link_up and port.rate is None and port.bridge is None
    assert port.counters == dict.fromkeys(("rx-fcs-error", "rx-too-long", "tx-drop", "rs-fec-uncorrected"), 0)
    assert len(state.ports) == 8  # every ethernet port, fabric or not


def test_state_after_the_plan_is_up_at_200g_in_the_bridge() -> None:
    emu = RouterOSEmulator()
    configured(emu, "qsfp56-dd-1-1")
    port = read(emu).port("qsfp56-dd-1-1")
    assert port is not None and port.link_up and port.rate == "200Gbps" and port.rate_gbps == 200.0
    assert (port.bridge, port.bridge_port_id, port.auto_negotiation) == ("bridge1", "*1", False)


def test_a_renamed_port_is_found_by_its_default_name() -> None:
    emu = RouterOSEmulator(ports=[EthernetPort("spark1-a", default_name="qsfp56-dd-1-1")])
    state = read(emu, SwitchConfig("routeros", "x", ports={"spark-1": ("qsfp56-dd-1-1",)}))
    assert state.port("qsfp56-dd-1-1") == state.port("spark1-a") is not None


def test_numbers_with_console_grouping_and_resource_as_a_list() -> None:
    assert parse_int("100 054") == 100054 and parse_int("9000") == 9000 and parse_int("auto") is None
    state = parse_state(
        "sw",
        [{"version": "7.22 (stable)", "board-name": "CRS812"}],
        [{".id": "*A", "name": "p1", "mtu": "9000", "l2mtu": "9022", "speed": "200G-baseCR4",
          "auto-negotiation": "false", "fec-mode": "fec91", "disabled": "false"}],
        [{"name": "p1", "status": "link-ok", "rate": "100Gbps"}],
        [{"name": "p1", "rx-fcs-error": "1 024", "rs-fec-uncorrected": "0"}],
    )  # fmt: skip
    port = state.port("p1")
    assert state.version == "7.22 (stable)" and port is not None
    assert port.counters == {"rx-fcs-error": 1024, "rs-fec-uncorrected": 0} and port.rate_gbps == 100.0


def test_a_reply_that_is_not_records_is_refused_by_name() -> None:
    with pytest.raises(SwitchReplyError, match="/interface/ethernet"):
        parse_state("sw", {}, "nope")


def test_rates_in_gbps() -> None:
    assert [rate_gbps(t) for t in ("200Gbps", "200G-baseCR4", "2.5Gbps", "100Mbps", "auto")] == [
        200.0, 200.0, 2.5, 0.1, None,
    ]  # fmt: skip


def test_diff_at_defaults_raises_l2mtu_first_then_the_rest_then_joins_the_bridge() -> None:
    changes, updates, missing = plan_updates(read(RouterOSEmulator()), CONFIG, PlanOptions())
    assert missing == []
    assert [(c.port, c.prop, c.old, c.new) for c in changes if c.node == "spark-1"] == [
        ("qsfp56-dd-1-1", "auto-negotiation", "yes", "no"),
        ("qsfp56-dd-1-1", "speed", "400G-baseCR8", "200G-baseCR4"),
        ("qsfp56-dd-1-1", "fec-mode", "auto", "fec91"),
        ("qsfp56-dd-1-1", "l2mtu", "1584", "9216"),
        ("qsfp56-dd-1-1", "mtu", "1500", "9000"),
        ("qsfp56-dd-1-1", "bridge", None, "bridge1"),
    ]
    assert updates[0] == PortUpdate(
        "spark-1", "qsfp56-dd-1-1", "*1",
        ({"l2mtu": "9216"}, {"auto-negotiation": "no", "speed": "200G-baseCR4", "fec-mode": "fec91", "mtu": "9000"}),
        join_bridge="bridge1",
    )  # fmt: skip


def test_diff_lowering_the_mtu_sets_mtu_before_the_smaller_l2mtu() -> None:
    emu = RouterOSEmulator()
    configured(emu, "qsfp56-dd-1-1", "qsfp56-dd-1-5")
    _, updates, _ = plan_updates(read(emu), CONFIG, PlanOptions(host_mtu=4000))
    assert updates[0].patches == ({"mtu": "4000"}, {"l2mtu": "4216"})
    for update in updates:  # the emulator, which refuses mtu > l2mtu, takes them in this order
        for body in update.patches:
            call(emu, "PATCH", f"interface/ethernet/{update.record_id}", body)
    assert plan_updates(read(emu), CONFIG, PlanOptions(host_mtu=4000))[0] == []


def test_diff_is_empty_when_the_switch_matches_and_names_missing_ports() -> None:
    emu = RouterOSEmulator()
    configured(emu, "qsfp56-dd-1-1", "qsfp56-dd-1-5")
    assert plan_updates(read(emu), CONFIG, PlanOptions()) == ([], [], [])
    odd = SwitchConfig("routeros", "x", ports={"spark-1": ("qsfp28-9-9",)})
    assert plan_updates(read(emu, odd), odd, PlanOptions())[2] == ["qsfp28-9-9 (spark-1)"]


def test_a_port_in_another_bridge_is_moved_not_added() -> None:
    emu = RouterOSEmulator(bridges=("bridge1", "lab"))
    call(emu, "PUT", "interface/bridge/port", {"bridge": "lab", "interface": "qsfp56-dd-1-1"})
    _, updates, _ = plan_updates(read(emu), CONFIG, PlanOptions())
    assert updates[0].move_bridge == ("*1", "bridge1") and updates[0].join_bridge is None


def problems_of(emu: RouterOSEmulator, host_mtu: int | dict[str, int] = 9000) -> dict[tuple[str, str], Any]:
    return {(p.port, p.what): p for p in port_problems(read(emu), CONFIG, host_mtu)}


def test_a_configured_switch_has_no_problems() -> None:
    emu = RouterOSEmulator()
    configured(emu, "qsfp56-dd-1-1", "qsfp56-dd-1-5")
    assert problems_of(emu) == {}


def test_a_lane_at_100g_and_an_l2mtu_of_1584_are_failures_with_their_fix() -> None:
    emu = RouterOSEmulator()
    configured(emu, "qsfp56-dd-1-1", "qsfp56-dd-1-5")
    emu.port("qsfp56-dd-1-1").set_link("100Gbps")
    emu.port("qsfp56-dd-1-5").l2mtu = 1584
    found = problems_of(emu)
    assert set(found) == {("qsfp56-dd-1-1", "rate"), ("qsfp56-dd-1-5", "l2mtu")}
    rate, l2mtu = found[("qsfp56-dd-1-1", "rate")], found[("qsfp56-dd-1-5", "l2mtu")]
    assert (rate.severity, rate.found, rate.expected) == ("fail", "100Gbps", "200Gbps")
    assert "auto-negotiation=no speed=200G-baseCR4" in rate.fix
    assert (l2mtu.severity, l2mtu.found, l2mtu.node) == ("fail", "1584", "spark-2")
    assert l2mtu.expected.startswith(">= 9022") and l2mtu.fix.endswith("l2mtu=9216")


def test_l2mtu_is_judged_against_each_nodes_own_mtu() -> None:
    emu = RouterOSEmulator()
    configured(emu, "qsfp56-dd-1-1", "qsfp56-dd-1-5")
    emu.port("qsfp56-dd-1-5").l2mtu = 9021  # one short of 9000 + 22
    assert set(problems_of(emu, {"spark-1": 9000, "spark-2": 9000})) == {("qsfp56-dd-1-5", "l2mtu")}
    emu.port("qsfp56-dd-1-5").l2mtu = 9022
    assert problems_of(emu, {"spark-1": 9000, "spark-2": 9000}) == {}
    assert problems_of(emu, {"spark-1": 1500}) == {}  # a node without facts is not judged


def test_defaults_fail_on_link_and_fec_and_counters_warn() -> None:
    emu = RouterOSEmulator()
    emu.port("qsfp56-dd-1-5").rx_fcs_error = 7
    found = problems_of(emu)
    link = found[("qsfp56-dd-1-1", "link")]
    assert link.severity == "fail" and "auto-negotiation on" in link.found and "auto-negotiation=no" in link.fix
    assert found[("qsfp56-dd-1-1", "fec")].severity == "fail"  # no link: FEC may be why
    assert found[("qsfp56-dd-1-1", "mtu")].severity == "warn"
    errors = found[("qsfp56-dd-1-5", "errors")]
    assert (errors.severity, errors.found, errors.fix) == ("warn", "rx-fcs-error 7", None)


def test_a_disabled_or_missing_port_is_a_failure() -> None:
    emu = RouterOSEmulator()
    configured(emu, "qsfp56-dd-1-1", "qsfp56-dd-1-5")
    emu.port("qsfp56-dd-1-1").disabled = True
    odd = SwitchConfig("routeros", "x", ports={**PORTS, "spark-3": ("qsfp28-1-1",)})
    found = {(p.port, p.what): p for p in port_problems(read(emu, odd), odd, 9000)}
    assert found[("qsfp56-dd-1-1", "link")].fix.endswith("disabled=no")
    assert found[("qsfp28-1-1", "missing")].severity == "fail"
