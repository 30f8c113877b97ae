"""The node side of `setup`'s builds: its commands and make run through adapters/process.py, and what each says
when it cannot run, is stopped or fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from wirespeed.adapters import toolchain_node

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture(autouse=True)
def no_outer_make(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a node: no make above this one (under `make test`, MAKELEVEL makes a make say where it enters)."""
    for name in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS"):
        monkeypatch.delenv(name, raising=False)


def test_a_command_gives_its_status_and_its_output() -> None:
    assert toolchain_node._run(["sh", "-c", "echo out; echo err >&2; exit 3"]) == (3, "out\nerr\n")


def test_a_missing_command_is_named_as_not_installed() -> None:
    assert toolchain_node._run(["wirespeed-no-such-tool"]) == (127, "wirespeed-no-such-tool: not installed")


def test_a_command_past_its_time_is_stopped_and_says_so() -> None:
    assert toolchain_node._run(["sleep", "30"], timeout_s=0.2) == (127, "sleep: stopped after 0.2 s")


def test_make_counts_what_it_compiled_and_keeps_its_log(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("all:\n\t@echo Compiling a.c\n\t@echo Compiling b.cu\n\t@echo linked >&2\n")
    toolchain_node._make("nccl", tmp_path, ["all"])
    assert (tmp_path / "build.log").read_text() == "Compiling a.c\nCompiling b.cu\nlinked\n"


def test_a_failed_make_says_after_how_many_files_and_where_its_log_is(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("all:\n\t@echo Compiling a.c\n\t@exit 2\n")
    with pytest.raises(toolchain_node.BuildError) as failed:
        toolchain_node._make("nccl", tmp_path, ["all"])
    assert str(failed.value) == f"make failed (exit 2) after 1 files; log: {tmp_path / 'build.log'}"
