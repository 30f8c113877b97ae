"""The RouterOS REST emulator answers as MikroTik documents the API (all values strings, `*N` ids, JSON errors),
models the switch defaults that broke 200G links in the field, and cleans up after itself, so the switch client's
tests can trust it. The client here is plain urllib with certificate and hostname checks on."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# `emulators`, not `tests.emulators`: bare `pytest` (make unit) puts tests/ on sys.path, not the repository root
from emulators.routeros_rest import EthernetPort, RouterOSEmulator

USER, PASSWORD = "admin", "s3cret"
PORTS = ("qsfp56-dd-1-1", "qsfp56-dd-1-5", "qsfp56-dd-2-1")
needs_openssl = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the `openssl` CLI on PATH: the emulator makes its TLS certificate"
)


def call(
    sw: RouterOSEmulator,
    method: str,
    path: str,
    body: Any = None,
    *,
    auth: tuple[str, str] | None = (USER, PASSWORD),
    raw: bytes | None = None,
    context: ssl.SSLContext | None = None,
    timeout: float = 5.0,
) -> tuple[int, Any]:
    """One request the way a switch client makes it; the status and the decoded JSON (None for no body)."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(sw.url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if auth is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    if context is None and sw.tls:
        context = sw.client_context()
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as reply:
            status, payload = reply.status, reply.read()
    except urllib.error.HTTPError as err:
        status, payload = err.code, err.read()
    return status, json.loads(payload) if payload else None


def all_strings(value: Any) -> bool:
    if isinstance(value, list):
        return all(all_strings(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    return False


@pytest.fixture
def sw() -> Iterator[RouterOSEmulator]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the `openssl` CLI on PATH: the emulator makes its TLS certificate")
    with RouterOSEmulator(user=USER, password=PASSWORD, ports=[EthernetPort(n) for n in PORTS]) as emulator:
        yield emulator


def by_name(records: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {r["name"]: r for r in records}


@pytest.mark.parametrize("auth", [None, (USER, "wrong"), ("root", PASSWORD)], ids=["none", "password", "user"])
def test_bad_or_missing_login_is_401_json(sw: RouterOSEmulator, auth: tuple[str, str] | None) -> None:
    assert call(sw, "GET", "/rest/system/resource", auth=auth) == (401, {"error": 401, "message": "Unauthorized"})


def test_ethernet_list_is_all_strings_with_star_ids(sw: RouterOSEmulator) -> None:
    status, records = call(sw, "GET", "/rest/interface/ethernet")
    assert status == 200 and all_strings(records)
    assert [r[".id"] for r in records] == ["*1", "*2", "*3"]
    first = records[0]
    assert first == {
        ".id": "*1",
        "name": "qsfp56-dd-1-1",
        "default-name": "qsfp56-dd-1-1",
        "mtu": "1500",
        "l2mtu": "1584",
        "speed": "400G-baseCR8",
        "auto-negotiation": "true",
        "fec-mode": "auto",
        "disabled": "false",
        "running": "false",
    }


def test_one_record_by_id_or_name_and_unknown_id_is_404(sw: RouterOSEmulator) -> None:
    assert call(sw, "GET", "/rest/interface/ethernet/*2")[1]["name"] == "qsfp56-dd-1-5"
    assert call(sw, "GET", "/rest/interface/ethernet/qsfp56-dd-1-5")[1][".id"] == "*2"
    assert call(sw, "GET", "/rest/interface/ethernet/%2A2")[1]["name"] == "qsfp56-dd-1-5"  # urllib quotes `*`
    assert call(sw, "GET", "/rest/interface/ethernet/*9") == (404, {"error": 404, "message": "Not Found"})


def test_get_filters_by_query_and_picks_props(sw: RouterOSEmulator) -> None:
    status, records = call(sw, "GET", "/rest/interface/ethernet?name=qsfp56-dd-1-5")
    assert status == 200 and [r[".id"] for r in records] == ["*2"]
    assert call(sw, "GET", "/rest/interface/ethernet?name=nope")[1] == []
    assert call(sw, "GET", "/rest/interface/ethernet?disabled=no&.proplist=name,mtu")[1][0] == {
        "name": "qsfp56-dd-1-1",
        "mtu": "1500",
    }


def test_patch_sets_values_and_answers_the_record_in_strings(sw: RouterOSEmulator) -> None:
    status, record = call(
        sw,
        "PATCH",
        "/rest/interface/ethernet/*1",
        {"auto-negotiation": "no", "speed": "200G-baseCR4", "fec-mode": "fec91", "l2mtu": 9216, "mtu": "9000"},
    )
    assert status == 200 and all_strings(record)
    assert record["auto-negotiation"] == "false" and record["speed"] == "200G-baseCR4"
    assert (record["l2mtu"], record["mtu"], record["fec-mode"]) == ("9216", "9000", "fec91")
    port = sw.port("qsfp56-dd-1-1")
    assert (port.mtu, port.l2mtu, port.auto_negotiation, port.fec_mode) == (9000, 9216, False, "fec91")
    assert call(sw, "GET", "/rest/interface/ethernet/*1")[1] == record


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"mtu": "9000"}, "greater than l2mtu"),  # the default L2MTU 1584 clamps jumbo frames
        ({"mtu": "9000", "l2mtu": "9216"}, "raise l2mtu first"),  # applied in the order sent
        ({"mtu": "nine"}, "must be a number"),
        ({"mtu": "20"}, "out of range"),
        ({"l2mtu": "20000"}, "out of range"),
        ({"speed": "200G"}, "speed"),
        ({"fec-mode": "rs"}, "fec-mode"),
        ({"auto-negotiation": "maybe"}, "auto-negotiation"),
        ({"mtu": [9000]}, "string or a number"),
        ({"colour": "red"}, "unknown parameter colour"),
        ({"running": "true"}, "read-only"),
    ],
)
def test_patch_refuses_bad_values_with_400_and_changes_nothing(
    sw: RouterOSEmulator, body: dict[str, Any], detail: str
) -> None:
    status, error = call(sw, "PATCH", "/rest/interface/ethernet/*1", {"speed": "100G-baseCR4", **body})
    assert status == 400
    assert error["error"] == 400 and error["message"] == "Bad Request" and detail in error["detail"]
    assert sw.port("qsfp56-dd-1-1").speed == "400G-baseCR8"  # all or nothing


