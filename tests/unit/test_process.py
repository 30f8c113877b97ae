"""Local processes with an owner: real (tiny) processes, timeouts that kill whole groups, and the watchdog."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from wirespeed.adapters.process import (
    SILENCE_S,
    WATCHDOG_SCRIPT,
    heartbeat,
    kill_group,
    run_process,
    spawn,
    watchdog_argv,
)

KillAfter = Callable[[int], int]
WaitGone = Callable[..., bool]


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def close_pipes(proc: subprocess.Popen[str]) -> None:
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None and not stream.closed:
            stream.close()


# ------------------------------------------------------------------------------------------------ run_process
def test_true() -> None:
    outcome = run_process(["true"])
    assert outcome.returncode == 0
    assert outcome.stdout == ""
    assert outcome.stderr == ""
    assert not outcome.timed_out
    assert outcome.spawn_error is None
    assert 0 <= outcome.duration_s < 5


def test_output_and_exit_status() -> None:
    outcome = run_process(["sh", "-c", "echo x; echo oops >&2; exit 3"])
    assert outcome.returncode == 3
    assert outcome.stdout == "x\n"
    assert outcome.stderr == "oops\n"
    assert not outcome.timed_out


def test_argv_is_not_interpreted_by_a_shell() -> None:
    outcome = run_process(["printf", "%s|", "a; exit 9", "$(id)", "x y"])
    assert outcome.returncode == 0
    assert outcome.stdout == "a; exit 9|$(id)|x y|"


def test_signal_is_a_negative_returncode() -> None:
    outcome = run_process(["sh", "-c", "kill -KILL $$"])
    assert outcome.returncode == -signal.SIGKILL


def test_undecodable_output_is_replaced_not_raised() -> None:
    outcome = run_process(["printf", "ok \\377\\376\\n"])
    assert outcome.returncode == 0
    assert outcome.stdout.startswith("ok ")
    assert "\ufffd" in outcome.stdout


def test_input_text_is_fed_to_stdin() -> None:
    outcome = run_process(["cat"], input_text="hello\nworld\n")
    assert outcome.stdout == "hello\nworld\n"


def test_stdin_is_dev_null_by_default() -> None:
    # A command that reads stdin must not hang waiting for a terminal.
    outcome = run_process(["cat"], timeout_s=5)
    assert not outcome.timed_out
    assert outcome.returncode == 0
    assert outcome.stdout == ""


def test_env_replaces_the_environment() -> None:
    outcome = run_process(["sh", "-c", 'echo "$WS_TEST/${HOME:-unset}"'], env={"WS_TEST": "v", "PATH": os.defpath})
    assert outcome.stdout == "v/unset\n"


def test_child_runs_in_its_own_session() -> None:
    code = "import os; print(os.getsid(0) == os.getpid() == os.getpgid(0))"
    outcome = run_process([sys.executable, "-c", code])
    assert outcome.stdout == "True\n"


def test_timeout_kills_the_process_group_including_a_grandchild(kill_after: KillAfter, wait_gone: WaitGone) -> None:
    started = time.monotonic()
    outcome = run_process(["sh", "-c", "sleep 30 & echo $!; wait"], timeout_s=0.5)
    elapsed = time.monotonic() - started
    grandchild = kill_after(int(outcome.stdout.split()[0]))
    assert outcome.timed_out
    assert 0.4 <= elapsed < 4
    assert outcome.duration_s == pytest.approx(elapsed, abs=0.2)
    assert outcome.returncode is not None
    assert outcome.returncode < 0
    assert wait_gone(grandchild, 2.0), f"grandchild {grandchild} survived the timeout"


def test_timeout_keeps_output_written_before_it() -> None:
    outcome = run_process(["sh", "-c", "echo before; echo err >&2; sleep 30"], timeout_s=0.3)
    assert outcome.timed_out
    assert outcome.stdout == "before\n"
    assert outcome.stderr == "err\n"


def test_timeout_kills_a_background_child_of_an_exited_leader(kill_after: KillAfter, wait_gone: WaitGone) -> None:
    outcome = run_process(["sh", "-c", "sleep 2 & echo $!"], timeout_s=0.2)
    kill_after(int(outcome.stdout.split()[0]))
    assert outcome.timed_out
    assert outcome.duration_s < 1.5


def test_spawn_error_for_a_missing_program() -> None:
    before = open_fds()
    outcome = run_process(["no-such-wirespeed-program-xyz", "--version"])
    assert outcome.returncode is None
    assert outcome.spawn_error == "No such file or directory"
    assert outcome.stdout == ""
    assert not outcome.timed_out
    assert open_fds() == before


def test_spawn_error_with_hold_stdin_leaks_no_descriptor() -> None:
    before = open_fds()
    outcome = run_process(["no-such-wirespeed-program-xyz"], hold_stdin=True)
    assert outcome.spawn_error is not None
    assert open_fds() == before


def test_spawn_error_for_a_directory() -> None:
    outcome = run_process(["/"])
    assert outcome.returncode is None
    assert outcome.spawn_error == "Permission denied"


def test_hold_stdin_gives_the_child_a_pipe_and_closes_it_after() -> None:
    before = open_fds()
    outcome = run_process(["sh", "-c", "readlink /proc/$$/fd/0"], hold_stdin=True)
    assert outcome.returncode == 0
    assert outcome.stdout.startswith("pipe:")
    assert open_fds() == before
    plain = run_process(["sh", "-c", "readlink /proc/$$/fd/0"])
    assert plain.stdout == "/dev/null\n"


def test_hold_stdin_keeps_the_pipe_open_while_waiting() -> None:
    # No end of file while we wait: a reader of stdin blocks until the timeout.
    outcome = run_process(["cat"], hold_stdin=True, timeout_s=0.3)
    assert outcome.timed_out


def test_input_text_wins_over_hold_stdin() -> None:
    outcome = run_process(["cat"], input_text="data", hold_stdin=True, timeout_s=5)
    assert not outcome.timed_out
    assert outcome.stdout == "data"


# ------------------------------------------------------------------------------------------------- kill_group
def test_kill_group_escalates_to_sigkill(kill_after: KillAfter, wait_gone: WaitGone) -> None:
    proc = subprocess.Popen(
        ["sh", "-c", "trap '' TERM; sleep 30 & echo $!; wait"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    kill_after(proc.pid)
    assert proc.stdout is not None
    grandchild = kill_after(int(proc.stdout.readline()))
    started = time.monotonic()
    kill_group(proc, grace_s=0.2)
    assert time.monotonic() - started < 3
    assert proc.returncode == -signal.SIGKILL
    assert wait_gone(grandchild, 2.0)
    close_pipes(proc)


def test_kill_group_on_a_finished_process_is_a_no_op() -> None:
    proc = subprocess.Popen(["true"], start_new_session=True)
    proc.wait()
    kill_group(proc)
    assert proc.returncode == 0


# --------------------------------------------------------------------------------------------------- watchdog
def test_watchdog_argv_keeps_user_values_out_of_the_script() -> None:
    argv = ["echo", "$(id)", "a; b"]
    wrapped = watchdog_argv(argv)
    assert wrapped[:5] == ["sh", "-c", WATCHDOG_SCRIPT, "wirespeed-watchdog", str(SILENCE_S)]
    assert wrapped[5:] == argv


def test_watchdog_passes_arguments_and_output_through() -> None:
    outcome = run_process(watchdog_argv(["printf", "%s\\n", "a; exit 9", "$(id)", "x y", ""]), hold_stdin=True)
    assert outcome.returncode == 0
    assert outcome.stdout == "a; exit 9\n$(id)\nx y\n\n"


@pytest.mark.parametrize("code", [0, 1, 7, 42])
def test_watchdog_passes_the_exit_status_through(code: int) -> None:
    outcome = run_process(watchdog_argv(["sh", "-c", f"echo out; echo err >&2; exit {code}"]), hold_stdin=True)
    assert outcome.returncode == code
    assert outcome.stdout == "out\n"
    assert outcome.stderr == "err\n"


def test_watchdog_exit_status_through_spawn() -> None:
    proc = spawn(watchdog_argv(["sh", "-c", "exit 7"]))
    try:
        assert proc.wait(timeout=5) == 7
    finally:
        close_pipes(proc)


def test_watchdog_command_does_not_read_the_controllers_pipe() -> None:
    # The wrapped command's stdin is /dev/null: `cat` ends at once although our end of the pipe stays open.
    outcome = run_process(watchdog_argv(["cat"]), hold_stdin=True, timeout_s=5)
    assert not outcome.timed_out
    assert outcome.returncode == 0


def start_watched(argv: list[str], kill_after: KillAfter) -> tuple[subprocess.Popen[str], int]:
    """spawn() a watched command that prints a pid first; returns the watchdog and that pid."""
    proc = spawn(watchdog_argv(argv))
    kill_after(proc.pid)
    assert proc.stdout is not None
    pid = kill_after(int(proc.stdout.readline()))
    return proc, pid


def test_watchdog_stops_the_command_when_stdin_closes(kill_after: KillAfter, pid_alive: Callable[[int], bool]) -> None:
    proc, pid = start_watched(["sh", "-c", "echo $$; exec sleep 30"], kill_after)
    try:
        time.sleep(0.2)
        assert pid_alive(pid)
        assert proc.poll() is None
        assert proc.stdin is not None
        started = time.monotonic()
        proc.stdin.close()
        proc.wait(timeout=5)
        assert time.monotonic() - started < 2
        assert not pid_alive(pid)
    finally:
        close_pipes(proc)


def test_watchdog_stops_the_whole_process_group(kill_after: KillAfter, wait_gone: WaitGone) -> None:
    proc, grandchild = start_watched(["sh", "-c", "sleep 30 & echo $!; sleep 30"], kill_after)
    try:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=5)
        assert wait_gone(grandchild, 2.0), "the command's own child outlived the watchdog"
    finally:
        close_pipes(proc)


def test_watchdog_stops_the_command_when_it_is_terminated(kill_after: KillAfter, wait_gone: WaitGone) -> None:
    proc, pid = start_watched(["sh", "-c", "echo $$; exec sleep 30"], kill_after)
    try:
        proc.terminate()
        proc.wait(timeout=5)
        assert wait_gone(pid, 2.0)
    finally:
        close_pipes(proc)


def test_watchdog_kills_a_command_that_ignores_sigterm(kill_after: KillAfter, wait_gone: WaitGone) -> None:
    proc, pid = start_watched(["sh", "-c", "trap '' TERM; echo $$; exec sleep 30"], kill_after)
    try:
        assert proc.stdin is not None
        started = time.monotonic()
        proc.stdin.close()
        assert proc.wait(timeout=8) == 128 + signal.SIGKILL
        assert wait_gone(pid, 1.0)
        assert time.monotonic() - started < 6
    finally:
        close_pipes(proc)


def test_run_process_timeout_stops_a_watched_command(kill_after: KillAfter, wait_gone: WaitGone) -> None:
    # What Remote.run does over ssh: watchdog + held stdin. Giving up must stop the command, not just the wrapper.
    outcome = run_process(watchdog_argv(["sh", "-c", "echo $$; exec sleep 30"]), hold_stdin=True, timeout_s=0.5)
    pid = kill_after(int(outcome.stdout.split()[0]))
    assert outcome.timed_out
    assert outcome.duration_s < 4
    assert wait_gone(pid, 2.0)


def test_a_watched_command_whose_controller_falls_silent_stops_by_itself() -> None:
    """The management link lost: nothing closes the pipe, nothing comes through it. The command stops once the
    controller has not been heard for the limit (checked every 5 s), not hours later when sshd notices."""
    proc = spawn(watchdog_argv(["sleep", "300"], silence_s=5))
    try:
        started = time.monotonic()
        assert proc.wait(timeout=60) == 143
        assert time.monotonic() - started >= 4.5  # not at once: only after the silence
    finally:
        close_pipes(proc)


def test_the_heartbeat_keeps_a_long_command_alive_past_the_limit() -> None:
    proc = spawn(watchdog_argv(["sh", "-c", "sleep 12; exit 5"], silence_s=5))
    assert proc.stdin is not None
    heartbeat.add(proc.stdin)
    try:
        assert proc.wait(timeout=60) == 5  # it ran to its own end
    finally:
        heartbeat.remove(proc.stdin)
        close_pipes(proc)


def test_run_process_feeds_the_heartbeat_while_it_waits() -> None:
    outcome = run_process(watchdog_argv(["sh", "-c", "sleep 12; echo done"], silence_s=5), hold_stdin=True,
                          timeout_s=60)  # fmt: skip
    assert outcome.returncode == 0 and outcome.stdout == "done\n"
