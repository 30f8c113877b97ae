"""Privilege where it is needed: a privileged step goes through sudo (`-n` without a password, `-S` with the
password on stdin), never with the password in an argument list; sudo's refusals are one line with what to do; the
facts say whether they were read as root, and the checks and fix name what needs it instead of skipping quietly."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from wirespeed.adapters.ssh import LocalTransport
from wirespeed.core.checks.model import CheckInput, CheckStatus
from wirespeed.core.checks.nic import firewall
from wirespeed.core.cluster.become import Become, refusal
from wirespeed.core.cluster.inventory import Cluster, Node
from wirespeed.core.fixplan import Operation
from wirespeed.engine.fix import needs_root
from wirespeed.engine.remote import Remote

# A stand-in for sudo, put first on PATH: records its argv and stdin, wants "secret" with -S, and says what sudo
# 1.9 says when it refuses.
FAKE_SUDO = """#!/bin/sh
printf '%s\\n' "$*" >> "$SUDO_LOG"
if [ "$1" = "-n" ]; then
    [ -n "$SUDO_NOPASSWD" ] || { echo "sudo: a password is required" >&2; exit 1; }
    shift 2; exec "$@"
fi
read -r password
printf 'stdin:%s\\n' "$password" >> "$SUDO_LOG"
[ "$password" = secret ] || { echo "sudo: 1 incorrect password attempt" >&2; exit 1; }
shift 4; exec "$@"
"""


@pytest.fixture
def sudo_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sudo = bin_dir / "sudo"
    sudo.write_text(FAKE_SUDO)
    sudo.chmod(0o755)
    log = tmp_path / "sudo.log"
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("SUDO_LOG", str(log))
    return log


def remote(become: Become | None) -> Remote:
    node = Node("n1", "n1")
    return Remote(Cluster("t", (node,), "test"), transport_factory=lambda _: LocalTransport(), become=become)


def test_wrapping_keeps_the_password_out_of_the_argument_list() -> None:
    argv, stdin = Become("hunter2").wrap(["wirespeed", "agent", "probe"], None)
    assert argv == ["sudo", "-S", "-p", "", "--", "wirespeed", "agent", "probe"] and stdin == "hunter2\n"
    assert "hunter2" not in " ".join(argv) and "hunter2" not in repr(Become("hunter2"))
    assert Become().wrap(["id"], "x") == (["sudo", "-n", "--", "id"], "x")
    assert Become("p").wrap(["cat"], "data")[1] == "p\ndata"  # the command reads what follows the password


def test_a_privileged_step_goes_through_sudo_and_the_rest_does_not(sudo_log: Path) -> None:
    r = remote(Become("secret"))
    node = r.cluster.node("n1")
    assert r.run(node, ["echo", "plain"]).stdout == "plain\n"
    assert not sudo_log.exists()  # not privileged: no sudo at all
    done = r.run(node, ["echo", "as root"], privileged=True)
    assert done.ok and done.stdout == "as root\n"
    assert "secret" not in " ".join(done.argv)
    assert sudo_log.read_text().splitlines() == ["-S -p  -- echo as root", "stdin:secret"]
    assert remote(None).run(node, ["echo", "x"], privileged=True).ok  # without --become: as the user


def test_sudo_refusals_are_one_line_with_what_to_do(sudo_log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    node = Node("n1", "n1")
    wrong = remote(Become("guess")).run(node, ["true"], privileged=True)
    assert not wrong.ok and wrong.message == "n1: sudo there refused the password"
    assert wrong.hint and "--ask-become-pass" in wrong.hint
    asks = remote(Become()).run(node, ["true"], privileged=True)
    assert asks.message == "n1: sudo there asks for a password" and "--sudoers" in (asks.hint or "")
    monkeypatch.setenv("SUDO_NOPASSWD", "1")
    assert remote(Become()).run(node, ["true"], privileged=True).ok
    assert refusal("sudo: alice is not in the sudoers file.") == ("the user may not use sudo there",
                                                                  "ask for sudo there, or log in as root")  # fmt: skip
    assert refusal("permission denied") is None


def test_fix_refuses_a_plan_for_a_node_not_read_as_root() -> None:
    plan = {"a": [Operation("sysctl", "net.ipv4.tcp_rmem", "1 2 3", "sysctl.tcp")], "b": []}
    assert needs_root(plan, ("a", "c")) == ["a: fix needs root there (--become (sudo on the nodes), with "
                                            "--ask-become-pass where sudo asks for a password)"]  # fmt: skip
    assert needs_root(plan, ()) == []


def test_an_unread_firewall_says_it_needs_root(sparks_facts: CheckInput) -> None:
    from dataclasses import replace

    facts = {n: replace(f, privileged=False, firewall={}) for n, f in sparks_facts.facts.items()}
    found = firewall(CheckInput(facts, sparks_facts.cabling))
    assert found.status is CheckStatus.SKIP and "not read: needs root (--become)" in found.summary


@pytest.fixture
def sparks_facts() -> CheckInput:
    from wirespeed.engine.discover import discover_snapshots

    root = Path(__file__).resolve().parents[1] / "fixtures" / "snapshots" / "spark-two-cables"
    found = discover_snapshots([root / "spark-1", root / "spark-2"])
    return CheckInput(found.facts, found.cabling)


def test_the_cli_asks_for_no_password_without_a_terminal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from wirespeed.cli.main import main
    from wirespeed.cli.output import Environment

    path = tmp_path / "cluster.toml"
    path.write_text('[cluster]\nname = "t"\nbecome = "root"\n\n[[nodes]]\nname = "a"\nhost = "localhost"\n')
    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), width=160)
    assert main(["exec", "--cluster", str(path), "--", "true"], env) == 2
    assert "become = 'root'" in env.stderr.getvalue()  # type: ignore[attr-defined]
