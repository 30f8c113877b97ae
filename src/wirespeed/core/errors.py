"""Errors a user can act on: one line saying what failed, where, and what to do."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """What wirespeed's exit status tells a script; defined once so every command means the same by a number."""

    OK = 0
    FINDING = 1  # something failed: a check, a regression, a rung, a node; or an error the command stopped on
    USAGE = 2  # the command line or the cluster file cannot be used as given
    NOT_MEASURED = 3  # a check or a node could not be read (or no rung ran): the answer is incomplete
    BUSY = 4  # another measurement holds a node's lock: nothing was started (try again, or --wait)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as a shell reports it
    BROKEN_PIPE = 141  # stdout closed early (128 + SIGPIPE), e.g. piped into `head`


class WirespeedError(Exception):
    """An expected failure with a message for people and a hint for what to do next.

    The CLI prints it as one line (`wirespeed: error: <message> (hint: <hint>)`) and never a traceback.
    """

    exit_status: ExitStatus = ExitStatus.FINDING

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} (hint: {self.hint})"


class UsageError(WirespeedError):
    """The user asked for something that cannot be done as asked."""

    exit_status = ExitStatus.USAGE


class InventoryError(WirespeedError):
    """The cluster file or host list is malformed; the message names the file and line."""

    exit_status = ExitStatus.USAGE


class TestbedError(WirespeedError):
    """The emulated cluster could not be built, changed or removed."""


class NotRootError(WirespeedError):
    """An operation needs root (network namespaces, tc, sshd)."""


class SwitchError(WirespeedError):
    """The switch could not be reached, refused the login, or refused a change; the message names the switch."""


class Interrupted(KeyboardInterrupt):
    """A signal asked wirespeed to stop (SIGTERM, SIGHUP): handled exactly like Ctrl-C, with the signal named."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
