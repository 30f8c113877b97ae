"""The CLI in-process: `main(argv, env)` -> exit status, data on stdout, one-line messages on stderr."""

from __future__ import annotations

import importlib
import io
import json
import os
import pkgutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import wirespeed.cli
import wirespeed.testbed.system
from wirespeed import __version__
from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.checks.model import REGISTRY, CheckInput, CheckResult, CheckSpec
from wirespeed.core.errors import ExitStatus, InventoryError
from wirespeed.engine.checks import load_checks

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "tests" / "fixtures" / "snapshots" / "spark-two-cables"


@dataclass
class Run:
    status: int
    stdout: str
    stderr: str


def cli(*argv: str) -> Run:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    status = main(list(argv), env)
    assert isinstance(env.stdout, io.StringIO)
    assert isinstance(env.stderr, io.StringIO)
    return Run(status, env.stdout.getvalue(), env.stderr.getvalue())


def assert_one_line_error(run: Run) -> str:
    assert "Traceback" not in run.stderr + run.stdout
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


@pytest.fixture(autouse=True)
def no_real_testbed(testbed_dir: Path) -> Path:
    """Every CLI test sees an empty testbed directory: nothing up, nothing to find under /run."""
    return testbed_dir


@pytest.fixture
def local_agent_cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.toml"
    agent = json.dumps([sys.executable, "-m", "wirespeed"])
    path.write_text(f'[cluster]\nname = "lab"\n\n[[nodes]]\nname = "here"\nhost = "localhost"\nagent = {agent}\n')
    return path


# --------------------------------------------------------------------------------------------------- version
@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    run = cli(flag)
    printed = run.stdout + capsys.readouterr().out
    assert run.status == 0
    assert printed == f"wirespeed {__version__}\n"
    assert run.stderr == ""


def test_version_goes_to_the_environments_stdout() -> None:
    assert cli("--version").stdout == f"wirespeed {__version__}\n"


# ------------------------------------------------------------------------------------------------------ exec
def test_exec_json() -> None:
    run = cli("exec", "--hosts", "localhost", "--json", "--", "echo", "hi")
    assert run.status == 0
    data = json.loads(run.stdout)  # nothing but JSON on stdout
    assert data["cluster"] == "hosts"
    (result,) = data["results"]
    assert result["node"] == "localhost"
    assert result["argv"] == ["echo", "hi"]
    assert result["status"] == "ok"
    assert result["returncode"] == 0
    assert result["stdout"] == "hi\n"
    assert run.stderr == ""


def test_exec_passes_arguments_untouched() -> None:
    run = cli("exec", "--hosts", "localhost", "--json", "--", "printf", "%s|", "a; exit 9", "$(id)", "--json", "-x")
    assert run.status == 0
    assert json.loads(run.stdout)["results"][0]["stdout"] == "a; exit 9|$(id)|--json|-x|"


def test_exec_human_output() -> None:
    run = cli("exec", "--hosts", "localhost", "--", "echo", "hi")
    assert run.status == 0
    assert "localhost" in run.stdout
    assert "hi" in run.stdout.splitlines()
    assert run.stderr == ""


def test_exec_exit_status_of_the_command() -> None:
    run = cli("exec", "--hosts", "localhost", "--", "sh", "-c", "echo bad >&2; exit 3")
    assert run.status == 3
    line = assert_one_line_error(run)
    assert line == "wirespeed: localhost: sh exited with status 3: bad"


def test_exec_missing_command() -> None:
    run = cli("exec", "--hosts", "localhost", "--", "no-such-wirespeed-command-xyz")
    assert run.status != 0
    line = assert_one_line_error(run)
    assert line.startswith("wirespeed: localhost: command not found: no-such-wirespeed-command-xyz")
    assert "hint: install no-such-wirespeed-command-xyz" in line


def test_exec_missing_command_json_keeps_stdout_clean() -> None:
    run = cli("exec", "--hosts", "localhost", "--json", "--", "no-such-wirespeed-command-xyz")
    assert run.status != 0
    assert json.loads(run.stdout)["results"][0]["status"] == "command-not-found"
    assert_one_line_error(run)


def test_exec_timeout() -> None:
    run = cli("exec", "--hosts", "localhost", "--timeout", "0.3", "--", "sleep", "10")
    assert run.status == 1
    line = assert_one_line_error(run)
    assert line.startswith("wirespeed: localhost: timed out after 0.3 s running sleep")


def test_exec_on_several_nodes_reports_each_failure(tmp_path: Path) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text('[[nodes]]\nname = "a"\nhost = "localhost"\n[[nodes]]\nname = "b"\nhost = "127.0.0.1"\n')
    run = cli("exec", "--cluster", str(cluster), "--json", "--", "sh", "-c", "exit 2")
    assert run.status == 2
    data = json.loads(run.stdout)
    assert [r["node"] for r in data["results"]] == ["a", "b"]
    assert run.stderr.splitlines() == ["wirespeed: a: sh exited with status 2", "wirespeed: b: sh exited with status 2"]


