"""The NCCL rung on a ring of Sparks: ranks in cable order (each step of NCCL's ring one cable, never a relay),
the Ring algorithm from four nodes, and a cut ring whose closing step crosses every relay said so."""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest
from test_check_ring import names, ring

from wirespeed.core.fabric.facts import Gpu, Tool
from wirespeed.core.nccl import NcclOptions, NcclPlan, launch_address, plan_nccl

BINARY = "/opt/nccl-tests/build/all_reduce_perf"
MANAGEMENT = "enP7s7"


def with_gpus(data, order):  # type: ignore[no-untyped-def]
    """Every node a GPU, nccl-tests and mpirun; the cabling's ring order given by `order`."""
    tools = (Tool("all_reduce_perf", "present", BINARY, detail="mpi=yes"), Tool("mpirun", "4.1.6", "/usr/bin/mpirun"))
    facts = {
        n: dataclasses.replace(f, gpus=(Gpu("NVIDIA GB10", "12.1", "580.95.05"),), tools=tools, nccl_version="2.30.7")
        for n, f in data.facts.items()
    }
    return facts, dataclasses.replace(data.cabling, order=tuple(order))


@pytest.mark.parametrize("count", [4, 6])
def test_ranks_follow_the_ring_not_the_names(count: int) -> None:
    data = ring(count)
    order = names(count)
    shuffled = [order[0], *reversed(order[1:])]  # the same ring, the other way round: still cable by cable
    facts, cabling = with_gpus(data, shuffled)
    plan = plan_nccl(facts, cabling, "all_reduce", NcclOptions())
    assert isinstance(plan, NcclPlan)
    assert list(plan.nodes) == shuffled and plan.launcher == shuffled[0]
    assert [h for h, _ in plan.hosts] == [launch_address(facts[n], cabling) for n in shuffled]
    assert dict(plan.env)["NCCL_ALGO"] == "Ring"


def test_a_cut_ring_says_its_closing_step_crosses_the_relays() -> None:
    data = ring(4, cut=3)  # the cable from spark-4 back to spark-1 is gone
    facts, cabling = with_gpus(data, names(4))
    assert cabling.topology == "chain"
    plan = plan_nccl(facts, cabling, "all_reduce", NcclOptions())
    assert isinstance(plan, NcclPlan) and dict(plan.env)["NCCL_ALGO"] == "Ring"
    assert any("spark-4 back to spark-1 through spark-3, spark-2" in note for note in plan.notes), plan.notes


def test_mpi_takes_the_management_network_where_pairs_share_no_cable() -> None:
    facts, cabling = with_gpus(ring(4), names(4))
    plan = plan_nccl(facts, cabling, "all_reduce", NcclOptions())
    assert isinstance(plan, NcclPlan)
    mca = dict(plan.mca)
    management = {str(ipaddress.ip_interface(f.netdev(MANAGEMENT).ipv4[0]).network) for f in facts.values()}  # type: ignore[union-attr]
    assert mca["btl_tcp_if_include"] == mca["oob_tcp_if_include"] == ",".join(sorted(management))
    assert MANAGEMENT not in dict(plan.env)["NCCL_SOCKET_IFNAME"]  # NCCL's own traffic stays on the fabric
    three, cabling3 = with_gpus(ring(3), names(3))  # every pair shares a cable: MPI stays on the fabric
    plan3 = plan_nccl(three, cabling3, "all_reduce", NcclOptions())
    assert isinstance(plan3, NcclPlan) and "198.19." in dict(plan3.mca)["btl_tcp_if_include"]
