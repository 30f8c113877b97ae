"""GPUDirect RDMA, explained: NCCL's real GDR lines read (tests/fixtures/real/nccl_info/README.md names each source),
and what they mean on GB10's unified memory (not applicable) and on a discrete GPU (a finding, with its fix)."""

from __future__ import annotations

import io
from pathlib import Path

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.fabric import gdr
from wirespeed.core.imports import pastes
from wirespeed.core.nccl import read_run
from wirespeed.core.parsers import nccl_info
from wirespeed.core.records.results import CollectiveSummary, RungResult, RungStatus

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SPARK_HEAD = REAL / "nccl_info" / "spark_2node_roce_all_gather_v2.28.9_init_head.txt"
SPARK_TAIL = REAL / "nccl_info" / "spark_2node_roce_all_gather_v2.28.9_gid_gdr_tail.txt"
H100_DISABLED = REAL / "nccl_info" / "h100_2node_roce_peermem_gdr_disabled_for_hca.txt"
NO_MODULE = REAL / "nccl_info" / "nccl_no_module_net_ib_channels.txt"
A100_GDRDMA = REAL / "nccl_info" / "a100_4rank_gdrdma_channels.txt"
SGLANG_GDRDMA = REAL / "nccl_info" / "sglang_2node_16gpu_v2.27.5_gdrdma_channels.txt"


def _hosts(*paths: Path) -> tuple[nccl_info.NcclHost, ...]:
    return nccl_info.parse("\n".join(p.read_text(encoding="utf-8") for p in paths)).hosts


def test_platform_from_the_gpu_name_or_compute_capability() -> None:
    assert gdr.platform([("NVIDIA GB10", "12.1")]) == gdr.UNIFIED
    assert gdr.platform([("NVIDIA Graphics Device", "12.1")]) == gdr.UNIFIED  # a driver that does not name it
    assert gdr.platform([("NVIDIA H100 80GB HBM3", "9.0"), ("NVIDIA H100 80GB HBM3", "9.0")]) == gdr.DISCRETE
    assert gdr.platform([("NVIDIA GB10", None), ("NVIDIA A100-SXM4-80GB", "8.0")]) is None  # mixed: not judged
    assert gdr.platform([]) is None
    assert gdr.platform_in_text("#  Rank  0 Group  0 Pid  23491 on spark-fb97 device  0 [000f:01:00] NVIDIA GB10")
    assert gdr.platform_in_text("NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'") is None


def test_the_spark_log_gdr_0_is_not_applicable_on_gb10_and_not_a_finding() -> None:
    hosts = _hosts(SPARK_HEAD, SPARK_TAIL)
    verdict = gdr.explain_hosts(hosts, gdr.UNIFIED)
    assert verdict is not None and not verdict.finding
    assert "GDR 0" in verdict.line and "Disabled for roceP2p1s0f1, rocep1s0f1" in verdict.line
    assert "not applicable on GB10 (DGX Spark)" in verdict.line and "glimmer-burnin" in verdict.line
    unknown = gdr.explain_hosts(hosts, None)  # a log alone: both readings, and the fix for a discrete GPU
    assert unknown is not None and not unknown.finding
    assert "on GB10 (DGX Spark) expected" in unknown.line and "sudo modprobe nvidia_peermem" in unknown.line


def test_a_discrete_gpu_with_every_hca_disabled_is_a_finding_with_its_fix() -> None:
    (host,) = _hosts(H100_DISABLED)
    assert host.gdr_by_hca == {"mlx5_0": False, "mlx5_1": False} and host.gdr is False and not host.gdr_no_module
    verdict = gdr.explain_hosts([host], gdr.DISCRETE)
    assert verdict is not None and verdict.finding
    assert "staged through host memory" in verdict.line and "Disabled for mlx5_0, mlx5_1" in verdict.line
    assert "sudo modprobe nvidia_peermem" in verdict.line and "NCCL_DMABUF_ENABLE" in verdict.line


def test_older_ncclS_no_module_and_channels_without_gdrdma() -> None:
    hosts = _hosts(NO_MODULE)
    first = next(h for h in hosts if h.host == "21346d5cefce")
    assert first.gdr_no_module and first.gdr_by_hca == {"mlx5_1": False, "mlx5_2": False, "mlx5_3": False}
    assert first.via["NET/IB"] == 6 and not first.via_gdrdma and first.transport == "NET/IB"
    verdict = gdr.explain_hosts(hosts, gdr.DISCRETE)
    assert verdict is not None and verdict.finding and "(no module)" in verdict.line


def test_gdrdma_channels_are_gpudirect_used_on_any_platform() -> None:
    for path in (A100_GDRDMA, SGLANG_GDRDMA):
        hosts = _hosts(path)
        assert gdr.used(hosts) is True
        verdict = gdr.explain_hosts(hosts, gdr.DISCRETE)
        assert verdict is not None and not verdict.finding and verdict.line.startswith("GPUDirect RDMA used")


