"""nccl.version on rings: below 2.30.7 with RDMA a warning naming the node and the build; on sockets or at
2.30.7 a pass that says why; not a ring, a skip."""

from __future__ import annotations

import dataclasses

from builders import cluster, run, spark
from test_check_ring import ring

from wirespeed.core.checks.model import CheckStatus
from wirespeed.core.checks.ncclversion import ID
from wirespeed.core.fabric.facts import Unknown


def with_versions(data, versions, *, rdma=True):  # type: ignore[no-untyped-def]
    facts = {
        n: dataclasses.replace(f, nccl_version=versions.get(n, "2.30.7"), rdma=f.rdma if rdma else ())
        for n, f in data.facts.items()
    }
    return dataclasses.replace(data, facts=facts)


def test_an_old_nccl_in_a_ring_of_rdma_nodes_warns_with_the_node_and_the_build() -> None:
    data = with_versions(ring(4), {"spark-3": "2.28.9+cuda13.0", "spark-4": "2.30.4"})
    assert any(f.rdma for f in data.facts.values())
    found = run(ID, data)
    assert found.status is CheckStatus.WARN
    assert "below v2.30.7-1 on spark-3, spark-4 in a ring of 4" in found.summary
    assert [e.node for e in found.evidence] == ["spark-3", "spark-4"]
    assert all("git clone -b v2.30.7-1" in f.commands[0] for f in found.fixes)


def test_a_ring_at_2_30_7_or_on_sockets_passes_and_says_why() -> None:
    assert run(ID, with_versions(ring(4), {})).status is CheckStatus.PASS
    sockets = run(ID, with_versions(ring(4), {"spark-1": "2.28.9"}, rdma=False))
    assert sockets.status is CheckStatus.PASS and "does not apply" in sockets.summary


def test_not_a_ring_is_skipped() -> None:
    unread = ring(4)
    unread = dataclasses.replace(
        unread, facts={n: dataclasses.replace(f, nccl_version=Unknown("no NCCL")) for n, f in unread.facts.items()}
    )
    assert run(ID, unread).status is CheckStatus.SKIP  # not read: skipped, not guessed
    assert run(ID, cluster(spark("a"), spark("b"))).status is CheckStatus.SKIP
