"""Reading JSON written by another process (or another version) into typed records: every field checked for its
type, every number finite, every failure one line naming the file and the field. Pure.

Run directories outlive the code that wrote them, and a file can be cut short, edited by hand or written by a
newer wirespeed; a record read through `Fields` either comes back whole and typed or raises `ValueError` saying
exactly what is wrong, so a view can name the file and go on with the others.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any


class Fields:
    """One JSON object, read field by field; `where` says which file and which part of it, for messages."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object, found {_kind(data)}")
        self.data: Mapping[str, Any] = data
        self.where = where

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def _at(self, key: str) -> str:
        return f"{self.where}: {key}"

    def raw(self, key: str) -> Any:
        return self.data.get(key)

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if not isinstance(value, str):
            raise ValueError(f"{self._at(key)}: expected text, found {_kind(value)}")
        return value

    def opt_text(self, key: str) -> str | None:
        return None if self.data.get(key) is None else self.text(key)

    def num(self, key: str) -> float:
        return number(self.data.get(key), self._at(key))

    def opt_num(self, key: str) -> float | None:
        return None if self.data.get(key) is None else self.num(key)

    def whole(self, key: str) -> int:
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{self._at(key)}: expected a whole number, found {_kind(value)}")
        return value

    def opt_whole(self, key: str) -> int | None:
        return None if self.data.get(key) is None else self.whole(key)

    def flag(self, key: str, default: bool | None = None) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise ValueError(f"{self._at(key)}: expected true or false, found {_kind(value)}")
        return value

    def opt_flag(self, key: str) -> bool | None:
        return None if self.data.get(key) is None else self.flag(key)

    def obj(self, key: str) -> Fields:
        return Fields(self.data.get(key), self._at(key))

    def opt_obj(self, key: str) -> Fields | None:
        return None if self.data.get(key) is None else self.obj(key)

    def objects(self, key: str) -> Iterator[Fields]:
        """The objects of a list (an absent list is empty)."""
        for index, item in enumerate(self._list(key)):
            yield Fields(item, f"{self._at(key)}[{index}]")

    def texts(self, key: str) -> tuple[str, ...]:
        items = self._list(key)
        if not all(isinstance(item, str) for item in items):
            raise ValueError(f"{self._at(key)}: expected a list of text")
        return tuple(items)

    def numbers(self, key: str) -> dict[str, float]:
        """An object of numbers by name (`{"spark-1:enp1s0f0np0": 0.99}`); null values are left out."""
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValueError(f"{self._at(key)}: expected an object, found {_kind(value)}")
        return {str(k): number(v, f"{self._at(key)}.{k}") for k, v in value.items() if v is not None}

    def _list(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ValueError(f"{self._at(key)}: expected a list, found {_kind(value)}")
        return value


def number(value: Any, where: str) -> float:
    """A finite number: NaN and infinities are refused (json.loads accepts them), as are booleans."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: expected a number, found {_kind(value)}")
    if not math.isfinite(value):
        raise ValueError(f"{where}: {value} is not a finite number")
    return float(value)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, str):
        shown = value if len(value) <= 20 else value[:17] + "..."
        return f"text {shown!r}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
