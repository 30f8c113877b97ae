"""What every probe shares: a file or a command's output read into a value, or an `Unknown` that says why not, so
that no probe guesses."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

from wirespeed.adapters.source import NOT_INSTALLED, NodeSource, Output, run_command
from wirespeed.core.fabric.facts import Unknown

T = TypeVar("T")
# The IPv4 main table, read once: the management interface (its default route) and the routes share this output.
IP_ROUTE_MAIN = ("ip", "-j", "route", "show", "table", "main")


def read(source: NodeSource, path: str, parse: Callable[[str], T], what: str) -> T | Unknown:
    """`path`'s text parsed, or why it could not be: missing, unreadable, or not what `parse` expects."""
    try:
        content = source.read(path)
    except FileNotFoundError:
        return Unknown(f"{what}: {path} does not exist")
    except OSError as exc:
        return Unknown(f"{what}: {path}: {exc.strerror or exc}")
    try:
        return parse(content)
    except ValueError as exc:
        return Unknown(f"{what}: {path}: cannot parse {content!r} ({exc})")


def text(value: str) -> str:
    """The parser of a value kept as it reads."""
    return value


def listdir(source: NodeSource, path: str) -> list[str]:
    """A directory's entries; none where it is missing or unreadable (an absent sysfs directory means none)."""
    try:
        return source.listdir(path)
    except OSError:
        return []


def command(argv: Sequence[str]) -> Callable[[], Output]:
    """A producer for `NodeSource.output` that runs `argv`, bound now (a lambda in a loop would see the last one)."""
    return functools.partial(run_command, list(argv))


def command_unknown(name: str, result: Output, program: str) -> Unknown:
    """Why output `name` of `program` says nothing: not recorded, not installed, or failed."""
    if result.returncode is None:
        return Unknown(f"{name} was not recorded in this snapshot")
    if result.returncode == NOT_INSTALLED:
        return Unknown(f"{program} is not installed")
    return Unknown(f"{program} exited with status {result.returncode}")


def parsed(name: str, result: Output, program: str, parse: Callable[[str], T]) -> T | Unknown:
    """A command's output parsed, or why not."""
    if not result.ok:
        return command_unknown(name, result, program)
    try:
        return parse(result.stdout)
    except (ValueError, KeyError, TypeError) as exc:
        return Unknown(f"{program}: cannot parse its output ({exc})")
