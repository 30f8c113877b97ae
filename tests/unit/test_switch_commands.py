"""`wirespeed switch status|apply|verify` against the RouterOS REST emulator over verified HTTPS on 127.0.0.1:
the diff before any change, changes only with --yes and in an order RouterOS accepts, verify catching a lane at
100G and an L2MTU of 1584, and one clear line (never the password) for each way reaching the switch can fail."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulators.routeros_rest import RouterOSEmulator
from wirespeed.cli.main import main
from wirespeed.cli.output import Environment

PASSWORD = "pw-Zq81-not-to-be-seen"
PORTS = {"spark-1": "qsfp56-dd-1-1", "spark-2": "qsfp56-dd-1-5"}


def cluster_file(
    tmp_path: Path, address: str, ca_file: str | None, *, tls: bool = True, extra: str = "", bridge: str = "bridge1"
) -> Path:
    path = tmp_path / "cluster.toml"
    nodes = "".join(f'[[nodes]]\nname = "{n}"\nhost = "198.18.0.{i}"\n\n' for i, n in enumerate(PORTS, start=1))
    ports = ", ".join(f'{node} = ["{port}"]' for node, port in PORTS.items())
    ca = f'ca_file = "{ca_file}"\n' if ca_file else ""
    path.write_text(
        f'{nodes}[switch]\nkind = "routeros"\naddress = "{address}"\n{ca}tls = {str(tls).lower()}\n'
        f'bridge = "{bridge}"\nports = {{ {ports} }}\n{extra}'
    )
    return path


def address(emu: RouterOSEmulator) -> str:
    return emu.url.split("://", 1)[1]


def run(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    out, err = env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]
    assert PASSWORD not in out + err
    assert "Traceback" not in out + err
    return code, out, err


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("wirespeed: error: ")
    return lines[0]


@pytest.fixture
def password(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("WIRESPEED_SWITCH_PASSWORD", PASSWORD)
    return PASSWORD


@pytest.fixture
def emu(password: str) -> Iterator[RouterOSEmulator]:
    with RouterOSEmulator(password=password) as running:
        yield running


@pytest.fixture
def cluster(emu: RouterOSEmulator, tmp_path: Path) -> Path:
    return cluster_file(tmp_path, address(emu), emu.ca_file)


def writes(emu: RouterOSEmulator) -> list[tuple[str, str, Any]]:
    return [(r.method, r.path, r.body) for r in emu.requests if r.method in ("PATCH", "PUT", "DELETE")]


def test_status_shows_each_fabric_port_and_the_version(emu: RouterOSEmulator, cluster: Path) -> None:
    code, out, _ = run("switch", "status", "--cluster", str(cluster))
    assert code == 0
    assert "CRS804-4DDQ, RouterOS 7.23.1 (stable)" in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if "qsfp56-dd-1-" in line}
    assert set(rows) == set(PORTS.values())
    assert "no-link" in rows["qsfp56-dd-1-1"] and "1584" in rows["qsfp56-dd-1-1"] and "auto" in rows["qsfp56-dd-1-1"]
    code, out, _ = run("switch", "status", "--cluster", str(cluster), "--json")
    data = json.loads(out)
    assert code == 0 and data["version"] == "7.23.1 (stable)"
    assert [(p["node"], p["port"], p["l2mtu"], p["status"]) for p in data["ports"]] == [
        ("spark-1", "qsfp56-dd-1-1", 1584, "no-link"), ("spark-2", "qsfp56-dd-1-5", 1584, "no-link"),
    ]  # fmt: skip
    assert writes(emu) == []


def test_apply_without_yes_shows_the_diff_and_changes_nothing(emu: RouterOSEmulator, cluster: Path) -> None:
    code, out, err = run("switch", "apply", "--cluster", str(cluster))
    assert code == 0 and writes(emu) == []
    assert "12 change(s) on 2 port(s)" in err and "--yes" in err
    line = next(line for line in out.splitlines() if "qsfp56-dd-1-5" in line and "l2mtu" in line)
    assert [c.strip() for c in line.split("│")] == ["spark-2", "qsfp56-dd-1-5", "l2mtu", "1584", "9216"]
    assert emu.port("qsfp56-dd-1-5").l2mtu == 1584


def test_apply_yes_changes_in_order_then_verify_confirms(emu: RouterOSEmulator, cluster: Path) -> None:
    code, out, err = run("switch", "apply", "--cluster", str(cluster), "--yes", "--wait", "5", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["ok"] is True and data["problems"] == [] and len(data["applied"]) == 6
    assert writes(emu) == [
        ("PATCH", "/rest/interface/ethernet/*1", {"l2mtu": "9216"}),
        ("PATCH", "/rest/interface/ethernet/*1",
         {"auto-negotiation": "no", "speed": "200G-baseCR4", "fec-mode": "fec91", "mtu": "9000"}),
        ("PUT", "/rest/interface/bridge/port", {"bridge": "bridge1", "interface": "qsfp56-dd-1-1"}),
        ("PATCH", "/rest/interface/ethernet/*2", {"l2mtu": "9216"}),
        ("PATCH", "/rest/interface/ethernet/*2",
         {"auto-negotiation": "no", "speed": "200G-baseCR4", "fec-mode": "fec91", "mtu": "9000"}),
        ("PUT", "/rest/interface/bridge/port", {"bridge": "bridge1", "interface": "qsfp56-dd-1-5"}),
    ]  # fmt: skip
    port = emu.port("qsfp56-dd-1-1")
    assert (port.rate, port.l2mtu, port.mtu, port.fec_mode) == ("200Gbps", 9216, 9000, "fec91")
    assert emu.port("qsfp56-dd-2-1").l2mtu == 1584  # not a fabric port: untouched
    code, _, err = run("switch", "verify", "--cluster", str(cluster))
    assert code == 0 and "every fabric port verified" in err
    before = len(writes(emu))
    code, _, err = run("switch", "apply", "--cluster", str(cluster), "--yes")
    assert code == 0 and "0 change(s)" in err and len(writes(emu)) == before


def test_verify_catches_a_lane_at_100g_and_an_l2mtu_of_1584(emu: RouterOSEmulator, cluster: Path) -> None:
    assert run("switch", "apply", "--cluster", str(cluster), "--yes", "--wait", "0")[0] == 0
    emu.port("qsfp56-dd-1-1").set_link("100Gbps")
    emu.port("qsfp56-dd-1-5").l2mtu = 1584
    code, out, err = run("switch", "verify", "--cluster", str(cluster))
    assert code == 1 and "2 problem(s)" in err
    assert "FAIL qsfp56-dd-1-1 (spark-1) rate: 100Gbps, expected 200Gbps" in out
    assert "FAIL qsfp56-dd-1-5 (spark-2) l2mtu: 1584, expected >= 9022" in out
    assert '/interface/ethernet/set [find default-name="qsfp56-dd-1-5"] l2mtu=9216' in out
    code, out, _ = run("switch", "verify", "--cluster", str(cluster), "--json")
    problems = {(p["port"], p["what"]) for p in json.loads(out)["problems"]}
    assert code == 1 and problems == {("qsfp56-dd-1-1", "rate"), ("qsfp56-dd-1-5", "l2mtu")}


def test_verify_reports_a_link_that_went_down(emu: RouterOSEmulator, cluster: Path) -> None:
    assert run("switch", "apply", "--cluster", str(cluster), "--yes", "--wait", "0")[0] == 0
    emu.port("qsfp56-dd-1-1").set_link(None)
    code, out, _ = run("switch", "verify", "--cluster", str(cluster), "--wait", "0")
    assert code == 1 and "link: no-link" in out


def test_a_refused_change_names_the_port_and_what_was_already_applied(emu: RouterOSEmulator, tmp_path: Path) -> None:
    cluster = cluster_file(tmp_path, address(emu), emu.ca_file, bridge="lab")  # no such bridge on the switch
    code, _, err = run("switch", "apply", "--cluster", str(cluster), "--yes")
    line = one_line_error(err.split("wirespeed: set ")[-1].split("\n", 1)[1])
    assert code == 1
    assert "PUT /rest/interface/bridge/port refused" in line and "at port qsfp56-dd-1-1 (spark-1)" in line
    assert "already applied: 2 change(s)" in line


def test_bad_credentials_are_one_line_without_the_password(emu: RouterOSEmulator, cluster: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("WIRESPEED_SWITCH_PASSWORD", "wrong")
    code, out, err = run("switch", "status", "--cluster", str(cluster))
    line = one_line_error(err)
    assert code == 1 and out == ""
    assert f"switch {address(emu)}: login refused for user 'admin'" in line and "WIRESPEED_SWITCH_PASSWORD" in line


def test_no_password_anywhere_says_where_to_put_it(
    emu: RouterOSEmulator, cluster: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WIRESPEED_SWITCH_PASSWORD")
    code, _, err = run("switch", "status", "--cluster", str(cluster))
    assert code == 1 and "no password for user 'admin'" in one_line_error(err)
    assert emu.requests == []  # nothing sent without a password


def test_password_file_is_read_only_when_private(emu: RouterOSEmulator, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv("WIRESPEED_SWITCH_PASSWORD")
    secret = tmp_path / "switch.pw"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    cluster = cluster_file(tmp_path, address(emu), emu.ca_file, extra=f'password_file = "{secret}"\n')
    assert run("switch", "status", "--cluster", str(cluster))[0] == 0
    secret.chmod(0o644)
    code, _, err = run("switch", "status", "--cluster", str(cluster))
    assert code == 1 and f"chmod 600 {secret}" in one_line_error(err)
    secret.unlink()
    code, _, err = run("switch", "status", "--cluster", str(cluster))
    assert code == 1 and "cannot read password_file" in one_line_error(err)


def test_an_unreachable_switch_is_one_line(password: str, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cluster = cluster_file(tmp_path, f"127.0.0.1:{port}", None)
    code, _, err = run("switch", "status", "--cluster", str(cluster))
    line = one_line_error(err)
    assert code == 1 and f"switch 127.0.0.1:{port}: connection refused" in line and "www-ssl" in line


def test_an_untrusted_certificate_is_refused_unless_insecure(emu: RouterOSEmulator, tmp_path: Path) -> None:
    cluster = cluster_file(tmp_path, address(emu), None)
    code, _, err = run("switch", "status", "--cluster", str(cluster))
    line = one_line_error(err)
    assert code == 1 and "TLS certificate not trusted" in line and "--insecure" in line
    assert run("switch", "status", "--cluster", str(cluster), "--insecure")[0] == 0
    assert run("switch", "status", "--cluster", str(cluster), "--ca-file", emu.ca_file)[0] == 0


def test_a_silent_switch_times_out_in_one_line(emu: RouterOSEmulator, cluster: Path) -> None:
    emu.delay_s = 3.0
    code, _, err = run("switch", "status", "--cluster", str(cluster), "--timeout", "0.5")
    assert code == 1 and "no answer within 0.5 s" in one_line_error(err)


def test_a_monitor_that_never_returns_is_one_bounded_line_naming_the_switch_and_ports(
    emu: RouterOSEmulator, cluster: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RouterOS would hold the request until its 60 s session limit; the monitor call gives up well before the
    client's 10 s and says which switch and which ports, in one line."""
    import time

    from wirespeed.adapters.routeros_rest import DEFAULT_TIMEOUT_S
    from wirespeed.engine import switch

    assert switch.MONITOR_TIMEOUT_S < DEFAULT_TIMEOUT_S
    monkeypatch.setattr(switch, "MONITOR_TIMEOUT_S", 0.5)
    emu.port("qsfp56-dd-1-5").monitor_hangs = True
    started = time.monotonic()
    code, _, err = run("switch", "status", "--cluster", str(cluster))
    line = one_line_error(err)
    assert code == 1 and time.monotonic() - started < 5
    ports = "ports qsfp56-dd-1-1 (spark-1), qsfp56-dd-1-5 (spark-2)"
    assert f"switch {address(emu)}: monitor of {ports} gave no answer within 0.5 s" in line and "60 s" in line, line