def test_exec_missing_cluster_file() -> None:
    run = cli("exec", "--cluster", "/nonexistent.toml", "--", "true")
    assert run.status == 2
    line = assert_one_line_error(run)
    assert line.startswith("wirespeed: error: /nonexistent.toml: cluster file not found")
    assert run.stdout == ""


def test_exec_malformed_cluster_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[cluster]\nname = "lab"\n[[nodes]]\nname = "a"\nhost = \n')
    run = cli("exec", "--cluster", str(path), "--", "true")
    assert run.status == 2
    line = assert_one_line_error(run)
    assert line.startswith(f"wirespeed: error: {path}: not valid TOML")
    assert "line 5" in line


def test_exec_invalid_node_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[nodes]]\nname = "a"\nhost = "localhost"\n\n[[nodes]]\nname = "b"\nhost = "-oProxyCommand=id"\n')
    run = cli("exec", "--cluster", str(path), "--", "true")
    assert run.status == 2
    line = assert_one_line_error(run)
    assert line.startswith(f"wirespeed: error: {path}:6: node b: host")


def test_exec_bad_hosts() -> None:
    run = cli("exec", "--hosts", "-oProxyCommand=id", "--", "true")
    assert run.status == 2
    assert assert_one_line_error(run).startswith("wirespeed: error: --hosts: ")


def test_exec_cluster_and_hosts_together() -> None:
    run = cli("exec", "--cluster", "/x.toml", "--hosts", "localhost", "--", "true")
    assert run.status == 2
    assert assert_one_line_error(run) == "wirespeed: error: give --cluster or --hosts, not both"


