"""gid.rocev2, mem.lock and container.rdma."""

from __future__ import annotations

from builders import P1H0, P1H1, Half, assert_actionable, cluster, fix_text, plan_address, run, spark, without_rdma

from wirespeed.core.checks.model import CheckStatus
from wirespeed.core.fabric.facts import Unknown


def gid(host: int, index: int | Unknown, iface: str = P1H0) -> dict[str, Half]:
    return {iface: Half(ipv4=(plan_address(iface, host),), gid_index=index)}


def test_gid_passes_with_one_index() -> None:
    outcome = run("gid.rocev2", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS
    assert outcome.summary == "all 4 active RoCE ports: RoCE v2 IPv4 GID index 3"


def test_gid_warns_when_indices_differ() -> None:
    outcome = run("gid.rocev2", cluster(spark("s1", 10), spark("s2", 11, half=gid(11, 7))))
    assert outcome.status is CheckStatus.WARN
    assert_actionable(outcome)
    assert "(3, 7): do not pin NCCL_IB_GID_INDEX" in outcome.summary
    assert ("s2", "rocep1s0f1", 7) in {(e.node, e.subject, e.value) for e in outcome.evidence}
    assert "unset NCCL_IB_GID_INDEX" in fix_text(outcome.fixes)


def test_gid_fails_without_a_rocev2_ipv4_gid() -> None:
    missing = gid(11, Unknown("no RoCE v2 GID with an IPv4 address of its netdev"), P1H1)
    outcome = run("gid.rocev2", cluster(spark("s1", 10), spark("s2", 11, half=missing)))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert [(e.node, e.subject) for e in outcome.evidence] == [("s2", "roceP2p1s0f1")]
    assert outcome.fixes[0].node == "s2"


def test_gid_fails_a_pinned_index_that_does_not_match() -> None:
    env = {"NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "rocep1s0f1"}
    outcome = run("gid.rocev2", cluster(spark("s1", 10), spark("s2", 11, half=gid(11, 7), environment=env)))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert ("s2", "NCCL_IB_GID_INDEX", "3") in {(e.node, e.subject, e.value) for e in outcome.evidence}
    fix = next(f for f in outcome.fixes if f.node == "s2")
    assert "NCCL_IB_GID_INDEX=3 does not match rocep1s0f1's index 7" in fix.description
    assert "unset NCCL_IB_GID_INDEX" in fix.commands


def test_gid_accepts_a_pin_that_matches_the_listed_devices() -> None:
    env = {"NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "roceP2p1s0f1"}  # rocep1s0f1 (index 7) is not used
    outcome = run("gid.rocev2", cluster(spark("s1", 10), spark("s2", 11, half=gid(11, 7), environment=env)))
    assert outcome.status is CheckStatus.WARN


def test_gid_fails_an_empty_pin() -> None:
    outcome = run("gid.rocev2", cluster(spark("s1", 10, environment={"NCCL_IB_GID_INDEX": ""}), spark("s2", 11)))
    assert outcome.status is CheckStatus.FAIL
    assert "is empty" in outcome.fixes[0].description


def test_gid_skips_without_rdma() -> None:
    outcome = run("gid.rocev2", cluster(without_rdma(spark("s1", 10)), without_rdma(spark("s2", 11))))
    assert outcome.status is CheckStatus.SKIP
    assert "emulated" in outcome.summary


def test_memlock_passes_unlimited() -> None:
    outcome = run("mem.lock", cluster(spark("s1", 10), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS
    assert "unlimited" in outcome.summary


def test_memlock_fails_at_ubuntus_8_mib() -> None:
    outcome = run("mem.lock", cluster(spark("s1", 10, memlock_bytes=8388608), spark("s2", 11)))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert [(e.node, e.value) for e in outcome.evidence] == [("s1", 8388608)]
    [fix] = outcome.fixes
    assert fix.node == "s1"
    assert fix.files == (("/etc/security/limits.d/90-wirespeed-memlock.conf", fix.files[0][1]),)
    assert "* - memlock unlimited" in fix.files[0][1]


def test_memlock_in_a_container_asks_for_the_docker_flag() -> None:
    outcome = run("mem.lock", cluster(spark("s1", 10, memlock_bytes=65536, in_container=True)))
    assert outcome.status is CheckStatus.FAIL
    assert "--ulimit memlock=-1" in fix_text(outcome.fixes)


def test_memlock_skips_without_rdma_or_when_unread() -> None:
    assert run("mem.lock", cluster(without_rdma(spark("s1", 10)))).status is CheckStatus.SKIP
    unread = spark("s1", 10, memlock_bytes=Unknown("memlock was not recorded in this snapshot"))
    outcome = run("mem.lock", cluster(unread))
    assert outcome.status is CheckStatus.SKIP and "not recorded" in outcome.summary


def test_container_skips_on_bare_metal() -> None:
    assert run("container.rdma", cluster(spark("s1", 10), spark("s2", 11))).status is CheckStatus.SKIP


def test_container_passes_with_devices_and_unlimited_memlock() -> None:
    outcome = run("container.rdma", cluster(spark("s1", 10, in_container=True), spark("s2", 11)))
    assert outcome.status is CheckStatus.PASS


def test_container_without_dev_infiniband_fails_with_the_docker_flags() -> None:
    inside = spark("s1", 10, in_container=True, dev_infiniband=Unknown("/dev/infiniband does not exist"))
    outcome = run("container.rdma", cluster(inside, spark("s2", 11)))
    assert outcome.status is CheckStatus.FAIL
    assert_actionable(outcome)
    assert [(e.node, e.subject) for e in outcome.evidence] == [("s1", "/dev/infiniband")]
    assert "--network host --device /dev/infiniband --ulimit memlock=-1" in fix_text(outcome.fixes)


def test_container_with_a_memlock_limit_fails() -> None:
    inside = spark("s1", 10, in_container=True, memlock_bytes=65536)
    outcome = run("container.rdma", cluster(inside))
    assert outcome.status is CheckStatus.FAIL
    assert [(e.node, e.value) for e in outcome.evidence] == [("s1", 65536)]
