"""What discovery reads for the PCIe path (issue 36): the kernel-log lines of the NIC's path, the root ports found from
sysfs (not by address), the machine model from DMI, and the previous boot's kernel log as journald keeps it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from wirespeed.adapters.source import Output, RootedSource, SnapshotSource
from wirespeed.core.fabric.facts import NEEDS_ROOT, PciRootPort, Unknown, facts_from_json
from wirespeed.core.parsers import pcie_log
from wirespeed.engine.discover import discover_snapshots
from wirespeed.engine.probes import hardware, host

FIXTURES = Path(__file__).parent.parent / "fixtures" / "snapshots"


def test_each_kind_of_line_and_its_stamp() -> None:
    lines = [
        # drivers/pci/quirks.c pcie_failed_link_retrain, as forum threads 363193/362667 quote it
        "[    0.912345] pci 0000:00:00.0: broken device, retraining non-functional downstream link at 2.5GT/s",
        "[    1.913002] pci 0000:00:00.0: retraining failed",
        # drivers/pci/pcie/aer.c aer_print_source and aer_print_error, today's and older kernels' spelling
        "2026-08-26T06:38:10+0000 spark-1 kernel: pcieport 0000:00:00.0: AER: Uncorrectable (Fatal) error message "
        "received from 0000:00:00.0",
        "[ 58.3] pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received: 0000:00:03.0",
        "[ 12.0] pcieport 0000:00:01.0: AER: Correctable error message received from 0000:00:01.0",
        # mlx5 main.c's recovery callbacks, eswitch.c, the module event; kernel/watchdog.c
        "[ 70.1] mlx5_core 0000:01:00.0: mlx5_pci_slot_reset Device state = 2 pci_status: 0. Enter",
        "[ 10.163483] mlx5_core 0000:01:00.0: E-Switch: cleanup",
        "[ 1.584786] mlx5_core 0000:01:00.0: Port module event: module 0, Cable unplugged",
        "[ 99.0] watchdog: BUG: soft lockup - CPU#3 stuck for 26s! [irq/198-aerdrv:215]",
        "[ 16.3] cx7-pcie-hotplug MTKP0001:00: Cable removal",
        "[ 20.0] cx7-pcie-hotplug MTKP0001:00: Cable plugin",
        "[  1.0] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
    ]
    found = pcie_log.events(lines)
    assert [e.kind for e in found] == [
        pcie_log.RETRAIN,
        pcie_log.RETRAIN,
        pcie_log.AER_FATAL,
        pcie_log.AER_FATAL,
        pcie_log.AER_OTHER,
        pcie_log.MLX5_RECOVERY,
        pcie_log.ESW_CLEANUP,
        pcie_log.MODULE_OUT,
        pcie_log.SOFT_LOCKUP,
        pcie_log.CABLE_OUT,
        pcie_log.CABLE_IN,
    ]
    assert found[0].device == "0000:00:00.0" and found[0].stamp == "0.912345 s after boot"
    assert found[2].stamp == "2026-08-26T06:38:10+0000" and found[2].device == "0000:00:00.0"
    assert found[-1].device is None and not pcie_log.wanted(lines[-1])
    assert not pcie_log.wanted(lines[4]) and pcie_log.wanted(lines[3])  # correctable AER is not kept


def test_root_ports_from_sysfs_with_what_sits_below(tmp_path: Path) -> None:
    gone = hardware.root_ports(SnapshotSource(FIXTURES / "spark-no-fabric" / "spark-1"))
    healthy = hardware.root_ports(SnapshotSource(FIXTURES / "spark-no-fabric" / "spark-2"))
    assert not isinstance(gone, Unknown) and not isinstance(healthy, Unknown)
    by_bdf = {p.bdf: p for p in gone}
    assert by_bdf["0000:00:00.0"] == PciRootPort("0000:00:00.0", 2.5, 4, 32.0, 4, ())
    assert by_bdf["0002:00:00.0"].downstream == ()
    assert by_bdf["0007:00:00.0"].downstream == ("0007:01:00.0",)  # the management NIC's port is left as it is
    assert {p.bdf: p.downstream for p in healthy}["0000:00:00.0"] == ("0000:01:00.0", "0000:01:00.1")
    missing = hardware.root_ports(RootedSource(tmp_path, "a tree without /sys"))
    assert isinstance(missing, Unknown) and "/sys/bus/pci/devices" in missing.reason


def test_discovery_reads_model_root_ports_and_the_last_boot() -> None:
    facts = discover_snapshots([FIXTURES / "spark-aer-fatal"]).facts
    one = facts["spark-1"]
    assert one.dmi == {"sys_vendor": "NVIDIA", "product_name": "NVIDIA_DGX_Spark", "board_name": "P4242"}
    assert not isinstance(one.kernel_messages_previous, Unknown)
    assert any("mlx5_pci_slot_reset" in line for line in one.kernel_messages_previous)
    assert facts["spark-2"].kernel_messages_previous == ()
    assert facts_from_json(one.to_json()) == one  # root ports and both logs survive the agent's JSON
    old = discover_snapshots([FIXTURES / "spark-two-cables"]).facts["spark-1"]
    assert not isinstance(old.root_ports, Unknown) and len(old.root_ports) == 4


class _Source:
    """Only what `previous_kernel_messages` asks of a source."""

    def __init__(self, result: Output) -> None:
        self.result = result

    def output(self, name: str, produce: Callable[[], Output]) -> Output:
        assert name == "kernel_messages_previous"
        return self.result


def test_the_previous_boot_needs_root_and_a_persistent_journal() -> None:
    kept = "2026-08-26T06:38:10+0000 spark-1 kernel: pcieport 0000:00:00.0: AER: Uncorrectable (Fatal) error\n"
    assert host.previous_kernel_messages(_Source(Output(0, kept)), True) == (kept.strip(),)  # type: ignore[arg-type]
    closed = host.previous_kernel_messages(_Source(Output(0, "")), False)  # type: ignore[arg-type]
    assert isinstance(closed, Unknown) and NEEDS_ROOT in closed.reason
    volatile = host.previous_kernel_messages(_Source(Output(1, "")), True)  # type: ignore[arg-type]
    assert isinstance(volatile, Unknown) and "persistent storage" in volatile.reason
    old = host.previous_kernel_messages(_Source(Output(None, "")), None)  # type: ignore[arg-type]
    assert isinstance(old, Unknown) and "not recorded in this snapshot" in old.reason