def test_the_counters_read_are_the_ones_routeros_prints(emu: RouterOSEmulator, cluster: Path) -> None:
    """`tx-drop` and `rs-fec-uncorrected`, as MikroTik's Ethernet manual (Stats) names them."""
    emu.port("qsfp56-dd-1-1").tx_drop, emu.port("qsfp56-dd-1-1").rs_fec_uncorrected = 5, 7
    code, out, _ = run("switch", "status", "--cluster", str(cluster), "--json")
    port = next(p for p in json.loads(out)["ports"] if p["port"] == "qsfp56-dd-1-1")
    assert code == 0 and port["counters"] == {
        "rx-fcs-error": 0,
        "rx-too-long": 0,
        "tx-drop": 5,
        "rs-fec-uncorrected": 7,
    }
    body = next(r.body for r in emu.requests if r.path.endswith("/interface/ethernet/print"))
    assert body == {"stats": "", ".proplist": "name,rx-fcs-error,rx-too-long,tx-drop,rs-fec-uncorrected"}
    monitor = next(r.body for r in emu.requests if r.path.endswith("/interface/ethernet/monitor"))
    assert monitor is not None and monitor["once"] == "" and monitor["numbers"] == "qsfp56-dd-1-1,qsfp56-dd-1-5"


def test_plain_http_when_the_file_says_tls_false(password: str, tmp_path: Path) -> None:
    with RouterOSEmulator(password=password, tls=False) as plain:
        cluster = cluster_file(tmp_path, address(plain), None, tls=False)
        code, out, _ = run("switch", "status", "--cluster", str(cluster), "--json")
    assert code == 0 and json.loads(out)["board_name"] == "CRS804-4DDQ"