def monitor(sw: RouterOSEmulator, numbers: str) -> list[dict[str, str]]:
    status, answer = call(sw, "POST", "/rest/interface/ethernet/monitor", {"numbers": numbers, "once": ""})
    assert status == 200 and all_strings(answer)
    return list(answer)


def test_monitor_no_link_at_defaults_then_link_ok_at_forced_200g(sw: RouterOSEmulator) -> None:
    assert monitor(sw, "qsfp56-dd-1-1") == [
        {"name": "qsfp56-dd-1-1", "status": "no-link", "auto-negotiation": "incomplete"}
    ]
    call(sw, "PATCH", "/rest/interface/ethernet/*1", {"auto-negotiation": "no", "speed": "200G-baseCR4"})
    assert monitor(sw, "qsfp56-dd-1-1") == [
        {
            "name": "qsfp56-dd-1-1",
            "status": "link-ok",
            "auto-negotiation": "disabled",
            "rate": "200Gbps",
            "full-duplex": "true",
        }
    ]
    assert call(sw, "GET", "/rest/interface/ethernet/*1")[1]["running"] == "true"


def test_monitor_forced_speed_unlike_the_peer_has_no_link(sw: RouterOSEmulator) -> None:
    call(sw, "PATCH", "/rest/interface/ethernet/*1", {"auto-negotiation": "false", "speed": "400G-baseCR8"})
    assert monitor(sw, "qsfp56-dd-1-1")[0]["status"] == "no-link"


def test_monitor_takes_ids_and_comma_lists_and_refuses_unknown_ports(sw: RouterOSEmulator) -> None:
    assert [m["name"] for m in monitor(sw, "*3,qsfp56-dd-1-1")] == ["qsfp56-dd-2-1", "qsfp56-dd-1-1"]
    status, error = call(sw, "POST", "/rest/interface/ethernet/monitor", {"numbers": "sfp9", "once": ""})
    assert status == 400 and error["detail"] == "no such item"


