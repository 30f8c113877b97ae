"""The agent the controller ships: its name (version and content hash), the zipapp (runs on a bare python3), the
scripts run on a node (argument lists), and shipping itself, here, through a transport that runs locally with
a home of the test's own."""

from __future__ import annotations

import base64
import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import ClassVar

import pytest

import wirespeed
from wirespeed import __version__
from wirespeed.adapters import agentzip
from wirespeed.adapters.ssh import LocalTransport
from wirespeed.core.cluster import agentship
from wirespeed.core.cluster.agentship import (
    CONTROLLER_ONLY,
    AgentSource,
    agent_file_name,
    content_digest,
    parse_probe,
    probe_argv,
    requirement_name,
    ship_argv,
)
from wirespeed.core.cluster.inventory import Cluster, Node
from wirespeed.engine.remote import Remote, check_agents, ensure_agents, fixed_agent_argv

SYSTEM_PYTHON = Path("/usr/bin/python3")
BARE_ENV = {"PATH": "/usr/bin:/bin"}


def system_python_new_enough() -> bool:
    if not SYSTEM_PYTHON.exists():
        return False
    out = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", "import sys; print(sys.version_info >= (3, 11))"],
        capture_output=True,
        text=True,
        env=BARE_ENV,
        check=False,
    )
    return out.stdout.strip() == "True"


