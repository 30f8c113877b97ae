"""Classifying a finished command: every failure kind reads as one line that starts with the node."""

from __future__ import annotations

import json
from typing import Any

import pytest

from wirespeed.core.outcome import CommandResult, Status, classify, one_line, worst_exit_status


def run(
    returncode: int | None = 0,
    *,
    stdout: str = "",
    stderr: str = "",
    timed_out: bool = False,
    timeout_s: float | None = 30.0,
    via_ssh: bool = False,
    spawn_failed: str | None = None,
    node: str = "spark-1",
    argv: tuple[str, ...] = ("iperf3", "-c", "10.0.0.2"),
    destination: str = "alice@198.18.0.11",
) -> CommandResult:
    return classify(
        node=node,
        argv=argv,
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        duration_s=1.25,
        timed_out=timed_out,
        timeout_s=timeout_s,
        via_ssh=via_ssh,
        destination=destination,
        spawn_failed=spawn_failed,
    )


def assert_one_line(result: CommandResult, node: str = "spark-1") -> None:
    assert result.message.startswith(f"{node}: ")
    assert result.message.splitlines() == [result.message]
    assert result.message == result.message.strip()


def test_ok() -> None:
    result = run(0, stdout="fine\n", stderr="warning: something\n")
    assert result.status is Status.OK
    assert result.ok
    assert result.message == "spark-1: ok"
    assert result.hint is None
    assert result.stdout == "fine\n"
    assert result.stderr == "warning: something\n"
    assert result.argv == ("iperf3", "-c", "10.0.0.2")
    assert result.duration_s == 1.25


def test_ok_over_ssh_ignores_alarming_stderr() -> None:
    result = run(0, stderr="Permission denied (publickey)\n", via_ssh=True)
    assert result.status is Status.OK


def test_non_zero_exit_quotes_last_stderr_line() -> None:
    stderr = "iperf3: starting\n\niperf3: error - unable to connect to server: Connection refused\n\n"
    result = run(1, stderr=stderr)
    assert result.status is Status.FAILED
    assert not result.ok
    assert result.returncode == 1
    assert result.message == (
        "spark-1: iperf3 exited with status 1: iperf3: error - unable to connect to server: Connection refused"
    )
    assert_one_line(result)


def test_non_zero_exit_falls_back_to_stdout_then_nothing() -> None:
    assert run(2, stdout="line one\nlast words  \n").message == "spark-1: iperf3 exited with status 2: last words"
    assert run(2).message == "spark-1: iperf3 exited with status 2"


def test_carriage_returns_and_blank_lines_do_not_make_a_second_line() -> None:
    result = run(5, stderr="progress 10%\rprogress 90%\r\nfatal: disk full\r\n   \n")
    assert result.message == "spark-1: iperf3 exited with status 5: fatal: disk full"
    assert_one_line(result)


@pytest.mark.parametrize("via_ssh", [False, True])
def test_command_not_found(via_ssh: bool) -> None:
    result = run(127, stderr="sh: 1: iperf3: not found\n", via_ssh=via_ssh)
    assert result.status is Status.NOT_FOUND
    assert result.message == "spark-1: command not found: iperf3"
    assert result.hint == "install iperf3 on spark-1"


def test_not_executable() -> None:
    result = run(126, stderr="sh: 1: ./x: Permission denied\n", argv=("./x",))
    assert result.status is Status.NOT_FOUND
    assert result.message == "spark-1: command not executable: ./x"
    assert result.hint is not None
    assert "./x" in result.hint


def test_killed_by_signal() -> None:
    result = run(-9, stderr="partial\n")
    assert result.status is Status.FAILED
    assert result.message == "spark-1: iperf3 killed by signal 9: partial"
    assert_one_line(result)


def test_spawn_failed_locally_is_command_not_found() -> None:
    result = run(None, spawn_failed="No such file or directory", argv=("no-such-tool", "--x"))
    assert result.status is Status.NOT_FOUND
    assert result.message == "spark-1: command not found: no-such-tool"
    assert result.hint == "install no-such-tool on spark-1"
    assert result.returncode is None


def test_spawn_failed_for_ssh_says_ssh() -> None:
    result = run(None, spawn_failed="No such file or directory", via_ssh=True)
    assert result.status is Status.NOT_FOUND
    assert result.message == "spark-1: cannot start ssh: No such file or directory"
    assert result.hint is not None
    assert "openssh-client" in result.hint


def test_spawn_failed_wins_over_everything() -> None:
    result = run(None, spawn_failed="Permission denied", timed_out=True)
    assert result.status is Status.NOT_FOUND


