"""Which nodes a command acts on: only clusters named on purpose (--cluster, --hosts, $WIRESPEED_CLUSTER, a Slurm
allocation, the file `wirespeed init` wrote, in that order), never an emulated cluster that happens to be up, never
this machine by default. Every test gives `resolve_cluster` its environment (`env=`) and tmp paths: no real home."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest

from wirespeed.cli.main import main
from wirespeed.cli.output import Environment
from wirespeed.core.cluster.slurm import Launcher
from wirespeed.core.errors import ExitStatus, InventoryError, UsageError
from wirespeed.engine import clusters
from wirespeed.engine.clusters import NO_CLUSTER, default_cluster_path, init_cluster_path, resolve_cluster

SLURM = {"SLURM_JOB_ID": "9", "SLURM_JOB_NODELIST": "n[1-2]"}


def cluster_file(path: Path, *names: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f'[[nodes]]\nname = "{n}"\nhost = "{n}.example"\n\n' for n in names))
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A cluster file for each way of naming one: --cluster, $WIRESPEED_CLUSTER, init's (under XDG_CONFIG_HOME)."""
    return {
        "option": cluster_file(tmp_path / "option.toml", "opt-1"),
        "variable": cluster_file(tmp_path / "variable.toml", "var-1"),
        "init": cluster_file(tmp_path / "xdg" / "wirespeed" / "cluster.toml", "init-1"),
    }


def everything(files: dict[str, Path]) -> dict[str, str]:
    """An environment where every implicit source names a cluster."""
    return {"WIRESPEED_CLUSTER": str(files["variable"]), "XDG_CONFIG_HOME": str(files["init"].parents[1]), **SLURM}


def names(cluster_file: Path | None, hosts: str | None, env: dict[str, str]) -> tuple[tuple[str, ...], str | None]:
    resolved = resolve_cluster(cluster_file, hosts, None, Launcher.SSH, env)
    return resolved.cluster.names, resolved.note


def test_the_cluster_option_comes_first_and_is_not_said(files: dict[str, Path]) -> None:
    assert names(files["option"], None, everything(files)) == (("opt-1",), None)


def test_hosts_come_before_the_variable(files: dict[str, Path]) -> None:
    assert names(None, "h1,h2", everything(files)) == (("h1", "h2"), None)


def test_the_variable_comes_before_slurm_and_init_and_is_said(files: dict[str, Path]) -> None:
    found, note = names(None, None, everything(files))
    assert found == ("var-1",)
    assert note == f"using $WIRESPEED_CLUSTER={files['variable']}"


def test_the_variable_naming_a_missing_file_is_one_line_naming_both(tmp_path: Path) -> None:
    missing = tmp_path / "gone.toml"
    with pytest.raises(InventoryError) as err:
        resolve_cluster(None, None, env={"WIRESPEED_CLUSTER": str(missing)})
    line = str(err.value)
    assert line.startswith(f"$WIRESPEED_CLUSTER={missing}: ") and "\n" not in line
    assert err.value.exit_status == ExitStatus.USAGE


def test_slurm_comes_before_the_file_init_wrote(files: dict[str, Path]) -> None:
    env = {"XDG_CONFIG_HOME": str(files["init"].parents[1]), **SLURM}
    found, note = names(None, None, env)
    assert found == ("n1", "n2") and note == "using the nodes of Slurm job 9 (n[1-2]) over ssh"


def test_the_file_init_wrote_under_xdg_config_home(files: dict[str, Path]) -> None:
    found, note = names(None, None, {"XDG_CONFIG_HOME": str(files["init"].parents[1])})
    assert found == ("init-1",)
    assert note == f"using {files['init']} (written by wirespeed init)"


def test_the_file_init_wrote_under_home_without_xdg(tmp_path: Path) -> None:
    written = cluster_file(tmp_path / "home" / ".config" / "wirespeed" / "cluster.toml", "home-1")
    env = {"HOME": str(tmp_path / "home")}
    assert init_cluster_path(env) == written
    assert names(None, None, env) == (("home-1",), f"using {written} (written by wirespeed init)")


def test_init_writes_where_the_variable_says_but_reads_it_only_as_the_variable(files: dict[str, Path]) -> None:
    env = everything(files)
    assert default_cluster_path(env) == files["variable"]
    assert init_cluster_path(env) == files["init"]


def test_nothing_named_is_a_usage_error_of_one_line(tmp_path: Path) -> None:
    empty = {"XDG_CONFIG_HOME": str(tmp_path / "empty"), "HOME": str(tmp_path), "WIRESPEED_CLUSTER": ""}
    with pytest.raises(UsageError) as err:
        resolve_cluster(None, None, env=empty)
    assert str(err.value) == NO_CLUSTER == "no cluster: run `wirespeed init` on a node, or pass --cluster/--hosts"
    assert err.value.exit_status == ExitStatus.USAGE and int(ExitStatus.USAGE) == 2


def test_cluster_resolution_does_not_look_at_testbeds() -> None:
    """No implicit emulated cluster: the module does not even import the testbed."""
    tree = ast.parse(Path(clusters.__file__).read_text())
    imported = [
        name
        for node in ast.walk(tree)
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
    ]
    assert imported and not any(name.startswith("wirespeed.testbed") for name in imported)


# ------------------------------------------------------------------------------------------ through the command line
@pytest.fixture
def no_cluster_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process environment names no cluster: no variable, no Slurm, an empty config directory and home."""
    for name in ("WIRESPEED_CLUSTER", "SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def cli(*argv: str) -> tuple[int, str, str]:
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=200)
    status = main(list(argv), env)
    return status, env.stdout.getvalue(), env.stderr.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "argv",
    [
        ("exec", "--", "true"),
        ("check", "--only", "mtu.host"),
        ("fix",),
        ("discover",),
        ("agent", "check"),
        ("watch", "--once"),
        ("bench", "tcp"),
        ("commission", "--yes"),
    ],
)
def test_commands_that_act_on_nodes_need_them_named(no_cluster_named: Path, argv: tuple[str, ...]) -> None:
    status, stdout, stderr = cli(*argv)
    assert (status, stdout) == (2, "")
    assert stderr == f"wirespeed: error: {NO_CLUSTER}\n"


def test_localhost_stays_possible_when_named(no_cluster_named: Path) -> None:
    status, stdout, stderr = cli("exec", "--hosts", "localhost", "--", "echo", "hi")
    assert status == 0 and "hi" in stdout and stderr == ""


def test_the_variable_is_said_on_stderr(no_cluster_named: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = no_cluster_named / "here.toml"
    path.write_text('[[nodes]]\nname = "here"\nhost = "localhost"\n')
    monkeypatch.setenv("WIRESPEED_CLUSTER", str(path))
    status, stdout, stderr = cli("exec", "--", "echo", "hi")
    assert status == 0 and "hi" in stdout
    assert stderr == f"wirespeed: using $WIRESPEED_CLUSTER={path}\n"


def test_init_file_is_said_on_stderr(no_cluster_named: Path) -> None:
    path = no_cluster_named / "config" / "wirespeed" / "cluster.toml"
    path.parent.mkdir(parents=True)
    path.write_text('[[nodes]]\nname = "here"\nhost = "localhost"\n')
    status, _, stderr = cli("exec", "--", "true")
    assert status == 0 and stderr == f"wirespeed: using {path} (written by wirespeed init)\n"
