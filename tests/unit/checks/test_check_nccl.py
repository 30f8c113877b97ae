"""nccl.env and nccl.arch."""

from __future__ import annotations

from builders import assert_actionable, cluster, fix_text, run, spark, without_rdma

from wirespeed.core.checks.common import NcclList
from wirespeed.core.checks.model import CheckResult, CheckStatus
from wirespeed.core.fabric.facts import Gpu, Unknown


def env(**values: str) -> dict[str, str]:
    return dict(values)


def test_nothing_set_passes_with_a_note() -> None:
    outcome = run("nccl.env", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS
    assert "no NCCL_* set" in outcome.summary


def test_hca_list_with_both_halves_and_a_real_socket_interface_passes() -> None:
    good = env(NCCL_IB_HCA="rocep1s0f1,roceP2p1s0f1", NCCL_SOCKET_IFNAME="enP7s7", NCCL_NET_PLUGIN="none")
    outcome = run("nccl.env", cluster(spark("s1", 10, environment=good), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS


def test_hca_list_with_one_half_fails() -> None:
    outcome = run("nccl.env", cluster(spark("s1", 10, environment=env(NCCL_IB_HCA="rocep1s0f1"))))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    [evidence] = outcome.evidence
    assert (evidence.node, evidence.subject, evidence.value) == ("s1", "NCCL_IB_HCA", "rocep1s0f1")
    assert "roceP2p1s0f1" in evidence.what
    assert "export NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1" in outcome.fixes[0].commands


def test_hca_naming_a_missing_device_fails() -> None:
    value = "=rocep1s0f1,roceP2p1s0f1,mlx5_0"
    outcome = run("nccl.env", cluster(spark("s1", 10, environment=env(NCCL_IB_HCA=value))))
    assert outcome.status is CheckStatus.FAIL
    assert "'mlx5_0', not an RDMA device here" in outcome.evidence[0].what


def test_hca_exclusion_of_a_half_fails() -> None:
    outcome = run("nccl.env", cluster(spark("s1", 10, environment=env(NCCL_IB_HCA="^roceP2p1s0f1"))))
    assert outcome.status is CheckStatus.FAIL


def test_hca_is_not_checked_without_rdma() -> None:
    outcome = run("nccl.env", cluster(without_rdma(spark("s1", 10, environment=env(NCCL_IB_HCA="mlx5")))))
    assert outcome.status is CheckStatus.PASS
    assert "NCCL_IB_HCA not checked on s1" in outcome.summary


def test_socket_ifname_must_exist() -> None:
    outcome = run("nccl.env", cluster(spark("s1", 10, environment=env(NCCL_SOCKET_IFNAME="eth0"))))
    assert outcome.status is CheckStatus.FAIL
    assert [(e.node, e.subject, e.value) for e in outcome.evidence] == [("s1", "NCCL_SOCKET_IFNAME", "eth0")]
    assert "export NCCL_SOCKET_IFNAME=enP7s7" in fix_text(outcome.fixes)
    for fine in ("enp1s0f1", "=enP7s7", "^docker,lo", "^eth9"):  # prefixes match; an exclusion needs no match
        outcome = run("nccl.env", cluster(spark("s1", 10, environment=env(NCCL_SOCKET_IFNAME=fine))))
        assert outcome.status is CheckStatus.PASS, fine


def test_ib_disabled_and_empty_gid_index_fail() -> None:
    bad = env(NCCL_IB_DISABLE="1", NCCL_IB_GID_INDEX="")
    outcome = run("nccl.env", cluster(spark("s1", 10, environment=bad)))
    assert outcome.status is CheckStatus.FAIL
    assert {e.subject for e in outcome.evidence} == {"NCCL_IB_DISABLE", "NCCL_IB_GID_INDEX"}
    assert {"unset NCCL_IB_DISABLE", "unset NCCL_IB_GID_INDEX"} <= set(fix_text(outcome.fixes).splitlines())


def test_a_net_plugin_warns() -> None:
    outcome = run("nccl.env", cluster(spark("s1", 10, environment=env(NCCL_NET_PLUGIN="aws-ofi"))))
    assert outcome.status is CheckStatus.WARN
    assert "export NCCL_NET_PLUGIN=none" in fix_text(outcome.fixes)


def test_nccl_list_syntax() -> None:
    assert NcclList.parse("rocep1s0f1:1,roceP2p1s0f1").selects("roceP2p1s0f1")
    assert not NcclList.parse("=rocep1s0f").selects("rocep1s0f1")
    assert NcclList.parse("rocep1s0f").selects("rocep1s0f1")
    assert not NcclList.parse("^=rocep1s0f1").selects("rocep1s0f1")
    assert NcclList.parse("^=rocep1s0f1").selects("roceP2p1s0f1")


# ------------------------------------------------------------------------------------------------------ nccl.arch
GB10 = (Gpu("NVIDIA GB10", "12.1", "580.95.05"),)
PIP_NCCL = {
    "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2": "elf=75,80,90,100,110,120 ptx=120"
}


def arch(**changes: object) -> CheckResult:
    outcome = run("nccl.arch", cluster(spark("s1", 10, **changes), spark("s2", 11, **changes)))
    assert_actionable(outcome)
    return outcome


def test_arch_passes_with_a_binary_compatible_cubin() -> None:
    outcome = arch(gpus=GB10, nccl_archs=PIP_NCCL)
    assert outcome.status is CheckStatus.PASS
    assert "binary-compatible" in outcome.evidence[0].what and "sm_120" in str(outcome.evidence[0].value)


def test_arch_fails_without_code_for_the_gpu_and_says_how_to_build() -> None:
    old = {"/usr/lib/aarch64-linux-gnu/libnccl.so.2.18.1": "elf=70,80,90 ptx=90"}
    outcome = arch(gpus=GB10, nccl_archs=old)
    assert outcome.status is CheckStatus.WARN  # PTX 9.0 can be JIT-compiled for 12.1
    old = {"/usr/lib/aarch64-linux-gnu/libnccl.so.2.18.1": "elf=70,80,90 ptx="}
    outcome = arch(gpus=GB10, nccl_archs=old)
    assert outcome.status is CheckStatus.FAIL
    assert {e.node for e in outcome.evidence} == {"s1", "s2"}
    assert "code=sm_121" in fix_text(outcome.fixes)


def test_arch_skips_without_gpus_or_libraries() -> None:
    assert arch().status is CheckStatus.SKIP  # no GPU in the facts
    outcome = arch(gpus=GB10, nccl_archs={})
    assert outcome.status is CheckStatus.SKIP and "no NCCL library" in outcome.summary
    outcome = arch(gpus=(Gpu("NVIDIA GB10", Unknown("nvidia-smi did not say"), "x"),), nccl_archs=PIP_NCCL)
    assert outcome.status is CheckStatus.SKIP


def test_arch_judges_the_library_nccl_tests_loads() -> None:
    from wirespeed.core.fabric.facts import Tool

    built = "/home/spark/.local/share/wirespeed/nccl/2.28.9-1-sm121/lib/libnccl.so.2.28.9"
    system = "/usr/lib/aarch64-linux-gnu/libnccl.so.2.18.1"
    libraries = {system: "elf=70,80,90 ptx=", built: "elf=121 ptx="}
    tests = Tool("all_reduce_perf", "present", path="/x/build/all_reduce_perf",
                 nccl_library=built.rpartition(".so")[0] + ".so.2", nccl_library_file=built)  # fmt: skip
    outcome = arch(gpus=GB10, nccl_archs=libraries, tools=(tests,))
    assert outcome.status is CheckStatus.WARN  # the measured path fits; another library on the node does not
    assert all(e.subject == system and "nccl-tests loads" in e.what for e in outcome.evidence)
    outcome = arch(gpus=GB10, nccl_archs={system: "elf=70,80,90 ptx=", built: "elf=90 ptx="}, tools=(tests,))
    assert outcome.status is CheckStatus.FAIL
    assert any(e.subject == built and "nccl-tests loads" not in e.what for e in outcome.evidence)
