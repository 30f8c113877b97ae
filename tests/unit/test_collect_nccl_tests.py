"""Discovery of nccl-tests: where the binaries are looked for, the libnccl and libcudart ldd resolves for each (on
real ldd output), the snapshot line that records it (older lines still read), and the facts that carry it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from wirespeed.adapters.source import Output
from wirespeed.core.fabric.facts import Tool, Unknown, facts_from_json, to_jsonable
from wirespeed.core.parsers import ldd
from wirespeed.engine.discover import discover_snapshots
from wirespeed.engine.probes import tools

LDD = Path(__file__).parent.parent / "fixtures" / "real" / "ldd"
OVER_SSH = (LDD / "all_reduce_perf_over_ssh.txt").read_text()
WITH_PATH = (LDD / "all_reduce_perf_library_path.txt").read_text()
SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"


def test_ldd_not_found_and_resolved_libraries() -> None:
    missing = ldd.resolved(OVER_SSH)
    assert missing["libnccl.so.2"] is None and missing["libcudart.so.12"] is None
    assert missing["libmpi.so.40"] == "/lib/x86_64-linux-gnu/libmpi.so.40"
    assert "linux-vdso.so.1" not in missing and "/lib64/ld-linux-x86-64.so.2" not in missing
    found = ldd.resolved(WITH_PATH)
    assert ldd.library(found, "libnccl") == ("libnccl.so.2", "/tmp/wsldd/nccl/build/lib/libnccl.so.2")
    assert ldd.library(found, "libcudart") == ("libcudart.so.12", "/tmp/wsldd/cuda/lib64/libcudart.so.12")
    assert ldd.library(found, "libnccl-net") is None


def test_ldd_older_glibcs_vdso_line_and_a_path_with_spaces() -> None:
    text = (
        "\tlinux-vdso.so.1 =>  (0x00007fffadbfe000)\n"
        "\tlibnccl.so.2 => /opt/my nccl/lib/libnccl.so.2 (0x00007f18e7a4c000)\n"
        "\tlibcudart.so => not found\n"
    )
    assert ldd.resolved(text) == {"libnccl.so.2": "/opt/my nccl/lib/libnccl.so.2", "libcudart.so": None}


def test_the_loaders_own_directories() -> None:
    for directory in ("/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"):
        assert ldd.default_directory(directory), directory
    for directory in ("/usr/local/cuda/lib64", "/home/u/nccl/build/lib", "/usr/lib/x86_64-linux-gnu/openmpi/lib"):
        assert not ldd.default_directory(directory), directory


def _source_build(root: Path) -> None:
    """ldd's paths under `root` as on disk: libnccl.so.2 a link to libnccl.so.2.28.9."""
    lib = root / "nccl" / "build" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2.28.9").write_text("")
    (lib / "libnccl.so.2").symlink_to("libnccl.so.2.28.9")


def test_a_line_per_binary_round_trips_into_the_tools_facts(tmp_path: Path) -> None:
    _source_build(tmp_path)
    text = WITH_PATH.replace("/tmp/wsldd", str(tmp_path))
    binary = f"{tmp_path}/nccl-tests/build/all_reduce_perf"
    line = tools.nccl_tests_line(binary, Output(0, text), [f"{tmp_path}/nccl/build/lib"])
    assert line == (
        f"{binary} mpi=yes nccl={tmp_path}/nccl/build/lib/libnccl.so.2 "
        f"nccl_file={tmp_path}/nccl/build/lib/libnccl.so.2.28.9 cudart={tmp_path}/cuda/lib64/libcudart.so.12 "
        f"library_path={tmp_path}/nccl/build/lib"
    )
    tool = tools.nccl_tests_tool(line)
    assert tool == Tool(
        "all_reduce_perf",
        "present",
        path=binary,
        detail="mpi=yes",
        nccl_library=f"{tmp_path}/nccl/build/lib/libnccl.so.2",
        nccl_library_file=f"{tmp_path}/nccl/build/lib/libnccl.so.2.28.9",
        cudart_library=f"{tmp_path}/cuda/lib64/libcudart.so.12",
        library_path=(f"{tmp_path}/nccl/build/lib",),
    )


def test_not_found_is_recorded_and_read_back_as_unknown() -> None:
    line = tools.nccl_tests_line("/x/build/all_reduce_perf", Output(0, OVER_SSH), [])
    assert line == "/x/build/all_reduce_perf mpi=yes nccl=not-found cudart=not-found"
    tool = tools.nccl_tests_tool(line)
    assert tool is not None and tool.detail == "mpi=yes"
    assert tool.nccl_library == Unknown("libnccl.so.2 => not found")
    assert isinstance(tool.cudart_library, Unknown) and tool.nccl_library_file is None and tool.library_path == ()
    failed = tools.nccl_tests_line("/x/build/all_reduce_perf", Output(1, ""), [])
    assert failed == "/x/build/all_reduce_perf mpi=unknown"  # ldd failed: nothing said of the libraries


def test_older_lines_still_read_as_before() -> None:
    assert tools.nccl_tests_tool("/home/user/nccl-tests/build/sendrecv_perf mpi=no") == Tool(
        "sendrecv_perf", "present", path="/home/user/nccl-tests/build/sendrecv_perf", detail="mpi=no"
    )
    spaced = tools.nccl_tests_tool("/opt/my tests/build/all_reduce_perf mpi=yes nccl=/opt/my nccl/libnccl.so.2")
    assert spaced is not None and spaced.path == "/opt/my tests/build/all_reduce_perf"
    assert spaced.nccl_library == "/opt/my nccl/libnccl.so.2" and spaced.detail == "mpi=yes"
    assert tools.nccl_tests_tool("   ") is None