def test_a_monitor_without_once_or_of_a_hung_port_runs_to_the_session_limit(sw: RouterOSEmulator) -> None:
    """manual.mikrotik.com REST API: `monitor` commands run until stopped and a request ends at the 60-second limit
    with 400 `Session closed`; with `once` one sample comes back at once."""
    sw.session_limit_s = 0.3
    started = time.monotonic()
    status, error = call(sw, "POST", "/rest/interface/ethernet/monitor", {"numbers": "*1"})
    assert (status, error) == (400, {"error": 400, "message": "Bad Request", "detail": "Session closed"})
    assert time.monotonic() - started >= 0.3
    sw.port("qsfp56-dd-1-5").monitor_hangs = True
    status, error = call(sw, "POST", "/rest/interface/ethernet/monitor", {"numbers": "*1,*2", "once": ""})
    assert status == 400 and error["detail"] == "Session closed"
    assert monitor(sw, "*1")[0]["name"] == "qsfp56-dd-1-1"  # the other ports still answer


def test_tests_can_bring_a_lane_up_at_100g(sw: RouterOSEmulator) -> None:
    sw.port("qsfp56-dd-1-5").set_link("100Gbps")
    assert monitor(sw, "qsfp56-dd-1-5") == [
        {
            "name": "qsfp56-dd-1-5",
            "status": "link-ok",
            "auto-negotiation": "done",
            "rate": "100Gbps",
            "full-duplex": "true",
        }
    ]
    assert monitor(sw, "qsfp56-dd-1-1")[0]["status"] == "no-link"  # the other lanes keep the rule


def test_print_with_stats_gives_the_counters_as_strings(sw: RouterOSEmulator) -> None:
    port = sw.port("qsfp56-dd-1-5")
    port.rx_fcs_error, port.rs_fec_uncorrected = 7, 123456789012
    status, rows = call(
        sw,
        "POST",
        "/rest/interface/ethernet/print",
        {
            "stats": "",
            ".proplist": ["name", "rx-fcs-error", "rx-too-long", "tx-drop", "rs-fec-uncorrected"],
            ".query": ["name=qsfp56-dd-1-5"],
        },
    )
    assert status == 200
    assert rows == [
        {
            "name": "qsfp56-dd-1-5",
            "rx-fcs-error": "7",
            "rx-too-long": "0",
            "tx-drop": "0",
            "rs-fec-uncorrected": "123456789012",
        }
    ]
    plain = call(sw, "POST", "/rest/interface/ethernet/print", {".query": ["name=qsfp56-dd-1-5"]})[1]
    assert "rx-fcs-error" not in plain[0] and plain[0]["mtu"] == "1500"


def test_system_resource_names_the_version_in_strings(sw: RouterOSEmulator) -> None:
    status, resource = call(sw, "GET", "/rest/system/resource")
    assert status == 200 and all_strings(resource)
    assert resource["version"] == "7.23.1 (stable)"
    assert resource["board-name"] == "CRS804-4DDQ"
    assert resource["uptime"].startswith("1d2h3m")


def test_bridge_ports_add_list_refuse_twice_and_delete(sw: RouterOSEmulator) -> None:
    assert [b["name"] for b in call(sw, "GET", "/rest/interface/bridge")[1]] == ["bridge1"]
    status, added = call(sw, "PUT", "/rest/interface/bridge/port", {"bridge": "bridge1", "interface": "qsfp56-dd-1-1"})
    assert status == 200 and added["interface"] == "qsfp56-dd-1-1" and added[".id"].startswith("*")
    again = call(sw, "PUT", "/rest/interface/bridge/port", {"bridge": "bridge1", "interface": "qsfp56-dd-1-1"})
    assert again[0] == 400 and "already" in again[1]["detail"]
    unknown = call(sw, "PUT", "/rest/interface/bridge/port", {"bridge": "bridge9", "interface": "qsfp56-dd-1-5"})
    assert unknown[0] == 400
    assert call(sw, "GET", "/rest/interface/bridge/port")[1] == [added]
    assert call(sw, "DELETE", f"/rest/interface/bridge/port/{added['.id']}") == (204, None)
    assert call(sw, "GET", "/rest/interface/bridge/port")[1] == []
    assert call(sw, "DELETE", f"/rest/interface/bridge/port/{added['.id']}")[0] == 404


