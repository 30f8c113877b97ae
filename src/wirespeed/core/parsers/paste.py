"""A paste as people post it when they ask for help: one file holding several outputs, each after a shell prompt or a
`$ ` line, in markdown fences, with `...` where they cut lines out and notes of their own between. Pure: text in,
sections out, so each section's output can be told apart by its content and read by its own parser.

What is read past is named, never dropped in silence: every prompt, fence, elision mark, password prompt and command
line comes back as a SkippedLine with its 1-based line number and why, so a reader sees what the paste held that no
parser read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# `user@host:~/dir$ cmd`, `root@host:~# cmd`, `(venv) user@host:~$ cmd`
_PROMPT_AT = re.compile(
    r"^\s*(?:\([^)\s]+\)\s+)?(?P<user>[\w.-]+)@(?P<host>[\w.-]+):(?P<cwd>[^\s$#]*)\s?[$#]\s?(?P<cmd>.*?)\s*$"
)
# `[root@node1 network-scripts]# cmd`
_PROMPT_BRACKET = re.compile(r"^\s*\[(?P<user>[\w.-]+)@(?P<host>[\w.-]+)(?:\s+[^\]]*)?\]\s?[$#]\s?(?P<cmd>.*?)\s*$")
# `$ cmd`, `% cmd` (zsh), `> cmd` (PowerShell, ssh banners); a bare `$` ends the output before it
_PROMPT_BARE = re.compile(r"^\s*[$%>](?:\s+(?P<cmd>.*?))?\s*$")
# `# cmd` is a root prompt only before a command that prints what wirespeed reads; else it is a comment
_PROMPT_HASH = re.compile(r"^\s*#\s+(?P<cmd>(?:sudo\s+)?(?P<tool>[\w.-]+)\b.*?)\s*$")
_HASH_TOOLS = frozenset(
    {
        "ethtool",
        "ip",
        "lspci",
        "dmesg",
        "journalctl",
        "nvidia-smi",
        "ibdev2netdev",
        "ibv_devinfo",
        "show_gids",
        "rdma",
        "ifconfig",
        "sudo",
        "cat",
        "mlxlink",
        "ibstat",
    }
)
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_ELIDED = re.compile(r"^\s*(?:\.{3,}|…|\[\.{3}\]|\[…\]|<snip(?:ped)?>|\[snip(?:ped)?\]|#\s*\.{3,})\s*$", re.IGNORECASE)
_PASSWORD = re.compile(r"^\s*(?:\[sudo\][^\n]*:\s*|Password:\s*)$")

PROMPT, COMMAND, FENCE, ELIDED, PASSWORD = "prompt", "command line", "markdown fence", "elided", "password prompt"
NOT_READ = "no output wirespeed reads"


@dataclass(frozen=True)
class SkippedLine:
    """A non-blank line no parser read: its 1-based number in the paste, its text (blanks at its ends dropped), and
    why (a prompt, an elision mark, a note beside the output, a line of an output wirespeed does not read)."""

    line: int
    text: str
    why: str = NOT_READ


@dataclass(frozen=True)
class Section:
    """One output of the paste: the command typed before it (None when the paste shows none), the host its prompt
    named, and its lines as (1-based line number in the paste, text), blank lines kept."""

    command: str | None
    host: str | None
    lines: tuple[tuple[int, str], ...]

    @property
    def text(self) -> str:
        return "".join(text + "\n" for _, text in self.lines)

    @property
    def first_line(self) -> int:
        return self.lines[0][0] if self.lines else 0


@dataclass(frozen=True)
class Paste:
    sections: tuple[Section, ...]
    skipped: tuple[SkippedLine, ...]


def normalise(text: str) -> str:
    """CRLF and lone CR line ends as LF (a paste from Windows or a web form), and a BOM dropped."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def prompt(line: str) -> tuple[str | None, str] | None:
    """(host or None, command) when `line` is a shell prompt line, else None. The command may be empty."""
    for pattern in (_PROMPT_AT, _PROMPT_BRACKET):
        match = pattern.match(line)
        if match:
            return match.group("host"), match.group("cmd")
    match = _PROMPT_BARE.match(line)
    if match:
        return None, match.group("cmd") or ""
    match = _PROMPT_HASH.match(line)
    if match and match.group("tool") in _HASH_TOOLS:
        return None, match.group("cmd")
    return None


def split(text: str) -> Paste:
    """The paste's outputs, split at every prompt line; prompts, command lines (a command continued with `\\`), fences,
    elision marks and password prompts are named as skipped. A paste without prompts is one section."""
    sections: list[Section] = []
    skipped: list[SkippedLine] = []
    command: str | None = None
    host: str | None = None
    current: list[tuple[int, str]] = []
    continued = False

    def close() -> None:
        if any(body.strip() for _, body in current):
            sections.append(Section(command, host, tuple(current)))
        elif command:
            skipped.append(SkippedLine(current_start, command, "command without output"))

    current_start = 1
    for number, line in enumerate(normalise(text).split("\n"), start=1):
        stripped = line.strip()
        if continued:
            skipped.append(SkippedLine(number, stripped, COMMAND))
            command = f"{command} {stripped.removesuffix(chr(92)).strip()}".strip()
            continued = stripped.endswith("\\")
            continue
        found = prompt(line)
        if found is not None:
            close()
            host = found[0] or host
            command = found[1].removesuffix("\\").strip() or None
            continued = found[1].endswith("\\")
            current, current_start = [], number
            skipped.append(SkippedLine(number, stripped, PROMPT))
            continue
        if _FENCE.match(line):
            skipped.append(SkippedLine(number, stripped, FENCE))
            continue
        if _ELIDED.match(line):
            skipped.append(SkippedLine(number, stripped, ELIDED))
            continue
        if _PASSWORD.match(line):
            skipped.append(SkippedLine(number, stripped, PASSWORD))
            continue
        current.append((number, line.rstrip("\n")))
    close()
    return Paste(tuple(sections), tuple(skipped))


def unread(lines: tuple[tuple[int, str], ...], read: set[int], why: str = NOT_READ) -> list[SkippedLine]:
    """The non-blank lines of a section (1-based indices into `lines`) that its parser did not read."""
    return [
        SkippedLine(number, text.strip(), why)
        for index, (number, text) in enumerate(lines, start=1)
        if index not in read and text.strip()
    ]