def test_timed_out() -> None:
    result = run(-15, timed_out=True, timeout_s=2.5, stderr="half a line")
    assert result.status is Status.TIMED_OUT
    assert result.message == "spark-1: timed out after 2.5 s running iperf3"
    assert result.hint is not None
    assert "--timeout" in result.hint


def test_timed_out_wins_over_exit_status_zero() -> None:
    assert run(0, timed_out=True, timeout_s=60).status is Status.TIMED_OUT


def test_timed_out_without_a_limit_does_not_crash() -> None:
    assert run(None, timed_out=True, timeout_s=None).status is Status.TIMED_OUT


SSH_CASES = [
    ("alice@198.18.0.11: Permission denied (publickey).", Status.AUTH_FAILED, "authentication failed"),
    ("Received disconnect from 1.2.3.4: Too many authentication failures", Status.AUTH_FAILED, "authentication failed"),
    ("Host key verification failed.", Status.HOST_KEY, "host key not trusted"),
    (
        "@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key verification failed.",
        Status.HOST_KEY,
        "host key not trusted",
    ),
    ("ssh: connect to host 198.18.0.11 port 22: Connection refused", Status.UNREACHABLE, "unreachable"),
    ("ssh: connect to host 198.18.0.11 port 22: No route to host", Status.UNREACHABLE, "unreachable"),
    ("ssh: Could not resolve hostname spark-9: Name or service not known", Status.UNREACHABLE, "unreachable"),
    ("ssh: connect to host 198.18.0.11 port 22: Connection timed out", Status.UNREACHABLE, "unreachable"),
    ("kex_exchange_identification: read: Connection reset by peer", Status.UNREACHABLE, "unreachable"),
    ("Connection closed by 198.18.0.11 port 22", Status.UNREACHABLE, "unreachable"),
]


@pytest.mark.parametrize(("stderr", "status", "what"), SSH_CASES)
def test_ssh_errors(stderr: str, status: Status, what: str) -> None:
    result = run(255, stderr=stderr + "\n", via_ssh=True)
    assert result.status is status
    last = stderr.strip().splitlines()[-1].strip()
    assert result.message == f"spark-1: {what} (alice@198.18.0.11): {last}"
    assert result.hint is not None
    assert_one_line(result)


def test_auth_hint_names_the_destination() -> None:
    result = run(255, stderr="Permission denied (publickey).\n", via_ssh=True, destination="bob@h:2222")
    assert result.message == "spark-1: authentication failed (bob@h:2222): Permission denied (publickey)."
    assert result.hint is not None
    assert "ssh bob@h:2222" in result.hint


def test_ssh_255_with_unknown_stderr_is_a_failure_that_does_not_blame_the_tool_alone() -> None:
    result = run(255, stderr="something else\n", via_ssh=True)
    assert result.status is Status.FAILED
    assert "ssh's status for a failed session, or iperf3's own: something else" in result.message


def test_ssh_words_without_ssh_are_plain_failures() -> None:
    # A local command that exits 255 and mentions "Connection refused" is not an ssh failure.
    result = run(255, stderr="connect: Connection refused\n", via_ssh=False)
    assert result.status is Status.FAILED


def test_ssh_words_with_other_exit_status_are_plain_failures() -> None:
    result = run(1, stderr="Permission denied (publickey).\n", via_ssh=True)
    assert result.status is Status.FAILED


def test_ssh_first_pattern_wins() -> None:
    stderr = "Connection closed by 1.2.3.4\nPermission denied (publickey).\n"
    assert run(255, stderr=stderr, via_ssh=True).status is Status.AUTH_FAILED


@pytest.mark.parametrize(
    "kwargs",
    [
        {"returncode": 0},
        {"returncode": 1, "stderr": "a\nb\nc\n"},
        {"returncode": 127},
        {"returncode": 126},
        {"returncode": -6, "stdout": "x\ny"},
        {"returncode": None, "spawn_failed": "No such file or directory"},
        {"returncode": None, "spawn_failed": "boom", "via_ssh": True},
        {"returncode": -9, "timed_out": True},
        *[{"returncode": 255, "stderr": s + "\nmore\n", "via_ssh": True} for s, _, _ in SSH_CASES],
    ],
)
def test_every_message_starts_with_the_node_and_is_one_line(kwargs: dict[str, Any]) -> None:
    result = run(node="gpu-07", **kwargs)
    assert_one_line(result, node="gpu-07")


