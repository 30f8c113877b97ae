"""`wirespeed import`: every real output in tests/fixtures/real is recognised from its content and gives the numbers
its sidecar's `expect` says; the public objects have exactly the keys docs/import-format.md shows; bad input of any
kind (unknown, empty, binary, cut, random) is one `line N:` ValueError, never another exception; the command prints
JSON Lines or tables, writes RUN_DIR/imported/ and reports each failed file on one line."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirespeed.cli.importing import import_cmd
from wirespeed.cli.main import cli, main
from wirespeed.cli.output import Environment
from wirespeed.core.imports.importer import KNOWN_TOOLS, TOOLS, decode, detect, output_name
from wirespeed.core.imports.importer import import_text as import_object

if "import" not in cli.commands:  # app.py registers it; until then the test does
    cli.add_command(import_cmd)

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real"
SHARED = Path("/work/shared/fixtures")
DOC = ROOT / "docs" / "import-format.md"
DEVICE = REAL / "nccl_tests_device"
MIB = 2**20 * 8 / 1e9  # one perftest MB/sec (MiB/s) in Gb/s


def import_text(text: str, file_name: str) -> dict[str, Any]:
    """The public object as JSON (what `--json` prints and `--into` writes): the tests read its keys."""
    return import_object(text, file_name).to_json()


def _sidecar(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.with_suffix(".json").read_text())
    return data


def _expected_tool(described: str) -> str | None:
    """The sidecar's `tool` is prose (`ib_write_bw (perftest)`, `iperf3 --json (3.6)`); ours is a fixed name. None
    for real outputs of tools `import` does not read (netplan files, cuobjdump listings)."""
    if "nccl-tests" in described:
        return "nccl-tests"
    if "perftest" in described:
        return "perftest"
    if described.startswith("iperf3"):
        return "iperf3"
    if described.startswith("ethtool -S"):
        return "ethtool-stats"
    if described in ("ibdev2netdev", "ibv_devinfo", "show_gids", "rdma link"):
        return described.replace(" ", "-")
    return None


# Every real text output with a sidecar whose tool `import` reads.
CASES = sorted(
    p
    for p in REAL.glob("*/*.txt")
    if p.with_suffix(".json").exists() and _expected_tool(_sidecar(p)["tool"]) is not None
)


def _import(path: Path) -> dict[str, Any]:
    return import_text(path.read_text(), path.name)


def _by_tool(tool: str) -> list[Path]:
    return [p for p in CASES if _expected_tool(_sidecar(p)["tool"]) == tool]


# --------------------------------------------------------------------------------------------- the fixtures


def test_the_real_outputs_are_all_here() -> None:
    tools = {_expected_tool(_sidecar(p)["tool"]) for p in CASES}
    assert tools >= {"nccl-tests", "perftest", "iperf3", "ethtool-stats", "ibdev2netdev", "ibv_devinfo"}
    assert len(CASES) >= 19


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared fixtures are not on this machine")
def test_every_shared_fixture_has_a_byte_for_byte_copy_here() -> None:
    shared = [p for p in SHARED.glob("*/*") if p.suffix in (".txt", ".json") and not p.name.startswith("netplan")]
    assert shared
    for path in shared:
        copy = REAL / path.relative_to(SHARED)
        assert copy.read_bytes() == path.read_bytes(), copy


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_each_real_output_is_recognised_as_its_tool(path: Path) -> None:
    tool = _expected_tool(_sidecar(path)["tool"])
    assert detect(path.read_text()) == tool
    obj = _import(path)
    assert (obj["format_version"], obj["tool"], obj["file"]) == (1, tool, path.name)
    json.dumps(obj, allow_nan=False)  # strict JSON


# --------------------------------------------------------------------------------- what a person reads: nccl


@pytest.mark.parametrize("path", _by_tool("nccl-tests"), ids=lambda p: p.stem)
def test_nccl_tests_give_the_expected_numbers(path: Path) -> None:
    expect = _sidecar(path)["expect"]
    obj = _import(path)
    assert obj["source_format"] == "text"
    assert obj["collective"] == expect["collective"]
    assert obj["avg_busbw_GBps"] == pytest.approx(expect["avg_bus_bandwidth_GBps"])
    assert obj["complete"] is True
    assert expect["out_of_bounds"] == "0 OK" and obj["out_of_bounds"] == 0
    if "nranks" in expect:
        assert obj["ranks"] == expect["nranks"]
    rows = obj["rows"]
    assert len(rows) == expect["n_rows"] == len(expect["rows"])
    for row, want in zip(rows, expect["rows"], strict=True):
        assert row["size_bytes"] == want["size"]
        assert (row["root"] is not None) == expect["has_root_column"]
        for placement, prefix in (("out_of_place", "oop"), ("in_place", "ip")):
            got = row[placement]
            assert got["time_us"] == pytest.approx(want[f"{prefix}_time_us"])
            assert got["algbw_GBps"] == pytest.approx(want[f"{prefix}_algbw"])
            assert got["busbw_GBps"] == pytest.approx(want[f"{prefix}_busbw"])
            if expect["has_root_column"]:
                assert (got["wrong"], got["max_error"]) == (want[f"{prefix}_wrong"], None)
            else:  # the old table printed the largest error, not a count
                assert (got["wrong"], got["max_error"]) == (None, pytest.approx(want[f"{prefix}_wrong"]))


def test_nccl_transport_comes_from_the_info_lines() -> None:
    obj = _import(REAL / "nccl_tests" / "all_reduce_2node_16gpu_p4d_efa_debug_info_mpi_tagged.txt")
    assert obj["transport"] == "NET/AWS Libfabric" and obj["gdr"] is True
    quiet = _import(REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt")
    assert (quiet["transport"], quiet["gdr"]) == (None, None)


def test_nccl_text_and_its_dash_j_json_agree() -> None:
    text = _import(DEVICE / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.txt")
    data = _import(DEVICE / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.nccl-tests.json")
    assert (text["tool"], text["source_format"], data["tool"], data["source_format"]) == (
        "nccl-tests",
        "text",
        "nccl-tests",
        "json",
    )
    assert text["collective"] == data["collective"] == "sendrecv"
    assert text["ranks"] == data["ranks"] == 2
    assert text["transport"] == "NET/Socket" and data["transport"] is None  # JSON has no INFO lines
    assert [r["size_bytes"] for r in text["rows"]] == [r["size_bytes"] for r in data["rows"]]
    for printed, exact in zip(text["rows"], data["rows"], strict=True):
        assert printed["out_of_place"]["busbw_GBps"] == pytest.approx(exact["out_of_place"]["busbw_GBps"], abs=0.006)
    assert text["avg_busbw_GBps"] == pytest.approx(data["avg_busbw_GBps"], abs=1e-4)


# -------------------------------------------------------------------------------------- perftest, iperf3, ethtool


@pytest.mark.parametrize("path", _by_tool("perftest"), ids=lambda p: p.stem)
def test_perftest_gives_the_expected_numbers(path: Path) -> None:
    expect = _sidecar(path)["expect"]
    obj = _import(path)
    assert expect["test"] == "RDMA_Write BW Test" and (obj["test"], obj["kind"]) == ("ib_write_bw", "bw")
    assert (obj["device"], obj["link_type"], obj["mtu_bytes"], obj["gid_index"]) == (
        expect["device"],
        expect["link_type"],
        expect["mtu"],
        expect["gid_index"],
    )
    assert obj["units_printed"] == expect["bw_units"] == "Gb/sec"
    assert len(obj["rows"]) == len(expect["rows"])
    for row, want in zip(obj["rows"], expect["rows"], strict=True):
        assert (row["size_bytes"], row["iterations"]) == (want["bytes"], want["iterations"])
        assert row["bw_avg_gbps"] == pytest.approx(want["bw_avg"])  # Gb/sec already: no conversion
        assert row["msg_rate_mpps"] == pytest.approx(want["msg_rate_mpps"])
        assert want["bw_peak"] == 0.0 and row["bw_peak_gbps"] is None  # 0.00 printed: peak not measured


@pytest.mark.parametrize("path", _by_tool("iperf3"), ids=lambda p: p.stem)
def test_iperf3_gives_the_expected_numbers(path: Path) -> None:
    expect = _sidecar(path)["expect"]
    obj = _import(path)
    assert obj["streams"] == expect["num_streams"]
    if "sum_sent" in expect:  # -J
        assert obj["source_format"] == "json" and obj["protocol"] == expect["protocol"]
        assert obj["sent_bps"] == pytest.approx(expect["sum_sent"]["bits_per_second"])
        assert obj["received_bps"] == pytest.approx(expect["sum_received"]["bits_per_second"])
        assert obj["retransmits"] == expect["sum_sent"]["retransmits"]
        assert obj["cpu_host_pct"] == pytest.approx(expect["cpu_utilization_percent"]["host_total"])
        assert obj["cpu_remote_pct"] == pytest.approx(expect["cpu_utilization_percent"]["remote_total"])
        return
    assert obj["source_format"] == "text"
    sender, receiver = expect["sum_sender"], expect["sum_receiver"]
    assert obj["received_bps"] == pytest.approx(receiver["bits_per_second"])
    if sender is None:
        assert obj["sent_bps"] is None and obj["retransmits"] is None
    else:
        assert obj["sent_bps"] == pytest.approx(sender["bits_per_second"])
        assert obj["retransmits"] == sender.get("retransmits")
    if "jitter_ms" in receiver:
        assert obj["protocol"] == "UDP"
        assert obj["jitter_ms"] == pytest.approx(receiver["jitter_ms"])
        assert (obj["lost_datagrams"], obj["total_datagrams"]) == (receiver["lost"], receiver["total_datagrams"])


@pytest.mark.parametrize("path", _by_tool("ethtool-stats"), ids=lambda p: p.stem)
def test_ethtool_stats_give_the_expected_counters(path: Path) -> None:
    expect = dict(_sidecar(path)["expect"])
    counters = _import(path)["counters"]
    assert len(counters) == expect.pop("n_counters")
    for name, value in expect.items():
        assert counters[name] == value, name


# --------------------------------------------------------------------------------------------- RDMA tools


@pytest.mark.parametrize("path", _by_tool("ibdev2netdev"), ids=lambda p: p.stem)
def test_ibdev2netdev_gives_the_expected_mapping(path: Path) -> None:
    expect = _sidecar(path)["expect"]["mapping"]
    devices = _import(path)["devices"]
    got = {d["rdma_device"]: {"port": d["port"], "netdev": d["netdev"], "state": d["state"]} for d in devices}
    assert got == expect
    assert [d["rdma_device"] for d in devices] == list(expect)  # in file order
    assert all(d["port_state"] is None and d["fw_ver"] is None for d in devices)  # no -v


@pytest.mark.parametrize("path", _by_tool("ibv_devinfo"), ids=lambda p: p.stem)
def test_ibv_devinfo_gives_the_expected_devices(path: Path) -> None:
    expect = _sidecar(path)["expect"]["devices"]
    devices = _import(path)["devices"]
    assert [d["hca_id"] for d in devices] == [d["hca_id"] for d in expect]
    for device, want in zip(devices, expect, strict=True):
        for key in ("fw_ver", "node_guid", "vendor_part_id", "board_id", "phys_port_cnt"):
            assert device[key] == want[key], key
        ports = {str(p["port"]): p for p in device["ports"]}
        assert set(ports) == set(want["ports"])
        for number, port_want in want["ports"].items():
            port = ports[number]
            assert port["state"] == port_want["state"]
            assert port["max_mtu_bytes"] == port_want["max_mtu"]
            assert port["active_mtu_bytes"] == port_want["active_mtu"]
            assert (port["sm_lid"], port["port_lid"]) == (port_want["sm_lid"], port_want["port_lid"])
            assert port["link_layer"] == port_want["link_layer"]


# Written as the tools print them: show_gids echoes tab-separated columns (IBM/DPFS copy of NVIDIA's script),
# rdma link as iproute2 rdma/link.c, ibdev2netdev -v and ibv_devinfo -v as their sources' printf formats.
SHOW_GIDS = (
    "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4 \t\tVER\tDEV\n"
    "---\t----\t-----\t---\t\t\t\t\t------------ \t---\t---\n"
    "rocep1s0f1\t1\t0\tfe80:0000:0000:0000:5a9c:8fff:fe12:3456\t\t\tv1\tenp1s0f1np1\n"
    "rocep1s0f1\t1\t1\tfe80:0000:0000:0000:5a9c:8fff:fe12:3456\t\t\tv2\tenp1s0f1np1\n"
    "rocep1s0f1\t1\t2\t0000:0000:0000:0000:0000:ffff:c0a8:c80b\t192.168.200.11 \tv1\tenp1s0f1np1\n"
    "rocep1s0f1\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:c80b\t192.168.200.11 \tv2\tenp1s0f1np1\n"
    "n_gids_found=4\n"
)
RDMA_LINK = (
    "link rocep1s0f0/1 state DOWN physical_state DISABLED netdev enp1s0f0np0 \n"
    "link rocep1s0f1/1 state ACTIVE physical_state LINK_UP netdev enp1s0f1np1 \n"
)
RDMA_LINK_IB_DETAILS = (
    "link mlx5_2/1 subnet_prefix fe80:0000:0000:0000 lid 3 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP \n"
    "    caps: <SM, CM, IP_BASED_GIDS>\n"
)
RDMA_LINK_OLD = "0/1: mlx5_0/1: state ACTIVE physical_state LINK_UP netdev ens1f0 \n"
RDMA_LINK_JSON = (
    '[{"ifindex":0,"ifname":"rocep1s0f1","port":1,"state":"ACTIVE","physical_state":"LINK_UP",'
    '"netdev":"enp1s0f1np1","netdev_index":4}]\n'
)
IBDEV2NETDEV_V = (
    "0000:01:00.0 mlx5_0 (MT4119 - MCX556A-ECAT) CX556A - ConnectX-5 QSFP28 fw 16.27.2008 port 1 (ACTIVE) ==> "
    "ens1f0 (Up)\n"
    "0000:01:00.1 mlx5_1 (MT4119 - NA         )  fw 16.27.2008 port 1 (DOWN  ) ==> ens1f1 (Down)\n"
)
DEVINFO_V = (
    "hca_id:\trocep1s0f1\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t28.45.4028\n"
    "\tnode_guid:\t\t\t5a9c:8f03:0012:3456\n"
    "\tvendor_id:\t\t\t0x02c9\n"
    "\tvendor_part_id:\t\t\t4129\n"
    "\thw_ver:\t\t\t\t0x0\n"
    "\tphys_port_cnt:\t\t\t1\n"
    "\tmax_mr_size:\t\t\t0xffffffffffffffff\n"
    "\tdevice_cap_flags:\t\t0x21361c36\n"
    "\t\t\t\t\tBAD_PKEY_CNTR\n"
    "\tgeneral_odp_caps:\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t1024 (3)\n"
    "\t\t\tsm_lid:\t\t\t0\n"
    "\t\t\tport_lid:\t\t0\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\t\t\tmax_msg_sz:\t\t0x40000000\n"
    "\t\t\tactive_width:\t\t4X (2)\n"
    "\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
    "\t\t\tphys_state:\t\tLINK_UP (5)\n"
    "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:5a9c:8fff:fe12:3456, RoCE v1\n"
    "\t\t\tGID[  1]:\t\tfe80::5a9c:8fff:fe12:3456, RoCE v2\n"
    "\t\t\tGID[  3]:\t\t::ffff:192.168.200.11, RoCE v2\n"
    "\n"
)


def test_show_gids_rows() -> None:
    obj = import_text(SHOW_GIDS, "gids.txt")
    assert obj["tool"] == "show_gids" and obj["n_gids_found"] == 4
    v2 = [g for g in obj["gids"] if g["roce_version"] == "v2" and g["ipv4"]]
    assert v2 == [
        {
            "rdma_device": "rocep1s0f1",
            "port": 1,
            "index": 3,
            "gid": "0000:0000:0000:0000:0000:ffff:c0a8:c80b",
            "ipv4": "192.168.200.11",
            "roce_version": "v2",
            "netdev": "enp1s0f1np1",
        }
    ]
    assert obj["gids"][0]["ipv4"] is None and obj["gids"][0]["netdev"] == "enp1s0f1np1"


def test_show_gids_rows_without_header_or_footer_as_grep_leaves_them() -> None:
    rows = "".join(line + "\n" for line in SHOW_GIDS.splitlines() if "\tv2\t" in line)
    obj = import_text(rows, "v2.txt")
    assert obj["tool"] == "show_gids" and obj["n_gids_found"] is None
    assert [g["index"] for g in obj["gids"]] == [1, 3]


@pytest.mark.parametrize(
    ("text", "links"),
    [
        (RDMA_LINK, [("rocep1s0f0", 1, "DOWN", "DISABLED", "enp1s0f0np0"),
                     ("rocep1s0f1", 1, "ACTIVE", "LINK_UP", "enp1s0f1np1")]),
        (RDMA_LINK_OLD, [("mlx5_0", 1, "ACTIVE", "LINK_UP", "ens1f0")]),
        (RDMA_LINK_JSON, [("rocep1s0f1", 1, "ACTIVE", "LINK_UP", "enp1s0f1np1")]),
        (RDMA_LINK_IB_DETAILS, [("mlx5_2", 1, "ACTIVE", "LINK_UP", None)]),
    ],
    ids=["current", "old-layout", "json", "infiniband-details"],
)  # fmt: skip
def test_rdma_link_layouts(text: str, links: list[tuple[Any, ...]]) -> None:
    obj = import_text(text, "link.txt")
    assert obj["tool"] == "rdma-link"
    got = [(x["rdma_device"], x["port"], x["state"], x["physical_state"], x["netdev"]) for x in obj["links"]]
    assert got == links


def test_rdma_link_details() -> None:
    (link,) = import_text(RDMA_LINK_IB_DETAILS, "ib.txt")["links"]
    assert (link["subnet_prefix"], link["lid"], link["sm_lid"], link["lmc"]) == ("fe80:0000:0000:0000", 3, 1, 0)
    assert link["caps"] == ["SM", "CM", "IP_BASED_GIDS"]
    as_json = import_text(RDMA_LINK_JSON, "link.json")
    assert as_json["source_format"] == "json" and as_json["links"][0]["netdev_index"] == 4


def test_ibdev2netdev_verbose() -> None:
    first, second = import_text(IBDEV2NETDEV_V, "v.txt")["devices"]
    assert first == {
        "rdma_device": "mlx5_0",
        "port": 1,
        "netdev": "ens1f0",
        "state": "Up",
        "port_state": "ACTIVE",
        "pci_address": "0000:01:00.0",
        "device_id": "MT4119",
        "part_id": "MCX556A-ECAT",
        "fw_ver": "16.27.2008",
    }
    assert (second["port_state"], second["part_id"], second["state"]) == ("DOWN", None, "Down")  # NA is no value


def test_ibv_devinfo_verbose_extras() -> None:
    (device,) = import_text(DEVINFO_V, "v.txt")["devices"]
    assert (device["hca_id"], device["transport"], device["vendor_part_id"], device["board_id"]) == (
        "rocep1s0f1",
        "InfiniBand",
        4129,
        None,
    )
    (port,) = device["ports"]
    assert (port["state"], port["max_mtu_bytes"], port["active_mtu_bytes"], port["link_layer"]) == (
        "PORT_ACTIVE",
        4096,
        1024,
        "Ethernet",
    )
    assert (port["phys_state"], port["active_width_lanes"], port["active_speed_gbps"]) == ("LINK_UP", 4, 25.0)
    assert port["gids"] == [
        {"index": 0, "gid": "fe80:0000:0000:0000:5a9c:8fff:fe12:3456", "type": "RoCE v1"},
        {"index": 1, "gid": "fe80:0000:0000:0000:5a9c:8fff:fe12:3456", "type": "RoCE v2"},
        {"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:c0a8:c80b", "type": "RoCE v2"},
    ]


def test_ibv_devinfo_without_devices() -> None:
    assert import_text("No IB devices found\n", "none.txt")["devices"] == []


# ------------------------------------------------------------------------------------------ perftest units


HEADER_BLOCK = (
    "---------------------------------------------------------------------------------------\n"
    "                    RDMA_Write BW Test\n"
    " Dual-port       : OFF            Device         : mlx5_0\n"
    " Number of qps   : 1              Transport type : IB\n"
    " Connection type : RC             Using SRQ      : OFF\n"
    " Mtu             : 4096[B]\n"
    " Link type       : IB\n"
    "---------------------------------------------------------------------------------------\n"
)


@pytest.mark.parametrize("unit", ["MB/sec", "MiB/sec"])
def test_perftest_mb_per_sec_is_mebibytes_per_second(unit: str) -> None:
    text = (
        HEADER_BLOCK
        + f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]\n"
        + " 65536      5000             11300.00            11200.50\t\t     0.179208\n"
    )
    obj = import_text(text, "mb.txt")
    (row,) = obj["rows"]
    assert obj["units_printed"] == unit
    assert row["bw_avg_gbps"] == pytest.approx(11200.50 * 2**20 * 8 / 1e9) == pytest.approx(93.9566, abs=1e-4)
    assert row["bw_peak_gbps"] == pytest.approx(11300.00 * MIB)
    assert row["bw_avg_gbps"] != pytest.approx(11200.50 * 8 / 1000)  # not read as 10^6 bytes/s


def test_perftest_latency_rows() -> None:
    text = (
        HEADER_BLOCK.replace("RDMA_Write BW Test", "RDMA_Write Latency Test")
        + " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
        + "   99% percentile[usec]   99.9% percentile[usec] \n"
        + " 2       1000          1.05           4.50         1.08     \t       1.09        \t0.05   \t\t1.20"
        + "    \t\t4.50   \n"
    )
    obj = import_text(text, "lat.txt")
    assert (obj["test"], obj["kind"], obj["units_printed"]) == ("ib_write_lat", "lat", "usec")
    assert obj["rows"] == [
        {
            "size_bytes": 2,
            "iterations": 1000,
            "t_min_us": 1.05,
            "t_max_us": 4.50,
            "t_typical_us": 1.08,
            "t_avg_us": 1.09,
            "t_stdev_us": 0.05,
            "p99_us": 1.20,
            "p999_us": 4.50,
        }
    ]


def _out_json(test: str, results: str, extra_info: str = "") -> str:
    """A --out_json file as perftest_parameters.c writes it (dprintf of test_info, then results)."""
    return (
        "{\n"
        '"test_info": {\n'
        f'"test": "{test}",\n'
        '"Dual_port": "OFF",\n"Device": "rocep1s0f1",\n'
        '"Number_of_qps": 1,\n"Transport_type": "IB",\n'
        '"Connection_type": "RC",\n"Using_SRQ": "OFF",\n'
        '"PCIe_relax_order": "ON",\n"ibv_wr_API": "ON",\n"TX_depth": 128,\n"CQ_Moderation": 1,\n'
        '"Mtu": 1024,\n"Link_type": "Ethernet",\n"GID_index": 3,\n'
        f'{extra_info}"Max_inline_data": 0,\n"rdma_cm_QPs": "OFF",\n"Use_ROCm_memory": "OFF",\n'
        '"Use_MUSA_memory": "OFF",\n"Data_ex_method": "Ethernet"\n'
        "},\n"
        '"results": {\n' + results + "}\n"
        "}\n"
    )


def test_perftest_json_in_mib_per_second_is_told_from_its_message_rate() -> None:
    # 65536 B x 0.176554 Mpps = 11570.5 MB/s = 11034.5 MiB/s: the MiB/s default, not --report_gbits
    text = _out_json(
        "RDMA_Write_BW_Test",
        '"MsgSize": 65536,\n"n_iterations": 5000,\n"BW_peak": 11050.12,\n"BW_average": 11034.48,\n'
        '"MsgRate": 0.176552\n\n',
    )
    obj = import_text(text, "perftest_out.json")
    assert (obj["tool"], obj["source_format"], obj["test"], obj["kind"]) == ("perftest", "json", "ib_write_bw", "bw")
    assert (obj["device"], obj["link_type"], obj["mtu_bytes"], obj["gid_index"], obj["qps"]) == (
        "rocep1s0f1",
        "Ethernet",
        1024,
        3,
        1,
    )
    assert obj["units_printed"] == "MiB/sec"
    (row,) = obj["rows"]
    assert row["bw_avg_gbps"] == pytest.approx(11034.48 * MIB) == pytest.approx(92.56, abs=0.01)
    assert row["bw_peak_gbps"] == pytest.approx(11050.12 * MIB)
    assert (row["size_bytes"], row["iterations"], row["msg_rate_mpps"]) == (65536, 5000, 0.176552)


def test_perftest_json_in_gbits_and_the_unquoted_qos_key() -> None:
    text = _out_json(
        "RDMA_Write_Bidirectional_BW_Test",
        '"MsgSize": 65536,\nsl: 3,\n"n_iterations": 5000,\n"BW_peak": 0.00,\n"BW_average": 185.12,\n'
        ' "MsgRate": 0.353088\n\n',
    )
    obj = import_text(text, "qos.json")
    assert (obj["units_printed"], obj["bidirectional"]) == ("Gb/sec", True)
    (row,) = obj["rows"]
    assert (row["bw_avg_gbps"], row["bw_peak_gbps"]) == (185.12, None)


def test_perftest_json_without_a_message_rate_has_no_unit() -> None:
    text = _out_json(
        "Send_BW_Test", '"MsgSize": 65536,\n"n_iterations": 5000,\n"BW_peak": 1.0,\n"BW_average": 1.0,\n"MsgRate": 0\n'
    )
    obj = import_text(text, "zero.json")
    assert obj["test"] == "ib_send_bw" and obj["units_printed"] is None
    assert (obj["rows"][0]["bw_avg_gbps"], obj["rows"][0]["bw_peak_gbps"]) == (None, None)


def test_perftest_json_latency() -> None:
    text = _out_json(
        "Send_Latency_Test",
        '"MsgSize": 2,\n"n_iterations": 1000,\n"t_min": 1.05,\n"t_max": 4.50,\n"t_typical": 1.08,\n'
        '"t_avg": 1.09,\n"t_stdev": 0.05,\n"percentile_99": 1.20,\n"percentile_99.9": 4.50\n',
    )
    obj = import_text(text, "lat.json")
    assert (obj["test"], obj["kind"]) == ("ib_send_lat", "lat")
    assert obj["rows"][0]["t_typical_us"] == 1.08 and obj["rows"][0]["p999_us"] == 4.50


def test_perftest_json_with_one_figure_is_refused_with_its_line() -> None:
    text = _out_json("RDMA_Write_BW_Test", '"bw_avg": 92.570000,\n\n')  # the comma before `}` is perftest's
    line = text[: text.index('"results"')].count("\n") + 1
    with pytest.raises(ValueError, match=rf"^line {line}: perftest JSON of a run with --output="):
        import_text(text, "bw.json")


# ------------------------------------------------------------------------------------------ the public shape


def _doc_examples() -> dict[str, dict[str, Any]]:
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(), re.DOTALL)
    examples = [json.loads(block) for block in blocks]
    return {example["tool"] + ("-" + example["kind"] if "kind" in example else ""): example for example in examples}


# Mappings keyed by what the tool printed (variable names, devices, statistics), not by fixed keys.
FREE_FORM = {
    "nccl-info.hosts[].environment", "nccl-info.hosts[].gdr_by_hca", "nccl-info.hosts[].via",
    "nvidia-smi-topo.nics", "nvidia-smi-topo.links", "nvidia-smi-topo.cpu_affinity",
    "nvidia-smi-topo.numa_affinity", "ethtool-fec.interfaces[].statistics", "ethtool-fec.interfaces[].lanes",
}  # fmt: skip


def _assert_same_keys(got: Any, documented: Any, where: str) -> None:
    if where == "ethtool-stats.counters":  # a mapping of the driver's names, not fixed keys
        assert got and all(isinstance(name, str) and isinstance(value, int) for name, value in got.items())
        return
    if where in FREE_FORM:
        assert isinstance(got, dict) and all(isinstance(name, str) for name in got), where
        return
    if isinstance(documented, dict):
        assert isinstance(got, dict), where
        assert set(got) == set(documented), f"{where}: {sorted(set(got) ^ set(documented))}"
        for key, value in documented.items():
            _assert_same_keys(got[key], value, f"{where}.{key}")
    elif isinstance(documented, list) and documented and isinstance(got, list) and got:
        for item in got:
            _assert_same_keys(item, documented[0], f"{where}[]")


SAMPLES = {
    "nccl-tests": REAL / "nccl_tests" / "all_reduce_2node_16gpu_h100_a3mega.txt",
    "perftest-bw": REAL / "perftest" / "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt",
    "iperf3": REAL / "iperf3" / "iperf3_tcp_P3_client_loopback_sum.txt",
    "ethtool-stats": REAL / "ethtool" / "ethtool_S_mlx5_xdp_kernel5.15_nonzero_only.txt",
    "ibdev2netdev": REAL / "spark" / "ibdev2netdev_spark_port1_up_nccl_readme.txt",
    "ibv_devinfo": REAL / "rdma_tools" / "ibv_devinfo_mlx4_two_hcas_dual_port_ib.txt",
    # what owners paste (tests/unit/test_pastes.py reads each of these in detail)
    "nccl-info": REAL / "nccl_info" / "sglang_2node_16gpu_v2.27.5_env_head.txt",
    "kernel-log": REAL / "kernel_log" / "spark_dmesg_grep_power_hotplug_elided.txt",
    "lspci": REAL / "lspci" / "cx7_vv_pf_downgraded_x8_and_vf.txt",
    "ip-addr": REAL / "ip_addr" / "spark_playbook_ip_addr_show_markdown_bold.txt",
    "ip-brief": REAL / "ip_brief" / "spark_ip_br_addr_dollar_prompt.txt",
    "ethtool": REAL / "ethtool_link" / "mlx5_cx4lx_link_training_failure_root_prompt.txt",
    "ethtool-fec": REAL / "ethtool_fec" / "netdev_show_fec_stats_lanes_eth0.txt",
    "nvidia-smi-topo": REAL / "nvidia_smi_topo" / "spark_gb10_topo_m_dollar_prompt.txt",
    "paste": REAL / "ip_addr" / "grace_hopper_ip_address_show_dev_prompt.txt",
}


def test_the_doc_shows_one_example_per_tool() -> None:
    assert set(_doc_examples()) == {*SAMPLES, "show_gids", "rdma-link"}
    assert {example["tool"] for example in _doc_examples().values()} == set(TOOLS)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        *((name, path.read_text()) for name, path in SAMPLES.items()),
        ("nccl-tests", (DEVICE / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.nccl-tests.json").read_text()),
        ("nccl-tests", (REAL / "nccl_tests" / "all_reduce_2node_16gpu_p4d_efa_debug_info_mpi_tagged.txt").read_text()),
        ("iperf3", (REAL / "iperf3" / "iperf3_json_tcp_1stream_v3.9_gcp_to_ibm_omit3.txt").read_text()),
        ("iperf3", (REAL / "iperf3" / "iperf3_udp_P2_client_kbits_loopback_sum.txt").read_text()),
        ("ibdev2netdev", IBDEV2NETDEV_V),
        ("ibv_devinfo", DEVINFO_V),
        ("show_gids", SHOW_GIDS),
        ("rdma-link", RDMA_LINK),
        ("rdma-link", RDMA_LINK_IB_DETAILS),
        ("rdma-link", RDMA_LINK_JSON),
    ],
)
def test_objects_have_exactly_the_documented_keys(name: str, text: str) -> None:
    obj = import_text(text, "f.txt")
    _assert_same_keys(obj, _doc_examples()[name], name)
    assert json.loads(json.dumps(obj, allow_nan=False)) == obj


LAT_ROW_KEYS = {"size_bytes", "iterations", "t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us"}
LAT_ROW_KEYS |= {"p99_us", "p999_us"}


def test_latency_rows_have_exactly_the_documented_keys() -> None:
    text = _out_json("Send_Latency_Test", '"MsgSize": 2,\n"n_iterations": 1000,\n"t_avg": 1.09,\n"tps_average": 1.0\n')
    obj = import_text(text, "dur.json")
    assert set(obj) == set(_doc_examples()["perftest-bw"])
    assert set(obj["rows"][0]) == LAT_ROW_KEYS
    assert all(f"`{key}`" in DOC.read_text() or f'"{key}"' in DOC.read_text() for key in LAT_ROW_KEYS)
    assert obj["rows"][0]["t_avg_us"] == 1.09 and obj["rows"][0]["t_min_us"] is None  # -D: t_avg only


def test_non_finite_numbers_become_null() -> None:
    data = json.loads((DEVICE / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.nccl-tests.json").read_text())
    data["results"][0]["out_of_place"]["alg_bw"] = "nan"
    obj = import_text(json.dumps(data), "nan.json")
    assert obj["rows"][0]["out_of_place"]["algbw_GBps"] is None
    json.dumps(obj, allow_nan=False)


def test_output_name() -> None:
    assert output_name("logs/a3.txt", "nccl-tests") == "a3.nccl-tests.json"
    assert output_name("perftest_out.json", "perftest") == "perftest_out.perftest.json"


# ------------------------------------------------------------------------------------------------ bad input


def _cut_before(text: str, marker: str, keep: int) -> str:
    return text[: text.index(marker) + keep]


IBDEV = (REAL / "spark" / "ibdev2netdev_spark_port1_up_nccl_readme.txt").read_text()
PERF = (REAL / "perftest" / "ib_write_bw_spark_report_gbits_run_infinitely_client1.txt").read_text()
IPERF_JSON = (REAL / "iperf3" / "iperf3_json_tcp_1stream_v3.9_gcp_to_ibm_omit3.txt").read_text()
NCCL_JSON = (DEVICE / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.nccl-tests.json").read_text()
PERF_ROW = next(n for n, line in enumerate(PERF.splitlines(), start=1) if "0.176554" in line)  # the first row
PERF_HEADER = next(n for n, line in enumerate(PERF.splitlines(), start=1) if line.startswith(" #bytes"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"^line 1: the file is empty$"),
        ("\n \n\t\n", r"^line 1: the file holds only blank lines$"),
        ("\n\nhello world\nbye\n", rf"^line 3: not output of a known tool \({re.escape(KNOWN_TOOLS)}\)$"),
        ("[1, 2, 3]\n", r"^line 1: not output of a known tool"),
        ("NIC statistics:\n", r"^line 1: ethtool -S output without a single `name: value` counter line$"),
        # a row cut inside its last number (%.6f left with 3 digits)
        (_cut_before(PERF, "0.176554", 5), rf"^line {PERF_ROW}: MsgRate '0.176' is not a number as perftest prints"),
        (_cut_before(PERF, " #bytes", 0), rf"^line {PERF_HEADER - 1}: perftest output without its result table"),
        (_cut_before(IPERF_JSON, '"end"', 0), r"^line \d+: iperf3 JSON cut off"),
        (NCCL_JSON[:900], r"^line 1: nccl-tests JSON cut off or malformed \(Unterminated string .* at column \d+\)$"),
        (IBDEV[: IBDEV.index("(Up)") + 2], r"^line 2: ibdev2netdev line does not end as"),
        (IBDEV[: IBDEV.index("rocep1s0f0") + 14], r"^line 3: ibdev2netdev line does not end as"),
        (SHOW_GIDS[: SHOW_GIDS.index("c0a8:c80b") + 3], r"^line 5: show_gids row does not hold a whole GID"),
        (SHOW_GIDS.replace("192.168.200.11 \tv2", "192.168.2"), r"^line 6: show_gids IPv4 column '192.168.2'"),
        (SHOW_GIDS.replace("n_gids_found=4", "n_gids_found=5"), r"^line 7: n_gids_found=5 but 4 GID row"),
        (RDMA_LINK.replace("ACTIVE", "ACTI"), r"^line 2: rdma link state 'ACTI' is not as rdma link prints it"),
        (RDMA_LINK[: RDMA_LINK.rindex("physical_state") + 8], r"^line 2: rdma link line stops inside a key or value"),
        (RDMA_LINK_JSON[:-20], r"^line 1: rdma link JSON cut off or malformed"),
        (DEVINFO_V.replace("PORT_ACTIVE (4)", "PORT_ACT"), r"^line 14: ibv_devinfo state 'PORT_ACT' is not as"),
        (DEVINFO_V.replace("1024 (3)", "1024 (5)"), r"^line 16: ibv_devinfo active_mtu '1024 \(5\)': MTU and its"),
    ],
    ids=[
        "empty", "blank", "unknown", "json-list", "ethtool-header", "perftest-row", "perftest-no-table",
        "iperf3-json", "nccl-json", "ibdev2netdev-state", "ibdev2netdev-netdev", "show_gids-gid", "show_gids-ipv4",
        "show_gids-count", "rdma-link-state", "rdma-link-pair", "rdma-link-json", "devinfo-state", "devinfo-mtu",
    ],
)  # fmt: skip
def test_bad_input_is_one_value_error_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        import_text(text, "bad.txt")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"abc\n\x00\x01\x02", r"^line 2: binary data \(a NUL byte\)"),
        (b"\x7fELF\x02\x01\x01\x00", r"^line 1: binary data \(a NUL byte\)"),
        (bytes(range(128, 256)) * 4, r"^line 1: binary data \(not UTF-8 text\)$"),
    ],
)
def test_binary_data_is_refused_with_its_line(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode(data)


def test_text_encodings_are_read() -> None:
    text = IBDEV.replace("\n", "\r\n")
    for data in (text.encode("utf-16"), b"\xef\xbb\xbf" + IBDEV.encode(), IBDEV.encode() + b"\xe9\n"):
        assert import_text(decode(data), "i2n.txt")["tool"] == "ibdev2netdev"


# ------------------------------------------------------------------------------------- property-based: never crash


def _never_crashes(text: str) -> None:
    try:
        obj = import_text(text, "fuzz.txt")
    except ValueError as exc:
        assert re.match(r"line \d+: \S", str(exc)), str(exc)
        assert "\n" not in str(exc)
        return
    assert obj["tool"] in TOOLS and obj["format_version"] == 1
    json.dumps(obj, allow_nan=False)


REAL_TEXTS = [p.read_text() for p in CASES] + [
    (DEVICE / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.txt").read_text(),
    NCCL_JSON,
    SHOW_GIDS,
    RDMA_LINK,
    RDMA_LINK_IB_DETAILS,
    RDMA_LINK_OLD,
    RDMA_LINK_JSON,
    IBDEV2NETDEV_V,
    DEVINFO_V,
]
REAL_LINES = sorted({line for text in REAL_TEXTS for line in text.splitlines()})
FUZZ = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text())
def test_random_text_never_crashes(text: str) -> None:
    _never_crashes(text)


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes_never_crash(data: bytes) -> None:
    _never_crashes(data.decode("utf-8", errors="replace"))
    try:
        text = decode(data)
    except ValueError as exc:
        assert re.match(r"line \d+: binary data", str(exc))
        return
    _never_crashes(text)


@FUZZ
@given(st.sampled_from(REAL_TEXTS), st.data())
def test_every_real_output_cut_anywhere_never_crashes(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    _never_crashes(text[:cut])


@FUZZ
@given(st.sampled_from(REAL_TEXTS), st.data())
def test_real_outputs_with_a_slice_taken_out_never_crash(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    end = data.draw(st.integers(min_value=start, max_value=len(text)))
    _never_crashes(text[:start] + text[end:])


@FUZZ
@given(st.lists(st.sampled_from(REAL_LINES), max_size=40))
def test_real_lines_shuffled_together_never_crash(lines: list[str]) -> None:
    _never_crashes("\n".join(lines) + "\n")


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
_SCALARS |= st.sampled_from(["nan", "ACTIVE", "LINK_UP", "mlx5_0/1", "    -1", "sum", "float", "iperf 3.9"])
_KEY_NAMES = (
    "results config size count type redop root out_of_place in_place time alg_bw bus_bw nwrong devices group "
    "nthreads ngpus args average_bus_bandwidth bandwidth out_of_bounds test_info test Device Mtu MsgSize n_iterations "
    "BW_peak BW_average MsgRate t_min start end intervals sum sum_sent sum_received bits_per_second test_start "
    "protocol num_streams error ifname port state physical_state netdev netdev_index caps event data"
)
_KEYS = st.sampled_from(_KEY_NAMES.split())
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6))
_MARKS = [{"nccl_version": 22809}, {"test_info": {"test": "RDMA_Write_BW_Test"}}, {"start": {"version": "iperf 3.9"}}]


@FUZZ
@given(st.sampled_from([*_MARKS, None]), _JSON)
def test_json_of_any_shape_under_a_tools_marks_never_crashes(mark: dict[str, Any] | None, value: Any) -> None:
    """Each tool's JSON recognised by its marks, with anything inside: the parsers must not trust the layout."""
    if mark is None:
        items = value if isinstance(value, list) else [value]
        doc: Any = [
            {"ifname": "mlx5_0", "physical_state": "LINK_UP", **(i if isinstance(i, dict) else {})} for i in items
        ]
    else:
        doc = {**mark, **value} if isinstance(value, dict) else {**mark, "results": value}
    _never_crashes(json.dumps(doc, indent=1))


