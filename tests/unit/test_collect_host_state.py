"""The agent side of nic.firmware's package reading and mgmt.wifi's radio: what dpkg-query, iw and nmcli answered,
read back from a snapshot (absent dpkg, a package dpkg never heard of, an old snapshot without them)."""

from __future__ import annotations

import json
from pathlib import Path

from wirespeed.adapters.source import SnapshotSource
from wirespeed.core.fabric.facts import Unknown
from wirespeed.engine.probes import net, tools


def snapshot(root: Path, commands: dict[str, tuple[str, int]], files: tuple[str, ...] = ()) -> SnapshotSource:
    (root / "commands").mkdir(parents=True)
    (root / "meta.json").write_text(json.dumps({"format": "wirespeed-snapshot/1", "node": "n1"}))
    for name, (text, rc) in commands.items():
        (root / "commands" / f"{name}.txt").write_text(text)
        (root / "commands" / f"{name}.rc").write_text(f"{rc}\n")
    for path in files:
        (root / path).mkdir(parents=True)
    return SnapshotSource(root)


def test_what_dpkg_said_of_the_updater(tmp_path: Path) -> None:
    installed = snapshot(tmp_path / "a", {"dpkg_mlnx_fw_updater": ("install ok installed 24.10-1.1.4.0", 0)})
    assert tools.packages(installed) == {"mlnx-fw-updater": "install ok installed 24.10-1.1.4.0"}
    # "dpkg-query: no packages found matching mlnx-fw-updater" goes to stderr, the status is 1: not there at all.
    assert tools.packages(snapshot(tmp_path / "b", {"dpkg_mlnx_fw_updater": ("", 1)})) == {}
    absent = tools.packages(snapshot(tmp_path / "c", {"dpkg_mlnx_fw_updater": ("", 127)}))
    assert absent == Unknown("dpkg-query is not installed")
    old = tools.packages(snapshot(tmp_path / "d", {}))
    assert isinstance(old, Unknown) and "not recorded" in old.reason


def test_a_wireless_management_interface_and_its_power_saving(tmp_path: Path) -> None:
    source = snapshot(
        tmp_path / "a",
        {"iw_power_save_wlP9s9": ("Power save: on\n", 0), "nmcli_connection_wlP9s9": ("Lab 5G\n", 0)},
        ("sys/class/net/wlP9s9/phy80211",),
    )
    found = net.management_radio(source, "wlP9s9")
    assert found == net.ManagementRadio(wireless=True, power_save="on", connection="Lab 5G")


def test_wired_and_unread_radios(tmp_path: Path) -> None:
    wired = snapshot(tmp_path / "a", {})
    assert net.management_radio(wired, "enP7s7") == net.ManagementRadio(wireless=False)
    assert net.management_radio(wired, Unknown("no default route")) == net.ManagementRadio()
    # A `wl` name is wireless even where the snapshot holds no sysfs marker; iw absent, NetworkManager not running.
    bare = snapshot(tmp_path / "b", {"iw_power_save_wlan0": ("", 127), "nmcli_connection_wlan0": ("", 8)})
    found = net.management_radio(bare, "wlan0")
    assert found.wireless is True
    assert found.power_save == Unknown("iw is not installed")
    assert found.connection == Unknown("nmcli exited with status 8")