def _tree(root: Path, record: object | None) -> str:
    """A setup-built tree `root` with an executable build/all_reduce_perf and, unless None, wirespeed-build.json."""
    (root / "build").mkdir(parents=True)
    binary = root / "build" / "all_reduce_perf"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    if record is not None:
        (root / "wirespeed-build.json").write_text(record if isinstance(record, str) else json.dumps(record))
    return str(binary)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"library_path": ["/n/lib", "/usr/local/cuda/lib64"], "nccl": "2.28.9"}, ["/n/lib", "/usr/local/cuda/lib64"]),
        (None, []),
        ("{not json", []),
        (["/n/lib"], []),
        ({"library_path": "/n/lib"}, []),
        ({"library_path": ["n/lib"]}, []),
        ({"library_path": [7]}, []),
    ],
)
def test_the_build_trees_library_path(tmp_path: Path, record: object | None, expected: list[str]) -> None:
    assert tools.build_library_path(_tree(tmp_path / "tree", record)) == expected


def test_a_binary_outside_a_build_directory_has_no_tree(tmp_path: Path) -> None:
    (tmp_path / "wirespeed-build.json").write_text(json.dumps({"library_path": ["/n/lib"]}))
    assert tools.build_library_path(str(tmp_path / "all_reduce_perf")) == []


def test_setups_build_comes_first_of_the_usual_directories() -> None:
    assert tools.NCCL_TESTS_DIRS[0] == "~/.local/share/wirespeed/nccl-tests/current/build"


def test_search_order_and_ldd_run_with_the_trees_library_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    setup_binary = _tree(tmp_path / "setup", {"library_path": ["/n/lib", "/c/lib64"]})
    path_binary = _tree(tmp_path / "on-path", None)
    usual_binary = _tree(tmp_path / "usual", None)
    env_binary = _tree(tmp_path / "env", None)
    monkeypatch.setattr(tools, "NCCL_TESTS_DIRS", (os.path.dirname(setup_binary), os.path.dirname(usual_binary)))
    monkeypatch.setattr(tools, "NCCL_TESTS_BINARIES", ("all_reduce_perf",))
    monkeypatch.setenv("PATH", os.path.dirname(path_binary))
    monkeypatch.delenv("NCCL_TESTS_DIR", raising=False)
    calls: list[list[str]] = []
    monkeypatch.setattr(tools, "run_command", lambda argv: calls.append(list(argv)) or Output(0, WITH_PATH))

    def found() -> str:
        return tools.find_nccl_tests().stdout.split(" mpi=")[0]

    assert found() == setup_binary  # setup's build before PATH
    assert calls[-1] == ["env", "LD_LIBRARY_PATH=/n/lib:/c/lib64", "ldd", setup_binary]
    monkeypatch.setenv("NCCL_TESTS_DIR", os.path.dirname(env_binary))
    assert found() == env_binary  # NCCL_TESTS_DIR before everything
    assert calls[-1] == ["ldd", env_binary]  # no wirespeed-build.json: ldd in this environment
    monkeypatch.delenv("NCCL_TESTS_DIR")
    os.remove(setup_binary)
    assert found() == path_binary  # PATH before the other directories
    os.remove(path_binary)
    assert found() == usual_binary


def test_facts_carry_the_libraries_through_json_and_older_facts_still_load() -> None:
    facts = discover_snapshots([SNAPSHOTS / "spark-nccl-source"]).facts["spark-1"]
    binary = next(t for t in facts.tools if t.name == "all_reduce_perf")
    assert binary.nccl_library == "/home/user/nccl/build/lib/libnccl.so.2"
    assert binary.cudart_library == "/usr/local/cuda/lib64/libcudart.so.13"
    assert facts_from_json(json.loads(json.dumps(facts.to_json()))) == facts
    missing = Tool("all_reduce_perf", "present", path="/x", detail="mpi=yes", nccl_library=Unknown("not found"))
    assert facts_from_json({**facts.to_json(), "tools": [to_jsonable(missing)]}).tools == (missing,)
    older = facts.to_json()
    new_fields = ("nccl_library", "nccl_library_file", "cudart_library", "library_path")
    older["tools"] = [{k: v for k, v in t.items() if k not in new_fields} for t in older["tools"]]
    again = facts_from_json(older)
    old_binary = next(t for t in again.tools if t.name == "all_reduce_perf")
    assert old_binary == Tool("all_reduce_perf", "present", path=binary.path, detail="mpi=yes")


def test_the_nccl_setup_built_is_among_the_libraries_read_for_architectures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = tmp_path / "nccl" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2.28.9").write_bytes(b"\x7fELF")
    (lib / "libnccl.so.2").symlink_to("libnccl.so.2.28.9")
    binary = _tree(tmp_path / "setup", {"library_path": [str(lib)]})
    monkeypatch.setattr(tools, "NCCL_TESTS_DIRS", (os.path.dirname(binary),))
    monkeypatch.setattr(tools, "NCCL_VENV_GLOBS", ())
    monkeypatch.delenv("NCCL_TESTS_DIR", raising=False)
    monkeypatch.delenv("NCCL_HOME", raising=False)
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(tools, "run_command", lambda argv: Output(0, ""))  # an empty ldconfig cache
    assert tools.nccl_libraries() == [str(lib / "libnccl.so.2.28.9")]
    os.remove(binary)
    assert tools.nccl_libraries() == []
