"""Slurm as a launcher, without Slurm: hostlist expressions, the allocation from the environment, the choice between
srun and ssh, the srun line, how a failed step reads, mpirun inside a job, and the management interface a step
finds from the node srun was started on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from wirespeed.adapters.slurm import SrunTransport
from wirespeed.core.cluster.inventory import Cluster, Node, parse_host_list
from wirespeed.core.cluster.nodeset import expand_names
from wirespeed.core.cluster.slurm import (
    Launcher,
    SlurmAllocation,
    allocation_from_env,
    choose_launch,
    srun_argv,
)
from wirespeed.core.errors import InventoryError, UsageError
from wirespeed.core.nccl import NcclOptions, NcclPlan, for_slurm, mpirun_argv
from wirespeed.core.outcome import CommandResult, Status, classify
from wirespeed.core.parsers.sysfs_values import route_get_iface
from wirespeed.engine.clusters import resolve_cluster
from wirespeed.engine.discover import discover_snapshots

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("spark-1", ["spark-1"]),
        ("spark-[1-3]", ["spark-1", "spark-2", "spark-3"]),
        ("spark-[1,3,5-6]", ["spark-1", "spark-3", "spark-5", "spark-6"]),
        ("gpu[08-11]", ["gpu08", "gpu09", "gpu10", "gpu11"]),  # the start's width is kept
        ("gpu[098-101]", ["gpu098", "gpu099", "gpu100", "gpu101"]),
        ("a[1-2],b,c[7]", ["a1", "a2", "b", "c7"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("gpu[1-2]-ib", ["gpu1-ib", "gpu2-ib"]),
        ("n[1-2],n2,n1", ["n1", "n2"]),  # a node named twice is one node
        (" n1 , n2 ", ["n1", "n2"]),
    ],
)
def test_expand_names(spec: str, names: list[str]) -> None:
    assert expand_names(spec) == names


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("n[1-3", "unbalanced '['"),
        ("n1-3]", "unbalanced ']'"),
        ("n[[1-2]]", "nested brackets"),
        ("n[3-1]", "runs backwards"),
        ("n[a-b]", "is not a number or range"),
        ("n[1-]", "is not a number or range"),
        ("n[0-99999999]", "more than"),
        ("", "no nodes"),
        (",", "no nodes"),
    ],
)
def test_bad_hostlist_is_one_line_naming_the_variable(spec: str, words: str) -> None:
    with pytest.raises(InventoryError) as err:
        expand_names(spec)
    message = str(err.value)
    assert message.startswith("SLURM_JOB_NODELIST: ") and words in message and "\n" not in message


def test_allocation_from_env() -> None:
    assert allocation_from_env({}) is None
    assert allocation_from_env({"SLURM_JOB_ID": "7"}) is None  # no node list: not an allocation to use
    assert allocation_from_env({"SLURM_JOB_NODELIST": "n1"}) is None
    found = allocation_from_env({"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "spark-[1-2]"})
    assert found == SlurmAllocation("42", ("spark-1", "spark-2")) and found.nodelist == "spark-[1-2]"
    older = allocation_from_env({"SLURM_JOBID": "43", "SLURM_NODELIST": "n1"})  # the older names still set
    assert older == SlurmAllocation("43", ("n1",))
    assert allocation_from_env({"SLURM_JOB_ID": "44_3", "SLURM_JOB_NODELIST": "n1"}) is not None  # array task
    with pytest.raises(InventoryError, match="not a job id"):
        allocation_from_env({"SLURM_JOB_ID": "1; rm -rf /", "SLURM_JOB_NODELIST": "n1"})


ALLOC = SlurmAllocation("42", ("spark-1", "spark-2", "spark-3"))


def test_auto_inside_an_allocation_takes_its_nodes_and_srun() -> None:
    choice = choose_launch(Launcher.AUTO, None, ALLOC, srun_found=True)
    assert choice.cluster is not None and choice.cluster.names == ALLOC.nodes
    assert choice.slurm is not None and choice.slurm.job_id == "42"
    assert choice.slurm.slurm_names == {n: n for n in ALLOC.nodes}
    assert choice.note == "starting processes with srun in Slurm job 42 (spark-[1-3])"


def test_auto_outside_an_allocation_decides_nothing() -> None:
    assert choose_launch(Launcher.AUTO, None, None, srun_found=True) == choose_launch(
        Launcher.AUTO, None, None, srun_found=False
    )
    choice = choose_launch(Launcher.AUTO, None, None, srun_found=True)
    assert (choice.cluster, choice.slurm, choice.note) == (None, None, None)
    named = parse_host_list("a,b")
    assert choose_launch(Launcher.AUTO, named, None, srun_found=True).cluster is named


def test_a_cluster_file_maps_by_name_then_host_then_short_host() -> None:
    named = Cluster(
        "lab",
        (
            Node("first", "spark-1"),
            Node("spark-2", "198.18.0.12"),
            Node("third", "spark-3.lab.example"),
        ),
        "lab.toml",
    )
    choice = choose_launch(Launcher.AUTO, named, ALLOC, srun_found=True)
    assert choice.slurm is not None and choice.cluster is named
    assert choice.slurm.slurm_names == {"first": "spark-1", "spark-2": "spark-2", "third": "spark-3"}


def test_nodes_outside_the_allocation_keep_ssh_under_auto_and_are_refused_under_slurm() -> None:
    named = parse_host_list("spark-1,spark-9")
    choice = choose_launch(Launcher.AUTO, named, ALLOC, srun_found=True)
    assert choice.slurm is None and choice.cluster is named
    assert choice.note == "spark-9 not in Slurm job 42 (spark-[1-3]): using ssh"
    with pytest.raises(UsageError, match=r"spark-9 not in Slurm job 42") as err:
        choose_launch(Launcher.SLURM, named, ALLOC, srun_found=True)
    assert err.value.hint and "salloc -w" in err.value.hint


def test_launcher_slurm_needs_an_allocation_and_srun() -> None:
    with pytest.raises(UsageError, match="not inside a Slurm allocation"):
        choose_launch(Launcher.SLURM, None, None, srun_found=True)
    with pytest.raises(UsageError, match="srun not found"):
        choose_launch(Launcher.SLURM, None, ALLOC, srun_found=False)
    quiet = choose_launch(Launcher.AUTO, None, ALLOC, srun_found=False)
    assert quiet.slurm is None and quiet.note and "over ssh" in quiet.note


def test_launcher_ssh_uses_the_allocations_nodes_over_ssh() -> None:
    choice = choose_launch(Launcher.SSH, None, ALLOC, srun_found=True)
    assert choice.slurm is None and choice.cluster is not None and choice.cluster.names == ALLOC.nodes
    assert choice.note == "using the nodes of Slurm job 42 (spark-[1-3]) over ssh"
    named = parse_host_list("x")
    assert choose_launch(Launcher.SSH, named, ALLOC, srun_found=True).note is None


def test_resolve_cluster_reads_the_allocation_from_the_environment() -> None:
    env = {"SLURM_JOB_ID": "9", "SLURM_JOB_NODELIST": "n[1-2]"}
    resolved = resolve_cluster(None, None, None, Launcher.SSH, env)
    assert resolved.cluster.names == ("n1", "n2") and resolved.slurm is None
    assert resolved.cluster.source == "Slurm job 9"


def test_srun_argv_is_one_task_on_one_node_beside_other_steps() -> None:
    argv = srun_argv("42", "spark-2", ["iperf3", "-s", "; touch /tmp/x"])
    assert argv[0] == "srun" and argv[argv.index("--") + 1 :] == ["iperf3", "-s", "; touch /tmp/x"]
    options = argv[1 : argv.index("--")]
    for option in ("--jobid=42", "--overlap", "--nodes=1", "--ntasks=1", "--nodelist=spark-2", "--input=all"):
        assert option in options


def test_srun_transport_uses_slurm_names() -> None:
    transport = SrunTransport("42", {"first": "spark-1"})
    assert transport.wrap(Node("first", "10.0.0.11"), ["true"])[5] == "--nodelist=spark-1"
    assert transport.wrap(Node("spark-2", "spark-2"), ["true"])[5] == "--nodelist=spark-2"
    assert transport.destination(Node("first", "x")) == "spark-1 in Slurm job 42"
    assert (transport.via_srun, transport.via_ssh) == (True, False)


def _classified(**given: Any) -> CommandResult:
    """classify() for a command run through srun on spark-2, with `given` in place of the defaults."""
    fields: dict[str, Any] = {
        "node": "spark-2",
        "argv": ("iperf3", "-s"),
        "returncode": 1,
        "stdout": "",
        "stderr": "",
        "duration_s": 0.1,
        "timed_out": False,
        "timeout_s": 10.0,
        "via_ssh": False,
        "destination": "spark-2 in Slurm job 42",
        "via_srun": True,
    }
    return classify(**{**fields, **given})


def _srun_result(returncode: int, stderr: str, stdout: str = "") -> tuple[Status, str]:
    result = _classified(returncode=returncode, stderr=stderr, stdout=stdout)
    return result.status, result.message


def test_a_step_that_cannot_start_is_unreachable_with_srun_last_word() -> None:
    stderr = (
        "srun: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
        "srun: fatal: Could not establish a configuration source\n"
    )
    assert _srun_result(1, stderr) == (
        Status.UNREACHABLE,
        "spark-2: srun could not start a step (spark-2 in Slurm job 42): Could not establish a configuration source",
    )
    status, message = _srun_result(1, "srun: error: Unable to create step for job 42: Requested node configuration\n")
    assert status is Status.UNREACHABLE and "Unable to create step" in message


def test_srun_report_of_a_task_end_gives_way_to_the_commands_own_words() -> None:
    stderr = "iperf3: error - unable to start listener\nsrun: error: spark-2: task 0: Exited with exit code 1\n"
    assert _srun_result(1, stderr) == (
        Status.FAILED,
        "spark-2: iperf3 exited with status 1: iperf3: error - unable to start listener",
    )
    assert _srun_result(1, "srun: error: spark-2: task 0: Exited with exit code 1\n", stdout="said\n")[1].endswith(
        ": said"
    )


def test_srun_words_without_srun_are_plain_failures() -> None:
    result = _classified(stderr="srun: error: Unable to create step\n", via_ssh=True, via_srun=False)
    assert result.status is Status.FAILED


def test_srun_that_cannot_be_started_says_install_slurm_client() -> None:
    result = _classified(returncode=None, spawn_failed="No such file or directory: 'srun'")
    assert result.status is Status.NOT_FOUND and result.message.startswith("spark-2: cannot start srun")
    assert result.hint == "install slurm-client"


PLAN = NcclPlan(
    launcher="a",
    nodes=("a", "b"),
    hosts=(("198.19.2.1", 2), ("198.19.2.2", 2)),
    binary="/opt/nccl-tests/build/all_reduce_perf",
    env=(("NCCL_DEBUG", "INFO"),),
    mca=(("btl_tcp_if_include", "198.19.2.0/24"),),
    min_bytes=1,
    max_bytes=2,
)


def test_mpirun_inside_a_job_uses_slurm_names_and_overlaps() -> None:
    plan = for_slurm(PLAN, {"a": "spark-1", "b": "spark-2"}, "42")
    argv = mpirun_argv(plan, NcclOptions(), None, as_root=False)
    assert argv[:3] == ["env", "SLURM_OVERLAP=1", "mpirun"]
    assert argv[argv.index("-H") + 1] == "spark-1:2,spark-2:2"
    assert argv[argv.index("ras") - 1 : argv.index("ras") + 2] == ["--mca", "ras", "^slurm"]
    assert argv[argv.index("btl_tcp_if_include") - 1 :][:3] == ["--mca", "btl_tcp_if_include", "198.19.2.0/24"]
    assert "SLURM_OVERLAP" not in " ".join(argv[argv.index("mpirun") :])  # mpirun's own, not the ranks'
    assert any("Slurm job 42" in note for note in plan.notes)
    assert mpirun_argv(PLAN, NcclOptions(), None)[0] == "mpirun"  # over ssh: unchanged
    single = NcclPlan("a", ("a",), (("localhost", 2),), "x", (), (), 1, 2)
    assert for_slurm(single, {"a": "spark-1"}, "42") is single  # one node: mpirun starts nothing remote


def test_route_get_iface() -> None:
    text = '[{"dst":"10.0.0.5","dev":"enP7s7","prefsrc":"10.0.0.11","flags":[],"uid":0,"cache":[]}]'
    assert route_get_iface(text) == "enP7s7"
    assert route_get_iface("") is None and route_get_iface("[]") is None and route_get_iface("{}") is None


def _snapshot_without_ssh(tmp_path: Path, launch: str | None, route: str | None) -> Path:
    """spark-1 of a real two-cable pair as if discovered by srun: no ssh session, no default route."""
    case = tmp_path / "case"
    shutil.copytree(SNAPSHOTS / "spark-two-cables", case, symlinks=True)
    commands = case / "spark-1" / "commands"
    (commands / "ssh_connection.txt").write_text("")
    routes = [r for r in json.loads((commands / "ip_route.txt").read_text()) if r["dst"] != "default"]
    (commands / "ip_route.txt").write_text(json.dumps(routes))
    for name, text in (("slurm_launch_node", launch), ("slurm_launch_route", route)):
        if text is not None:
            (commands / f"{name}.txt").write_text(text)
            (commands / f"{name}.rc").write_text("0\n")
    return case


def test_a_step_finds_the_management_interface_from_the_launch_node(tmp_path: Path) -> None:
    route = '[{"dst":"10.0.0.5","dev":"enP7s7","prefsrc":"10.0.0.11","flags":[],"uid":0,"cache":[]}]'
    found = discover_snapshots([_snapshot_without_ssh(tmp_path / "a", "10.0.0.5", route)])
    assert found.facts["spark-1"].management == "enP7s7"
    neither = discover_snapshots([_snapshot_without_ssh(tmp_path / "b", None, None)])
    assert neither.facts["spark-1"].management != "enP7s7"  # without the launch node nothing says it
    here = '[{"dst":"10.0.0.11","dev":"lo","prefsrc":"10.0.0.11","flags":["local"],"uid":0,"cache":[]}]'
    launched_here = discover_snapshots([_snapshot_without_ssh(tmp_path / "c", "10.0.0.11", here)])
    assert launched_here.facts["spark-1"].management != "lo"
