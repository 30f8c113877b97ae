"""`wirespeed setup` on the emulated cluster as a Spark owner runs it: an ordinary user with sudo on every node. A
package a rung needs is missing (sockperf, for tcp-lat: removed from this machine, its .deb kept in apt's cache so
that no network is needed to put it back). Without --yes the plan names it on every node and nothing changes; with
--yes --become the real apt-get installs it through sudo (both nodes at once: the second waits for dpkg's lock);
a second setup finds nothing to do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import running_testbed

pytestmark = pytest.mark.root
PACKAGE = "sockperf"


def installed(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", package], capture_output=True, text=True,
                          check=False)  # fmt: skip
    return done.stdout.startswith("ii")


@pytest.fixture
def without_package() -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("needs root: it removes and reinstalls a package")
    if not (shutil.which("apt-get") and shutil.which("dpkg") and shutil.which("sudo")):
        pytest.skip("needs apt-get, dpkg and sudo (a Debian machine)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cached = subprocess.run(["apt-get", "install", "--reinstall", "--download-only", "-y", "-q", PACKAGE],
                            capture_output=True, text=True, env=env, check=False)  # fmt: skip
    if cached.returncode != 0:
        pytest.skip(f"apt cannot fetch {PACKAGE} into its cache: {cached.stderr.strip()[-200:]}")
    subprocess.run(["dpkg", "-r", PACKAGE], capture_output=True, check=True, env=env)
    try:
        yield
    finally:
        if not installed(PACKAGE):
            subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", PACKAGE],
                           capture_output=True, env=env, check=False)  # fmt: skip


def setup(cluster_file: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "wirespeed", "setup", "tcp-lat", "--cluster", cluster_file, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, stdin=subprocess.DEVNULL)


def test_a_missing_package_is_planned_then_installed_through_sudo(without_package: None) -> None:
    with running_testbed("wsu-", nodes=2, topology="direct", cables=1, user="spark", sudo="nopasswd") as (state, _):
        cluster = str(state.cluster_file)
        assert not installed(PACKAGE)

        shown = setup(cluster)
        said = shown.stdout + shown.stderr
        assert shown.returncode == 0, said
        assert said.count(f"as root: apt-get install {PACKAGE}") == 2, said
        assert "nothing applied; run again with --yes to apply and --become" in said
        assert not installed(PACKAGE)  # the plan alone changes nothing

        refused = setup(cluster, "--yes")
        said = refused.stdout + refused.stderr
        assert refused.returncode == 1, said
        assert "wsu-1: installing packages needs root there (--become" in said, said
        assert not installed(PACKAGE)

        applied = setup(cluster, "--yes", "--become")
        said = applied.stdout + applied.stderr
        assert applied.returncode == 0, said
        assert f"wsu-1: installed {PACKAGE}" in said and f"wsu-2: installed {PACKAGE}" in said, said
        assert "Traceback" not in said
        assert installed(PACKAGE) and shutil.which(PACKAGE)

        again = setup(cluster, "--yes", "--become")
        said = again.stdout + again.stderr
        assert again.returncode == 0, said
        assert "setup: nothing to do" in said and "apt-get install" not in said, said


def commission(cluster_file: str, runs: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "wirespeed", "commission", "--rungs", "tcp-lat", "--cluster", cluster_file,
            "--runs", runs, "--no-live", *args]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, stdin=subprocess.DEVNULL)


def test_commission_offers_setup_and_applies_it_once_asked(without_package: None, tmp_path: Path) -> None:
    from wirespeed.testbed.login import shell_argv

    with running_testbed("wsc-", nodes=2, topology="direct", cables=1, user="spark", sudo="nopasswd") as (state, _):
        cluster, runs = str(state.cluster_file), str(tmp_path / "runs")
        mesh = subprocess.run(shell_argv(state, "wsc-1", ["wirespeed", "init", "--yes", "--no-check"], tty=False),
                              capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
        assert mesh.returncode == 0, mesh.stdout + mesh.stderr  # ssh between the nodes, as the owner sets it up

        offered = commission(cluster, runs, "--become")  # no --yes, no terminal: offered, not applied
        said = offered.stdout + offered.stderr
        assert offered.returncode == 1, said
        assert "tcp-lat will not run" in said and "wirespeed setup tcp-lat --yes --become" in said, said
        assert "nothing applied; run again with --yes" in said and "no rung can run here" in said, said
        assert not installed(PACKAGE)

        applied = commission(cluster, runs, "--become", "--yes")
        said = applied.stdout + applied.stderr
        assert "Traceback" not in said
        assert f"wsc-1: installed {PACKAGE}" in said and f"wsc-2: installed {PACKAGE}" in said, said
        assert installed(PACKAGE)
        run = max((tmp_path / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
        record = json.loads((run / "run.json").read_text())
        preflight = next(s for s in record["steps"] if s["name"] == "preflight")
        assert preflight["status"] == "done" and "setup: 2 step(s) applied" in preflight["detail"], preflight
        assert "1 of 1 rung(s) will run: tcp-lat" in preflight["detail"]
        kept = json.loads((run / "setup.json").read_text())
        assert kept["applied"] is True and kept["failed"] == []
        measured = json.loads((run / "before" / "tcp-lat.json").read_text())
        assert measured["status"] == "ran", measured
