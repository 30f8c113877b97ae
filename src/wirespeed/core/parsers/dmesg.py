"""A kernel log as pasted: `dmesg` (`[ 1.150104] mlx5_core 0000:01:00.0: ...`, with -T `[Tue May  5 10:44:29 2026]`),
`journalctl -k` (`May 05 10:44:29 host kernel: ...`, `-o short-iso`, `-o short-monotonic`), or either cut down to
`HH:MM:SS message` by the person pasting, with notes of their own after `←`. Pure: text in, kernel lines out.

A line counts as the kernel's when it carries one of those stamps, or starts the way the kernel's drivers name
their device (`mlx5_core 0000:01:00.0: ...`, `pcieport ...`, `cx7-pcie-hotplug MTKP0001:00: ...`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DMESG = re.compile(r"^\[\s*(?P<seconds>\d+\.\d+)\]\s?(?P<text>.*)$")
_DMESG_T = re.compile(r"^\[(?P<clock>\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})\]\s?(?P<text>.*)$")
_JOURNAL = re.compile(
    r"^(?P<clock>\w{3} \d\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) (?P<host>\S+) kernel: (?P<text>.*)$"
)
_MONOTONIC = re.compile(r"^\[\s*(?P<seconds>\d+\.\d+)\] (?P<host>\S+) kernel: (?P<text>.*)$")
_CLOCK_ONLY = re.compile(r"^(?P<clock>\d\d:\d\d:\d\d(?:\.\d+)?) (?P<text>\S.*)$")
_DRIVER = re.compile(
    r"^(?:mlx5_core|mlx5_ib|mlx4_core|pcieport|pci|cx7-pcie-hotplug|nvidia|NVRM|ib_core|mlx5_vfio_pci|irdma|bnxt_en)"
    r"\b[^:]*:"
)
_NOTE = re.compile(r"\s+(?:←|<-{1,2}|<==)\s.*$")


@dataclass(frozen=True)
class KernelLine:
    line: int  # 1-based, in the text given
    seconds: float | None  # since boot, where dmesg stamped it
    clock: str | None  # the wall clock as printed, where journalctl or dmesg -T stamped it
    text: str  # the message, a note after `←` dropped

    def as_dmesg(self) -> str:
        """The line as plain `dmesg` prints it, which is what discovery keeps (kernel_log reads that form)."""
        return f"[{self.seconds:12.6f}] {self.text}" if self.seconds is not None else self.text


@dataclass(frozen=True)
class KernelLog:
    lines: tuple[KernelLine, ...]
    read: frozenset[int]


def _line(number: int, raw: str) -> KernelLine | None:
    line = _NOTE.sub("", raw.rstrip())
    stripped = line.strip()
    for pattern in (_MONOTONIC, _DMESG):
        match = pattern.match(stripped)
        if match:
            return KernelLine(number, float(match["seconds"]), None, match["text"])
    for pattern in (_DMESG_T, _JOURNAL, _CLOCK_ONLY):
        match = pattern.match(stripped)
        if match:
            return KernelLine(number, None, match["clock"], match["text"])
    if _DRIVER.match(stripped):
        return KernelLine(number, None, None, stripped)
    return None


def parse(text: str) -> KernelLog:
    lines = [found for number, raw in enumerate(text.splitlines(), start=1) if (found := _line(number, raw))]
    return KernelLog(tuple(lines), frozenset(k.line for k in lines))


def looks_like(text: str) -> bool:
    """Most non-blank lines are the kernel's, and one at least names a device the way a driver does."""
    lines = [raw for raw in text.splitlines() if raw.strip()]
    kernel = [found for number, raw in enumerate(lines, start=1) if (found := _line(number, raw))]
    return len(kernel) >= 2 and len(kernel) * 2 >= len(lines) and any(_DRIVER.match(k.text) for k in kernel)
