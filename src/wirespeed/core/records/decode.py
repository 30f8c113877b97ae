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

from wirespeed.core.records.figures import MAX_BUS_GBPS, MAX_LATENCY_US


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

    def num(self, key: str, unit: str | None = None) -> float:
        """A number; `unit` names a field whose unit it has, where its own name says none (an interface's Gb/s)."""
        return self._number(unit or key, self.data.get(key), self._at(key))

    def opt_num(self, key: str, unit: str | None = None) -> float | None:
        return None if self.data.get(key) is None else self.num(key, unit)

    def number_list(self, key: str) -> tuple[float, ...]:
        """A list of numbers (an absent list is empty)."""
        return tuple(self._number(key, v, f"{self._at(key)}[{i}]") for i, v in enumerate(self._list(key)))

    def whole(self, key: str) -> int:
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{self._at(key)}: expected a whole number, found {_kind(value)}")
        self._whole_checked(key, value)
        return value

    def _whole_checked(self, key: str, value: int) -> None:
        """Nothing to check in general; a record of measurements (`Figures`) checks the count against its unit."""

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
        return type(self)(self.data.get(key), self._at(key))

    def opt_obj(self, key: str) -> Fields | None:
        return None if self.data.get(key) is None else self.obj(key)

    def objects(self, key: str) -> Iterator[Fields]:
        """The objects of a list (an absent list is empty)."""
        for index, item in enumerate(self._list(key)):
            yield type(self)(item, f"{self._at(key)}[{index}]")

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
        return {str(k): self._number(key, v, f"{self._at(key)}.{k}") for k, v in value.items() if v is not None}

    def _number(self, key: str, value: Any, where: str) -> float:
        """The one place a number is read: a record of measurements (`Figures`) also checks it against its unit."""
        return number(value, where)

    def _list(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ValueError(f"{self._at(key)}: expected a list, found {_kind(value)}")
        return value


class Damaged(ValueError):
    """A figure no measurement can have: not a number a JSON writer of ours emits (NaN, an infinity), negative
    where its unit cannot be (a duration, a rate, a size), or absurdly large for its unit (`1e308` Gb/s). The
    record that holds it is damaged: it is named as such and never shown or compared as a figure. The message
    names the field and the value, in a few characters (`1e+308`, never 309 digits)."""

    def __init__(self, where: str, value: Any, why: str) -> None:
        self.where = where
        self.value = number_text(value)
        super().__init__(f"{where}: {self.value} {why}: the record is damaged")


# The unit a record's field is in, from its name (wirespeed.core.records.results: the unit is in every field's name),
# and the most a measurement in it can be. A field of a measurement record whose name says none of these is still
# checked: finite, and no larger than ABSURD in size.
MAX_RECORD_S = 30 * 86400.0  # a month: no step, rung or sampler interval of one run lasts longer
MAX_BYTES = 2**50  # a pebibyte: no message, transfer or buffer of a run is larger
MAX_COUNT = 2**53  # what a float still counts exactly: no counter of a run grows past it
ABSURD = 1e15
# (how the field's name ends, what it measures, its unit, the most it can be)
UNITS: tuple[tuple[str, str, str, float], ...] = (
    ("gbps", "rate", "Gb/s", MAX_BUS_GBPS),  # one link direction, or a node's halves added, or busbw x 8
    ("GBps", "rate", "GB/s", MAX_BUS_GBPS / 8),
    ("_us", "time", "us", MAX_LATENCY_US),
    ("_s", "duration", "s", MAX_RECORD_S),
    ("seconds", "duration", "s", MAX_RECORD_S),
    ("seconds_per_test", "duration", "s", MAX_RECORD_S),
    ("_percent", "share", "%", 100.0),
    ("_bytes", "size", "bytes", float(MAX_BYTES)),
    ("intervals", "count", "intervals", float(MAX_COUNT)),
)


def unit_of(key: str) -> tuple[str, str, float] | None:
    """What a field measures by its name (a rate, a duration, ...), its unit and the most a measurement in it can
    be; None for a name that says no unit."""
    for ending, what, unit, high in UNITS:
        if key.endswith(ending):
            return what, unit, high
    return None


def number_text(value: Any) -> str:
    """A number as a message may print it: `1e+308`, `-100`, `nan`, and a huge whole number by its digits."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _kind(value)
    if isinstance(value, int) and abs(value) >= 10**15:
        return f"a {len(str(abs(value)))}-digit number"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


class Figures(Fields):
    """A record of measurements (a rung, a matrix, a tune search, a run's steps), read as `Fields` reads any
    record, where every number must also be one its unit allows: finite, not negative, no larger than the unit's
    most (`UNITS`). A number that is not raises `Damaged`, naming the field and the value."""

    def _number(self, key: str, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{where}: expected a number, found {_kind(value)}")
        if not math.isfinite(value):
            raise Damaged(where, value, "is not a finite number")
        unit = unit_of(key)
        if unit is None:
            if abs(value) > ABSURD:
                raise Damaged(where, value, f"is beyond any figure of a run (above {ABSURD:g} in size)")
            return float(value)
        what, name, high = unit
        if value < 0:
            raise Damaged(where, value, f"is negative: no {what} is")
        if value > high:
            raise Damaged(where, value, f"is above {high:g} {name}: no {what} measured is")
        return float(value)

    def whole(self, key: str) -> int:
        value = self.data.get(key)
        if isinstance(value, float):  # NaN, 1e308, 2.5: no count, size or rank is one
            raise Damaged(self._at(key), value, "is not a whole number")
        return super().whole(key)

    def _whole_checked(self, key: str, value: int) -> None:
        high = MAX_BYTES if key.endswith("_bytes") else MAX_COUNT
        if not 0 <= value <= high:
            raise Damaged(self._at(key), value, f"is not a count (0 to {high})")


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
        return f"the number {number_text(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