needs_system_python = pytest.mark.skipif(
    not system_python_new_enough(), reason="needs /usr/bin/python3 3.11 or newer (a python without the venv)"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return agentzip.build_agent(tmp_path_factory.mktemp("agent-cache")).path


# ------------------------------------------------------------------------------------------------- the name
def test_name_carries_the_version_and_twelve_hex_digits_of_the_hash() -> None:
    digest = content_digest([("a.py", b"x")])
    assert agent_file_name("0.1.0", digest) == f"agent-0.1.0-{digest[:12]}.pyz"
    with pytest.raises(ValueError):
        agent_file_name("0.1.0; rm -rf ~", digest)


def test_digest_same_tree_same_digest_in_any_order() -> None:
    tree = [("wirespeed/a.py", b"one"), ("wirespeed/b.py", b"two")]
    assert content_digest(tree) == content_digest(list(reversed(tree)))


@pytest.mark.parametrize(
    "changed",
    [
        [("wirespeed/a.py", b"one!"), ("wirespeed/b.py", b"two")],  # a file's content
        [("wirespeed/c.py", b"one"), ("wirespeed/b.py", b"two")],  # a file's name
        [("wirespeed/a.py", b"one"), ("wirespeed/b.py", b"two"), ("wirespeed/c.py", b"")],  # a file more
        [("wirespeed/a.py", b"onewirespeed/b.py"), ("", b"two")],  # the same bytes, cut elsewhere
    ],
)
def test_digest_changes_with_the_tree(changed: list[tuple[str, bytes]]) -> None:
    assert content_digest(changed) != content_digest([("wirespeed/a.py", b"one"), ("wirespeed/b.py", b"two")])


def test_the_installed_tree_gives_one_name_and_a_changed_file_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = agentzip.agent_content.__wrapped__()
    assert first.name == agentzip.agent_content.__wrapped__().name == agentzip.agent_content().name
    assert first.name.startswith(f"agent-{__version__}-") and first.name.endswith(".pyz")

    copy = tmp_path / "wirespeed"
    shutil.copytree(Path(wirespeed.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(wirespeed, "__file__", str(copy / "__init__.py"))
    assert agentzip.agent_content.__wrapped__().name == first.name  # a copy of the same tree
    (copy / "core" / "fabric" / "units.py").write_text(
        (copy / "core" / "fabric" / "units.py").read_text() + "\n# changed\n"
    )
    assert agentzip.agent_content.__wrapped__().name != first.name


# ----------------------------------------------------------------------------------------- what goes inside
def test_requirements_follow_markers_and_skip_extras() -> None:
    assert requirement_name("markdown-it-py (>=2.2.0)") == ("markdown-it-py", False)
    assert requirement_name("Pygments<3.0.0,>=2.13.0") == ("pygments", False)
    assert requirement_name('ipywidgets (>=7.5.1,<9) ; extra == "jupyter"') is None
    assert requirement_name("colorama>=0.4.6; extra == 'windows-terminal'") is None
    assert requirement_name('typing_extensions>=4; python_version < "3.11"') == ("typing-extensions", True)


def test_the_zipapp_holds_wirespeed_and_its_runtime_dependencies_only(built: Path) -> None:
    assert built.name == agentzip.agent_content().name
    names = zipfile.ZipFile(built).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"__main__.py", "wirespeed", "click", "rich", "markdown_it", "mdurl", "pygments"}
    assert "wirespeed/cli/main.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".so"))]
    assert not [n for n in names if n.endswith(("/RECORD", "/INSTALLER", "/direct_url.json"))]
    deps = {d.split()[0].lower() for d in agentzip.agent_content().distributions}
    assert deps == {"click", "rich", "markdown-it-py", "mdurl", "pygments"}  # not pytest, ruff, mypy, orjson...


def test_a_controller_only_dependency_stays_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson is compiled: were it followed, building the agent would fail on every controller that has it."""
    ours = metadata.distribution("wirespeed")

    class WithOrjson:
        requires: ClassVar[list[str]] = [*(ours.requires or []), "orjson>=3.9"]

    real = metadata.distribution
    monkeypatch.setattr(metadata, "distribution", lambda name: WithOrjson() if name == "wirespeed" else real(name))
    files, names = agentzip._dependencies()
    assert not [n for n in names if n.lower().startswith("orjson")]
    assert not [arc for arc, _ in files if arc.startswith("orjson")]
    assert "orjson" in CONTROLLER_ONLY


def test_a_second_build_reuses_the_file(built: Path) -> None:
    stat = built.stat()
    again = agentzip.build_agent(built.parent)
    assert again.path == built and again.size_bytes == stat.st_size
    assert built.stat().st_mtime_ns == stat.st_mtime_ns
    assert sorted(p.name for p in built.parent.iterdir()) == [built.name]  # no partial file left


def test_the_same_tree_builds_the_same_bytes(built: Path, tmp_path: Path) -> None:
    assert agentzip.build_agent(tmp_path).path.read_bytes() == built.read_bytes()


def test_the_cache_is_xdg_or_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert agentzip.cache_dir() == tmp_path / "wirespeed"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert agentzip.cache_dir() == Path.home() / ".cache" / "wirespeed"


# ------------------------------------------------------------------------------------------ the zipapp runs
@needs_system_python
def test_the_zipapp_runs_on_a_bare_python(built: Path, tmp_path: Path) -> None:
    """No venv, no PYTHONPATH, from another directory: the archive alone."""
    version = subprocess.run(
        ["env", "-i", "PATH=/usr/bin:/bin", str(SYSTEM_PYTHON), str(built), "--version"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert (version.returncode, version.stdout, version.stderr) == (0, f"wirespeed {__version__}\n", "")
    bad = subprocess.run(
        ["env", "-i", "PATH=/usr/bin:/bin", str(SYSTEM_PYTHON), str(built), "agent", "sample", "--node", "x"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr  # click's own usage error, one line


@needs_system_python
def test_children_of_the_zipapp_find_wirespeed(built: Path, tmp_path: Path) -> None:
    """`agent apply` starts its rollback timer as `sys.executable -m wirespeed`: it must work from the archive."""
    code = (
        "import runpy, subprocess, sys\n"
        "sys.argv = [sys.argv[1], '--version']\n"
        "try:\n"
        "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "child = subprocess.run([sys.executable, '-m', 'wirespeed', '--version'], capture_output=True, text=True)\n"
        "print('child:', child.stdout.strip(), child.stderr.strip())\n"
    )
    out = subprocess.run(
        ["env", "-i", "PATH=/usr/bin:/bin", str(SYSTEM_PYTHON), "-c", code, str(built)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert f"child: wirespeed {__version__}" in out.stdout, out.stderr


@needs_system_python
@pytest.mark.skipif(not any(shutil.which(c) for c in ("cc", "gcc", "clang")), reason="no C compiler here")
def test_the_zipapp_builds_its_compiled_reader_from_its_own_source(built: Path, tmp_path: Path) -> None:
    """A node with a compiler gets the steady reader built from the C source inside the archive, into its cache,
    while the agent streams; the stream goes on through it and ends cleanly when stdin closes."""
    agent = subprocess.Popen(
        ["env", "-i", "PATH=/usr/bin:/bin", f"XDG_CACHE_HOME={tmp_path}", str(SYSTEM_PYTHON), str(built),
         "agent", "sample", "--node", "n", "--ifaces", "lo", "--interval", "0.01"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )  # fmt: skip
    assert agent.stdin is not None and agent.stdout is not None
    try:
        lines = 0
        cache = tmp_path / "wirespeed"
        while not (cache.is_dir() and any(p.name.startswith("steady-reader-") for p in cache.iterdir() if p.is_file())):
            assert agent.stdout.readline(), "the agent ended before its reader was built"
            lines += 1
        for _ in range(200):  # lines after the reader is there: from it, between full readings
            assert b'"node":"n"' in agent.stdout.readline()
    finally:
        agent.stdin.close()
        rest = agent.stdout.read()  # to its end: the agent ends when its stdin closes
        errors = agent.stderr.read() if agent.stderr is not None else b""
        agent.wait(timeout=30)
    assert agent.returncode == 0 and b"Traceback" not in errors, errors[-2000:]
    assert not rest or rest.endswith(b"\n")


# ------------------------------------------------------------------------------------------- remote scripts
def test_the_remote_scripts_are_fixed_with_positional_arguments() -> None:
    name = "agent-0.1.0-0123456789ab.pyz"
    probe = probe_argv(name)
    assert probe[:2] == ["sh", "-c"] and probe[3:] == ["wirespeed-probe", name]
    assert probe_argv("other")[2] == probe[2] and name not in probe[2]
    ship = ship_argv(name, "/usr/bin/python3", "0.1.0")
    assert ship[:2] == ["sh", "-c"] and ship[3:7] == ["wirespeed-ship", name, "/usr/bin/python3", "wirespeed 0.1.0"]
    assert ship_argv("x", "/opt/py", "9")[2] == ship[2] and name not in ship[2] and "/usr/bin/python3" not in ship[2]


def test_a_hostile_name_stays_one_argument(tmp_path: Path) -> None:
    name = "a b;$(touch PWNED)`touch PWNED2`'\""
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    out = subprocess.run(probe_argv(name), capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert parse_probe(out.stdout).path == f"{tmp_path}/.cache/wirespeed/{name}"
    assert not list(tmp_path.glob("PWNED*"))


def test_parse_probe() -> None:
    reply = parse_probe(
        "file=missing /home/a b/.cache/wirespeed/x.pyz\n"
        "python=3.10.12 /usr/bin/python3\n"
        "python=3.12.3 /usr/bin/python3.12\n"
    )
    assert not reply.present and reply.path == "/home/a b/.cache/wirespeed/x.pyz"
    assert reply.python() == ("/usr/bin/python3.12", (3, 12, 3))
    assert parse_probe("file=present /r/x.pyz\npython=3.10.12 /usr/bin/python3\n").python() is None
    with pytest.raises(ValueError, match="unexpected answer"):
        parse_probe("sh: 1: no\n")


def test_no_python_failure_names_the_node_version_and_what_to_do() -> None:
    reply = parse_probe("file=missing /r/x.pyz\npython=3.10.12 /usr/bin/python3\n")
    message, hint = agentship.no_python_failure("spark-2", reply)
    assert (
        message == "spark-2: python3 too old for wirespeed's agent (/usr/bin/python3 is 3.10.12; 3.11 or newer needed)"
    )
    assert "agent = [...] for spark-2" in hint
    message, _ = agentship.no_python_failure("spark-2", parse_probe("file=missing /r/x.pyz\n"))
    assert message == "spark-2: no python3 there to run wirespeed's agent (3.11 or newer needed)"


# ------------------------------------------------------------------------------------------------- shipping
@pytest.fixture
def node_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A 'node' reached through a transport that runs here, with a home of its own and a bare PATH; the
    controller's cache elsewhere (each Remote settles its nodes' agents afresh)."""
    home = tmp_path / "node-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "controller-cache"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return home


def fake_remote(*nodes: Node) -> Remote:
    return Remote(Cluster("t", nodes, "test"), transport_factory=lambda node: LocalTransport())


@needs_system_python
def test_ship_once_then_find_it_there(node_home: Path) -> None:
    node = Node("ship-test-1", "ship-test-1")
    configured = Node("ship-test-2", "ship-test-2", agent=(sys.executable, "-m", "wirespeed"))
    said: list[str] = []
    remote = fake_remote(node, configured)

    infos = ensure_agents(remote, said.append)
    name = agentzip.agent_content().name
    target = node_home / ".cache" / "wirespeed" / name
    assert infos["ship-test-1"].source is AgentSource.SHIPPED
    assert infos["ship-test-2"].source is AgentSource.CONFIGURED
    assert target.is_file() and sorted(p.name for p in target.parent.iterdir()) == [name]
    assert len(said) == 1 and re.fullmatch(
        rf"shipped {re.escape(name)} to ship-test-1 \(\d+\.\d MB, \d+\.\d s\)", said[0]
    )
    python = infos["ship-test-1"].argv[0]
    assert remote.agent_argv(node) == [python, str(target)]
    assert remote.agent_argv(configured) == fixed_agent_argv(configured) == [sys.executable, "-m", "wirespeed"]
    assert ensure_agents(remote, said.append) == infos and len(said) == 1  # once per Remote

    run = remote.run(node, [*remote.agent_argv(node), "--version"])
    assert run.ok and run.stdout == f"wirespeed {__version__}\n"
    with zipfile.ZipFile(target) as archive:  # compiled there, for that python
        assert "wirespeed/cli/main.pyc" in archive.namelist()

    mtime = target.stat().st_mtime_ns
    again = fake_remote(node, configured)
    checks = check_agents(again, say=said.append)
    assert len(said) == 1 and target.stat().st_mtime_ns == mtime  # a second command copies nothing
    assert [(c.ok, c.agent) for c in checks] == [(True, "present"), (True, "configured")]
    assert checks[0].message == (
        f"ship-test-1: wirespeed {__version__} (already there: {target}, python {checks[0].python})"
    )


def test_a_node_without_python_3_11_is_told_what_to_do(
    node_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "old-bin"
    bin_dir.mkdir()
    (bin_dir / "sh").symlink_to(shutil.which("sh", path="/usr/bin:/bin") or "/bin/sh")
    old = bin_dir / "python3"
    old.write_text('#!/bin/sh\necho "3.10.12 $0"\n')
    old.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    node = Node("ship-test-3", "ship-test-3")
    said: list[str] = []
    remote = fake_remote(node)
    infos = ensure_agents(remote, said.append)
    assert infos["ship-test-3"].source is AgentSource.FAILED
    assert len(said) == 1
    assert said[0].startswith(
        f"ship-test-3: python3 too old for wirespeed's agent ({old} is 3.10.12; 3.11 or newer needed) (hint: "
    )
    assert "agent = [...] for ship-test-3" in said[0]
    assert remote.agent_argv(node) == ["wirespeed"]  # what the node's own PATH may hold; its failure says why
    assert not (node_home / ".cache").exists()  # nothing written there

    checks = check_agents(fake_remote(node), say=said.append)
    assert len(said) == 1  # agent check reports it in its table, not twice
    assert not checks[0].ok and checks[0].agent == "failed"
    assert checks[0].message.startswith("ship-test-3: python3 too old for wirespeed's agent (")
    assert "pip install" not in checks[0].message


@needs_system_python
def test_a_cut_copy_never_takes_the_name(node_home: Path, built: Path) -> None:
    """Half an archive on stdin: the node keeps nothing under the agent's name, and no temporary file."""
    half = base64.b64encode(built.read_bytes()[: built.stat().st_size // 2]).decode()
    run = subprocess.run(
        ship_argv(built.name, str(SYSTEM_PYTHON), __version__), input=half, capture_output=True, text=True, check=False
    )
    assert run.returncode != 0
    assert list((node_home / ".cache" / "wirespeed").iterdir()) == []


@needs_system_python
def test_a_command_without_discovery_settles_the_agent_on_first_use(
    node_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fix --revert --yes` runs `agent apply` without discovering first: agent_argv settles it then."""
    node = Node("ship-test-4", "ship-test-4")
    remote = fake_remote(node)
    argv = remote.agent_argv(node)
    name = agentzip.agent_content().name
    assert argv[1:] == [str(node_home / ".cache" / "wirespeed" / name)]
    assert remote.agents["ship-test-4"].source is AgentSource.SHIPPED
    assert re.fullmatch(rf"wirespeed: shipped {re.escape(name)} to ship-test-4 \(.*\)\n", capsys.readouterr().err)
    assert remote.agent_argv(node) == argv and capsys.readouterr().err == ""
    said: list[str] = []
    told = Remote(Cluster("t", (node,), "test"), transport_factory=lambda _: LocalTransport(), say=said.append)
    assert told.agent_argv(node) == argv and said == []  # already there: nothing to say