def test_each_whole_real_output_imports_and_each_cut_one_imports_or_names_a_line() -> None:
    """Deterministic companion to the fuzzing: every 97th cut point of every real output."""
    for text in REAL_TEXTS:
        _never_crashes(text)
        assert import_text(text, "whole.txt")["tool"] in TOOLS
        for cut in range(0, len(text), 97):
            _never_crashes(text[:cut])


# ------------------------------------------------------------------------------------------------ the command


@dataclass
class Run:
    status: int
    stdout: str
    stderr: str


def run_cli(*argv: str) -> Run:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    status = main(list(argv), env)
    assert isinstance(env.stdout, io.StringIO) and isinstance(env.stderr, io.StringIO)
    return Run(status, env.stdout.getvalue(), env.stderr.getvalue())


def test_json_lines_one_object_per_file() -> None:
    files = [str(SAMPLES[name]) for name in ("nccl-tests", "perftest-bw", "ibdev2netdev")]
    run = run_cli("import", "--json", *files)
    assert (run.status, run.stderr) == (0, "")
    lines = run.stdout.splitlines()
    assert len(lines) == 3
    objects = [json.loads(line) for line in lines]
    assert [o["tool"] for o in objects] == ["nccl-tests", "perftest", "ibdev2netdev"]
    assert [o["file"] for o in objects] == files
    assert objects[0]["avg_busbw_GBps"] == 70.742


