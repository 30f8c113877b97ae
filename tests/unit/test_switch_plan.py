"""`wirespeed switch plan`: the cluster file's [switch] table (refused clearly when wrong, never holding a password)
and the RouterOS script for each topology, checked line by line, with the lossless recipe guarded by version."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.cluster.routeros import HostHalf, PlanOptions, SwitchConfig, parse_switch_table, parse_version, plan
from wirespeed.core.errors import InventoryError

NODES = ("spark-1", "spark-2", "spark-3", "spark-4")


def port_line(port: str, speed: str = "200G-baseCR4", fec: str = "fec91", l2mtu: int = 9216, mtu: int = 9000) -> str:
    return f'set [find default-name="{port}"] auto-negotiation=no speed={speed} fec-mode={fec} l2mtu={l2mtu} mtu={mtu}'


def config(ports: dict[str, tuple[str, ...]], bridge: str | None = "bridge1") -> SwitchConfig:
    return SwitchConfig("routeros", "198.18.0.10", ports=ports, bridge=bridge)


def test_two_sparks_one_cable_each() -> None:
    made = plan(config({"spark-1": ("qsfp56-dd-1-1",), "spark-2": ("qsfp56-dd-1-5",)}), PlanOptions())
    assert made.script == (
        "# wirespeed switch plan: 2 fabric port(s) at 200G-baseCR4, FEC fec91, MTU 9000 (L2MTU 9216)",
        "/interface/ethernet",
        "# spark-1, cable 1 of 1",
        port_line("qsfp56-dd-1-1"),
        "# spark-2, cable 1 of 1",
        port_line("qsfp56-dd-1-5"),
        "/interface/bridge/port",
        "add bridge=bridge1 interface=qsfp56-dd-1-1",
        "add bridge=bridge1 interface=qsfp56-dd-1-5",
    )
    assert made.host_commands == ()


def test_four_sparks_two_cables_each_without_a_bridge_and_a_smaller_mtu() -> None:
    ports = {node: (f"qsfp56-dd-{i}-1", f"qsfp56-dd-{i}-5") for i, node in enumerate(NODES, start=1)}
    made = plan(config(ports, bridge=None), PlanOptions(host_mtu=4200, fec_mode="off", speed="100G-baseCR4"))
    assert made.script[0] == "# wirespeed switch plan: 8 fabric port(s) at 100G-baseCR4, FEC off, MTU 4200 (L2MTU 4416)"
    body = made.script[2:]
    expected: list[str] = []
    for i, node in enumerate(NODES, start=1):
        for cable, sub in ((1, 1), (2, 5)):
            expected += [
                f"# {node}, cable {cable} of 2",
                port_line(f"qsfp56-dd-{i}-{sub}", "100G-baseCR4", "off", 4416, 4200),
            ]
    assert list(body) == expected  # no bridge section
    # l2mtu is set before mtu on every line: RouterOS refuses an mtu above the current l2mtu
    assert all(line.index("l2mtu=") < line.index(" mtu=") for line in body if line.startswith("set"))


def test_lossless_adds_the_qos_recipe_and_the_host_side_from_7_23() -> None:
    ports = {"spark-1": ("qsfp56-dd-1-1",), "spark-2": ("qsfp56-dd-1-5",)}
    halves = [HostHalf("spark-1", "enp1s0f0np0", "rocep1s0f0"), HostHalf("spark-2", "enp1s0f0np0", None)]
    made = plan(config(ports), PlanOptions(lossless=True, routeros_version="7.23.1 (stable)"), halves)
    qos = list(made.script[made.script.index("/interface/ethernet/switch/qos/profile") :])
    assert qos == [
        "/interface/ethernet/switch/qos/profile",
        "add name=roce dscp=26 traffic-class=3",
        "add name=cnp dscp=48 traffic-class=6",
        "/interface/ethernet/switch/qos/map/ip",
        "add dscp=26 profile=roce",
        "add dscp=48 profile=cnp",
        "/interface/ethernet/switch/qos/tx-manager/queue",
        "set 1 schedule=high-priority-group weight=1",
        "set 3 schedule=high-priority-group weight=1 ecn=yes",
        "set 6 schedule=strict-priority",
        "/interface/ethernet/switch/qos/priority-flow-control",
        "add name=pfc-tc3 traffic-class=3 rx=yes tx=yes",
        "/interface/ethernet/switch/qos/port",
        "set qsfp56-dd-1-1 trust-l3=keep pfc=pfc-tc3",
        "set qsfp56-dd-1-5 trust-l3=keep pfc=pfc-tc3",
        "/interface/ethernet/switch/qos/settings",
        "set lossless-traffic-class=3 lossless-buffers=auto",
        "/interface/ethernet/switch",
        "set [find] qos-hw-offloading=yes",
        "/ip/neighbor/discovery-settings",
        "set lldp-dcbx=yes",
    ]
    assert made.host_commands == (
        "# spark-1",
        "dcb app add dev enp1s0f0np0 dscp-prio 26:3 48:6",
        "dcb pfc set dev enp1s0f0np0 prio-pfc 3:on",
        "cma_roce_tos -d rocep1s0f0 -p 1 -t 106",
        "# spark-2",
        "dcb app add dev enp1s0f0np0 dscp-prio 26:3 48:6",
        "dcb pfc set dev enp1s0f0np0 prio-pfc 3:on",
        "# NCCL: NCCL_IB_TC=106 (DSCP 26 with ECT), as in: bench --env NCCL_IB_TC=106",
    )
    assert any("egress-rate-queue3" in note for note in made.notes)


@pytest.mark.parametrize(
    ("version", "words"),
    [(None, "needs the RouterOS version"), ("7.21.4", "RouterOS 7.21.4 does not offload"), ("garbage", "needs the")],
)
def test_lossless_is_refused_below_7_23_or_when_the_version_is_unknown(version: str | None, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        plan(config({"spark-1": ("qsfp56-dd-1-1",)}), PlanOptions(lossless=True, routeros_version=version))


def test_a_plan_needs_ports_and_sane_options() -> None:
    with pytest.raises(ValueError, match="no switch ports"):
        plan(config({}), PlanOptions())
    with pytest.raises(ValueError, match="speed"):
        PlanOptions(speed="200G")
    with pytest.raises(ValueError, match="MTU 10000"):
        PlanOptions(host_mtu=10000)
    assert parse_version("7.23.1 (stable)") == (7, 23, 1) and parse_version("") is None


# ------------------------------------------------------------------------------------------------ the table


def test_the_switch_table_reads_ports_per_node_and_defaults() -> None:
    parsed = parse_switch_table(
        {
            "kind": "routeros",
            "address": "198.18.0.10",
            "ports": {"spark-1": "qsfp56-dd-1-1", "spark-2": ["qsfp56-dd-1-5"]},
        },
        "c.toml",
        NODES,
    )
    assert parsed.ports == {"spark-1": ("qsfp56-dd-1-1",), "spark-2": ("qsfp56-dd-1-5",)}
    assert (parsed.user, parsed.password_env, parsed.password_file, parsed.bridge, parsed.tls) == (
        "admin", "WIRESPEED_SWITCH_PASSWORD", None, "bridge1", True,
    )  # fmt: skip
    assert (parsed.speed, parsed.fec_mode, parsed.ca_file) == ("200G-baseCR4", "fec91", None)


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"kind": "routeros", "address": "a", "password": "hunter2"}, "password: not in the cluster file"),
        ({"kind": "cisco", "address": "a"}, "kind 'cisco' is not supported"),
        ({"kind": "routeros"}, "address must be a non-empty string"),
        ({"kind": "routeros", "address": "a", "ports": {"spark-9": ["p"]}}, "no node named 'spark-9'"),
        ({"kind": "routeros", "address": "a", "ports": {"spark-1": ["p"], "spark-2": ["p"]}}, "port p is given for"),
        ({"kind": "routeros", "address": "a", "ports": {"spark-1": ["p;reboot"]}}, "a list of switch port names"),
        ({"kind": "routeros", "address": "a", "password_env": "A B"}, "not a variable name"),
        ({"kind": "routeros", "address": "a", "speed": "x"}, "speed 'x' is not a RouterOS speed"),
        ({"kind": "routeros", "address": "a", "fec_mode": "rs"}, "fec_mode 'rs'"),
        ({"kind": "routeros", "address": "a", "ca_file": ""}, "ca_file must be a path"),
        ({"kind": "routeros", "address": "a", "lanes": 4}, "unknown key"),
    ],
)
def test_a_wrong_switch_table_is_one_line_naming_the_file(table: dict[str, object], words: str) -> None:
    with pytest.raises(InventoryError, match=words) as caught:
        parse_switch_table(table, "c.toml", NODES)
    assert str(caught.value).startswith("c.toml: [switch]")
    assert "hunter2" not in str(caught.value)


# --------------------------------------------------------------------------------------------------- the command


CLUSTER = """
[cluster]
name = "lab"
[[nodes]]
name = "spark-1"
host = "198.18.0.1"
[[nodes]]
name = "spark-2"
host = "198.18.0.2"
"""


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def test_switch_plan_prints_the_script_and_port_overrides_win(tmp_path: Path) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text(
        CLUSTER + '[switch]\nkind = "routeros"\naddress = "198.18.0.10"\nports = { spark-1 = ["qsfp56-dd-1-1"] }\n'
    )
    code, out, _ = cli("switch", "plan", "--cluster", str(path), "--port", "spark-2=qsfp56-dd-2-1")
    assert code == 0
    assert port_line("qsfp56-dd-1-1") in out.splitlines() and port_line("qsfp56-dd-2-1") in out.splitlines()
    code, out, err = cli("switch", "plan", "--cluster", str(path), "--lossless", "--routeros-version", "7.21.4")
    assert code == 2 and out == "" and err.count("\n") == 1 and "upgrade the switch first" in err


def test_switch_plan_without_a_switch_table_says_how_to_add_one(tmp_path: Path) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text(CLUSTER)
    code, out, err = cli("switch", "plan", "--cluster", str(path))
    assert code == 2 and out == "" and "no [switch] table" in err and "hint" in err
    path.write_text(CLUSTER + '[switch]\nkind = "routeros"\naddress = "198.18.0.10"\n')
    code, _, err = cli("switch", "plan", "--cluster", str(path))
    assert code == 2 and "no switch ports" in err
    code, _, err = cli("switch", "plan", "--cluster", str(path), "--port", "nobody=qsfp56-dd-1-1")
    assert code == 2 and "--port 'nobody=qsfp56-dd-1-1'" in err
