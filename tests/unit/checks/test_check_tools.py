"""tools.present."""

from __future__ import annotations

import dataclasses

from builders import FIXTURES, assert_actionable, cluster, fix_text, run, spark, tools

from wirespeed.core.checks.model import CheckInput, CheckStatus
from wirespeed.core.fabric.facts import Tool, Unknown
from wirespeed.engine.discover import discover_snapshots


def test_tools_pass_when_present_and_equal() -> None:
    outcome = run("tools.present", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS


def test_missing_mpirun_fails_with_the_apt_package() -> None:
    missing = (*tools()[:2], Tool("mpirun", Unknown("mpirun is not installed")), tools()[3])
    outcome = run("tools.present", cluster(spark("s1", 10, tools=missing), spark("s2", 11)))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert ("s1", "mpirun", "no") in {(e.node, e.subject, e.value) for e in outcome.evidence}
    fix = next(f for f in outcome.fixes if f.node == "s1")
    assert fix.commands == ("sudo apt-get install -y openmpi-bin",)


def test_old_iperf3_and_mismatched_versions_warn() -> None:
    outcome = run("tools.present", cluster(spark("s1", 10, tools=tools(iperf3="3.9")), spark("s2", 11)))
    assert outcome.status is CheckStatus.WARN
    assert_actionable(outcome)
    seen = {(e.node, e.subject, e.value) for e in outcome.evidence}
    assert ("s1", "iperf3", "3.9") in seen and ("s2", "iperf3", "3.16") in seen
    assert any("single-threaded" in f.description for f in outcome.fixes)


def test_missing_nccl_tests_warn_with_the_build() -> None:
    no_tests = (*tools()[:3], Tool("nccl-tests", Unknown("no nccl-tests binaries on PATH")))
    outcome = run("tools.present", cluster(spark("s1", 10, tools=no_tests)))
    assert outcome.status is CheckStatus.WARN
    assert [(e.node, e.subject) for e in outcome.evidence] == [("s1", "nccl-tests")]
    assert "make MPI=1" in fix_text(outcome.fixes)


def test_nccl_tests_without_mpi_warn() -> None:
    no_mpi = (*tools()[:3], Tool("all_reduce_perf", "present", path="/x/all_reduce_perf", detail="mpi=no"))
    outcome = run("tools.present", cluster(spark("s1", 10, tools=no_mpi)))
    assert outcome.status is CheckStatus.WARN
    assert [(e.subject, e.value) for e in outcome.evidence] == [("all_reduce_perf", "mpi=no")]


def test_unrecorded_versions_are_not_missing() -> None:
    unrecorded = (Tool("iperf3", Unknown("iperf3_version was not recorded in this snapshot")), *tools()[1:])
    outcome = run("tools.present", cluster(spark("s1", 10, tools=unrecorded)))
    assert outcome.status is CheckStatus.PASS
    assert "version unreadable: s1 iperf3" in outcome.summary


SOURCE_NCCL = "/home/u/nccl/build/lib/libnccl.so.2"
SYSTEM_NCCL = "/usr/lib/aarch64-linux-gnu/libnccl.so.2"


def loading(nccl: str | Unknown | None, nccl_file: str | None = None) -> tuple[Tool, ...]:
    """tools() with all_reduce_perf resolving libnccl to `nccl` (and to `nccl_file` behind its link)."""
    binary = dataclasses.replace(tools()[3], nccl_library=nccl, nccl_library_file=nccl_file)
    return (*tools()[:3], binary)


def test_libnccl_not_found_fails_naming_node_binary_and_the_ldd_line() -> None:
    missing = loading(Unknown("libnccl.so.2 => not found"))
    outcome = run("tools.present", cluster(spark("s1", 10, tools=loading(SOURCE_NCCL)), spark("s2", 11, tools=missing)))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert [(e.node, e.subject, e.value) for e in outcome.evidence] == [
        ("s2", "all_reduce_perf", "libnccl.so.2 => not found")
    ]
    fix = next(f for f in outcome.fixes if f.node == "s2")
    assert "/home/u/nccl-tests/build/all_reduce_perf" in fix.description and "LD_LIBRARY_PATH" in fix.description
    assert fix.commands[0].startswith("wirespeed setup nccl --yes")
    assert "export LD_LIBRARY_PATH=/home/u/nccl/build/lib${LD_LIBRARY_PATH:+" in fix.commands[1]  # s1's directory


def test_libnccl_not_found_anywhere_suggests_the_playbooks_directory_not_a_system_one() -> None:
    outcome = run("tools.present", cluster(spark("s1", 10, tools=loading(Unknown("libnccl.so.2 => not found")))))
    assert outcome.status is CheckStatus.FAIL
    assert "$HOME/nccl/build/lib" in fix_text(outcome.fixes)


def test_nodes_loading_libnccl_from_different_paths_warn_naming_both() -> None:
    source = loading(SOURCE_NCCL, "/home/u/nccl/build/lib/libnccl.so.2.28.9")
    system = loading(SYSTEM_NCCL, "/usr/lib/aarch64-linux-gnu/libnccl.so.2.28.9")
    outcome = run("tools.present", cluster(spark("s1", 10, tools=source), spark("s2", 11, tools=system)))
    assert outcome.status is CheckStatus.WARN
    assert_actionable(outcome)
    assert [(e.node, e.value) for e in outcome.evidence] == [
        ("s1", f"{SOURCE_NCCL} (NCCL 2.28.9)"),
        ("s2", f"{SYSTEM_NCCL} (NCCL 2.28.9)"),
    ]
    assert "ldd /home/u/nccl-tests/build/all_reduce_perf | grep -E 'libnccl|libcudart'   # on s2" in fix_text(
        outcome.fixes
    )


def test_one_path_with_two_nccl_versions_behind_it_warns() -> None:
    old = loading(SOURCE_NCCL, "/home/u/nccl/build/lib/libnccl.so.2.27.7")
    new = loading(SOURCE_NCCL, "/home/u/nccl/build/lib/libnccl.so.2.28.9")
    outcome = run("tools.present", cluster(spark("s1", 10, tools=old), spark("s2", 11, tools=new)))
    assert outcome.status is CheckStatus.WARN
    assert {e.value for e in outcome.evidence} == {f"{SOURCE_NCCL} (NCCL 2.27.7)", f"{SOURCE_NCCL} (NCCL 2.28.9)"}


def test_one_nccl_everywhere_and_snapshots_from_before_the_reading_pass() -> None:
    same = loading(SOURCE_NCCL, "/home/u/nccl/build/lib/libnccl.so.2.28.9")
    outcome = run("tools.present", cluster(spark("s1", 10, tools=same), spark("s2", 11, tools=same)))
    assert outcome.status is CheckStatus.PASS
    unread = run("tools.present", cluster(spark("s1", 10, tools=same), spark("s2", 11)))  # s2: nccl_library None
    assert unread.status is CheckStatus.PASS


def test_the_source_built_nccl_fixture_warns_on_spark_2_loading_the_systems() -> None:
    found = discover_snapshots([FIXTURES / "spark-nccl-source"])
    outcome = run("tools.present", CheckInput(found.facts, found.cabling))
    assert outcome.status is CheckStatus.WARN
    assert {(e.node, e.value) for e in outcome.evidence} == {
        ("spark-1", "/home/user/nccl/build/lib/libnccl.so.2 (NCCL 2.28.9)"),
        ("spark-2", "/usr/lib/aarch64-linux-gnu/libnccl.so.2 (NCCL 2.28.9)"),
    }