def test_human_output_names_the_tool_and_headline_figures() -> None:
    run = run_cli("import", str(SAMPLES["nccl-tests"]), str(SAMPLES["perftest-bw"]), str(SAMPLES["iperf3"]))
    assert (run.status, run.stderr) == (0, "")
    for text in ("nccl-tests", "all_reduce", "70.742 GB/s", "338.82 GB/s at 8 GiB", "perftest", "92.57 Gb/s"):
        assert text in run.stdout, text
    assert "iperf3" in run.stdout and "22.30 Gb/s" in run.stdout


def test_each_bad_file_gets_one_line_and_the_others_are_still_imported(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    binary = tmp_path / "core.bin"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00")
    unknown = tmp_path / "x.txt"
    unknown.write_text("# my notes\n\nrebooted both nodes\n")
    good = str(SAMPLES["ibdev2netdev"])
    missing = tmp_path / "missing.txt"
    run = run_cli("import", "--json", str(empty), good, str(binary), str(tmp_path), str(unknown), str(missing))
    assert run.status == 1
    assert "Traceback" not in run.stdout + run.stderr
    assert [json.loads(line)["tool"] for line in run.stdout.splitlines()] == ["ibdev2netdev"]
    assert run.stderr.splitlines() == [
        f"wirespeed: {empty}: line 1: the file is empty",
        f"wirespeed: {binary}: line 1: binary data (a NUL byte), not a tool's text output",
        f"wirespeed: {tmp_path}: not a regular file (a directory)",
        f"wirespeed: {unknown}: line 1: not output of a known tool ({KNOWN_TOOLS})",
        f"wirespeed: {missing}: no such file",
    ]


def test_a_cut_file_names_its_line(tmp_path: Path) -> None:
    cut = tmp_path / "client.txt"
    cut.write_text(_cut_before(PERF, "0.176554", 5))
    run = run_cli("import", str(cut))
    assert run.status == 1 and run.stdout == ""
    assert (
        run.stderr
        == f"wirespeed: {cut}: line {PERF_ROW}: MsgRate '0.176' is not a number as perftest prints it (cut off?)\n"
    )


def test_into_writes_one_file_per_object(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "2026-11-22T10-00-00"
    run_dir.mkdir(parents=True)
    (run_dir / "discovery.json").write_text('{"nodes": {}}')  # what bench writes first: this is a run
    other = tmp_path / "other"
    other.mkdir()
    twin = other / SAMPLES["ibdev2netdev"].name  # same stem as the sample, from another directory
    twin.write_bytes(SAMPLES["ibdev2netdev"].read_bytes())
    run = run_cli(
        "import", "--json", "--into", str(run_dir), str(SAMPLES["nccl-tests"]), str(SAMPLES["ibdev2netdev"]), str(twin)
    )
    assert (run.status, run.stderr) == (0, "")
    written = sorted(p.name for p in (run_dir / "imported").iterdir())
    stem = SAMPLES["ibdev2netdev"].stem
    assert written == sorted(
        [
            "all_reduce_2node_16gpu_h100_a3mega.nccl-tests.json",
            f"{stem}.ibdev2netdev.json",
            f"{stem}-2.ibdev2netdev.json",
        ]
    )
    stored = json.loads((run_dir / "imported" / "all_reduce_2node_16gpu_h100_a3mega.nccl-tests.json").read_text())
    assert stored == json.loads(run.stdout.splitlines()[0])


def test_into_needs_an_existing_run_directory(tmp_path: Path) -> None:
    run = run_cli("import", "--into", str(tmp_path / "nope"), "--runs", str(tmp_path), str(SAMPLES["nccl-tests"]))
    assert run.status == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [
        f"wirespeed: error: --into {tmp_path / 'nope'}: no such run in {tmp_path} "
        "(hint: give a name `wirespeed runs` prints, a path, or latest)"
    ]
    assert not (tmp_path / "nope").exists()
    (tmp_path / "plain").mkdir()  # a directory, but not one bench wrote
    run = run_cli("import", "--into", "plain", "--runs", str(tmp_path), str(SAMPLES["nccl-tests"]))
    assert run.status == 2 and "plain: not a run directory" in run.stderr
    assert not (tmp_path / "plain" / "imported").exists()


def test_into_takes_the_name_runs_prints_and_latest(tmp_path: Path) -> None:
    for name in ("20261122T100000Z", "20261122T110000Z"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "discovery.json").write_text('{"nodes": {}}')
    run = run_cli("import", "--into", "20261122T100000Z", "--runs", str(tmp_path), str(SAMPLES["nccl-tests"]))
    assert run.status == 0, run.stderr
    assert len(list((tmp_path / "20261122T100000Z" / "imported").iterdir())) == 1
    run = run_cli("import", "--into", "latest", "--runs", str(tmp_path), str(SAMPLES["iperf3"]))
    assert run.status == 0, run.stderr
    assert len(list((tmp_path / "20261122T110000Z" / "imported").iterdir())) == 1


def test_import_needs_a_file() -> None:
    run = run_cli("import")
    assert run.status == 2 and "Missing argument 'FILES...'" in run.stderr


# ------------------------------------------------------------------------------ annotated ibdev2netdev pastes

# The Spark listing of the NCCL playbook (tests/fixtures/real/spark), as people paste it into issues and forums.
SPARK_I2N = [
    ("roceP2p1s0f0", "enP2p1s0f0np0", "Down"),
    ("roceP2p1s0f1", "enP2p1s0f1np1", "Up"),
    ("rocep1s0f0", "enp1s0f0np0", "Down"),
    ("rocep1s0f1", "enp1s0f1np1", "Up"),
]
I2N_LINES = IBDEV.splitlines()
I2N_V_LINES = IBDEV2NETDEV_V.splitlines()


def _i2n(text: str) -> tuple[list[tuple[str, str, str | None]], list[tuple[int, str]]]:
    obj = import_text(text, "paste.txt")
    assert obj["tool"] == "ibdev2netdev" and detect(text) == "ibdev2netdev"
    json.dumps(obj, allow_nan=False)
    mapping = [(d["rdma_device"], d["netdev"], d["state"]) for d in obj["devices"]]
    return mapping, [(s["line"], s["text"]) for s in obj["skipped_lines"]]


@pytest.mark.parametrize(
    ("text", "skipped"),
    [
        ("\n".join(f"{line}   # CX-7 1/8 infiniband" for line in I2N_LINES) + "\n", []),
        (f"{I2N_LINES[0]} ◄── port 1\n{I2N_LINES[1]}  <-- port 1\n{I2N_LINES[2]} ✓\n{I2N_LINES[3]} (Up) ← here\n", []),
        ("".join(f"──► {line}\n" for line in I2N_LINES), []),
        ("".join(f"  {n}\t{line}\n" for n, line in enumerate(I2N_LINES, start=1)), []),  # cat -n
        (IBDEV.rstrip("\n") + "nvidia@spark-5c2d:~$ ibv_devinfo", []),  # the next prompt glued on, no newline
        (IBDEV.rstrip("\n") + "$ ibv_devinfo\n", []),
        (IBDEV.replace("\n", "\r\n"), []),
        ("\n\n" + "\n\n".join(I2N_LINES) + "\n\n\n", []),
        ("$ ibdev2netdev\n" + IBDEV + "$ \n", [(1, "$ ibdev2netdev"), (6, "$")]),
        (
            "Spark-1 (the QSFP in port 1):\r\n```\r\nnvidia@spark-5c2d:~$ ibdev2netdev\r\n"
            + IBDEV.replace("\n", "\r\n")
            + "```\r\n\r\n◄── port 1 is the one next to the RJ45\r\n# rocep1s0f0 port 1 ==> enp1s0f0np0 (Up) before\r\n"
            + "nvidia@spark-5c2d:~$ ibv_devinfo",
            [
                (1, "Spark-1 (the QSFP in port 1):"), (2, "```"), (3, "nvidia@spark-5c2d:~$ ibdev2netdev"), (8, "```"),
                (10, "◄── port 1 is the one next to the RJ45"), (11, "# rocep1s0f0 port 1 ==> enp1s0f0np0 (Up) before"),
                (12, "nvidia@spark-5c2d:~$ ibv_devinfo"),
            ],
        ),
    ],
    ids=["hash-comment", "arrows-and-notes", "leading-arrow", "cat-n", "glued-prompt", "glued-command", "crlf",
         "blank-lines", "prompt-lines", "markdown-paste"],
)  # fmt: skip
def test_annotated_ibdev2netdev_gives_every_mapping_and_names_the_skipped_lines(
    text: str, skipped: list[tuple[int, str]]
) -> None:
    assert _i2n(text) == (SPARK_I2N, skipped)


def test_annotated_ibdev2netdev_verbose_keeps_its_fields() -> None:
    text = "".join(f"{line}   # CX-5, slot {n}\n" for n, line in enumerate(I2N_V_LINES, start=1))
    assert import_text(text, "v.txt")["devices"] == import_text(IBDEV2NETDEV_V, "v.txt")["devices"]
    assert import_text(IBDEV2NETDEV_V, "v.txt")["devices"][0]["fw_ver"] == "16.27.2008"


def test_the_real_listings_name_their_prompt_and_heading_as_skipped() -> None:
    spark = REAL / "spark"
    assert _i2n((spark / "ibdev2netdev_spark1_port0_up_perf_guide.txt").read_text())[1] == [
        (1, "nvidia@spark-5c2d:~$ ibdev2netdev")
    ]
    assert _i2n((spark / "ibdev2netdev_spark_port1_up_connect_two_sparks_readme.txt").read_text())[1] == [
        (1, "## Check QSFP interface availability on both nodes"),
        (2, "nvidia@dxg-spark-1:~$ ibdev2netdev"),
    ]
    assert _i2n(IBDEV)[1] == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a line broken inside its mapping is named, with or without notes around the file
        (f"{I2N_LINES[0]}\n{I2N_LINES[1][:-5]}  # note\n{I2N_LINES[2]}\n", r"^line 2: ibdev2netdev line does not end"),
        (f"$ ibdev2netdev\n{I2N_LINES[0]}\n{I2N_LINES[1][:-1]}\n", r"^line 3: ibdev2netdev line does not end"),
        # the last line cut inside `DEV port N ==>`, or a -v line cut anywhere
        (f"{I2N_LINES[0]}\n{I2N_LINES[1][:20]}", r"^line 2: ibdev2netdev line does not end"),
        (f"{I2N_LINES[0]}\n{I2N_LINES[1][:6]}", r"^line 2: ibdev2netdev line does not end"),
        (f"{I2N_V_LINES[0]}\n{I2N_V_LINES[1][:40]}", r"^line 2: ibdev2netdev line does not end"),
        # no line holds a mapping: refused with a hint
        ("# port 1 ==> spark-2 (cabled)\n", r"^line 1: no line holds an ibdev2netdev mapping .*\(hint: "),
        ("notes\n\n# rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\n", r"^line 3: no line holds an ibdev2netdev mapping"),
        ("$ ibdev2netdev\nport 1\n==> x\n", r"^line 3: no line holds an ibdev2netdev mapping"),
    ],
    ids=["broken-middle", "broken-last", "cut-arrow", "cut-device", "cut-verbose", "comment-only", "commented-out",
         "wrapped"],
)  # fmt: skip
def test_ibdev2netdev_broken_or_without_mappings_is_refused_naming_a_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        import_text(text, "bad.txt")


