"""The import object (docs/import-format.md, format_version 1) as one record: the common head (`format_version`,
`tool`, `file`) and a typed body, the kind's record (`ImportKind.body`) or a pasted output's
(wirespeed.core.imports.pasted). `to_json()` is the public object, key for key in the documented order;
`from_json()` reads one back from a run's imported/, a file a person may have edited: anything wrong in it is one
line naming the file and the field. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from wirespeed.core.imports import registry
from wirespeed.core.imports.body import Body
from wirespeed.core.imports.pasted import Paste, PastedOutput
from wirespeed.core.records.decode import Fields

FORMAT_VERSION = 1


@dataclass(frozen=True)
class ImportObject:
    """One imported file: which tool wrote it, the file as given to `wirespeed import`, and what it says."""

    tool: str
    file: str | None
    body: Body
    format_version: int = FORMAT_VERSION

    def to_json(self) -> dict[str, Any]:
        pasted = isinstance(self.body, PastedOutput | Paste)  # what owners paste has always named its file first
        head = (
            {"format_version": self.format_version, "file": self.file, "tool": self.tool}
            if pasted
            else {"format_version": self.format_version, "tool": self.tool, "file": self.file}
        )
        return {**head, **self.body.to_json()}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        """`where` names the file (`imported/a3.nccl-tests.json`). A file without `format_version` (written by hand)
        is read as version 1; a later version is refused, as its keys may mean something else."""
        if not isinstance(data, dict) or "tool" not in data:
            raise ValueError(f"{where}: not an import object (no `tool`)")
        record = Fields(data, where)
        version = record.whole("format_version") if record.raw("format_version") is not None else FORMAT_VERSION
        if version != FORMAT_VERSION:
            raise ValueError(
                f"{where}: format_version {version}: this wirespeed reads import format {FORMAT_VERSION} only"
            )
        tool = record.text("tool")
        return cls(tool, record.opt_text("file"), body_of(tool, where).from_json(data, where), version)


def body_of(tool: str, where: str) -> type[Body]:
    """The record that reads the body of an object of this `tool`; ValueError naming the file for a tool no kind
    and no pasted output writes."""
    kind = registry.kind_of(tool)
    if kind is not None:
        return kind.body
    if tool == "paste":
        return Paste
    if tool in registry.PASTE_TOOLS:
        return PastedOutput
    raise ValueError(f"{where}: tool: {tool!r} is no tool wirespeed imports ({', '.join(registry.tools())})")
