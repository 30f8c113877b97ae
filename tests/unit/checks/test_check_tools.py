"""tools.present."""

from __future__ import annotations

from builders import assert_actionable, cluster, fix_text, run, spark, tools

from wirespeed.core.checks.model import CheckStatus
from wirespeed.core.facts import Tool, Unknown


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