def test_a_last_word_that_is_no_device_is_skipped_not_taken_for_a_cut() -> None:
    for last, skipped in (("ibv_devinfo", "ibv_devinfo"), ("logout", "logout"), ("QSFP port 1", "QSFP port 1")):
        assert _i2n(IBDEV + last) == (SPARK_I2N, [(5, skipped)])


@pytest.mark.parametrize(
    "text",
    [
        "QSFP port 1 is cabled to spark-2 port 1\n<-- port 1\n◄── port 0\n",  # notes alone are nobody's output
        "rebooted; ibdev2netdev said (Up) for port 1\n",
    ],
)
def test_notes_without_a_mapping_are_not_taken_for_ibdev2netdev(text: str) -> None:
    assert detect(text) is None


@pytest.mark.parametrize("path", [p for p in CASES if _expected_tool(_sidecar(p)["tool"]) != "ibdev2netdev"])
def test_other_tools_outputs_with_an_annotation_are_not_claimed(path: Path) -> None:
    tool = _expected_tool(_sidecar(path)["tool"])
    assert detect(path.read_text() + "# ran after a port 1 recable ◄── port 1\n") == tool


def test_discover_ibdev2netdev_view_round_trips() -> None:
    from wirespeed.core.fabric.cabling import build_map
    from wirespeed.core.fabric.discovery import Discovery
    from wirespeed.core.fabric.facts import Netdev, NodeFacts, RdmaDevice, RdmaPort, Unknown
    from wirespeed.core.fabric.ports import group_ports
    from wirespeed.ui.discovery import ibdev2netdev

    def facts(node: str, rdma: bool) -> NodeFacts:
        names = [netdev for _, netdev, _ in SPARK_I2N]
        netdevs = tuple(
            Netdev(name=name, operstate="up" if up else "down", carrier=True if up else Unknown("down"),
                   speed_mbps=200000, mtu=9000, mac="02:00:00:00:00:01", ipv4=(), ipv6=(), kind="pci", link_type=1,
                   pci=None)
            for name, up in ((n, s == "Up") for _, n, s in SPARK_I2N)
        )  # fmt: skip
        port = RdmaPort(1, "ACTIVE", "LinkUp", Unknown("-"), Unknown("-"), "Ethernet", (), Unknown("-"))
        devices = tuple(
            RdmaDevice(dev, (netdev,), None, Unknown("-"), Unknown("-"), (port,)) for dev, netdev, _ in SPARK_I2N
        )
        return NodeFacts(
            node=node, hostname=node, netdevs=netdevs, rdma=devices if rdma else (), rdma_absent_reason=None if rdma
            else "no RDMA devices (rdma_rxe not loaded)", pci=(), ports=group_ports([(n, None) for n in names]),
            management="enP7s7", fabric=tuple(names), gpus=Unknown("none"), nccl_version=Unknown("none"), tools=(),
        )  # fmt: skip

    nodes = {"s1": facts("s1", True), "s2": facts("s2", True), "s3": facts("s3", False)}
    text = ibdev2netdev(Discovery(nodes, build_map(nodes, set(), "probe")))
    mapping, skipped = _i2n(text)
    assert mapping == SPARK_I2N * 2
    assert skipped == [(1, "# s1"), (6, "# s2"), (11, "# s3"), (12, "# no RDMA devices (rdma_rxe not loaded)")]
    one = ibdev2netdev(Discovery({"s1": nodes["s1"]}, build_map({"s1": nodes["s1"]}, set(), "probe")))
    assert _i2n(one) == (SPARK_I2N, [])


