"""A node's facts read back from JSON (what `agent facts` prints, a run's discovery.json): every field checked
against its declared type, so a value of the wrong type is one message naming the field, never a record that
fails somewhere later."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.fabric.facts import NodeFacts, Unknown, facts_from_json
from wirespeed.engine.discover import discover_snapshots

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"


def every_snapshot_node() -> list[NodeFacts]:
    found: list[NodeFacts] = []
    for directory in sorted(p for p in SNAPSHOTS.iterdir() if p.is_dir()):
        found += discover_snapshots([directory]).facts.values()
    return found


def written(facts: NodeFacts) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(facts.to_json()))
    return data


@pytest.fixture(scope="module")
def nodes() -> list[NodeFacts]:
    return every_snapshot_node()


def test_every_snapshot_nodes_facts_round_trip(nodes: list[NodeFacts]) -> None:
    assert len(nodes) >= 30
    for facts in nodes:
        again = facts_from_json(written(facts))
        assert again == facts, facts.node
        assert json.dumps(again.to_json()) == json.dumps(facts.to_json())


@pytest.fixture
def spark(nodes: list[NodeFacts]) -> dict[str, Any]:
    """A Spark's facts as written, fresh for each test (each damages it its own way)."""
    return written(next(f for f in nodes if f.netdevs and f.rdma and f.pci))


def test_a_field_of_the_wrong_type_is_named(spark: dict[str, Any]) -> None:
    spark["netdevs"][1]["mtu"] = "9000"
    with pytest.raises(
        ValueError, match=r"^facts: netdevs\[1\]: mtu: expected a whole number or unknown, found text '9000'$"
    ):
        facts_from_json(spark)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(netdevs={}), r"^facts: netdevs: expected a list, found an object$"),
        (
            lambda d: d["rdma"][0]["ports"][0].update(rate_gbps=True),
            r"^facts: rdma\[0\]: ports\[0\]: rate_gbps: expected a number or unknown, found true/false$",
        ),
        (lambda d: d.update(cpus={"unknown": 3}), r"^facts: cpus: unknown: expected text, found the number 3$"),
        (
            lambda d: d.update(sysctls={"net.core.rmem_max": 212992}),
            r"^facts: sysctls\.net\.core\.rmem_max: expected text, found the number 212992$",
        ),
        (lambda d: d.pop("node"), r"^facts: node: missing$"),
        (
            lambda d: d["pci"].append("0000:01:00.0"),
            r"^facts: pci\[\d+\]: expected an object, found text '0000:01:00.0'$",
        ),
    ],
)
def test_each_kind_of_damage_is_one_message_naming_its_field(spark: dict[str, Any], change: Any, message: str) -> None:
    change(spark)
    with pytest.raises(ValueError, match=message):
        facts_from_json(spark)


def test_an_older_file_reads_with_defaults_and_a_newer_ones_fields_are_left_out(spark: dict[str, Any]) -> None:
    for newer in ("routes", "dmi", "cpus"):  # fields an older wirespeed did not write
        spark.pop(newer, None)
    spark["written_by_a_newer_wirespeed"] = {"anything": 1}
    facts = facts_from_json(spark)
    assert facts.routes == Unknown("not read") and facts.dmi == {} and facts.cpus == Unknown("not read")
    assert isinstance(facts.netdevs, tuple) and isinstance(facts.netdevs[0].ipv4, tuple)


def test_a_whole_number_in_a_rate_field_is_kept_as_written(spark: dict[str, Any]) -> None:
    spark["pci"][0]["current_speed_gts"] = 32
    facts = facts_from_json(spark)
    assert facts.pci[0].current_speed_gts == 32 and facts.to_json()["pci"][0]["current_speed_gts"] == 32
