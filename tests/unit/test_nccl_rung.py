"""The NCCL rung's plan (environment, hosts, size cap, mpirun argv) and its reading and diagnosis, on the Spark
snapshot fixtures and a real nccl-tests run (two H200s, socket transport forced)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from wirespeed.core.errors import UsageError
from wirespeed.core.fabric.discovery import Discovery
from wirespeed.core.fabric.facts import Gpu, Unknown
from wirespeed.core.fabric.units import parse_size_bytes
from wirespeed.core.ladder import diagnose_collective
from wirespeed.core.nccl import (
    NcclOptions,
    NcclPlan,
    NodeMemory,
    mpirun_argv,
    node_memory,
    plan_nccl,
    read_run,
    size_cap,
    stored_json,
)
from wirespeed.core.parsers.sysfs_values import nvidia_smi_csv
from wirespeed.core.records.results import (
    CollectiveSummary,
    Direction,
    NotRunnable,
    RungResult,
    RungStatus,
    SizeFigures,
    WireFigures,
)
from wirespeed.core.tools.nccl_tests import supports_json_output
from wirespeed.engine.discover import discover_snapshots

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"


def json_rows(text: str) -> list[dict[str, Any]]:
    """The out-of-place figures of nccl-tests' JSON, as written (the oracle for a rung's rows)."""
    return [
        {"size_bytes": int(r["size"]), "busbw_GBps": r["out_of_place"]["bus_bw"]}
        for r in json.loads(text).get("results", [])
        if isinstance(r, dict) and isinstance(r.get("out_of_place"), dict)
    ]


REAL = Path(__file__).parent.parent / "fixtures" / "real" / "nccl_tests_device"
SOCKET_TEXT = REAL / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.txt"
SOCKET_JSON = REAL / "sendrecv_1node_2gpu_h200_socket_lo_v2.19.6.nccl-tests.json"
GIB = 2**30


@pytest.fixture(scope="module")
def sparks() -> Discovery:
    return discover_snapshots([SNAPSHOTS / "spark-two-cables"])


def test_two_sparks_every_linked_half_in_nccl_ib_hca_and_subnets_for_openmpi(sparks: Discovery) -> None:
    plan = plan_nccl(sparks.facts, sparks.cabling, "all_gather", NcclOptions())
    assert isinstance(plan, NcclPlan)
    env = dict(plan.env)
    assert env["NCCL_IB_HCA"] == "=roceP2p1s0f0:1,roceP2p1s0f1:1,rocep1s0f0:1,rocep1s0f1:1"
    assert env["NCCL_SOCKET_IFNAME"] == "=enP2p1s0f0np0,enP2p1s0f1np1,enp1s0f0np0,enp1s0f1np1"
    assert env["NCCL_DEBUG"] == "INFO"
    mca = dict(plan.mca)
    assert mca["btl_tcp_if_include"] == mca["oob_tcp_if_include"]
    assert len(mca["btl_tcp_if_include"].split(",")) == 4  # one subnet per half
    assert plan.ranks == 2 and [n for _, n in plan.hosts] == [1, 1]
    assert plan.binary == "/home/user/nccl-tests/build/all_gather_perf"
    assert plan.line_rate_gbps == pytest.approx(4 * 100.0)  # four halves at 100 Gb/s each (link speed)
    addresses = [h for h, _ in plan.hosts]
    assert all(a.count(".") == 3 and "/" not in a for a in addresses) and len(set(addresses)) == 2


def test_user_env_wins_and_a_bare_name_passes_the_launchers_value(sparks: Discovery) -> None:
    options = NcclOptions(env=(("NCCL_IB_HCA", "=rocep1s0f0:1"), ("LD_LIBRARY_PATH", None)))
    plan = plan_nccl(sparks.facts, sparks.cabling, "sendrecv", options)
    assert isinstance(plan, NcclPlan)
    argv = mpirun_argv(plan, options, "/tmp/x.json", as_root=True)
    assert argv[:2] == ["mpirun", "--allow-run-as-root"]
    assert "NCCL_IB_HCA==rocep1s0f0:1" in argv and "LD_LIBRARY_PATH" in argv
    assert argv[argv.index("-H") + 1].count(":1") == 2
    tail = argv[argv.index(plan.binary) :]
    sizes = ["-b", "1048576", "-e", str(GIB), "-f", "2", "-g", "1"]
    assert tail == [plan.binary, *sizes, "-n", "20", "-w", "5", "-J", "/tmp/x.json"]
    assert "--allow-run-as-root" not in mpirun_argv(plan, options, None)


def test_missing_prerequisites_say_why_and_how_to_fix(sparks: Discovery) -> None:
    no_binary = plan_nccl(sparks.facts, sparks.cabling, "hypercube", NcclOptions())
    assert isinstance(no_binary, NotRunnable) and "hypercube_perf not found" in no_binary.reason
    assert "MPI=1" in no_binary.fix
    facts = dict(sparks.facts)
    facts["spark-2"] = replace(facts["spark-2"], gpus=())
    no_gpu = plan_nccl(facts, sparks.cabling, "sendrecv", NcclOptions())
    assert isinstance(no_gpu, NotRunnable) and no_gpu.reason == "spark-2 has no GPU"
    tools = tuple(
        replace(t, path="/opt/x/sendrecv_perf") if t.name == "sendrecv_perf" else t for t in facts["spark-1"].tools
    )
    facts = dict(sparks.facts)
    facts["spark-1"] = replace(facts["spark-1"], tools=tools)
    moved = plan_nccl(facts, sparks.cabling, "sendrecv", NcclOptions())
    assert isinstance(moved, NotRunnable) and "different paths" in moved.reason


def test_one_rank_in_all_is_not_run(sparks: Discovery) -> None:
    """Seen on a one-GPU machine: sendrecv to itself printed 1191.67 GB/s busbw, all_reduce 0, both "NET/Socket"."""
    one = {"spark-1": sparks.facts["spark-1"]}
    alone = plan_nccl(one, sparks.cabling, "sendrecv", NcclOptions())
    assert isinstance(alone, NotRunnable) and "one rank" in alone.reason and "crosses no network" in alone.reason
    assert "two or more nodes" in alone.fix


def test_message_size_capped_from_unified_memory_shared_by_the_ranks(sparks: Discovery) -> None:
    # GB10: nvidia-smi cannot say (unified memory), MemAvailable 100 GiB -> 12.5 GiB per 1/8 -> 8 GiB
    memory = {"spark-1": NodeMemory((None,), 100 * GIB), "spark-2": NodeMemory((None,), 40 * GIB)}
    plan = plan_nccl(sparks.facts, sparks.cabling, "all_gather", NcclOptions(max_bytes=16 * GIB), memory)
    assert isinstance(plan, NcclPlan)
    assert plan.max_bytes == 4 * GIB  # spark-2: 40 GiB / 8 = 5 GiB -> 4 GiB
    assert plan.capped is not None and "spark-2: 40.0 GiB free per rank" in plan.capped
    roomy = plan_nccl(sparks.facts, sparks.cabling, "all_gather", NcclOptions(max_bytes=GIB), memory)
    assert isinstance(roomy, NcclPlan) and roomy.max_bytes == GIB and roomy.capped is None


def test_size_cap_discrete_gpus_use_their_own_free_memory() -> None:
    memory = {"h": NodeMemory((143156 * 2**20, 10 * GIB), 250 * GIB)}
    assert size_cap(memory, {"h": 2}) == (GIB, "h: 10.0 GiB free per rank")
    assert size_cap({"u": NodeMemory((None, None), 64 * GIB)}, {"u": 2}) == (4 * GIB, "u: 32.0 GiB free per rank")
    assert size_cap({"x": NodeMemory((), None)}, {"x": 1}) is None


def test_free_memory_comes_from_discovery(sparks: Discovery) -> None:
    """nvidia-smi's memory.free column (`[N/A]` on GB10's unified memory) and MemAvailable, read by discovery:
    the NCCL plan runs no command of its own."""
    real = "NVIDIA H100 80GB HBM3, 9.0, 580.159.04, 81079 MiB\n"  # the device machine, 2026-11-26
    rows = nvidia_smi_csv(real + "NVIDIA GB10, 12.1, 580.95.05, [N/A]\n")
    assert [(r.memory_free_mib, r.memory_read) for r in rows] == [(81079, True), (None, True)]
    assert nvidia_smi_csv("NVIDIA GB10, 12.1, 580.95.05\n")[0].memory_read is False  # an older snapshot's answer
    base = next(iter(sparks.facts.values()))
    gpus = (Gpu("NVIDIA H200", "9.0", "570", 143156), Gpu("NVIDIA H200", "9.0", "570", None))
    facts = replace(base, gpus=gpus, mem_available_kb=262970136)
    assert node_memory(facts) == NodeMemory((143156 * 2**20, None), 262970136 * 1024)
    assert node_memory(replace(base, gpus=Unknown("no nvidia-smi"), mem_available_kb=Unknown("x"))) == NodeMemory(
        (), None
    )


def test_sizes_are_binary_like_nccl_tests() -> None:
    assert parse_size_bytes("1M") == 2**20
    assert parse_size_bytes("8G") == 8 * GIB
    assert parse_size_bytes("64MiB") == 64 * 2**20
    assert parse_size_bytes("4096") == 4096
    for bad in ("", "1.5G", "-1M", "0", "1Q"):
        with pytest.raises(UsageError):
            parse_size_bytes(bad)


def test_real_socket_run_busbw_is_nccl_tests_own_json_and_the_transport_comes_from_info_lines() -> None:
    stdout = SOCKET_TEXT.read_text()
    written = SOCKET_JSON.read_text()
    reading = read_run("sendrecv", stdout, written)
    summary = reading.summary
    assert summary is not None and reading.error is None
    assert summary.source == "json"
    assert summary.transport == "NET/Socket" and summary.socket_interfaces == ("lo",) and summary.ib_devices == ()
    assert summary.ranks == 2
    assert [(r.size_bytes, r.busbw_GBps) for r in summary.rows] == [
        (r["size_bytes"], r["busbw_GBps"]) for r in json_rows(written)
    ]
    assert summary.avg_busbw_GBps == pytest.approx(2.929506)
    assert summary.peak is not None and summary.peak.size_bytes == 16777216 and summary.peak.busbw_GBps == 3.160632
    # without the JSON, the text table gives the same rows to its printed precision
    from_text = read_run("sendrecv", stdout, None).summary
    assert from_text is not None and from_text.source == "text"
    assert [round(r.busbw_GBps, 2) for r in from_text.rows] == [round(r.busbw_GBps, 2) for r in summary.rows]
    assert from_text.avg_busbw_GBps == pytest.approx(2.92951)


def test_a_cut_json_falls_back_to_the_table_with_a_note() -> None:
    stdout = SOCKET_TEXT.read_text()
    reading = read_run("sendrecv", stdout, SOCKET_JSON.read_text()[:500])
    assert reading.summary is not None and reading.summary.source == "text"
    assert reading.notes and "JSON unreadable" in reading.notes[0]


def test_a_run_that_printed_no_rows_fails_with_its_own_words() -> None:
    stdout = "# nccl-tests version 2.19.6\nhost: Test NCCL failure common.cu:1234 'unhandled system error'\n"
    reading = read_run("all_reduce", stdout, None)
    assert reading.summary is None and reading.error is not None and "NCCL failure" in reading.error


def test_stored_json_keeps_no_credentials() -> None:
    data = json.loads(SOCKET_JSON.read_text())
    data["env"] += ["AWS_SECRET_ACCESS_KEY=abc", "GITHUB_TOKEN=def", "HOME=/root"]
    kept = json.loads(stored_json(json.dumps(data)))
    assert "NCCL_SOCKET_IFNAME=lo" in kept["env"]
    assert not any("SECRET" in e or "TOKEN" in e or e.startswith("HOME=") for e in kept["env"])
    assert kept["results"] == data["results"]


def test_json_output_is_seen_in_the_usage() -> None:
    assert supports_json_output("[-J,--output_file <file>] \n")
    assert not supports_json_output("[-G,--cudagraph <num graph launches>]\n")


def _rung(transport: str, busbw: float, **summary: object) -> RungResult:
    collective = CollectiveSummary(
        "all_gather",
        2,
        (SizeFigures(2**30, busbw, busbw, 1.0),),
        busbw,
        transport,
        True,
        **summary,  # type: ignore[arg-type]
    )
    wire = WireFigures(busiest_core={"spark-1": (3, 12.0)})
    return RungResult("nccl-all_gather", RungStatus.RAN, wire=wire, collective=collective)


def test_diagnosis_socket_with_rdma_linked_is_fallback_naming_the_devices() -> None:
    rung = _rung("NET/Socket", 2.5, socket_interfaces=("enP7s7",))
    ceiling = diagnose_collective(rung, ["rocep1s0f1:1"], ["enp1s0f1np1"], 200.0)
    assert ceiling.name == "fallback"
    assert "NET/Socket on enP7s7" in ceiling.evidence[0]
    assert "rocep1s0f1:1 are linked but NCCL did not use them" in ceiling.evidence[1]
    assert "enP7s7 is not a fabric interface" in ceiling.evidence[2]


def test_diagnosis_ib_on_one_of_two_halves_is_half_port() -> None:
    rung = _rung("NET/IB", 11.5, ib_devices=("rocep1s0f1:1/RoCE",))
    ceiling = diagnose_collective(rung, ["roceP2p1s0f1:1", "rocep1s0f1:1"], [], 200.0)
    assert ceiling.name == "half-port" and "not roceP2p1s0f1:1" in ceiling.evidence[0]


def test_diagnosis_ib_at_the_wire_and_below_it() -> None:
    devices = ("rocep1s0f1:1/RoCE", "roceP2p1s0f1:1/RoCE")
    at_wire = _rung("NET/IB", 23.0, ib_devices=devices)  # 184 Gb/s of 200
    assert diagnose_collective(at_wire, ["roceP2p1s0f1:1", "rocep1s0f1:1"], [], 200.0).name == "wire"
    below = _rung("NET/IB", 12.0, ib_devices=devices)
    ceiling = diagnose_collective(below, ["roceP2p1s0f1:1", "rocep1s0f1:1"], [], 200.0)
    assert ceiling.name == "unknown" and "of 200 Gb/s" in ceiling.evidence[0]
    lossy = replace(at_wire, wire=WireFigures(errors={("spark-2", "enp1s0f1np1"): {"rx_discards_phy": 7}}))
    assert diagnose_collective(lossy, [], [], 200.0).name == "loss"


def test_full_duplex_is_twice_the_busbw_per_direction() -> None:
    rung = _rung("NET/IB", 20.0)
    assert rung.total_gbps(Direction.FORWARD) == pytest.approx(160.0) == rung.forward_gbps
    assert rung.reverse_gbps == pytest.approx(160.0)
    assert rung.duplex_gbps == pytest.approx(320.0)
    data = rung.to_json()
    assert data["collective"]["peak_busbw_GBps"] == 20.0 and data["full_duplex_gbps"] == pytest.approx(320.0)


def test_a_ring_gets_subnet_aware_routing_and_old_nccl_is_called_out(sparks: Discovery) -> None:
    from wirespeed.core.nccl import ring_settings

    base = next(iter(sparks.facts.values()))
    versions = ("2.30.7", "2.28.9", "2.31.0")
    facts = {f"s{i}": replace(base, node=f"s{i}", nccl_version=v) for i, v in enumerate(versions)}
    env: dict[str, str | None] = {}
    notes = ring_settings(facts, sorted(facts), env)
    assert env == {"NCCL_IB_SUBNET_AWARE_ROUTING": "1", "NCCL_IB_MERGE_NICS": "0", "NCCL_NET_PLUGIN": "none"}
    assert notes[0].startswith("ring of 3: NCCL_IB_SUBNET_AWARE_ROUTING=1")
    assert notes[1].startswith("NCCL below 2.30.7 on s1 2.28.9: a ring needs NCCL >= 2.30.7")
    # NCCL reads the variable from 2.30.7 (tag v2.30.7-1); 2.30.3 and 2.30.4 do not have it
    early = {**facts, "s0": replace(base, node="s0", nccl_version="2.30.4+cuda13.0")}
    assert "NCCL below 2.30.7 on s0 2.30.4+cuda13.0, s1 2.28.9:" in ring_settings(early, sorted(early), {})[1]
    four = {**facts, "s3": replace(base, node="s3", nccl_version="2.30.7"), "s1": replace(base, nccl_version="2.30.7")}
    env = {}
    assert len(ring_settings(four, sorted(four), env)) == 1 and env["NCCL_ALGO"] == "Ring"
    # two nodes cabled directly: none of it
    plan = plan_nccl(sparks.facts, sparks.cabling, "all_gather", NcclOptions())
    assert isinstance(plan, NcclPlan) and "NCCL_IB_MERGE_NICS" not in dict(plan.env) and plan.notes == ()
    ring = replace(sparks.cabling, topology="ring")
    plan = plan_nccl(sparks.facts, ring, "all_gather", NcclOptions())
    assert isinstance(plan, NcclPlan) and plan.notes == ()  # a "ring" of two is a direct pair


def test_the_hostfile_names_each_node_with_its_gpus(sparks: Discovery) -> None:
    from wirespeed.core.nccl import hostfile

    plan = plan_nccl(sparks.facts, sparks.cabling, "all_gather", NcclOptions())
    assert isinstance(plan, NcclPlan)
    lines = hostfile(plan).splitlines()
    assert lines[0].startswith("# wirespeed") and lines[1:] == [f"{h} slots={n}" for h, n in plan.hosts]
    assert mpirun_argv(plan, NcclOptions(), None)[mpirun_argv(plan, NcclOptions(), None).index("-H") + 1] == ",".join(
        f"{h}:{n}" for h, n in plan.hosts
    )


HALVES = ("enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1")


def _socket_rung(busbw: float, per_half: dict[str, float], interfaces: tuple[str, ...] = HALVES) -> RungResult:
    """A socket rung across two nodes whose halves carried `per_half` Gb/s each way (averages over the rung)."""
    rung = _rung("NET/Socket", busbw, socket_interfaces=interfaces)
    tx = {(node, half): rate for node in ("gw-1", "gw-2") for half, rate in per_half.items()}
    steady = sum(per_half.values()) * 1.25  # the rung's average holds the launch; its steady part is higher
    wire = WireFigures(tx_gbps=tx, rx_gbps=dict(tx), steady_tx_gbps={"gw-1": steady, "gw-2": steady},
                       steady_intervals={"gw-1": 22, "gw-2": 21}, interval_s=0.5)  # fmt: skip
    return replace(rung, wire=wire)


def test_socket_ceiling_holds_busbw_against_what_each_node_sent_at_the_wire() -> None:
    rung = _socket_rung(0.99, dict.fromkeys(HALVES, 1.6))  # steady 8.0 Gb/s per node; busbw x 8 = 7.92
    ceiling = diagnose_collective(rung, [], list(HALVES), 40.0)
    assert ceiling.name == "fallback"
    sent = [line for line in ceiling.evidence if " sent " in line]
    assert sent == [
        "gw-1 sent 8.00 Gb/s at the wire while NCCL ran (fabric halves added, median of 22 intervals of 0.5 s at "
        "half its peak or more): 101% of busbw x 8",
        "gw-2 sent 8.00 Gb/s at the wire while NCCL ran (fabric halves added, median of 21 intervals of 0.5 s at "
        "half its peak or more): 101% of busbw x 8",
    ]
    assert not any("idle" in line for line in ceiling.evidence)


def test_socket_ceiling_names_the_half_left_out_of_nccl_socket_ifname() -> None:
    used = HALVES[:3]
    rung = _socket_rung(0.74, {**dict.fromkeys(used, 1.6), HALVES[3]: 0.001}, interfaces=used)
    ceiling = diagnose_collective(rung, [], list(HALVES), 40.0)
    idle = [line for line in ceiling.evidence if "idle" in line]
    assert len(idle) == 2  # one per node
    assert idle[0].startswith("gw-1 enP2p1s0f1np1 sat idle: 0.00 Gb/s (TX+RX, average over the rung) while ")
    assert "it is not among NCCL's socket interfaces (enp1s0f0np0, enP2p1s0f0np0, enp1s0f1np1)" in idle[0]
    listed = _socket_rung(0.74, {**dict.fromkeys(used, 1.6), HALVES[3]: 0.0})
    assert "NCCL listed it but sent nothing over it" in diagnose_collective(listed, [], list(HALVES), 40.0).evidence[-1]


def test_socket_ceiling_says_the_fabric_carried_nothing_when_nccl_took_the_management_interface() -> None:
    rung = _socket_rung(2.1, dict.fromkeys(HALVES, 0.002), interfaces=("enP7s7",))
    ceiling = diagnose_collective(rung, [], list(HALVES), 40.0)
    assert ceiling.name == "fallback"
    assert "enP7s7 is not a fabric interface" in ceiling.evidence[2]
    assert ceiling.evidence[3] == (
        "the fabric halves carried no traffic while NCCL ran (8 halves sampled): the traffic went over enP7s7"
    )
    assert not any(" sent " in line for line in ceiling.evidence)


def test_steady_rate_is_the_median_of_the_intervals_at_half_the_peak_or_more() -> None:
    from wirespeed.core.fabric.meter import steady_rate

    launch, sweep = [0.0, 0.0, 0.3], [3.9, 7.9, 8.0, 8.1, 7.8, 0.2, 8.0]
    assert steady_rate(launch + sweep) == (8.0, 5)  # 3.9 and below: the launch and the gaps between sizes
    assert steady_rate([6.0, 8.0, 7.0, 1.0]) == (7.0, 3) and steady_rate([6.0, 8.0]) == (7.0, 2)
    assert steady_rate([0.0, 0.0]) is None and steady_rate([]) is None
    assert steady_rate([5.0]) == (5.0, 1)


def test_wire_figures_keep_the_steady_rate_through_json() -> None:
    wire = _socket_rung(1.0, dict.fromkeys(HALVES, 1.6)).wire
    from wirespeed.core.records.decode import Fields

    again = WireFigures.from_json(Fields(json.loads(json.dumps(wire.to_json())), "wire"))
    assert again.steady_tx_gbps == wire.steady_tx_gbps and again.steady_intervals == {"gw-1": 22, "gw-2": 21}
    assert again.interval_s == 0.5
    assert WireFigures.from_json(Fields({"source": "phy"}, "old")).steady_tx_gbps == {}  # records before it


def test_the_cluster_files_nccl_env_goes_to_every_rank_and_env_on_the_command_line_wins(sparks: Discovery) -> None:
    from wirespeed.core.records.options import BenchOptions
    from wirespeed.engine.rungs.nccl import nccl_options

    options = nccl_options(BenchOptions(env=(("NCCL_SOCKET_NTHREADS", "8"),)),
                           (("NCCL_SOCKET_NTHREADS", "1"), ("NCCL_NSOCKS_PERTHREAD", "2")))  # fmt: skip
    plan = plan_nccl(sparks.facts, sparks.cabling, "sendrecv", options)
    assert isinstance(plan, NcclPlan)
    env = dict(plan.env)
    assert env["NCCL_SOCKET_NTHREADS"] == "8" and env["NCCL_NSOCKS_PERTHREAD"] == "2"


@pytest.fixture(scope="module")
def source_built() -> Discovery:
    """spark-1's nccl-tests load NCCL from ~/nccl/build/lib, spark-2's from the ldconfig cache."""
    return discover_snapshots([SNAPSHOTS / "spark-nccl-source"])


def test_ranks_get_the_library_path_the_launchers_binary_loads_from(source_built: Discovery) -> None:
    plan = plan_nccl(source_built.facts, source_built.cabling, "sendrecv", NcclOptions())
    assert isinstance(plan, NcclPlan) and plan.launcher == "spark-1"
    assert plan.library_path == ("/home/user/nccl/build/lib", "/usr/local/cuda/lib64")
    argv = mpirun_argv(plan, NcclOptions(), None)
    forwarded = "LD_LIBRARY_PATH=/home/user/nccl/build/lib:/usr/local/cuda/lib64"
    assert argv[argv.index(forwarded) - 1] == "-x" and argv.index(forwarded) < argv.index(plan.binary)
    assert any(n.startswith(f"-x {forwarded}: where spark-1's nccl-tests loads NCCL and CUDA") for n in plan.notes)


def test_a_users_library_path_wins_over_the_forwarded_one(source_built: Discovery) -> None:
    for value in ("/mine/lib", None):  # NAME=VALUE, or NAME: the launcher's own value
        options = NcclOptions(env=(("LD_LIBRARY_PATH", value),))
        plan = plan_nccl(source_built.facts, source_built.cabling, "sendrecv", options)
        assert isinstance(plan, NcclPlan)
        given = [a for a in mpirun_argv(plan, options, None) if a.startswith("LD_LIBRARY_PATH")]
        assert given == ["LD_LIBRARY_PATH" if value is None else "LD_LIBRARY_PATH=/mine/lib"]
        assert any(n.startswith("LD_LIBRARY_PATH as --env gives it") for n in plan.notes)


def test_the_trees_library_path_comes_first_and_the_loaders_own_directories_are_left_out(sparks: Discovery) -> None:
    facts = dict(sparks.facts)
    tools = tuple(
        replace(t, nccl_library="/usr/lib/aarch64-linux-gnu/libnccl.so.2", library_path=("/t/nccl/lib", "/t/cuda"),
                cudart_library="/usr/local/cuda-13.0/targets/sbsa-linux/lib/libcudart.so.13")
        if t.name == "sendrecv_perf" else t
        for t in facts["spark-1"].tools
    )  # fmt: skip
    facts["spark-1"] = replace(facts["spark-1"], tools=tools)
    plan = plan_nccl(facts, sparks.cabling, "sendrecv", NcclOptions())
    assert isinstance(plan, NcclPlan)
    assert plan.library_path == ("/t/nccl/lib", "/t/cuda", "/usr/local/cuda-13.0/targets/sbsa-linux/lib")


def test_snapshots_from_before_the_reading_forward_nothing(sparks: Discovery) -> None:
    plan = plan_nccl(sparks.facts, sparks.cabling, "sendrecv", NcclOptions())
    assert isinstance(plan, NcclPlan) and plan.library_path == ()
    assert not any(a.startswith("LD_LIBRARY_PATH") for a in mpirun_argv(plan, NcclOptions(), None))
    assert not any("LD_LIBRARY_PATH" in n for n in plan.notes)


def test_the_tcp_halves_plan_pins_by_the_cpus_discovery_read(sparks: Discovery) -> None:
    """No command runs while planning: the remote is absent, and the client's CPUs come from its facts."""
    from types import SimpleNamespace

    from wirespeed.core.records.options import BenchOptions
    from wirespeed.engine.rungs.tcp import TcpRung

    facts = {n: replace(f, cpus=20) for n, f in sparks.facts.items()}
    ctx: Any = SimpleNamespace(discovery=Discovery(facts, sparks.cabling), options=BenchOptions(), remote=None)
    plan = TcpRung("tcp-halves").plan(ctx)
    assert not isinstance(plan, NotRunnable) and plan.cores == 20
    unread = {n: replace(f, cpus=Unknown("nproc: not installed")) for n, f in sparks.facts.items()}
    ctx.discovery = Discovery(unread, sparks.cabling)
    plan = TcpRung("tcp-halves").plan(ctx)
    assert not isinstance(plan, NotRunnable) and plan.cores == 0  # unknown: nothing is pinned
