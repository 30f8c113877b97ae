"""The agent side of nccl.conf and mem.cma: configuration files read at their real paths (an emulated node's /etc
is its own directory), recorded into a snapshot byte for byte, and read back the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirespeed.adapters.configroot import CONFIG_ROOT_ENV
from wirespeed.adapters.source import LiveSource, Output, RecordingSource, SnapshotSource
from wirespeed.engine.probes import host

STALE = "\n# left by an image\nNCCL_IB_HCA=mlx5_0,mlx5_1\n"  # a leading blank line: line numbers must hold


def test_an_emulated_node_reads_its_own_etc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "nccl.conf").write_text(STALE)
    monkeypatch.setenv(CONFIG_ROOT_ENV, str(tmp_path))
    assert LiveSource().read_exact("/etc/nccl.conf") == STALE
    assert LiveSource().read("/proc/self/comm")  # everything else stays the host's


def test_recorded_files_keep_their_lines_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    node = tmp_path / "node"
    (node / "etc").mkdir(parents=True)
    (node / "etc" / "nccl.conf").write_text(STALE)
    monkeypatch.setenv(CONFIG_ROOT_ENV, str(node))
    out = tmp_path / "snap"
    recording = RecordingSource(LiveSource(), out, "n1", "2026-11-24T00:00:00Z", "0")
    home = tmp_path / "home"
    (home / ".openmpi").mkdir(parents=True)
    (home / ".openmpi" / "mca-params.conf").write_text("btl_tcp_if_include = 192.168.100.0/24\n")
    monkeypatch.setattr(host, "_home", lambda: Output(0, f"{home}\n"))
    live = host.job_files(recording, {})
    assert (out / "etc" / "nccl.conf").read_text() == STALE
    offline = host.job_files(SnapshotSource(out), {})
    assert offline == live
    assert live.files == {
        "/etc/nccl.conf": STALE,
        f"{home}/.openmpi/mca-params.conf": "btl_tcp_if_include = 192.168.100.0/24\n",
    }
    assert live.home == str(home)


def test_a_snapshot_without_them_says_so(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text('{"format": "wirespeed-snapshot/1", "node": "old"}')
    found = host.job_files(SnapshotSource(tmp_path), {})
    assert found.files == {} and "not recorded" in str(found.home)
    cma = host.meminfo(SnapshotSource(tmp_path))
    assert "meminfo" in str(cma.cma_total_kb)
