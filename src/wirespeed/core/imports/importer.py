"""`wirespeed import`: tell which tool wrote a saved output from its content (never its file name: people name logs
`out.txt`) and turn it into the public import format, version 1 (docs/import-format.md). Pure: bytes or text in, one
`ImportObject` out (its `to_json()` the public object), or ValueError whose message starts `line N:` so the CLI can
say where the file went wrong.

Each measured or read tool is one kind in wirespeed.core.imports (its detection marks, reader and summary), listed in
`imports.registry.KINDS`; this module decodes the bytes, picks a kind or the paste reader
(wirespeed.core.imports.pastes) and puts the object's common head on (wirespeed.core.imports.record). DETECT_CHARS,
TOOLS, KNOWN_TOOLS and PASTE_TOOLS are the registry's, kept here for the callers that know this module.
"""

from __future__ import annotations

import codecs
import math
import re
from pathlib import PurePath
from typing import Any

from wirespeed.core.imports import pastes, registry
from wirespeed.core.imports.body import Body
from wirespeed.core.imports.kind import line_at
from wirespeed.core.imports.pasted import Paste, PastedOutput, Section
from wirespeed.core.imports.record import FORMAT_VERSION, ImportObject
from wirespeed.core.imports.registry import DETECT_CHARS, KNOWN_TOOLS, PASTE_TOOLS, TOOLS, detect

__all__ = [
    "DETECT_CHARS",
    "FORMAT_VERSION",
    "KNOWN_TOOLS",
    "MAX_IMPORT_BYTES",
    "PASTE_TOOLS",
    "TOOLS",
    "TOO_LARGE_HINT",
    "ImportObject",
    "decode",
    "detect",
    "import_text",
    "output_name",
]

# Real tool outputs are kilobytes (the largest in tests/fixtures/real, an NCCL_DEBUG=INFO log of 16 ranks, is 70 KB);
# a file past this is not one output, and reading it would take minutes and gigabytes.
MAX_IMPORT_BYTES = 16 * 2**20
TOO_LARGE_HINT = " for an import: a tool's output is kilobytes; cut out the run to import (e.g. with sed -n)"

_LINE_IN = re.compile(r"\bline (\d+)\b")


def decode(data: bytes) -> str:
    """A file's bytes as text: UTF-8 (a BOM dropped), or UTF-16 with its BOM (PowerShell's `>` writes that).
    Binary data raises ValueError naming the line of the first byte that no log holds."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    data = data.removeprefix(codecs.BOM_UTF8)
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ValueError(f"line {line}: binary data (a NUL byte), not a tool's text output")
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if bad and bad * 20 > len(text):  # a stray Latin-1 byte in a log is fine; mostly undecodable bytes are not text
        raise ValueError(f"line {line_at(text, text.index(chr(0xFFFD)))}: binary data (not UTF-8 text)")
    return text


def _with_line(message: str, text: str) -> str:
    """`line N: message`. A parser that names no line was stopped by what is missing, so the last line is meant."""
    if re.match(r"line \d+:", message):
        return message
    named = _LINE_IN.search(message)
    if named is None:
        return f"line {max(len(text.splitlines()), 1)}: {message}"
    return f"line {named.group(1)}: " + message.replace(f" (line {named.group(1)})", "")


def _jsonable(value: Any) -> Any:
    """Tuples become lists and non-finite floats (nccl-tests writes `nan`) null, so the object is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return value


def _as_written(tool: str, file_name: str, body: Body) -> ImportObject:
    """The object as its file will read back: strict JSON (no NaN), through the record's own reader, so that an
    object imported now and the same object read from a run's imported/ are one value."""
    obj = ImportObject(tool, file_name, body, FORMAT_VERSION)
    return ImportObject.from_json(_jsonable(obj.to_json()), file_name)


def _pasted(text: str, file_name: str) -> PastedOutput | Paste | None:
    """What owners paste (wirespeed.core.imports.pastes): one output of a kind in PASTE_TOOLS, as that tool; several
    outputs in one file (prompts, `$ ` lines) as `paste`, one section per output. Every line read past is in
    `skipped_lines`, with why. None when the file holds none of these outputs."""
    readings, between = pastes.read_text(text, file_name)
    known = [r for r in readings if r.kind is not None]
    if not known or (len(known) == 1 and registry.kind_of(known[0].kind) is not None):
        return None  # one output of an import kind (ibdev2netdev) alone keeps that kind's own object
    skipped = pastes.skipped_records([*between, *(s for r in readings for s in r.skipped)])
    if len(known) == 1:
        reading = known[0]
        return PastedOutput("text", reading.command, reading.host, pastes.body(reading), skipped)
    sections = tuple(
        Section(r.first_line, r.kind, r.command, r.host, pastes.body(r)) for r in known if r.kind is not None
    )
    return Paste("text", sections, skipped)


def _pasted_object(pasted: PastedOutput | Paste, file_name: str) -> ImportObject:
    return _as_written(pasted.tool if isinstance(pasted, PastedOutput) else "paste", file_name, pasted)


def import_text(text: str, file_name: str) -> ImportObject:
    """The public object (format_version 1) for one file's text; ValueError `line N: why` when it is no known tool's
    output, or is one but cut off or broken where it can be told."""
    if not text.strip():
        raise ValueError("line 1: the file is empty" if not text else "line 1: the file holds only blank lines")
    kind = registry.detect_kind(text)
    if kind is None or kind.paste_first(text):
        pasted = _pasted(text, file_name)
        if pasted is not None:
            return _pasted_object(pasted, file_name)
    if kind is None:
        first = next(number for number, line in enumerate(text.splitlines(), start=1) if line.strip())
        raise ValueError(f"line {first}: not output of a known tool ({registry.known_tools()})")
    try:
        body = kind.read(text)
    except ValueError as exc:
        pasted = _pasted(text, file_name) if kind.paste_on_error(text) else None
        if pasted is not None:  # e.g. an NCCL INFO log with nccl-tests' header but no result rows
            return _pasted_object(pasted, file_name)
        raise ValueError(_with_line(str(exc), text)) from None
    except RecursionError:
        raise ValueError(f"line 1: {kind.tool} JSON nested too deeply to read") from None
    return _as_written(kind.tool, file_name, body)


def output_name(file_name: str, tool: str) -> str:
    """Where `--into RUN_DIR` puts a file's object, under RUN_DIR/imported/: `<file stem>.<tool>.json`."""
    return f"{PurePath(file_name).stem or 'stdin'}.{tool}.json"
