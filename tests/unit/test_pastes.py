"""What owners paste: every real example in tests/fixtures/real (nccl_info, kernel_log, lspci, ip_addr, ip_brief,
ethtool_link, ethtool_fec, nvidia_smi_topo, pastes; sources in each folder's README) is told apart by its content,
read into the values a person reads in it, and names the lines it skipped; a forum-style paste (prompts, several
outputs, CRLF, `...`, notes) is split and read; `check --pastes` runs the checks the pasted facts allow and says in one
line per check which had nothing to read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.imports import importer, pastes
from wirespeed.core.parsers import (
    dmesg,
    ethtool_fec,
    ethtool_settings,
    ip_addr,
    ip_brief,
    kernel_log,
    lspci,
    nccl_info,
    nvidia_topo,
    paste,
)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SPARK_HEAD = REAL / "nccl_info" / "spark_2node_roce_all_gather_v2.28.9_init_head.txt"
SPARK_TAIL = REAL / "nccl_info" / "spark_2node_roce_all_gather_v2.28.9_gid_gdr_tail.txt"
SOCKET_LOG = REAL / "nccl_tests_device" / "sendrecv_2nodes_1gpu_h100_socket_4halves_2gbit.txt"
DUMP = REAL / "pastes" / "spark_diag_dump_gpu_topo_ip_br_lspci.txt"
JOURNAL = REAL / "kernel_log" / "spark_journalctl_k_hotplug_cable_removal_annotated.txt"
CX7_LSPCI = REAL / "lspci" / "cx7_vv_pf_downgraded_x8_and_vf.txt"


def _read(path: Path) -> str:
    return path.read_text()


# ------------------------------------------------------------------------------------------ told apart by content

KIND_OF_FOLDER = {
    "nccl_info": "nccl-info",
    "kernel_log": "kernel-log",
    "lspci": "lspci",
    "ip_addr": "ip-addr",
    "ip_brief": "ip-brief",
    "ethtool_link": "ethtool",
    "ethtool_fec": "ethtool-fec",
    "nvidia_smi_topo": "nvidia-smi-topo",
}
EXAMPLES = sorted(p for folder in KIND_OF_FOLDER for p in (REAL / folder).glob("*.txt"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[f"{p.parent.name}/{p.stem}" for p in EXAMPLES])
def test_each_real_paste_is_told_apart_by_its_content(path: Path) -> None:
    readings, _ = pastes.read_text(_read(path), path.name)
    kinds = {r.kind for r in readings if r.kind}
    assert kinds == {KIND_OF_FOLDER[path.parent.name]}


@pytest.mark.parametrize("path", EXAMPLES, ids=[f"{p.parent.name}/{p.stem}" for p in EXAMPLES])
def test_each_real_paste_imports_as_its_kind_or_as_a_paste(path: Path) -> None:
    obj = importer.import_text(_read(path), path.name).to_json()
    kind = KIND_OF_FOLDER[path.parent.name]
    if obj["tool"] == "paste":
        assert {s["kind"] for s in obj["sections"]} == {kind}
    elif path.parent.name == "nccl_info" and obj["tool"] == "nccl-tests":
        assert obj["transport"] in ("NET/IB", None)  # nccl-tests with INFO lines stays nccl-tests
    else:
        assert obj["tool"] == kind
    assert json.loads(json.dumps(obj, allow_nan=False)) == obj


def test_the_other_real_outputs_are_no_paste_kind() -> None:
    """Outputs of the tools `import` already reads are never taken for a pasted kind (no false detection)."""
    for folder in ("iperf3", "perftest", "sockperf", "rdma_tools", "ethtool", "ldd"):
        for path in (REAL / folder).glob("*.txt"):
            assert pastes.detect(_read(path)) in (None, "nccl-info"), path


# ----------------------------------------------------------------------------------------------------- the splitter


def test_a_paste_splits_at_prompts_and_names_prompts_passwords_and_commands() -> None:
    split = paste.split(_read(REAL / "ethtool_fec" / "spark_show_fec_rs_switch_sudo_prompt.txt"))
    assert [(s.command, s.host, s.first_line) for s in split.sections] == [
        (None, None, 1),
        ("sudo ethtool --show-fec enp1s0f1np1", "spark-fb97", 4),
    ]
    whys = {s.line: s.why for s in split.skipped}
    assert whys == {2: paste.PROMPT, 3: paste.PASSWORD, 7: paste.PROMPT}


def test_a_command_continued_with_backslashes_is_one_command() -> None:
    split = paste.split(_read(SPARK_HEAD))
    first = split.sections[0]
    assert first.command is not None and first.command.startswith("DISPLAY= mpirun -np 2 -H 192.168.100.15:1")
    assert first.command.endswith("./build/all_gather_perf -b 1G -e 1G -f 2 -n 1 -w 1 -g 1")
    assert [s.line for s in split.skipped if s.why == paste.COMMAND] == list(range(2, 11))
    assert first.first_line == 11


def test_crlf_fences_and_elisions_are_read_past_and_named() -> None:
    text = _read(JOURNAL).replace("\n", "\r\n")
    readings, between = pastes.read_text(text, "j.txt")
    (reading,) = [r for r in readings if r.kind]
    assert reading.kind == "kernel-log" and len(reading.parsed.lines) == 8
    named = {(s.line, s.why) for s in between}
    assert {(2, paste.FENCE), (6, paste.FENCE), (12, paste.ELIDED), (16, paste.FENCE)} <= named
    assert (4, "not part of the dmesg / journalctl -k output") in {(s.line, s.why) for s in reading.skipped}


def test_the_diag_dump_is_several_outputs_each_read_or_named() -> None:
    readings, between = pastes.read_text(_read(DUMP), DUMP.name)
    assert [(r.first_line, r.kind) for r in readings if r.kind] == [
        (29, "nvidia-smi-topo"),
        (60, "ip-brief"),
        (70, "ip-brief"),
    ]
    unread = {s.line for r in readings if r.kind is None for s in r.skipped}
    assert {1, 3, 26, 55, 58, 80, 84} <= unread  # heading, nvidia-smi's table, -L, nvcc, heading, plain lspci
    assert {s.line for s in between if s.why == paste.PROMPT} == {2, 25, 28, 54, 59, 69, 79}


# ------------------------------------------------------------------------------------------------------- the parsers


def test_nccl_info_reads_the_spark_log_per_host() -> None:
    log = nccl_info.parse(_read(SPARK_HEAD))
    hosts = {h.host: h for h in log.hosts}
    assert set(hosts) == {"spark-fb97", "spark-4440"}
    fb97 = hosts["spark-fb97"]
    assert fb97.version == "2.28.9+cuda13.0"
    assert fb97.environment == {"NCCL_SOCKET_IFNAME": "enp1s0f1np1"}
    assert fb97.network == "IB" and fb97.transport == "NET/IB"
    assert fb97.hcas == ["rocep1s0f1:1/RoCE", "roceP2p1s0f1:1/RoCE"]
    assert fb97.oob == "enp1s0f1np1:192.168.100.15"
    assert fb97.gdr_by_hca == {"rocep1s0f1": False, "roceP2p1s0f1": False} and fb97.gdr is False
    assert fb97.channels == 16 and (fb97.ranks, fb97.nodes) == (2, 2)


def test_nccl_info_decodes_the_gid_each_hca_used() -> None:
    hosts = {h.host: h for h in nccl_info.parse(_read(SPARK_TAIL)).hosts}
    gids = {(g.device, g.index, g.address, g.mtu_bytes) for g in hosts["spark-4440"].gids}
    assert gids == {("IbDev 0", 3, "192.168.100.16", 1024), ("IbDev 1", 0, "fe80::4ebb:47ff:fe2f:4446", 1024)}
    assert hosts["spark-fb97"].ring_gdr is False and hosts["spark-fb97"].rings_connected


def test_nccl_info_names_gids_from_the_other_part_of_the_same_log() -> None:
    built = pastes.build_facts(
        [*pastes.read_text(_read(SPARK_HEAD), "h")[0], *pastes.read_text(_read(SPARK_TAIL), "t")[0]], "x"
    )
    gids = {(g.device, g.index) for h in built.nccl["spark-fb97"] for g in h.gids}
    assert gids == {("rocep1s0f1", 3), ("roceP2p1s0f1", 0)}


def test_nccl_info_reads_gdrdma_channels_and_the_socket_transport() -> None:
    (host,) = nccl_info.parse(_read(REAL / "nccl_info" / "sglang_2node_16gpu_v2.27.5_gdrdma_channels.txt")).hosts
    assert host.via_gdrdma and host.gdr is True and host.transport == "NET/IB"
    assert host.via["NET/IB"] == 22 and host.via["P2P/IPC"] == 2
    (env,) = nccl_info.parse(_read(REAL / "nccl_info" / "sglang_2node_16gpu_v2.27.5_env_head.txt")).hosts
    assert env.environment == {"NCCL_SOCKET_IFNAME": "enp25s0np0"} and env.oob == "enp25s0np0:10.99.91.63"
    socket = {h.host: h for h in nccl_info.parse(_read(SOCKET_LOG)).hosts}["wgn-1"]
    assert socket.transport == "NET/Socket"
    assert socket.socket_interfaces[0] == "enp1s0f0np0:198.19.0.1"


def test_kernel_logs_keep_their_stamps_and_drop_the_notes() -> None:
    log = dmesg.parse(_read(REAL / "kernel_log" / "spark_dmesg_grep_power_hotplug_elided.txt"))
    assert [round(k.seconds or 0, 6) for k in log.lines] == [0.103426, 1.150104, 1.533198, 5.309621, 5.406738]
    assert kernel_log.kind_of(log.lines[2].text) == kernel_log.POWER
    annotated = dmesg.parse(_read(JOURNAL))
    assert annotated.lines[0].clock == "11:33:11" and "←" not in "".join(k.text for k in annotated.lines)
    assert annotated.lines[5].text == "cx7-pcie-hotplug MTKP0001:00: Cable removal"
    assert [k.seconds for k in dmesg.parse(_read(REAL / "kernel_log" / "cx7_vf_iommu_warn_elided.txt")).lines][
        -1
    ] == 31.889846


def test_lspci_reads_the_link_and_its_downgrade() -> None:
    pf, vf = lspci.parse(_read(CX7_LSPCI)).devices
    assert (pf.bdf, pf.cap_speed_gts, pf.cap_width, pf.sta_speed_gts, pf.sta_width) == (
        "0000:b1:00.1",
        32.0,
        16,
        16.0,
        8,
    )
    assert pf.downgraded and pf.numa_node == 1 and pf.driver == "mlx5_core" and pf.slot_power_w == 75.0
    assert (vf.sta_speed_gts, vf.sta_width, vf.driver) == (None, 0, "mlx5_vfio_pci")
    reading = pastes.read_text(_read(REAL / "lspci" / "spark_lspci_vvv_grep_lnk_prompt.txt"), "l")[0][0]
    (device,) = reading.parsed.devices
    assert (device.bdf, device.sta_speed_gts, device.sta_width, device.downgraded) == ("0000:01:00.0", 32.0, 4, False)


def test_ip_addr_reads_interfaces_and_names_a_bold_address() -> None:
    first, second = ip_addr.parse(_read(REAL / "ip_addr" / "grace_hopper_ip_address_show_dev_prompt.txt")).interfaces
    assert (first.name, first.mtu, first.carrier, first.ipv4) == ("enp1s0f0np0", 9000, True, ["192.168.202.201/24"])
    assert second.mac == "a0:88:c2:d5:84:b3" and second.ipv6 == ["fe80::a288:c2ff:fed5:84b3/64"]
    (reading,) = [
        r
        for r in pastes.read_text(_read(REAL / "ip_addr" / "spark_playbook_ip_addr_show_markdown_bold.txt"), "p")[0]
        if r.kind
    ]
    (iface,) = reading.parsed.interfaces
    assert iface.ipv4 == [] and reading.host == "dgx-spark-1"
    assert [s.text.split()[1] for s in reading.skipped] == ["**169.254.35.62**/16"]


def test_ip_brief_reads_addresses_and_flags() -> None:
    rows = {i.name: i for i in ip_brief.parse(_read(DUMP)).interfaces}
    assert rows["enP2p1s0f1np1"].ipv4 == () and rows["enP2p1s0f1np1"].carrier is True
    assert (
        rows["enp1s0f0np0"].flags == ("NO-CARRIER", "BROADCAST", "MULTICAST", "UP") and not rows["enp1s0f0np0"].carrier
    )
    assert rows["enp1s0f1np1"].ipv4 == ("169.254.127.30/16",) and rows["enp1s0f1np1"].mac == "4c:bb:47:2f:91:13"


def test_ethtool_reads_speed_and_link_and_takes_the_interface_from_the_command() -> None:
    (down,) = ethtool_settings.parse(
        _read(REAL / "ethtool_link" / "mlx5_cx4lx_link_training_failure_root_prompt.txt")
    ).links
    assert (down.name, down.speed_mbps, down.link_detected) == ("nic_pve02_stor", None, False)
    assert down.link_detail == "Link training failure, Remote side is not ready yet"
    (bond,) = ethtool_settings.parse(_read(REAL / "ethtool_link" / "bond0_200g_root_prompt.txt")).links
    assert (bond.speed_mbps, bond.link_detected) == (200000, True)
    readings, _ = pastes.read_text(_read(REAL / "ethtool_link" / "spark_switch_speed_grep_100g.txt"), "s")
    assert [(link.name, link.speed_mbps) for r in readings for link in r.parsed.links] == [
        ("enp1s0f1np1", 100000),
        ("enP2p1s0f1np1", 100000),
    ]
    up_then_ping = pastes.read_text(_read(REAL / "ethtool_link" / "mlx5_cx4lx_10g_up_then_ping.txt"), "u")[0]
    assert [r.kind for r in up_then_ping] == ["ethtool", None]  # the ping's output after the next prompt: named


def test_ethtool_fec_reads_modes_and_lane_statistics() -> None:
    (rs,) = ethtool_fec.parse(_read(REAL / "ethtool_fec" / "spark_show_fec_rs_switch_sudo_prompt.txt")).settings
    assert (rs.name, rs.configured, rs.active) == ("enp1s0f1np1", ("Auto",), ("RS",))
    (none,) = ethtool_fec.parse(_read(REAL / "ethtool_fec" / "spark_show_fec_none_direct_cable.txt")).settings
    assert none.active == ("None",)
    (eth0,) = ethtool_fec.parse(_read(REAL / "ethtool_fec" / "netdev_show_fec_stats_lanes_eth0.txt")).settings
    assert eth0.statistics == {"corrected_blocks": 256, "uncorrectable_blocks": 145}
    assert eth0.lanes["uncorrectable_blocks"] == {0: 128, 1: 17}


def test_nvidia_topo_reads_the_matrix_and_the_nic_legend() -> None:
    spark = nvidia_topo.parse(_read(REAL / "nvidia_smi_topo" / "spark_gb10_topo_m_dollar_prompt.txt")).topology
    assert spark.gpus == ("GPU0",) and spark.nics["NIC3"] == "roceP2p1s0f1"
    assert spark.links["NIC0"]["NIC1"] == "PIX" and spark.cpu_affinity == {"GPU0": "0-19"}
    spaces = nvidia_topo.parse(_read(REAL / "nvidia_smi_topo" / "sglang_env_h100_one_gpu_one_nic.txt")).topology
    assert spaces.links["GPU0"]["NIC0"] == "PHB" and spaces.nics == {"NIC0": "mlx5_0"}
    assert spaces.cpu_affinity == {"GPU0": "0-251"} and spaces.numa_affinity == {"GPU0": "0"}


# ------------------------------------------------------------------------------------------- facts and the checks


def test_the_dump_builds_a_spark_node_with_ports_and_rdma_devices() -> None:
    built = pastes.build_facts(pastes.read_text(_read(DUMP), DUMP.name)[0], "pasted")
    facts = built.facts["pasted"]
    assert facts.fabric == ("enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0", "enP2p1s0f1np1")
    assert [p.halves for p in facts.ports] == [("enp1s0f0np0", "enP2p1s0f0np0"), ("enp1s0f1np1", "enP2p1s0f1np1")]
    assert {d.name: d.netdevs for d in facts.rdma}["roceP2p1s0f1"] == ("enP2p1s0f1np1",)
    assert not isinstance(facts.netdev("enP7s7"), type(None)) and "enP7s7" not in facts.fabric
    plan = pastes.plan_checks(["link.halves", "mtu.host", "ssh.mesh"], built.areas)
    assert plan.runnable == (("link.halves", ("pasted",)),)
    assert dict(plan.nothing_to_read) == {"mtu.host": "mtu (ip addr)", "ssh.mesh": pastes.NO_PASTE}


def _check(args: list[str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    status = main(["check", *args], Environment(stdout=stdout, stderr=stderr, width=200))
    return status, stdout.getvalue(), stderr.getvalue()


def test_check_pastes_fails_the_unaddressed_half_and_says_what_had_nothing_to_read() -> None:
    status, out, err = _check(["--pastes", str(DUMP)])
    assert status == 1
    assert "link.halves" in out and "enP2p1s0f1np1" in out
    assert "nothing to read: mtu.host (needs mtu (ip addr))" in out
    assert "nothing to read: ssh.mesh (needs a live node or a snapshot" in out
    assert (
        f"{DUMP}:29: nvidia-smi topo -m" in err and f"{DUMP}:1: skipped (no output wirespeed reads): === GPU ===" in err
    )


def test_check_pastes_reads_several_files_and_runs_each_check_on_the_nodes_it_can() -> None:
    files = [SPARK_HEAD, SPARK_TAIL, CX7_LSPCI, REAL / "kernel_log" / "spark_dmesg_grep_power_hotplug_elided.txt"]
    status, out, _ = _check(["--json", "--pastes", *map(str, files)])
    data = json.loads(out)
    results = {r["id"]: r for r in data["results"]}
    assert status == 1 and results["pcie.width"]["status"] == "fail"
    assert results["nccl.env"]["status"] == "pass" and results["nic.reprobe"]["status"] == "pass"
    assert {n["check"] for n in data["nothing_to_read"]} >= {"link.halves", "mtu.host", "ssh.mesh"}
    assert {s["why"] for s in data["skipped_lines"][str(SPARK_HEAD)]} >= {"prompt", "command line"}
    nccl = [p for p in data["pastes"] if p["kind"] == "nccl-info"]
    assert nccl and {h["host"] for p in nccl for h in p["hosts"]} == {"spark-fb97", "spark-4440"}


def test_check_pastes_refuses_files_without_any_known_output(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("$ uptime\n 10:00:00 up 3 days\n")
    status, _, err = _check(["--pastes", str(other)])
    assert status != 0 and "nothing in the pastes that wirespeed reads" in err


# ------------------------------------------------------------------------------------------------- never crashes

_LINES = st.lists(
    st.one_of(
        st.sampled_from([ln for p in EXAMPLES[:12] for ln in p.read_text().splitlines()[:12]]),
        st.text(max_size=40),
        st.sampled_from(["$ ", "...", "```", "root@h:~# ethtool x \\", "\r", "NIC Legend:", "Settings for :"]),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_LINES)
def test_any_mix_of_pasted_lines_is_read_or_named_never_a_crash(lines: list[str]) -> None:
    text = "\n".join(lines)
    readings, between = pastes.read_text(text, "f.txt")
    pastes.build_facts(readings, "pasted")
    numbers = {s.line for s in between} | {s.line for r in readings for s in r.skipped}
    assert all(0 < n <= max(1, len(paste.normalise(text).split("\n"))) for n in numbers)
