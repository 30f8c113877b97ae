"""NCCL far below RDMA on the same cables: busbw (GB/s, nccl-tests) x 8 against perftest's Gb/s per direction on the
same halves in the same run; under half is the `below-rdma` ceiling, with a reboot first (one owner: ib_write_bw
196 Gb/s, NCCL 24.2 Gb/s after heavy nmcli reconfiguration, 187 Gb/s after a reboot)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.ladder import NCCL_BELOW_RDMA, RdmaReference, diagnose_collective, rdma_reference
from wirespeed.core.records.results import (
    CollectiveSummary,
    Direction,
    Flow,
    FlowResult,
    RungResult,
    RungStatus,
    SizeFigures,
    WireFigures,
)
from wirespeed.engine import bench
from wirespeed.engine.discover import discover_snapshots

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"
HALVES = ("enp1s0f1np1", "enP2p1s0f1np1")  # one cable, both halves: the public report's 98.04 + 98.04 Gb/s
DEVICES = ("rocep1s0f1:1/RoCE", "roceP2p1s0f1:1/RoCE")
GIB = 2**30


@pytest.fixture(scope="module")
def sparks() -> Discovery:
    return discover_snapshots([SNAPSHOTS / "spark-two-cables"])


def _flow(iface: str) -> Flow:
    return Flow(("spark-1", iface), ("spark-2", iface), "10.0.0.1", "10.0.0.2", 200.0, 109.0, "port 1", 200.0)


def _rdma(forward_gbps: float, reverse_gbps: float | None = None, status: RungStatus = RungStatus.RAN) -> RungResult:
    """rdma-bw on both halves of one cable at once, each half carrying half of `forward_gbps` (Gb/s)."""
    flows = [FlowResult(_flow(i), Direction.FORWARD, forward_gbps / len(HALVES)) for i in HALVES]
    if reverse_gbps is not None:
        flows += [FlowResult(_flow(i).reversed(), Direction.REVERSE, reverse_gbps / len(HALVES)) for i in HALVES]
    return RungResult("rdma-bw", status, flows=tuple(flows))


def _nccl(busbw_GBps: float, size_bytes: int = GIB, **summary: Any) -> RungResult:
    """An NCCL rung over NET/IB on both halves whose peak busbw is `busbw_GBps` (GB/s, as nccl-tests prints it)."""
    collective = CollectiveSummary(
        "all_reduce", 2, (SizeFigures(size_bytes, busbw_GBps, busbw_GBps, 1.0),), busbw_GBps, "NET/IB", False,
        ib_devices=summary.pop("ib_devices", DEVICES), **summary,
    )  # fmt: skip
    wire = WireFigures(busiest_core={"spark-1": (3, 20.0)})
    return RungResult("nccl-all_reduce", RungStatus.RAN, wire=wire, collective=collective)


def _diagnose(nccl: RungResult, reference: RdmaReference | None) -> Any:
    return diagnose_collective(nccl, ["roceP2p1s0f1:1", "rocep1s0f1:1"], list(HALVES), 200.0, reference)


def test_the_reference_is_this_runs_rdma_bw_per_direction_on_its_halves(sparks: Discovery) -> None:
    reference = rdma_reference([_rdma(196.08)], sparks.facts)
    assert reference is not None and reference.rung == "rdma-bw"
    assert reference.per_direction_gbps == pytest.approx(196.08)  # both halves added, one direction, Gb/s
    assert reference.halves == (("spark-1", "enp1s0f1np1"), ("spark-1", "enP2p1s0f1np1"))
    assert reference.devices == ("roceP2p1s0f1", "rocep1s0f1")
    both = rdma_reference([_rdma(196.08, 180.0)], sparks.facts)  # --bidir: both directions ran at once
    assert both is not None and both.per_direction_gbps == pytest.approx(180.0)


def test_no_reference_without_an_rdma_bw_that_finished(sparks: Discovery) -> None:
    assert rdma_reference([], sparks.facts) is None
    assert rdma_reference([_rdma(196.08, status=RungStatus.FAILED)], sparks.facts) is None
    assert rdma_reference([RungResult("rdma-lat", RungStatus.RAN), _nccl(20.0)], sparks.facts) is None


def test_the_public_report_24_2_against_196_is_below_rdma_with_the_reboot_first(sparks: Discovery) -> None:
    reference = rdma_reference([_rdma(196.08)], sparks.facts)
    ceiling = _diagnose(_nccl(24.2 / 8), reference)  # nccl-tests printed 3.025 GB/s: 24.2 Gb/s per direction
    assert ceiling.name == "below-rdma"
    first, advice = ceiling.evidence[:2]
    assert "NCCL 24.2 Gb/s per direction" in first and "peak busbw 3.02 GB/s" in first
    assert "196.1 Gb/s per direction from perftest (rdma-bw)" in first and "12%, under half" in first
    assert "spark-1 enp1s0f1np1, enP2p1s0f1np1" in first
    assert advice.startswith("the cables and the RDMA path carry the rate") and "reboot every node first" in advice
    assert "24.2 Gb/s against ib_write_bw's 196 Gb/s" in advice and "187 Gb/s after a reboot" in advice


def test_the_threshold_is_half_per_direction_in_gbps_from_busbw_times_8(sparks: Discovery) -> None:
    reference = rdma_reference([_rdma(196.0)], sparks.facts)
    assert NCCL_BELOW_RDMA == 0.5
    half_GBps = 196.0 * NCCL_BELOW_RDMA / 8  # 12.25 GB/s of busbw is 98 Gb/s per direction: half of 196
    assert _diagnose(_nccl(half_GBps - 0.01), reference).name == "below-rdma"
    assert _diagnose(_nccl(half_GBps), reference).name == "unknown"  # exactly half: not under it
    assert _diagnose(_nccl(half_GBps + 0.01), reference).name == "unknown"
    # The unit trap: 23.4 GB/s (187 Gb/s after the reboot) is far below 196 as a bare number, not per direction.
    assert _diagnose(_nccl(23.4), reference).name == "wire"


def test_other_halves_than_perftest_measured_are_not_compared(sparks: Discovery) -> None:
    reference = rdma_reference([_rdma(196.08)], sparks.facts)
    other = _nccl(3.0, ib_devices=("rocep1s0f0:1/RoCE", "roceP2p1s0f0:1/RoCE"))
    assert diagnose_collective(other, [], [], 200.0, reference).name == "unknown"
    unnamed = _nccl(3.0, ib_devices=())  # NCCL named no HCA: the same linked halves, so compared
    assert diagnose_collective(unnamed, [], [], 200.0, reference).name == "below-rdma"


def test_the_earlier_ceilings_still_win_and_no_reference_changes_nothing(sparks: Discovery) -> None:
    reference = rdma_reference([_rdma(196.08)], sparks.facts)
    one_hca = _nccl(3.0, ib_devices=("rocep1s0f1:1/RoCE",))
    assert _diagnose(one_hca, reference).name == "half-port"
    assert _diagnose(_nccl(3.0), None).name == "unknown"


def test_a_small_peak_message_and_a_gdr_finding_join_the_evidence(sparks: Discovery) -> None:
    reference = rdma_reference([_rdma(196.08)], sparks.facts)
    note = "GPUDirect RDMA off on a discrete GPU with RDMA devices in use: ..."
    ceiling = _diagnose(_nccl(3.0, size_bytes=2**20, gdr_note=note, gdr_finding=True), reference)
    assert ceiling.name == "below-rdma"
    assert any("the peak was at 1 MiB" in line for line in ceiling.evidence) and ceiling.evidence[-1] == note
    assert _diagnose(_nccl(3.0, gdr_note=note, gdr_finding=True), None).name == "gdr-off"
    gb10 = _nccl(3.0, gdr_note="GPUDirect RDMA off (GDR 0): not applicable on GB10 ...", gdr_finding=False)
    assert _diagnose(gb10, None).name == "unknown"


def test_climb_gives_each_rung_the_results_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, tuple[str, ...]] = {}

    def run(rung: Any, ctx: Any, plan: Any = None) -> RungResult:
        seen[rung.name] = tuple(r.rung for r in ctx.earlier)
        return RungResult(rung.name, RungStatus.RAN)

    monkeypatch.setattr(bench, "run_rung", run)
    ctx: Any = bench.RungContext(None, None, None, None, board=SimpleNamespace())  # type: ignore[arg-type]
    named: Any = [SimpleNamespace(name=n) for n in ("rdma-bw", "nccl-all_reduce")]
    bench.climb(ctx, [bench.PlannedRung(rung, SimpleNamespace(nodes=())) for rung in named], [], lambda _: None)
    assert seen == {"rdma-bw": (), "nccl-all_reduce": ("rdma-bw",)}


def test_the_nccl_rung_holds_its_figure_against_this_climbs_rdma_bw(sparks: Discovery) -> None:
    from wirespeed.core.fabric import gdr
    from wirespeed.engine.rungs.nccl import NcclRung, _platform

    plan: Any = SimpleNamespace(
        nodes=("spark-1", "spark-2"), rdma_devices=("roceP2p1s0f1:1", "rocep1s0f1:1"), fabric_interfaces=HALVES,
        line_rate_gbps=200.0,
    )  # fmt: skip
    ctx: Any = SimpleNamespace(discovery=sparks, earlier=(_rdma(196.08),))
    assert NcclRung("all_reduce").diagnose(ctx, plan, _nccl(24.2 / 8)).name == "below-rdma"
    assert NcclRung("all_reduce").diagnose(SimpleNamespace(discovery=sparks, earlier=()), plan, _nccl(3.0)).name == (
        "unknown"
    )
    assert _platform(ctx, plan) == gdr.UNIFIED  # NVIDIA GB10, compute capability 12.1 in the snapshots
