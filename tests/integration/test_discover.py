"""Discovery on the emulated cluster: facts over ssh, the active cabling probe, faults, snapshots round trip."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.engine.discover import discover_live, discover_snapshots, take_snapshots
from wirespeed.engine.remote import Remote
from wirespeed.testbed import build

from .helpers import running_testbed

pytestmark = pytest.mark.root


@contextmanager
def bed(prefix: str, **kwargs: object) -> Iterator[Remote]:
    with running_testbed(prefix, **kwargs) as (_, remote):
        yield remote


def half_links(result: Discovery) -> set[tuple[str, str, str, str]]:
    return {(a[0], a[1], b[0], b[1]) for a, b in result.cabling.links}


def messages(result: Discovery) -> list[str]:
    return [f.message for f in result.cabling.findings]


def test_direct_two_cables() -> None:
    with bed("wda-", nodes=2, topology="direct", cables=2) as remote:
        result = discover_live(remote)
    assert result.errors == {}
    assert result.cabling.topology == "direct" and result.cabling.cables == 2
    assert half_links(result) == {
        ("wda-1", name, "wda-2", name) for name in ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")
    }
    assert messages(result) == []
    facts = result.facts["wda-1"]
    assert facts.emulated and facts.hostname == "wda-1" and facts.management == "enP7s7"
    assert facts.rdma == () and "emulated cluster" in (facts.rdma_absent_reason or "")
    assert [(p.label, p.halves) for p in facts.ports] == [
        ("port 0", ("enp1s0f0np0", "enP2p1s0f0np0")),
        ("port 1", ("enp1s0f1np1", "enP2p1s0f1np1")),
    ]
    half = facts.netdev("enP2p1s0f1np1")
    assert half is not None and half.mtu == 9000 and half.ipv4 == ("198.19.3.1/24",) and half.carrier is True


def test_direct_one_cable_with_a_half_down() -> None:
    with bed("wdb-", nodes=2, topology="direct", cables=1) as remote:
        healthy = discover_live(remote)
        build.fault("wdb-", "wdb-2", "enP2p1s0f1np1", build.Fault(down=True))
        faulty = discover_live(remote)
    assert healthy.cabling.topology == "direct" and healthy.cabling.cables == 1
    assert len(healthy.cabling.links) == 2
    assert half_links(faulty) == {("wdb-1", "enp1s0f1np1", "wdb-2", "enp1s0f1np1")}
    assert faulty.cabling.cables == 1
    assert any("only one half of wdb-1 port 1" in m for m in messages(faulty))


def test_direct_cross_cabled() -> None:
    with bed("wdc-", nodes=2, topology="direct", cables=2, miswire=True) as remote:
        result = discover_live(remote)
    assert result.cabling.topology == "direct"
    assert ("wdc-1", "enp1s0f0np0", "wdc-2", "enp1s0f1np1") in half_links(result)
    assert any(m.startswith("cross-cabled: wdc-1 port 0 is cabled to wdc-2 port 1") for m in messages(result))


def test_ring_and_cross_cabled_ring() -> None:
    with bed("wdr-", nodes=3, topology="ring") as remote:
        ring = discover_live(remote)
    assert ring.cabling.topology == "ring" and ring.cabling.cables == 3 and messages(ring) == []
    assert {(p.a_node, p.a_port, p.b_node, p.b_port) for p in ring.cabling.port_links} == {
        ("wdr-1", "port 0", "wdr-2", "port 1"),
        ("wdr-1", "port 1", "wdr-3", "port 0"),
        ("wdr-2", "port 0", "wdr-3", "port 1"),
    }
    with bed("wdr-", nodes=3, topology="ring", miswire=True) as remote:
        crossed = discover_live(remote)
    assert crossed.cabling.topology == "ring"
    assert any(m.startswith("cross-cabled ring: wdr-1 port 0 is cabled to wdr-2 port 0") for m in messages(crossed))


def steady(facts: dict[str, object]) -> dict[str, object]:
    """Facts without what is of the moment they were read (free memory moves between the live read and the
    snapshot's) or of how (the source)."""
    return facts | {"source": "", "mem_available_kb": 0, "cma_free_kb": 0}


def test_switch_and_snapshot_round_trip(tmp_path: Path) -> None:
    with bed("wds-", nodes=4, topology="switch") as remote:
        live = discover_live(remote)
        written, errors = take_snapshots(remote, tmp_path / "snap")
        tarred, _ = take_snapshots(remote, tmp_path / "tar", tar=True)
    assert errors == {} and live.cabling.topology == "switch" and live.errors == {}
    assert all(len({b[0] for b in live.cabling.peers(("wds-1", "enp1s0f1np1"))}) >= 3 for _ in [0])
    offline = discover_snapshots(written)
    assert offline.cabling.topology == "switch"
    assert half_links(offline) == half_links(live)
    for node, facts in live.facts.items():
        assert steady(offline.facts[node].to_json()) == steady(facts.to_json())
    assert sorted(p.name for p in tarred) == [f"wds-{i}.tar.gz" for i in range(1, 5)]
    from_tar = discover_snapshots(tarred)
    assert half_links(from_tar) == half_links(live)
    assert (tmp_path / "snap" / "wds-1" / "sys" / "class" / "net" / "enp1s0f1np1").is_symlink()


def test_discover_cli_json_and_ibdev2netdev_view() -> None:
    with bed("wdj-", nodes=2, topology="direct") as remote:
        env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
        code = main(["discover", "--cluster", str(remote.cluster.source), "--json"], env)
        assert code == 0, env.stderr.getvalue()  # type: ignore[attr-defined]
        data = json.loads(env.stdout.getvalue())  # type: ignore[attr-defined]
        assert data["cabling"]["topology"] == "direct"
        assert set(data["nodes"]) == {"wdj-1", "wdj-2"}
        env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
        assert main(["discover", "--cluster", str(remote.cluster.source), "--format", "ibdev2netdev"], env) == 0
        assert "no RDMA devices" in env.stdout.getvalue()  # type: ignore[attr-defined]
