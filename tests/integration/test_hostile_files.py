"""Hostile files on the emulated cluster (issue 35, "Files"): a link planted in a snapshot, pointing at a secret
outside it, is refused in one line and the secret is never printed; a link planted where `snapshot --tar` writes
is never written through; a `--runs` on a full tmpfs gives one line (no traceback) and keeps what it had whole."""

from __future__ import annotations

import io
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.engine.remote import Remote

from .helpers import running_testbed

pytestmark = pytest.mark.root

SECRET = "root:$6$wfh-secret-never-printed:19000:0:99999:7:::"
HALF = "enp1s0f0np0"


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    code = main(list(argv), env)
    return code, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def bed() -> Iterator[Remote]:
    with running_testbed("wfh-", nodes=2, topology="direct", cables=1) as (_, remote):
        yield remote


@pytest.fixture
def shadow(tmp_path: Path) -> Path:
    """A file outside every snapshot and run, standing in for /etc/shadow."""
    path = tmp_path / "etc" / "shadow"
    path.parent.mkdir()
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs, unmounted (and checked gone) however the test ends."""
    mount = tmp_path / "runs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "wfh-runs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)
    assert str(mount) not in Path("/proc/self/mountinfo").read_text()


def fill(mount: Path, leave: int = 0) -> None:
    """Fill the file system at `mount` until `leave` bytes (or fewer) are free."""
    fd = os.open(mount / ".filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            stats = os.statvfs(mount)
            free = stats.f_bavail * stats.f_frsize
            if free <= leave:
                return
            try:
                os.write(fd, b"\0" * min(4096, free - leave))
            except OSError:
                return
    finally:
        os.close(fd)


def no_traceback(out: str, err: str) -> str:
    assert "Traceback" not in out + err, err
    lines = [line for line in err.splitlines() if line.startswith("wirespeed: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_a_link_planted_in_a_snapshot_is_refused_and_what_it_points_at_never_printed(
    bed: Remote, tmp_path: Path, shadow: Path
) -> None:
    cluster = str(bed.cluster.source)
    snap = tmp_path / "snap"
    code, _, err = cli("snapshot", "--cluster", cluster, "-o", str(snap), "--no-probe")
    assert code == 0, err
    address = (snap / "wfh-1" / "sys" / "class" / "net" / HALF / "address").resolve()
    assert address.is_relative_to(snap.resolve()) and address.is_file()
    address.unlink()
    address.symlink_to(shadow)  # /etc/shadow, bind-mounted in the issue; here a file of our own

    for extra in ((), ("--json",)):
        code, out, err = cli("discover", "--snapshot", str(snap), *extra)
        assert SECRET not in out + err and "wfh-secret" not in out + err
        assert "Traceback" not in out + err
        refusals = [line for line in err.splitlines() if "not followed" in line]
        assert len(refusals) == 1 and "address" in refusals[0] and str(shadow) in refusals[0], err
    assert shadow.read_text() == SECRET + "\n"

    # `snapshot --tar` where NODE.tar.gz is a planted link: refused in one line, the file it points at untouched
    tarred = tmp_path / "tar"
    tarred.mkdir()
    (tarred / "wfh-1.tar.gz").symlink_to(shadow)
    code, out, err = cli("snapshot", "--cluster", cluster, "-o", str(tarred), "--tar", "--no-probe")
    line = no_traceback(out, err)
    assert code != 0 and "wfh-1.tar.gz" in line and "symbolic link" in line
    assert shadow.read_text() == SECRET + "\n"


def test_a_full_tmpfs_as_runs_is_one_line_and_keeps_what_it_had_whole(
    bed: Remote, tmp_path: Path, small_tmpfs: Path
) -> None:
    cluster = str(bed.cluster.source)
    # watch --record on a disk with a little room: it fills, and the record holds only whole lines
    record = small_tmpfs / "watch.jsonl"
    fill(small_tmpfs, leave=12 * 1024)
    code, out, err = cli("watch", "--cluster", cluster, "--record", str(record), "--duration", "20", "--json")
    line = no_traceback(out, err)
    assert code != 0 and "watch.jsonl" in line and "No space left on device" in line and "nothing cut" in line
    text = record.read_text()
    assert text and text.endswith("\n") and all(json.loads(row) for row in text.splitlines())

    # a bench on the full disk: one line naming the file it could not write, no traceback
    fill(small_tmpfs)
    code, out, err = cli("bench", "tcp-single", "--cluster", cluster, "--runs", str(small_tmpfs), "--seconds", "2",
                         "--no-live")  # fmt: skip
    line = no_traceback(out, err)
    assert code != 0 and "No space left on device" in line and str(small_tmpfs) in line

    # report of a run kept there: report.html cannot be written; run.json stays whole
    runs = [p for p in small_tmpfs.iterdir() if (p / "run.json").is_file()]
    if runs:
        before = (runs[0] / "run.json").read_text()
        code, out, err = cli("report", runs[0].name, "--runs", str(small_tmpfs))
        line = no_traceback(out, err)
        assert code != 0 and "report.html" in line
        assert (runs[0] / "run.json").read_text() == before and json.loads(before)