def test_unknown_paths_bad_methods_and_bad_json_are_json_errors(sw: RouterOSEmulator) -> None:
    assert call(sw, "GET", "/rest/ip/nothing") == (404, {"error": 404, "message": "Not Found"})
    assert call(sw, "GET", "/elsewhere")[0] == 404
    status, error = call(sw, "DELETE", "/rest/interface/ethernet/*1")
    assert status == 405 and error["error"] == 405
    status, error = call(sw, "PATCH", "/rest/interface/ethernet/*1", raw=b'{"mtu": ')
    assert status == 400 and error["message"] == "Bad Request" and error["detail"].startswith("JSON")
    assert call(sw, "PATCH", "/rest/interface/ethernet/*1", ["mtu"])[0] == 400


@needs_openssl
def test_tls_is_refused_without_the_emulators_certificate() -> None:
    with RouterOSEmulator(user=USER, password=PASSWORD) as sw:
        with pytest.raises(urllib.error.URLError) as raised:
            call(sw, "GET", "/rest/system/resource", context=ssl.create_default_context())
        assert isinstance(raised.value.reason, ssl.SSLCertVerificationError)
        assert sw.url.startswith("https://127.0.0.1:")
        assert call(sw, "GET", "/rest/system/resource")[0] == 200  # with it, hostname checked against the IP SAN


def test_plain_http_mode_serves_the_same_api() -> None:
    with RouterOSEmulator(user=USER, password=PASSWORD, tls=False, version="7.21.4") as sw:
        assert sw.url.startswith("http://127.0.0.1:")
        assert call(sw, "GET", "/rest/system/resource")[1]["version"] == "7.21.4 (stable)"
        assert call(sw, "GET", "/rest/system/resource", auth=None)[0] == 401
        with pytest.raises(RuntimeError):
            _ = sw.ca_file


@needs_openssl
def test_exit_joins_the_thread_and_removes_the_certificate_even_after_a_failure() -> None:
    seen: dict[str, Any] = {}
    with pytest.raises(ZeroDivisionError), RouterOSEmulator() as sw:
        seen["thread"], seen["cert"], seen["url"] = sw.thread, Path(sw.ca_file), sw.url
        assert seen["thread"].is_alive() and seen["cert"].exists()
        _ = 1 / 0
    assert not seen["thread"].is_alive()
    assert not seen["cert"].exists() and not seen["cert"].parent.exists()
    with pytest.raises(urllib.error.URLError):  # nothing listens any more
        urllib.request.urlopen(seen["url"].replace("https", "http") + "/rest", timeout=2)
    assert not any(t.name.startswith("routeros-emulator") for t in threading.enumerate())


def test_requests_log_records_method_path_and_body() -> None:
    with RouterOSEmulator(user=USER, password=PASSWORD, tls=False) as sw:
        call(sw, "GET", "/rest/interface/ethernet?name=qsfp56-dd-1-1")
        call(sw, "PATCH", "/rest/interface/ethernet/*1", {"mtu": "1500"})
        call(sw, "POST", "/rest/interface/ethernet/monitor", {"numbers": "*1", "once": ""}, auth=None)
        assert sw.requests == [
            ("GET", "/rest/interface/ethernet?name=qsfp56-dd-1-1", None),
            ("PATCH", "/rest/interface/ethernet/*1", {"mtu": "1500"}),
            ("POST", "/rest/interface/ethernet/monitor", {"numbers": "*1", "once": ""}),  # logged even when refused
        ]
        assert sw.requests[1].method == "PATCH"


def test_delay_makes_a_client_time_out_and_does_not_hold_up_exit() -> None:
    with RouterOSEmulator(user=USER, password=PASSWORD, tls=False, delay_s=30) as sw:
        started = time.monotonic()
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            call(sw, "GET", "/rest/system/resource", timeout=0.3)
        assert time.monotonic() - started < 5
        exiting = time.monotonic()
    assert time.monotonic() - exiting < 5  # the held answer is cut short by stop()