def test_a_cluster_file_without_a_switch_or_ports_says_so(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[nodes]]\nname = "spark-1"\nhost = "198.18.0.1"\n')
    code, _, err = run("switch", "status", "--cluster", str(path))
    assert code == 2 and "no [switch] table" in one_line_error(err)
    path.write_text(path.read_text() + '[switch]\nkind = "routeros"\naddress = "127.0.0.1:1"\n')
    code, _, err = run("switch", "verify", "--cluster", str(path))
    assert code == 2 and "names no ports" in one_line_error(err)


# ------------------------------------------------------------------------------- tls = false: the password in clear


def test_tls_false_to_a_remote_switch_is_refused_without_allow_plaintext(password: str, tmp_path: Path) -> None:
    cluster = cluster_file(tmp_path, "192.0.2.1", None, tls=False)  # refused before any connection is tried
    for command in ("status", "verify", "apply"):
        code, out, err = run("switch", command, "--cluster", str(cluster))
        line = one_line_error(err)
        assert code == 2 and out == ""
        assert "switch 192.0.2.1: tls = false would send the password of user 'admin'" in line
        assert "unencrypted" in line and "tls = true" in line and "--allow-plaintext" in line


def test_allow_plaintext_warns_once_naming_the_switch(
    password: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "wirespeed.core.cluster.routeros._loopback", lambda address: False
    )  # the emulator as a remote switch
    with RouterOSEmulator(password=password, tls=False) as plain:
        where = address(plain)
        cluster = cluster_file(tmp_path, where, None, tls=False)
        refused = run("switch", "status", "--cluster", str(cluster))
        code, out, err = run("switch", "status", "--cluster", str(cluster), "--json", "--allow-plaintext")
    assert refused[0] == 2 and "--allow-plaintext" in one_line_error(refused[2])
    assert code == 0 and json.loads(out)["board_name"] == "CRS804-4DDQ"
    assert err.splitlines() == [
        f"wirespeed: warning: switch {where}: tls = false: the password of user 'admin' crosses the network "
        "unencrypted (HTTP Basic auth) (hint: set tls = true in [switch] (with --insecure or ca_file for a "
        "self-signed certificate))"
    ]


@pytest.mark.parametrize("where", ["127.0.0.1:8080", "localhost", "[::1]:8443", "::1"])
def test_tls_false_to_loopback_is_no_cleartext_risk(where: str) -> None:
    from wirespeed.core.cluster.routeros import SwitchConfig, cleartext_password

    assert cleartext_password(SwitchConfig("routeros", where, tls=False)) is None
    assert cleartext_password(SwitchConfig("routeros", "192.168.88.1", tls=False)) is not None
    assert cleartext_password(SwitchConfig("routeros", "192.168.88.1", tls=True)) is None
