"""The pure parsers behind nic.reprobe, nccl.conf, bootstrap.iface and mem.cma, on real lines and files."""

from __future__ import annotations

import pytest

from wirespeed.core.parsers import jobconf, kernel_log


def shadowed(environment: dict[str, str], layers: list[list[jobconf.Setting]]) -> list[jobconf.Setting]:
    """File lines the environment (or an earlier file) overrides: every line `merged` did not keep."""
    kept = {id(s) for s in jobconf.merged(environment, layers).values()}
    return [s for settings in layers for s in settings if id(s) not in kept]


# Verbatim from public Spark captures: a boot (dmesg | grep -iE 'insufficient power|PCIe bandwidth|cx7-pcie-hotplug')
# and a cable plugged with the machine running (timestamps as dmesg prints them where the capture had them).
BOOT = [
    "[    0.103426] pci 000f:01:00.0: 0.000 Gb/s available PCIe bandwidth, limited by Unknown x0 link at "
    "000f:00:00.0 (capable of 32.000 Gb/s with 2.5 GT/s PCIe x16 link)",
    "[    1.150104] mlx5_core 0000:01:00.0: 126.028 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x4 link)",
    "[    1.533198] mlx5_core 0000:01:00.0: mlx5_pcie_event:326:(pid 12): Detected insufficient power on the PCIe "
    "slot (27W).",
    "[    5.309621] cx7-pcie-hotplug MTKP0001:00: PCIe hotplug driver initialized successfully",
    "[    5.406738] cx7-pcie-hotplug MTKP0001:00: Hotplug enabled",
]
HOTPLUG_UNSTAMPED = [
    "cx7-pcie-hotplug MTKP0001:00: Cable plugin",
    "mlx5_core 0000:01:00.0: Port module event: module 0, Cable plugged",
    "mlx5_core 0000:01:00.0 enp1s0f0np0: Link up",
]


def test_boot_lines_are_events_but_none_after_boot() -> None:
    found = kernel_log.events(BOOT)
    assert [e.kind for e in found] == ["probe", "slot power", "hot-plug", "hot-plug"]  # the GPU's pci line is not
    assert found[0].seconds == pytest.approx(1.150104)
    assert kernel_log.after_boot(found) == []


def test_the_same_messages_long_after_boot_count() -> None:
    late = [
        f"[ 8431.907512] {HOTPLUG_UNSTAMPED[0]}",
        "[ 8433.118204] mlx5_core 0000:01:00.0: firmware version: 28.45.4028",
    ]
    found = kernel_log.after_boot(kernel_log.events(BOOT + late))
    assert [(e.kind, e.seconds) for e in found] == [("hot-plug", 8431.907512), ("probe", 8433.118204)]


def test_unstamped_lines_are_kept_without_a_time_and_link_lines_are_not_kept() -> None:
    assert [kernel_log.wanted(line) for line in HOTPLUG_UNSTAMPED] == [True, False, False]
    (event,) = kernel_log.events(HOTPLUG_UNSTAMPED)
    assert event.seconds is None and kernel_log.after_boot([event]) == []


def test_nccl_conf_is_read_as_setenv_without_overwrite() -> None:
    etc = jobconf.nccl_conf(
        "# from the image\nNCCL_IB_USE_INLINE=1\nNCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS=1\nNCCL_IB_HCA = x\n"
        "no equals sign\nNCCL_IB_USE_INLINE=0\n",
        "/etc/nccl.conf",
    )
    assert [(s.name, s.value, s.line) for s in etc] == [
        ("NCCL_IB_USE_INLINE", "1", 2),
        ("NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS", "1", 3),
        ("NCCL_IB_HCA ", " x", 4),  # NCCL trims nothing: a variable nobody reads
        ("NCCL_IB_USE_INLINE", "0", 6),
    ]
    user = jobconf.nccl_conf("NCCL_IB_GID_INDEX=0\nNCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS=0\n", "/home/u/.nccl.conf")
    merged = jobconf.merged({"NCCL_IB_GID_INDEX": "3"}, [user, etc])
    assert {n: s.where for n, s in merged.items()} == {
        "NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS": "/home/u/.nccl.conf:2",  # the user's file beats /etc
        "NCCL_IB_USE_INLINE": "/etc/nccl.conf:2",  # the first line wins within a file
        "NCCL_IB_HCA ": "/etc/nccl.conf:4",
    }  # NCCL_IB_GID_INDEX: the environment wins
    assert [s.where for s in shadowed({"NCCL_IB_GID_INDEX": "3"}, [user, etc])] == [
        "/home/u/.nccl.conf:1",
        "/etc/nccl.conf:3",
        "/etc/nccl.conf:6",
    ]


def test_which_files_nccl_and_openmpi_read() -> None:
    assert jobconf.nccl_files("/home/u", {}) == ["/home/u/.nccl.conf", "/etc/nccl.conf"]
    assert jobconf.nccl_files("/home/u", {"NCCL_CONF_FILE": "/opt/n.conf"}) == ["/opt/n.conf", "/etc/nccl.conf"]
    assert jobconf.nccl_files(None, {}) == ["/etc/nccl.conf"]
    assert jobconf.openmpi_files("/root") == ["/root/.openmpi/mca-params.conf", "/etc/openmpi/openmpi-mca-params.conf"]


def test_mca_params_and_the_environment() -> None:
    # As OpenMPI ships the file (comments only), with a site's line added.
    text = (
        "#\n# This is the default system-wide MCA parameters defaults file.\n#\nbtl_tcp_if_include = 192.168.100.0/24\n"
    )
    params = jobconf.mca_params(text, "/etc/openmpi/openmpi-mca-params.conf")
    assert [(s.name, s.value, s.line) for s in params] == [("btl_tcp_if_include", "192.168.100.0/24", 4)]
    assert jobconf.merged({"OMPI_MCA_btl_tcp_if_include": "enP7s7"}, [params], "OMPI_MCA_") == {}


def test_meminfo_cma() -> None:
    # The lines of a real /proc/meminfo (the kernel's padding) around the CMA pair.
    text = "FilePmdMapped:         0 kB\nCmaTotal:              0 kB\nCmaFree:          262144 kB\n"
    assert jobconf.meminfo_kb(text, "CmaTotal") == 0
    assert jobconf.meminfo_kb(text, "CmaFree") == 262144
    assert jobconf.meminfo_kb("MemTotal:       127563504 kB\n", "CmaTotal") is None  # a kernel without CMA
    with pytest.raises(ValueError, match="CmaTotal"):
        jobconf.meminfo_kb("CmaTotal: lots\n", "CmaTotal")
