"""The body of an import object as a typed record: what a kind's `read` returns, its `to_json()` the keys of
docs/import-format.md in their order and its `from_json()` reading them back. Pure.

An import object is read back from a file a person may have edited, so reading is as tolerant as a person needs
and no more: a key left out is null (an empty list, an empty object); a value of the wrong type is one line naming
the file and the field, as every record of a run is read (wirespeed.core.records.decode).

wirespeed.core.records.typed.JsonRecord does both by the dataclass' annotations, so a record of the format is its
fields and nothing else.
"""

from __future__ import annotations

from typing import Any, Protocol, Self


class Body(Protocol):
    """What a kind's `read` returns and the import object holds: a record with the kind's keys (`source_format`
    first), written by `to_json` and read back by `from_json`; `where` names the file for a message."""

    @property
    def source_format(self) -> str | None: ...

    def to_json(self) -> dict[str, Any]: ...

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self: ...