def test_empty_argv_is_named() -> None:
    result = run(127, argv=())
    assert result.message == "spark-1: command not found: ?"


def test_to_json_is_json() -> None:
    result = run(3, stdout="o", stderr="e\n")
    data = json.loads(json.dumps(result.to_json()))
    assert data == {
        "node": "spark-1",
        "argv": ["iperf3", "-c", "10.0.0.2"],
        "status": "failed",
        "returncode": 3,
        "stdout": "o",
        "stderr": "e\n",
        "duration_s": 1.25,
        "message": "spark-1: iperf3 exited with status 3: e",
        "hint": None,
    }


def test_status_values_are_stable() -> None:
    assert {s.value for s in Status} == {
        "ok",
        "failed",
        "command-not-found",
        "timed-out",
        "unreachable",
        "auth-failed",
        "host-key-mismatch",
    }


# --------------------------------------------------------------------------------------------- exit status
def test_worst_exit_status_all_ok() -> None:
    assert worst_exit_status([run(0), run(0)]) == 0
    assert worst_exit_status([]) == 0


def test_worst_exit_status_takes_highest_failure_code() -> None:
    assert worst_exit_status([run(0), run(3), run(2)]) == 3
    assert worst_exit_status([run(2), run(0)]) == 2


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        ({"returncode": 127}, 127),  # command not found keeps the shell's code
        ({"returncode": 255, "stderr": "Connection refused", "via_ssh": True}, 255),  # as ssh reports it
        ({"returncode": -9}, 1),
        ({"returncode": -9, "timed_out": True}, 1),
        ({"returncode": None, "spawn_failed": "nope"}, 1),
    ],
)
def test_worst_exit_status_of_other_failures(failure: dict[str, Any], expected: int) -> None:
    result = run(**failure)
    assert not result.ok
    assert worst_exit_status([run(0), result]) == expected


def test_worst_exit_status_mixes() -> None:
    timed_out = run(-9, timed_out=True)
    assert worst_exit_status([timed_out, run(4)]) == 4
    assert worst_exit_status([run(4), timed_out]) == 4


@pytest.mark.parametrize(
    "stderr",
    [
        "Timeout, server 198.18.0.12 not responding.\n",
        "client_loop: send disconnect: Broken pipe\n",
        "Connection to 198.18.0.12 closed by remote host.\n",
    ],
)
def test_a_session_that_died_is_a_lost_connection_not_the_tools_failure(stderr: str) -> None:
    """The management link dropped under a running iperf3: ssh says so, and exits 255. Not iperf3's fault."""
    result = run(255, stderr=stderr, via_ssh=True)
    assert_one_line(result)
    assert result.status is Status.UNREACHABLE
    assert result.message.startswith("spark-1: lost the connection (alice@198.18.0.11): ")
    assert "iperf3" not in result.message and "stops by itself" in (result.hint or "")


def test_an_unexplained_255_over_ssh_names_both_possibilities() -> None:
    result = run(255, stderr="something odd\n", via_ssh=True)
    assert_one_line(result)
    assert result.message == (
        "spark-1: exited with status 255 (alice@198.18.0.11): ssh's status for a failed session, or iperf3's own: "
        "something odd"
    )
    assert run(255, stderr="x\n").message == "spark-1: iperf3 exited with status 255: x"  # not over ssh: the tool's


def test_the_same_failure_on_every_flow_is_said_once() -> None:
    cause = "spark-2: lost the connection (198.18.0.12): Timeout, server 198.18.0.12 not responding."
    failures = [f"spark-1 -> spark-2 {half}: {cause}" for half in ("enp1s0f0np0", "enP2p1s0f0np0")]
    line = one_line([*failures, failures[0], "spark-1 -> spark-2 enp1s0f1np1: iperf3: no result"])
    assert line == (
        f"2 flows (spark-1 -> spark-2 enp1s0f0np0, spark-1 -> spark-2 enP2p1s0f0np0): {cause}; "
        "spark-1 -> spark-2 enp1s0f1np1: iperf3: no result"
    )
    assert line.count("Timeout") == 1
    assert one_line(["plain failure"]) == "plain failure"


def test_a_silent_255_over_ssh_is_a_lost_connection() -> None:
    """At LogLevel=ERROR ssh does not print "Timeout, server not responding": the silence is the sign."""
    result = run(255, stderr="", via_ssh=True)
    assert result.status is Status.UNREACHABLE
    assert result.message == "spark-1: lost the connection (alice@198.18.0.11): ssh ended with status 255 and no word"
