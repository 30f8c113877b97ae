"""Hostile files (issue 35, "Files"): nothing wirespeed writes goes through a link planted at the target or at a
temporary's name, nothing it reads from a snapshot or a run leaves that root through a link, JSON and TOML nested
5,000 deep or of the wrong shape are one line (never a RecursionError), and a full disk is one line naming the file
and what was kept, with no partial file and no cut line."""

from __future__ import annotations

import errno
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from wirespeed.adapters import files
from wirespeed.adapters.source import SnapshotSource, archive
from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.cluster.inventory import parse_cluster_toml
from wirespeed.core.errors import InventoryError, WirespeedError
from wirespeed.core.records.fixrecord import RevertRecord
from wirespeed.core.records.nesting import MAX_DEPTH, json_depth, toml_depth
from wirespeed.core.records.options import RunOptions
from wirespeed.core.records.run import NodeRef, RunRecord
from wirespeed.engine import fix
from wirespeed.engine.discover import discover_snapshots
from wirespeed.engine.rundir import RunDirectory
from wirespeed.engine.runs import load_run

SECRET = "root:$6$not-really-a-hash:19000:0:99999:7:::"
DEEP = 5000


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=160)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside every root, standing in for /etc/shadow."""
    path = tmp_path / "elsewhere" / "shadow"
    path.parent.mkdir()
    path.write_text(SECRET + "\n")
    return path


def untouched(path: Path) -> None:
    assert path.read_text() == SECRET + "\n"


def make_run(root: Path) -> RunDirectory:
    run_dir = RunDirectory(root)
    run_dir.start(RunRecord(
        wirespeed_version="0.2.0", command=("bench", "tcp"), what="tcp", options=RunOptions(), cluster="lab",
        nodes=(NodeRef("s1", "10.0.0.1"), NodeRef("s2", "10.0.0.2")), started_utc="2026-11-01T00:00:00Z",
        planned=(), host="controller", pid=None,
    ))  # fmt: skip
    return run_dir


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ------------------------------------------------------------------------------------------------ the writer
def test_write_atomic_replaces_a_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text("old\n")
    files.write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and not target.is_symlink() and leftovers(tmp_path) == []


def test_a_link_planted_at_the_target_is_refused_in_one_line_and_its_target_untouched(
    tmp_path: Path, outside: Path
) -> None:
    target = tmp_path / "report.html"
    target.symlink_to(outside)
    with pytest.raises(files.Unwritable) as caught:
        files.write_atomic(target, "<html>")
    assert "\n" not in str(caught.value) and str(target) in str(caught.value) and str(outside) in str(caught.value)
    untouched(outside)
    assert target.is_symlink() and leftovers(tmp_path) == []


def test_a_link_planted_at_the_temporary_name_is_never_written_through(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = iter(["planted", "planted", "fresh"])
    monkeypatch.setattr(files.secrets, "token_hex", lambda _n: next(names))
    target = tmp_path / "last-fix.json"
    (tmp_path / ".last-fix.json.planted.tmp").symlink_to(outside)
    files.write_atomic(target, "{}\n")  # the planted name is taken: another is used, the link left alone
    assert target.read_text() == "{}\n"
    untouched(outside)

    monkeypatch.setattr(files.secrets, "token_hex", lambda _n: "planted")  # every name tried is the planted one
    with pytest.raises(files.Unwritable) as caught:
        files.write_atomic(target, '{"x": 1}\n')
    assert "\n" not in str(caught.value) and "kept" in str(caught.value)
    assert target.read_text() == "{}\n"
    untouched(outside)


def test_the_fix_record_is_never_written_through_a_link_at_its_tmp(tmp_path: Path, outside: Path) -> None:
    record = tmp_path / "R"
    (tmp_path / "R.tmp").symlink_to(outside)  # where the record's temporary used to be
    fix._save(record, RevertRecord({}, state="done"))
    assert json.loads(record.read_text())["state"] == "done"
    untouched(outside)
    record.unlink()
    record.symlink_to(outside)
    with pytest.raises(WirespeedError):
        fix._save(record, RevertRecord({}, state="done"))
    untouched(outside)


def test_enospc_while_writing_is_one_line_and_keeps_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "run.json"
    target.write_text('{"status": "running"}\n')

    def full(_fd: int, _data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(files.Unwritable) as caught:
        files.write_atomic(target, '{"status": "complete"}\n' * 10000)
    message = str(caught.value)
    assert "\n" not in message and str(target) in message and "No space left on device" in message
    assert "earlier run.json is kept" in message
    assert target.read_text() == '{"status": "running"}\n' and leftovers(tmp_path) == []
    with pytest.raises(files.Unwritable, match=r"no new\.json was written"):
        files.write_atomic(tmp_path / "new.json", "{}")
    assert not (tmp_path / "new.json").exists() and leftovers(tmp_path) == []


def test_enospc_goes_through_the_error_boundary_as_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run(tmp_path / "runs")

    def full(_fd: int, _data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    code, _, err = cli("report", run.path.name, "--runs", str(tmp_path / "runs"))
    line = one_line(err)
    assert code != 0 and "report.html" in line and "No space left on device" in line
    assert not (run.path / "report.html").exists() and leftovers(run.path) == []


def test_an_appender_never_leaves_a_cut_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "record.jsonl"
    sink = files.open_append(path)
    sink.write('{"n": 1}\n')
    real_write = os.write
    calls = {"n": 0}

    def fills_up(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, data[:5])  # a short write: the disk filled in the middle of the line
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", fills_up)
    with pytest.raises(files.Unwritable) as caught:
        sink.write('{"n": 2, "long": "' + "x" * 100 + '"}\n')
    monkeypatch.undo()
    sink.close()
    assert "\n" not in str(caught.value) and "1 whole line(s)" in str(caught.value)
    assert path.read_text() == '{"n": 1}\n'


def test_an_appender_refuses_a_planted_link_and_what_is_not_a_file(tmp_path: Path, outside: Path) -> None:
    link = tmp_path / "samples.jsonl"
    link.symlink_to(outside)
    with pytest.raises(files.Unwritable, match="symbolic link"):
        files.open_append(link)
    untouched(outside)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(files.Unwritable, match="not a regular file"):
        files.open_append(fifo)


def test_the_run_directory_writes_nothing_through_planted_links(tmp_path: Path, outside: Path) -> None:
    run = make_run(tmp_path / "runs")
    (run.path / "tcp-single.json").symlink_to(outside)
    with pytest.raises(files.Unwritable):
        run.write_json("tcp-single.json", {"kind": "rung"})
    with pytest.raises(files.Unwritable):
        run.open_text("tcp-single.json")
    (run.path / "tune-nccl").symlink_to(outside.parent)  # a folder of the run that leads out
    with pytest.raises(files.Unwritable, match="outside"):
        run.write_text("tune-nccl/shadow", "overwritten")
    with pytest.raises(files.Unwritable, match="outside"):
        run.open_text("tune-nccl/shadow")
    untouched(outside)
    assert sorted(p.name for p in outside.parent.iterdir()) == ["shadow"]


def test_report_baseline_and_import_refuse_planted_links(tmp_path: Path, outside: Path) -> None:
    runs = tmp_path / "runs"
    run = make_run(runs)
    (run.path / "report.html").symlink_to(outside)
    code, _, err = cli("report", run.path.name, "--runs", str(runs))
    assert code != 0 and "report.html" in one_line(err)
    (runs / "BASELINE").symlink_to(outside)
    code, _, err = cli("baseline", "set", run.path.name, "--runs", str(runs))
    assert code != 0 and "BASELINE" in one_line(err)
    (run.path / "imported").symlink_to(outside.parent)
    saved = tmp_path / "ethtool.txt"
    saved.write_text("NIC statistics:\n     rx_packets: 1\n")
    code, _, err = cli("import", str(saved), "--into", run.path.name, "--runs", str(runs))
    assert code != 0 and "outside" in one_line(err)
    untouched(outside)
    assert sorted(p.name for p in outside.parent.iterdir()) == ["shadow"]


def test_a_snapshot_tarball_is_not_written_through_a_planted_link(tmp_path: Path, outside: Path) -> None:
    snap = tmp_path / "s1"
    (snap / "sys").mkdir(parents=True)
    (snap / "meta.json").write_text("{}")
    tar = tmp_path / "s1.tar.gz"
    tar.symlink_to(outside)
    with pytest.raises(files.Unwritable):
        archive(snap, tar)
    untouched(outside)
    tar.unlink()
    assert archive(snap, tar) == tar and tar.stat().st_size > 0


# ------------------------------------------------------------------------------------------------ the reader
def snapshot(root: Path, node: str = "s1") -> Path:
    """A minimal snapshot: one NIC, its sysfs entry a link inside the snapshot as a recorded one has."""
    device = root / "sys" / "devices" / "pci0000:00" / "0000:01:00.0" / "net" / "eth0"
    device.mkdir(parents=True)
    (device / "address").write_text("aa:bb:cc:dd:ee:ff\n")
    (device / "mtu").write_text("9000\n")
    (root / "sys" / "class" / "net").mkdir(parents=True)
    (root / "sys" / "class" / "net" / "eth0").symlink_to("../../devices/pci0000:00/0000:01:00.0/net/eth0")
    (root / "meta.json").write_text(json.dumps({"format": "wirespeed-snapshot/1", "node": node}))
    return root


def test_a_link_inside_the_snapshot_is_followed_and_one_leaving_it_refused(tmp_path: Path, outside: Path) -> None:
    root = snapshot(tmp_path / "s1")
    source = SnapshotSource(root)
    assert source.read("/sys/class/net/eth0/address") == "aa:bb:cc:dd:ee:ff"
    assert source.realpath("/sys/class/net/eth0") == "/sys/devices/pci0000:00/0000:01:00.0/net/eth0"
    address = root / "sys" / "devices" / "pci0000:00" / "0000:01:00.0" / "net" / "eth0" / "address"
    address.unlink()
    address.symlink_to(outside)  # absolute, as a planted /etc/shadow
    mtu = address.parent / "mtu"
    mtu.unlink()
    mtu.symlink_to(os.path.relpath(outside, mtu.parent))  # ../.. past the root
    for path in ("/sys/class/net/eth0/address", "/sys/class/net/eth0/mtu"):
        with pytest.raises(OSError) as caught:
            source.read(path)
        assert SECRET not in str(caught.value) and "outside" in str(caught.value)
    assert len(source.refused) == 2 and all("not followed" in line and "\n" not in line for line in source.refused)
    assert str(outside) in source.refused[0]


def test_discovery_of_a_snapshot_with_a_planted_link_names_it_and_never_reads_it(tmp_path: Path, outside: Path) -> None:
    root = snapshot(tmp_path / "s1")
    address = root / "sys" / "devices" / "pci0000:00" / "0000:01:00.0" / "net" / "eth0" / "address"
    address.unlink()
    address.symlink_to(outside)
    said: list[str] = []
    found = discover_snapshots([root], say=said.append)
    assert SECRET not in json.dumps(found.to_json()) and SECRET not in " ".join(said)
    assert any("address" in line and str(outside) in line for line in said)
    _, out, err = cli("discover", "--snapshot", str(root), "--json")
    assert SECRET not in out + err and "Traceback" not in out + err and "not followed" in err


def test_meta_and_probe_json_of_the_wrong_shape_are_one_line(tmp_path: Path) -> None:
    root = snapshot(tmp_path / "s1")
    (root / "probe.json").write_text("[]")
    code, _, err = cli("discover", "--snapshot", str(root))
    assert code != 0 and "probe.json" in one_line(err) and "JSON array" in err
    (root / "probe.json").write_bytes(b"\x00\xff\xfe binary")
    code, _, err = cli("discover", "--snapshot", str(root))
    assert code != 0 and "probe.json" in one_line(err)
    (root / "probe.json").write_text(json.dumps({"heard": [1]}))
    code, _, err = cli("discover", "--snapshot", str(root))
    assert code != 0 and "heard[0]" in one_line(err)
    (root / "probe.json").unlink()
    (root / "meta.json").write_text("[1, 2]")
    code, _, err = cli("discover", "--snapshot", str(root))
    assert code != 0 and "meta.json" in one_line(err)
    (root / "meta.json").write_text("[" * DEEP + "]" * DEEP)
    code, _, err = cli("discover", "--snapshot", str(root))
    assert code != 0 and "nested deeper" in one_line(err)


# ------------------------------------------------------------------------------------------------ structure
def test_depth_is_measured_without_recursion() -> None:
    assert json_depth('{"a": [1, "[[[[", {"b": []}]}') == 4
    assert toml_depth('[[nodes]]\nname = "[[[["  # [[[[\nx = [[1], [2]]\n') == 2
    assert json_depth("[" * DEEP + "]" * DEEP) == DEEP


@pytest.mark.parametrize("deep", ["[" * DEEP + "]" * DEEP, '{"a":' * DEEP + "1" + "}" * DEEP])
def test_json_nested_5000_deep_is_one_line(tmp_path: Path, deep: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(deep)
    with pytest.raises(files.Unreadable, match=f"nested deeper than {MAX_DEPTH}"):
        files.load_json(path, 2**20, expect=None)


@pytest.mark.parametrize("text", ["a = " + "[" * DEEP + "]" * DEEP, "a = " + "{b = " * DEEP + "1" + "}" * DEEP])
def test_toml_nested_5000_deep_is_one_line(text: str) -> None:
    with pytest.raises(InventoryError, match="nested deeper"):
        parse_cluster_toml(text, "cluster.toml")


def test_a_deep_or_misshapen_run_json_is_one_problem_line(tmp_path: Path) -> None:
    run = make_run(tmp_path / "runs")
    (run.path / "run.json").write_text("[" * DEEP + "]" * DEEP)
    assert [p for p in load_run(run.path).problems if "nested deeper" in p and p.startswith("run.json: ")]
    (run.path / "tcp.json").write_text('{"kind": ' * DEEP + "1" + "}" * DEEP)
    problems = load_run(run.path).problems
    assert any(p.startswith("tcp.json: nested deeper") for p in problems)
    code, out, err = cli("runs", "--runs", str(tmp_path / "runs"))
    assert code == 3 and "Traceback" not in out + err


def test_a_run_json_linked_out_of_the_run_is_named_not_read(tmp_path: Path, outside: Path) -> None:
    run = make_run(tmp_path / "runs")
    (run.path / "run.json").unlink()
    (run.path / "run.json").symlink_to(outside)
    problems = load_run(run.path).problems
    assert any(p.startswith("run.json: a symbolic link to") and "outside" in p for p in problems)
    assert SECRET not in " ".join(problems)


@pytest.mark.parametrize("kind", ["fifo", "file", "/dev/zero"])
def test_runs_on_something_that_is_not_a_folder_is_one_line_and_not_ok(tmp_path: Path, kind: str) -> None:
    target = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "file":
        target.write_text("not a folder")
    else:
        target = Path(kind)
    code, _, err = cli("runs", "--runs", str(target))
    assert code != 0 and "not a directory" in one_line(err)


def test_a_5000_character_run_name_is_one_line(tmp_path: Path) -> None:
    make_run(tmp_path / "runs")
    for command in (["report"], ["compare"], ["baseline", "set"]):
        code, _, err = cli(*command, "r" * DEEP, "--runs", str(tmp_path / "runs"))
        line = one_line(err)
        assert code != 0 and len(line) < 400, line


def test_a_run_directory_that_cannot_be_read_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run(tmp_path / "runs")
    real_listdir = os.listdir

    def denied(path: Any) -> list[str]:  # mode 000 as a user other than root sees it
        if str(path) == str(run.path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", denied)
    code, _, err = cli("report", str(run.path), "--runs", str(tmp_path / "runs"))
    assert code != 0 and "Permission denied" in one_line(err)