def test_hcas_enabled_but_no_channel_gdrdma_is_the_distance_not_the_module() -> None:
    # NCCL 2.28.9's own formats (src/graph/topo.cc, src/transport/net.cc), the Enabled/`via NET/IB/0` pair.
    log = (
        "h1:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n"
        "h1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n"
    )
    verdict = gdr.explain_hosts(nccl_info.parse(log).hosts, gdr.DISCRETE)
    assert verdict is not None and verdict.finding and "NCCL_NET_GDR_LEVEL" in verdict.line
    assert "modprobe" not in verdict.line


def test_a_plugins_dmabuf_claim_against_nccls_disabled_points_at_the_gpu_side() -> None:
    # nccl-rdma-sharp-plugins' format (p2p_plugin.c: `... (DMABUF) enabled for HCA %d '%s"`, no closing quote), then
    # NCCL's own verdict for the same HCA, as a GB10 owner's write-up quotes the pair.
    log = (
        "s1:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA (DMABUF) enabled for HCA 0 'rocep1s0f0\n"
        "s1:1:1 [0] NCCL INFO NET/NCCL RDMA Plugin v10 : GPU Direct RDMA Disabled for HCA 0 'rocep1s0f0'\n"
    )
    (host,) = nccl_info.parse(log).hosts
    assert host.gdr_capability == {"rocep1s0f0": ["DMABUF"]} and host.gdr_by_hca == {"rocep1s0f0": False}
    verdict = gdr.explain_hosts([host], gdr.UNIFIED)
    assert verdict is not None and not verdict.finding
    assert "offered rocep1s0f0 DMABUF yet NCCL disabled it" in verdict.line


def test_the_socket_transport_never_uses_gpudirect() -> None:
    verdict = gdr.explain(False, "NET/Socket", gdr.DISCRETE)
    assert verdict is not None and not verdict.finding and "NET/Socket" in verdict.line
    assert gdr.explain(None, "NET/IB", gdr.DISCRETE) is None  # the log did not say
    assert gdr.explain(False, "P2P/CUMEM", gdr.DISCRETE) is None  # no network in the path


def test_the_rung_keeps_the_verdict_through_json_and_notes_it() -> None:
    text = SPARK_HEAD.read_text(encoding="utf-8") + SPARK_TAIL.read_text(encoding="utf-8")
    reading = read_run("all_gather", text, None, gdr.UNIFIED)
    summary = reading.summary
    assert summary is not None and summary.gdr is False and not summary.gdr_finding
    assert summary.gdr_note is not None and "not applicable on GB10" in summary.gdr_note
    assert summary.gdr_note in reading.notes
    again = RungResult.from_json(RungResult("nccl-all_gather", RungStatus.RAN, collective=summary).to_json(), "x")
    assert isinstance(again.collective, CollectiveSummary) and again.collective.gdr_note == summary.gdr_note
    discrete = read_run("all_gather", text, None, gdr.DISCRETE).summary
    assert discrete is not None and discrete.gdr_finding


def test_a_pasted_spark_log_says_not_applicable_from_nccl_tests_gb10_rank_lines() -> None:
    readings, _ = pastes.read_text(SPARK_HEAD.read_text(encoding="utf-8"), str(SPARK_HEAD))
    (reading,) = [r for r in readings if r.kind == "nccl-info"]
    hosts = {h["host"]: h for h in pastes.body(reading).to_json()["hosts"]}
    assert "not applicable on GB10 (DGX Spark)" in hosts["spark-fb97"]["gdr_note"]
    assert hosts["spark-fb97"]["gdr_finding"] is False


def test_a_pasted_discrete_log_gives_both_readings_and_the_fix() -> None:
    readings, _ = pastes.read_text(H100_DISABLED.read_text(encoding="utf-8"), str(H100_DISABLED))
    (reading,) = [r for r in readings if r.kind == "nccl-info"]
    (host,) = pastes.body(reading).to_json()["hosts"]
    assert "on GB10 (DGX Spark) expected" in host["gdr_note"] and "sudo modprobe nvidia_peermem" in host["gdr_note"]


def test_check_pastes_prints_what_gdr_means() -> None:
    stdout, stderr = io.StringIO(), io.StringIO()
    main(["check", "--pastes", str(SPARK_HEAD), str(SPARK_TAIL)], Environment(stdout=stdout, stderr=stderr, width=200))
    err = stderr.getvalue()
    assert "spark-fb97: GPUDirect RDMA off (GDR 0" in err and "not applicable on GB10" in err


def test_the_report_shows_the_verdict_where_it_shows_the_transport() -> None:
    from wirespeed.ui.report import _collective_facts

    text = SPARK_HEAD.read_text(encoding="utf-8") + SPARK_TAIL.read_text(encoding="utf-8")
    summary = read_run("all_gather", text, None, gdr.UNIFIED).summary
    facts = dict(_collective_facts(RungResult("nccl-all_gather", RungStatus.RAN, collective=summary)))
    assert facts["transport"] == "NET/IB" and "not applicable on GB10" in facts["GPUDirect RDMA"]


def test_hcas_enabled_with_no_channel_seen_is_no_verdict() -> None:
    assert gdr.explain(None, "NET/IB", gdr.DISCRETE, by_hca={"mlx5_0": True}) is None
    assert gdr.explain(None, "NET/IB", gdr.DISCRETE, by_hca={}) is None