def test_import_cli_warns_of_the_skipped_lines_and_json_carries_them(tmp_path: Path) -> None:
    paste = tmp_path / "spark1.txt"
    paste.write_text("$ ibdev2netdev\n" + IBDEV.replace("(Up)", "(Up)  # CX-7 1/8 infiniband") + "thanks!\n")
    warnings = [
        f"wirespeed: warning: {paste}: line 1 skipped (no mapping in it): $ ibdev2netdev",
        f"wirespeed: warning: {paste}: line 6 skipped (no mapping in it): thanks!",
    ]
    run = run_cli("import", str(paste))
    assert run.status == 0 and run.stderr.splitlines() == warnings
    assert f"{paste}: ibdev2netdev (text)" in run.stdout
    assert all(netdev in run.stdout for _, netdev, _ in SPARK_I2N)
    run = run_cli("import", "--json", str(paste), str(SAMPLES["ibdev2netdev"]))
    assert run.status == 0 and run.stderr.splitlines() == warnings
    first, second = (json.loads(line) for line in run.stdout.splitlines())
    assert first["skipped_lines"] == [{"line": 1, "text": "$ ibdev2netdev"}, {"line": 6, "text": "thanks!"}]
    assert [d["netdev"] for d in first["devices"]] == [netdev for _, netdev, _ in SPARK_I2N]
    assert second["skipped_lines"] == [] and second["devices"] == first["devices"]


def test_import_cli_counts_what_it_does_not_list_and_refuses_a_file_without_mappings(tmp_path: Path) -> None:
    chatty = tmp_path / "chatty.txt"
    chatty.write_text("".join(f"note {n}: {'x' * 100}\n" for n in range(1, 8)) + IBDEV)
    run = run_cli("import", str(chatty))
    lines = run.stderr.splitlines()
    assert run.status == 0 and len(lines) == 6
    assert lines[0] == f"wirespeed: warning: {chatty}: line 1 skipped (no mapping in it): note 1: {'x' * 69}..."
    assert lines[-1] == f"wirespeed: warning: {chatty}: 2 more lines skipped (--json lists them all)"
    notes = tmp_path / "notes.txt"
    notes.write_text("$ ibdev2netdev\n# rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\n")
    run = run_cli("import", "--json", str(notes))
    assert run.status == 1 and run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith(f"wirespeed: {notes}: line 2: no line holds an ibdev2netdev mapping") and "(hint: " in line
