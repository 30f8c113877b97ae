"""`wirespeed setup`'s plan: compute capability to arch, what each node lacks, and nothing when all is there."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from wirespeed.adapters import toolchain_node
from wirespeed.core import toolchain as tc
from wirespeed.core.parsers import fatbin

HOME = "/home/spark/.local/share/wirespeed"
ALL_PACKAGES = dict.fromkeys(tc.KNOWN_PACKAGES, True)
SYSTEM_NCCL = tc.NcclInstall(
    "/usr/lib/aarch64-linux-gnu/libnccl.so.2", "/usr", "2.28.9", fatbin.encode(fatbin.decode("elf=90,120 ptx=120"))
)


def spark(**changes: object) -> tc.NodeToolchain:
    """A DGX Spark as shipped with CUDA 13 and the packages in place (GB10: compute capability 12.1)."""
    base = tc.NodeToolchain(
        node="spark-1", home=HOME, os_id="ubuntu", os_like=("debian",), os_name="Ubuntu 24.04.3 LTS",
        package_manager="apt", packages=ALL_PACKAGES, capabilities=("12.1",), cuda_home="/usr/local/cuda",
        nvcc_version="13.0", nvcc_archs=(75, 80, 90, 100, 110, 120, 121), mpi_home="/usr/lib/aarch64-linux-gnu/openmpi",
        nccl=(SYSTEM_NCCL,), cores=20, uid=1000,
    )  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("capability", "arch"),
    [("8.0", "sm_80"), ("9.0", "sm_90"), ("10.0", "sm_100"), ("12.0", "sm_120"), ("12.1", "sm_121")],
)
def test_compute_capability_to_arch(capability: str, arch: str) -> None:
    assert tc.arch_for(capability) == arch
    number = arch.removeprefix("sm_")
    assert tc.gencode(arch) == f"-gencode=arch=compute_{number},code=sm_{number}"


@pytest.mark.parametrize("text", ["", "N/A", "[Not Supported]", "twelve"])
def test_unreadable_compute_capability_is_named(text: str) -> None:
    with pytest.raises(ValueError, match="not a compute capability"):
        tc.arch_for(text)


def test_sm_120_cubins_run_on_gb10_but_ptx_alone_does_not_count() -> None:
    assert SYSTEM_NCCL.runs_on("sm_121")  # same major, older minor: binary compatible
    ptx_only = replace(SYSTEM_NCCL, archs="elf=80,90 ptx=90")
    assert not ptx_only.runs_on("sm_121")
    assert not replace(SYSTEM_NCCL, archs=None).runs_on("sm_90")


def test_the_nodes_own_nccl_is_used_when_it_has_the_gpus_kernels() -> None:
    plan = tc.plan_node(spark(), tc.SetupOptions(layers=("nccl",)))
    kinds = [s.kind for s in plan.steps]
    assert kinds == ["nccl-tests"]
    step = plan.steps[0]
    assert (step.nccl_home, step.nccl_library, step.arch) == ("/usr", SYSTEM_NCCL.library, "sm_121")
    assert plan.tests_key == "2.19.6-nccl2.28.9-sm_121" == step.key
    assert any("NCCL 2.28.9 with sm_121 kernels" in line for line in plan.present)


def test_nccl_without_the_arch_is_built_from_source_for_that_arch_alone() -> None:
    old = replace(SYSTEM_NCCL, version="2.21.5", archs="elf=80,90 ptx=90")
    plan = tc.plan_node(spark(nccl=(old,)), tc.SetupOptions(layers=("nccl",)))
    nccl, tests = plan.steps
    assert (nccl.kind, nccl.release, nccl.arch) == ("nccl", tc.NCCL_RELEASE, "sm_121")
    assert "no sm_121 cubins" in nccl.what
    built = f"{HOME}/nccl/{tc.NCCL_RELEASE}-sm_121/build"
    assert (tests.nccl_home, tests.nccl_library) == (built, f"{built}/lib/libnccl.so.2")
    assert tests.key == f"{tc.NCCL_TESTS_RELEASE}-nccl{tc.version_of(tc.NCCL_RELEASE)}-sm_121"


def test_source_mode_builds_nccl_even_where_the_node_has_one() -> None:
    plan = tc.plan_node(spark(capabilities=("9.0",)), tc.SetupOptions(layers=("nccl",), nccl="source"))
    assert [(s.kind, s.arch) for s in plan.steps] == [("nccl", "sm_90"), ("nccl-tests", "sm_90")]
    assert "--nccl source" in plan.steps[0].what


def test_missing_packages_are_one_root_step_and_only_those_the_layers_need() -> None:
    packages = {**ALL_PACKAGES, "perftest": False, "libopenmpi-dev": False, "sockperf": False}
    plan = tc.plan_node(spark(packages=packages, mpi_home=None), tc.SetupOptions(layers=("rdma", "nccl")))
    first = plan.steps[0]
    assert (first.kind, first.privileged, first.packages) == ("packages", True, ("perftest", "libopenmpi-dev"))
    assert not plan.blockers  # the OpenMPI headers come with the package step
    assert [s.kind for s in plan.steps[1:]] == ["nccl-tests"]


def test_no_apt_is_said_in_one_line_naming_the_system() -> None:
    plan = tc.plan_node(
        spark(package_manager=None, os_name="Rocky Linux 9.4", packages={}), tc.SetupOptions(layers=("tcp",))
    )
    assert plan.steps == ()
    assert plan.blockers == ("spark-1: no apt here (Rocky Linux 9.4): install iperf3 with its own package manager",)


def test_nvcc_that_cannot_compile_for_the_gpu_blocks_the_builds() -> None:
    old = replace(SYSTEM_NCCL, archs="elf=90 ptx=90")
    have = spark(nccl=(old,), nvcc_version="12.4", nvcc_archs=(80, 90))
    plan = tc.plan_node(have, tc.SetupOptions(layers=("nccl",)))
    assert plan.steps == ()
    assert any("cannot compile for sm_121" in b for b in plan.blockers)


def test_a_node_without_a_gpu_skips_the_nccl_layer_and_its_packages() -> None:
    packages = {**ALL_PACKAGES, "libopenmpi-dev": False}
    plan = tc.plan_node(spark(capabilities=(), gpu_error="nvidia-smi: not installed", packages=packages),
                        tc.SetupOptions())  # fmt: skip
    assert plan.steps == () and plan.blockers == ()
    assert any("the NCCL rung does not run here" in line for line in plan.present)


def build(**changes: object) -> tc.TestsBuild:
    base = tc.TestsBuild(
        key="2.19.6-nccl2.28.9-sm_121", path=f"{HOME}/nccl-tests/2.19.6-nccl2.28.9-sm_121", nccl_version="2.28.9",
        arch="sm_121", nccl_library=SYSTEM_NCCL.library, library_path=("/usr/lib/aarch64-linux-gnu",), loads=True,
        current=True,
    )  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_second_setup_finds_everything_in_place() -> None:
    plan = tc.plan_node(spark(builds=(build(),)), tc.SetupOptions())
    assert plan.steps == () and plan.blockers == ()
    assert any("nccl-tests 2.19.6 built with MPI" in line for line in plan.present)


def test_a_build_that_no_longer_loads_is_built_again() -> None:
    broken = build(loads=False, why_not="all_reduce_perf: libnccl.so.2 => not found")
    plan = tc.plan_node(spark(builds=(broken,)), tc.SetupOptions(layers=("nccl",)))
    assert [s.kind for s in plan.steps] == ["nccl-tests"]
    assert "libnccl.so.2 => not found" in plan.steps[0].what


def test_a_built_tree_not_current_is_selected_not_rebuilt() -> None:
    plan = tc.plan_node(spark(builds=(build(current=False),)), tc.SetupOptions(layers=("nccl",)))
    assert [s.kind for s in plan.steps] == ["select"]


def test_wirespeeds_own_nccl_build_is_reused() -> None:
    ours = tc.NcclInstall(f"{HOME}/nccl/2.28.9-1-sm_121/build/lib/libnccl.so.2", f"{HOME}/nccl/2.28.9-1-sm_121/build",
                          "2.28.9", "elf=121 ptx=", True)  # fmt: skip
    old = replace(SYSTEM_NCCL, archs="elf=90 ptx=90")
    plan = tc.plan_node(spark(nccl=(old, ours)), tc.SetupOptions(layers=("nccl",)))
    assert [s.kind for s in plan.steps] == ["nccl-tests"]
    assert plan.steps[0].nccl_library == ours.library


def test_the_plan_of_the_cluster_names_nodes_that_would_build_different_trees() -> None:
    plans = tc.plan_cluster({"a": spark(node="a"), "b": spark(node="b", capabilities=("9.0",))}, tc.SetupOptions())
    assert plans["a"].tests_key != plans["b"].tests_key
    assert any("nodes build different nccl-tests" in line for line in plans["a"].present)


def test_the_probe_json_round_trips_and_bad_answers_are_named() -> None:
    builds = [{**build().__dict__, "library_path": ["/x"]}]
    data = {"home": HOME, "capabilities": ["12.1"], "nccl": [SYSTEM_NCCL.__dict__], "builds": builds, "uid": 1000}
    have = tc.NodeToolchain.from_json("spark-1", json.loads(json.dumps(data)))
    assert have.nccl == (SYSTEM_NCCL,) and have.builds[0].library_path == ("/x",) and have.uid == 1000
    with pytest.raises(ValueError, match="spark-1: the toolchain probe's answer is not readable"):
        tc.NodeToolchain.from_json("spark-1", {"capabilities": []})


def test_progress_lines_round_trip() -> None:
    line = tc.progress_line("nccl", 112, "src/transport/net_ib.cc (45 s)")
    assert tc.parse_progress(line) == ("nccl", 112, "src/transport/net_ib.cc (45 s)")
    assert tc.parse_progress("Compiling  foo.cc > bar.o") is None


LDD = """\tlinux-vdso.so.1 (0x00007ffc5b3e8000)
\tlibnccl.so.2 => /home/spark/.local/share/wirespeed/nccl/2.28.9-1-sm_121/build/lib/libnccl.so.2 (0x0000ffff8c000000)
\tlibmpi.so.40 => /lib/aarch64-linux-gnu/libmpi.so.40 (0x0000ffff8bd00000)
\tlibcudart.so.13 => not found
"""


def test_ldd_lines_are_read_for_path_or_not_found() -> None:
    assert toolchain_node._resolved(LDD, "libnccl.so").endswith("/build/lib/libnccl.so.2")  # type: ignore[union-attr]
    assert toolchain_node._resolved(LDD, "libcudart.so") == "not found"
    assert toolchain_node._resolved(LDD, "libfoo.so") is None