def test_exec_without_a_cluster_named_stops_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No implicit localhost (nor testbed): the nodes are named on purpose (tests/unit/test_clusters.py)."""
    for name in ("WIRESPEED_CLUSTER", "SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    run = cli("exec", "--json", "--", "echo", "hi")
    assert run.status == 2 and run.stdout == ""
    line = assert_one_line_error(run)
    assert line == "wirespeed: error: no cluster: run `wirespeed init` on a node, or pass --cluster/--hosts"
    local = cli("exec", "--hosts", "localhost", "--json", "--", "echo", "hi")
    assert local.status == 0 and json.loads(local.stdout)["results"][0]["stdout"] == "hi\n"


def test_exec_without_a_command_is_a_usage_error() -> None:
    run = cli("exec", "--hosts", "localhost")
    assert run.status == 2
    assert assert_one_line_error(run).startswith("wirespeed: error: ")


def test_unknown_command() -> None:
    run = cli("no-such-subcommand")
    assert run.status == 2
    assert "no-such-subcommand" in assert_one_line_error(run)


def test_debug_shows_the_exception() -> None:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    with pytest.raises(InventoryError, match="cluster file not found"):
        main(["--debug", "exec", "--cluster", "/nonexistent.toml", "--", "true"], env)


# ----------------------------------------------------------------------------------------------------- agent
def test_agent_check_ok(local_agent_cluster: Path) -> None:
    run = cli("agent", "check", "--cluster", str(local_agent_cluster), "--json")
    assert run.status == 0
    agent = f"{sys.executable} -m wirespeed"
    assert json.loads(run.stdout) == [
        {
            "node": "here",
            "ok": True,
            "version": __version__,
            "agent": "configured",
            "file": None,
            "python": None,
            "message": f"here: wirespeed {__version__} (configured: {agent})",
        }
    ]


def test_agent_check_missing(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[nodes]]\nname = "here"\nhost = "localhost"\nagent = ["no-such-wirespeed-binary"]\n')
    run = cli("agent", "check", "--cluster", str(path))
    assert run.status == 1
    assert run.stdout.startswith("FAIL  here: its agent no-such-wirespeed-binary is not there (")
    assert "pip install" not in run.stdout
    assert "remove it so that wirespeed ships itself there" in run.stdout


# --------------------------------------------------------------------------------------------------- testbed
@pytest.mark.skipif(os.geteuid() == 0, reason="runs as root: `testbed up` would really build")
def test_testbed_up_needs_root() -> None:
    run = cli("testbed", "up")
    assert run.status != 0
    line = assert_one_line_error(run)
    assert line.startswith("wirespeed: error: ")
    assert "root" in line


def test_testbed_up_needs_root_even_when_run_as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # The same check as above, as a non-root user would see it; nothing past the root check may run.
    monkeypatch.setattr(os, "geteuid", lambda: 1000)

    def must_not_run() -> str:
        raise AssertionError("testbed up went past the root check")

    monkeypatch.setattr(wirespeed.testbed.system, "require_tools", must_not_run)
    run = cli("testbed", "up", "--prefix", "wsunit-")
    assert run.status == 1
    line = assert_one_line_error(run)
    assert line.startswith("wirespeed: error: the testbed needs root")
    assert "sudo" in line


def test_testbed_up_bad_rate_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_run(**kwargs: object) -> None:
        raise AssertionError("testbed up ran with a bad rate")

    monkeypatch.setattr("wirespeed.testbed.build.up", must_not_run)
    run = cli("testbed", "up", "--half-rate", "fast")
    assert run.status == 2
    line = assert_one_line_error(run)
    assert line.startswith("wirespeed: error: not a rate: 'fast'")


@pytest.mark.parametrize(("given", "expected"), [("none", 0), ("NONE", 0), ("2gbit", 2 * 10**9)])
def test_testbed_up_half_rate_none_leaves_the_halves_unshaped(
    monkeypatch: pytest.MonkeyPatch, given: str, expected: int
) -> None:
    seen: dict[str, object] = {}

    class Stop(Exception):
        pass

    def up(**kwargs: object) -> None:
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr("wirespeed.testbed.build.up", up)
    with pytest.raises(Stop):
        main(["testbed", "up", "--half-rate", given], Environment(stdout=io.StringIO(), stderr=io.StringIO()))
    assert seen["half_rate_bps"] == expected


# ---------------------------------------------------------------------------------------------- exit statuses
@pytest.mark.parametrize(
    "argv",
    [
        ("bench", "--seconds", "1"),  # click refuses it
        ("check", "--snapshot", str(SNAPSHOT), "--only", "no.such"),  # wirespeed refuses it
    ],
)
def test_a_usage_error_is_2_and_one_line(argv: tuple[str, ...]) -> None:
    run = cli(*argv)
    assert run.status == ExitStatus.USAGE == 2
    assert assert_one_line_error(run).startswith("wirespeed: error: ")
    assert run.stdout == ""


def test_check_on_a_snapshot_passes_through_its_status() -> None:
    run = cli("check", "--snapshot", str(SNAPSHOT), "--only", "mtu.host", "--json")
    assert run.status == ExitStatus.OK
    assert json.loads(run.stdout)["exit_status"] == 0


def test_check_a_snapshot_with_a_check_that_cannot_run_is_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    load_checks()

    def unreadable(data: CheckInput) -> CheckResult:
        raise OSError("cannot read it")

    monkeypatch.setitem(REGISTRY, "mtu.host", CheckSpec("mtu.host", REGISTRY["mtu.host"].title, unreadable))
    run = cli("check", "--snapshot", str(SNAPSHOT), "--json")
    assert run.status == ExitStatus.NOT_MEASURED == 3
    data = json.loads(run.stdout)
    assert data["exit_status"] == 3
    assert data["errors"] == ["check mtu.host could not run: OSError: cannot read it"]


@pytest.mark.parametrize("command", ["check", "discover"])
def test_a_node_that_cannot_be_read_is_not_measured(command: str, tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[nodes]]\nname = "here"\nhost = "localhost"\nagent = ["no-such-wirespeed-binary"]\n')
    run = cli(command, "--cluster", str(path), "--no-probe" if command == "discover" else "--no-active")
    assert run.status == ExitStatus.NOT_MEASURED == 3
    assert "here: command not found: no-such-wirespeed-binary" in run.stderr + run.stdout


def _cli_modules() -> list[str]:
    return sorted(f"wirespeed.cli.{m.name}" for m in pkgutil.iter_modules(wirespeed.cli.__path__))


@pytest.mark.parametrize("module", _cli_modules())
def test_each_cli_module_imports_alone(module: str) -> None:
    """In a fresh interpreter, so that no earlier import hides a cycle; no command module needs wirespeed.cli.main."""
    code = (
        f"import importlib, sys; importlib.import_module({module!r}); "
        f"sys.exit({module!r} != 'wirespeed.cli.main' and 'wirespeed.cli.main' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_command_modules_are_there() -> None:
    assert {"wirespeed.cli.bench", "wirespeed.cli.common", "wirespeed.cli.main"} <= set(_cli_modules())
    assert "wirespeed.cli.app" not in _cli_modules()


def test_main_version_returns_ok() -> None:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO())
    assert main(["--version"], env) == ExitStatus.OK
    assert isinstance(env.stdout, io.StringIO) and env.stdout.getvalue() == f"wirespeed {__version__}\n"


def test_the_entry_points_are_main() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["wirespeed"].partition(":")
    assert getattr(importlib.import_module(module), name) is main
    done = subprocess.run([sys.executable, "-m", "wirespeed", "--version"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"wirespeed {__version__}\n")
