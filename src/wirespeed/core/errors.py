"""Errors a user can act on: one line saying what failed, where, and what to do."""

from __future__ import annotations


class WirespeedError(Exception):
    """An expected failure with a message for people and a hint for what to do next.

    The CLI prints it as one line (`wirespeed: error: <message> (hint: <hint>)`) and never a traceback.
    """

    exit_status: int = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} (hint: {self.hint})"


class UsageError(WirespeedError):
    """The user asked for something that cannot be done as asked."""

    exit_status = 2


class InventoryError(WirespeedError):
    """The cluster file or host list is malformed; the message names the file and line."""

    exit_status = 2


class TestbedError(WirespeedError):
    """The emulated cluster could not be built, changed or removed."""


class NotRootError(WirespeedError):
    """An operation needs root (network namespaces, tc, sshd)."""


class SwitchError(WirespeedError):
    """The switch could not be reached, refused the login, or refused a change; the message names the switch."""
