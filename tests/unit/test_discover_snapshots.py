"""Discovery from snapshot fixtures of real hardware shapes (DGX Spark, GX10, a switch at 100G, an IB server).

Each fixture's `expected.json` holds what a person reads from it; discovery must find exactly that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.fabric.facts import NodeFacts, Unknown
from wirespeed.core.parsers.sysfs_values import port_state
from wirespeed.engine.discover import discover_snapshots

FIXTURES = Path(__file__).parent.parent / "fixtures" / "snapshots"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file()) if FIXTURES.is_dir() else []


def node_dirs(case: str) -> list[Path]:
    return sorted(p for p in (FIXTURES / case).iterdir() if (p / "meta.json").is_file())


@pytest.fixture(scope="module", params=CASES)
def case(request: pytest.FixtureRequest) -> tuple[str, Any]:
    name = request.param
    return name, discover_snapshots([FIXTURES / name])


def test_every_fixture_is_here() -> None:
    assert set(CASES) >= {
        "spark-two-cables",
        "spark-one-cable",
        "spark-switch-100g",
        "gx10-pcie-x2",
        "spark-gid-ipv6",
        "ib-server",
    }


def _value(value: object) -> object:
    return None if isinstance(value, Unknown) else value


def check_node(facts: NodeFacts, expected: dict[str, Any]) -> None:
    devices = {d.name: d for d in facts.rdma}
    assert set(devices) == set(expected["rdma_devices"])
    for name, want in expected["rdma_devices"].items():
        device = devices[name]
        port = device.ports[0]
        assert want["netdev"] in device.netdevs, name
        assert port.state == port_state(want["state"]), name  # expected.json keeps sysfs's "4: ACTIVE"
        assert port.phys_state == port_state(want["phys_state"]), name
        assert port.rate == want["rate"], name
        assert port.link_layer == want["link_layer"], name
        assert _value(port.rocev2_ipv4_index) == want["rocev2_ipv4_gid_index"], name
        assert device.pci == want["pci"], name
    assert [list(p.halves) for p in facts.ports] == expected["ports"]
    widths = {p.bdf: [_value(p.current_width), _value(p.max_width)] for p in facts.pci}
    for bdf, (current, maximum) in expected["pcie_width"].items():
        assert widths[bdf] == [current, maximum], bdf
    assert facts.management == expected["management"]
    if expected.get("gpus") is None:
        assert isinstance(facts.gpus, Unknown)
    else:
        assert not isinstance(facts.gpus, Unknown)
        assert [g.name for g in facts.gpus] == [g if isinstance(g, str) else g["name"] for g in expected["gpus"]]


def test_nodes_match_what_a_person_reads(case: tuple[str, Any]) -> None:
    name, discovery = case
    assert discovery.errors == {}
    for directory in node_dirs(name):
        expected = json.loads((directory / "expected.json").read_text())
        check_node(discovery.facts[expected["node"]], expected)


def test_topology_from_the_address_plan(case: tuple[str, Any]) -> None:
    name, discovery = case
    expected = json.loads((FIXTURES / name / "expected.json").read_text())
    assert discovery.cabling.topology == expected["topology"]
    if expected.get("cables") is not None:
        assert discovery.cabling.cables == expected["cables"]


def test_a_plain_file_in_sys_class_net_is_no_interface(tmp_path: Path) -> None:
    """The bonding driver puts `bonding_masters` in /sys/class/net as a class attribute, a plain file among the
    links to the net devices (drivers/net/bonding/bond_sysfs.c): it is never an interface, live or in a snapshot."""
    import shutil

    from wirespeed.adapters.source import RootedSource, SnapshotSource

    node = tmp_path / "spark-1"
    shutil.copytree(FIXTURES / "spark-one-cable" / "spark-1", node, symlinks=True)
    net = node / "sys" / "class" / "net"
    (net / "bonding_masters").write_text("\n")  # no bond yet: the file is there once the module is loaded
    expected = sorted(p.name for p in net.iterdir() if p.is_dir())
    assert "bonding_masters" not in expected and "enp1s0f0np0" in expected
    discovery = discover_snapshots([tmp_path])
    assert discovery.errors == {}
    assert sorted(n.name for n in discovery.facts["spark-1"].netdevs) == expected
    for source in (SnapshotSource(node), RootedSource(node, "a fake root")):
        assert source.is_dir("/sys/class/net/lo") and not source.is_dir("/sys/class/net/bonding_masters")
