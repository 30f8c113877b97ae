"""The import object is a typed record: every body type (each kind's, each pasted output's, a paste's sections)
goes to its JSON and back unchanged, and a run reads its imported/ files through that record, a damaged one
becoming one line naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.imports import imported, importer, pasted, registry
from wirespeed.core.imports.nccl_tests import NcclTests
from wirespeed.core.imports.perftest import Perftest, PerftestLatRow
from wirespeed.core.imports.record import FORMAT_VERSION, ImportObject
from wirespeed.core.records.run import ImportedFile
from wirespeed.engine.runs import load_run, read_record

REAL = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "real"
NCCL = REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt"

# One output of every body type: a real file where tests/fixtures/real has one, else as the tool prints it.
SOURCES: dict[str, Path | str] = {
    "nccl-tests": NCCL,
    "nccl-tests -J": REAL / "nccl_tests_device" / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.nccl-tests.json",
    "perftest": REAL / "perftest" / "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt",
    "perftest lat": (
        "                    RDMA_Write Latency Test\n"
        " Link type       : Ethernet\n"
        "---------------------------------------------------------------------------------------\n"
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
        "   99% percentile[usec]   99.9% percentile[usec] \n"
        " 2       1000          1.55           5.04         1.59             1.61             0.08"
        "            2.01                   5.04   \n"
        "---------------------------------------------------------------------------------------\n"
    ),
    "iperf3": REAL / "iperf3" / "iperf3_json_tcp_1stream_v3.6_bytes_mode_aws_to_gcp.txt",
    "ethtool-stats": REAL / "ethtool" / "ethtool_S_mlx5_xdp_kernel5.15_nonzero_only.txt",
    "ibdev2netdev": REAL / "spark" / "ibdev2netdev_spark1_port0_up_perf_guide.txt",
    "ibv_devinfo": REAL / "rdma_tools" / "ibv_devinfo_mlx4_two_hcas_dual_port_ib.txt",
    "show_gids": (
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4 \t\tVER\tDEV\n"
        "---\t----\t-----\t---\t\t\t\t\t------------ \t---\t---\n"
        "rocep1s0f1\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:c80b\t192.168.200.11 \tv2\tenp1s0f1np1\n"
        "n_gids_found=1\n"
    ),
    "rdma-link": (
        "link mlx5_2/1 subnet_prefix fe80:0000:0000:0000 lid 3 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP \n"
        "    caps: <SM, CM, IP_BASED_GIDS>\n"
    ),
    "nccl-info": REAL / "nccl_info" / "a100_4rank_gdrdma_channels.txt",
    "kernel-log": REAL / "kernel_log" / "cx7_vf_iommu_warn_elided.txt",
    "lspci": REAL / "lspci" / "cx7_vv_pf_downgraded_x8_and_vf.txt",
    "ip-addr": REAL / "ip_addr" / "ansible_ip_addr_two_nodes_tentative.txt",
    "ip-brief": REAL / "ip_brief" / "spark_ip_br_addr_dollar_prompt.txt",
    "ethtool": REAL / "ethtool_link" / "bond0_200g_root_prompt.txt",
    "ethtool-fec": REAL / "ethtool_fec" / "netdev_show_fec_stats_lanes_eth0.txt",
    "nvidia-smi-topo": REAL / "nvidia_smi_topo" / "sglang_env_h100_one_gpu_one_nic.txt",
    "paste": REAL / "pastes" / "spark_diag_dump_gpu_topo_ip_br_lspci.txt",
    "paste with ibdev2netdev": (
        "user@spark-1:~$ ip -br link\n"
        "enp1s0f1np1      UP             4c:bb:47:2f:91:13 <BROADCAST,MULTICAST,UP,LOWER_UP>\n"
        "lo               UNKNOWN        00:00:00:00:00:00 <LOOPBACK,UP,LOWER_UP>\n"
        "user@spark-1:~$ ibdev2netdev\n"
        "rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)\n"
    ),
}


def _object(name: str) -> ImportObject:
    source = SOURCES[name]
    text = source.read_text() if isinstance(source, Path) else source
    return importer.import_text(text, source.name if isinstance(source, Path) else f"{name}.txt")


def _through_a_file(data: dict[str, Any]) -> Any:
    return json.loads(json.dumps(data, indent=2))


@pytest.mark.parametrize("name", SOURCES)
def test_every_body_type_goes_to_json_and_back_unchanged(name: str) -> None:
    obj = _object(name)
    data = obj.to_json()
    again = ImportObject.from_json(_through_a_file(data), f"imported/{name}.json")
    assert again == obj and again.to_json() == data
    assert json.dumps(again.to_json()) == json.dumps(data)  # the same keys in the same order
    assert imported.summary(again) == imported.summary(obj) and imported.figures(again) == imported.figures(obj)


def test_the_sources_cover_every_tool_and_every_pasted_kind() -> None:
    objects = [_object(name) for name in SOURCES]
    assert {obj.tool for obj in objects} == set(registry.tools())
    sections = {s.kind for obj in objects if isinstance(obj.body, pasted.Paste) for s in obj.body.sections}
    singles = {obj.tool for obj in objects if isinstance(obj.body, pasted.PastedOutput)}
    assert singles | sections == set(pasted.CONTENTS)
    assert any(isinstance(obj.body, Perftest) and isinstance(obj.body.rows[0], PerftestLatRow) for obj in objects)
    assert {obj.body.source_format for obj in objects if isinstance(obj.body, NcclTests)} == {"text", "json"}


def test_an_object_written_by_hand_without_its_version_reads_as_version_1() -> None:
    obj = ImportObject.from_json({"tool": "iperf3", "received_bps": 9.4e10}, "imported/a.json")
    assert obj.format_version == FORMAT_VERSION and obj.file is None
    assert imported.figures(obj) == {"forward_gbps": 94.0}


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda d: d["rows"][0].update(size_bytes="8 GiB"), "rows[0]: size_bytes: expected a whole number, found text"),
        (lambda d: d["rows"][1]["out_of_place"].update(busbw_GBps=[1]), "rows[1]: out_of_place: busbw_GBps: expected"),
        (lambda d: d.update(complete="yes"), "complete: expected true or false, found text 'yes'"),
        (lambda d: d.update(rows={}), "rows: expected a list, found an object"),
        (lambda d: d.update(tool="nccl-tests-2"), "tool: 'nccl-tests-2' is no tool wirespeed imports"),
        (lambda d: d.update(format_version=2), "format_version 2: this wirespeed reads import format 1 only"),
    ],
)
def test_a_damaged_imported_file_is_one_problem_naming_the_file_and_the_field(
    tmp_path: Path, edit: Any, why: str
) -> None:
    run = tmp_path / "20261126T120000Z"
    (run / "imported").mkdir(parents=True)
    good = importer.import_text(NCCL.read_text(), "a3.txt").to_json()
    damaged = _through_a_file(good)
    edit(damaged)
    (run / "imported" / "a3.nccl-tests.json").write_text(json.dumps(good))
    (run / "imported" / "b3.nccl-tests.json").write_text(json.dumps(damaged))
    loaded = load_run(run)
    assert [i.name for i in loaded.imported] == ["a3.nccl-tests"]  # the other file is still read
    (problem,) = loaded.problems
    assert problem.startswith(f"imported/b3.nccl-tests.json: {why}") and "\n" not in problem
    with pytest.raises(ValueError, match=r"^imported/b3\.nccl-tests\.json: "):
        read_record(run, run / "imported" / "b3.nccl-tests.json")
    record = read_record(run, run / "imported" / "a3.nccl-tests.json")
    assert isinstance(record, ImportedFile) and isinstance(record.data, ImportObject)
