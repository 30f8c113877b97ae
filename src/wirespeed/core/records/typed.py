"""Records read from JSON by their annotations: one reader for every record whose fields are plain values, so that
a record of the format is its fields and nothing else. Pure.

What `read_value` knows: text, whole numbers, numbers (finite, kept as written: an int stays an int), true/false,
unions of them (`int | Unknown | None`: null where None is allowed; else each alternative in turn, a record
first where the value is an object), lists (tuples and lists; left out, empty), objects by name (Mapping and
dict; left out, empty), a class with its own `from_json(data, where)`, and a plain dataclass (`read_dataclass`: a
field left out takes its default). Every failure is one ValueError naming the file and the field, worded as
wirespeed.core.records.decode words it: `imported/a.json: rows[0]: size_bytes: expected a whole number, found
text`.

Two readings of a field left out, each where it belongs: `JsonRecord` (the import format, docs/import-format.md)
reads it as null, since a person may write such a file by hand; a plain dataclass (a node's facts) gives it its
default, since an older wirespeed wrote it without the fields added since.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, ClassVar, Self, Union, get_args, get_origin, get_type_hints

from wirespeed.core.records.decode import Fields, _kind

_NAMES = {str: "text", bool: "true or false", int: "a whole number", float: "a number", type(None): "null"}


class JsonRecord:
    """A frozen dataclass written and read field by field, by its annotations; a field left out reads as null
    (an empty list, an empty object)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {name: _written(getattr(self, name)) for name in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        record = Fields(data, where)  # anything but a JSON object is refused here, named
        values = {
            name: read_value(record.raw(name), cls.read_as(name, hint, record.data), f"{where}: {name}")
            for name, hint, _ in _hints(cls)
        }
        return cls(**values)

    @classmethod
    def read_as(cls, name: str, hint: Any, data: Mapping[str, Any]) -> Any:
        """The type field `name` is read as: its annotation, unless another field decides (perftest's `kind` its
        rows)."""
        return hint


_HINTS: dict[type, tuple[tuple[str, Any, bool], ...]] = {}


def _hints(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    """A record's fields in order: name, resolved annotation, whether it has a default (resolved once a class)."""
    if cls not in _HINTS:
        hints = get_type_hints(cls)
        _HINTS[cls] = tuple(
            (f.name, hints[f.name], f.default is not MISSING or f.default_factory is not MISSING) for f in fields(cls)
        )
    return _HINTS[cls]


def _written(value: Any) -> Any:
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [_written(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _written(item) for key, item in value.items()}
    return value


def _wrong(where: str, expected: str, value: Any) -> ValueError:
    return ValueError(f"{where}: expected {expected}, found {_kind(value)}")


def read_dataclass(cls: type, data: Any, where: str) -> Any:
    """A plain dataclass, field by field: a field left out takes its default (one without a default is named as
    missing), a key the class does not know is left out."""
    record = Fields(data, where)
    values: dict[str, Any] = {}
    for name, hint, has_default in _hints(cls):
        if name in record:
            values[name] = read_value(record.raw(name), hint, f"{where}: {name}")
        elif not has_default:
            raise ValueError(f"{where}: {name}: missing")
    return cls(**values)


def _is_record(hint: Any) -> bool:
    return isinstance(hint, type) and (hasattr(hint, "from_json") or is_dataclass(hint))


def _shaped(hint: Any, value: Any) -> bool:
    """Whether `value` has the JSON shape `hint` reads (a list for a tuple, an object for a record or a mapping)."""
    origin = get_origin(hint)
    if origin in (tuple, list):
        return isinstance(value, list)
    if origin in (dict, Mapping) or _is_record(hint):
        return isinstance(value, Mapping)
    return False


def _describe(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (tuple, list):
        return "a list"
    if origin in (dict, Mapping):
        return "an object"
    return _NAMES.get(hint, getattr(hint, "__name__", str(hint)).lower())


def read_value(value: Any, hint: Any, where: str) -> Any:
    """One value read as `hint` says, or ValueError `where: expected ..., found ...`."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        options = [arg for arg in args if arg is not type(None)]
        if len(options) == 1:  # X | None: X's own message
            return read_value(value, options[0], where)
        if isinstance(value, Mapping):  # {"unknown": why} is a record's, before an object of values
            options.sort(key=lambda arg: not _is_record(arg))
        failed: list[tuple[Any, ValueError]] = []
        for option in options:
            try:
                return read_value(value, option, where)
            except ValueError as exc:
                failed.append((option, exc))
        for option, error in failed:  # the alternative of the value's own shape says what is wrong inside it
            if _shaped(option, value):
                raise error
        raise _wrong(where, " or ".join(_describe(arg) for arg in options), value)
    if hint is str:
        if not isinstance(value, str):
            raise _wrong(where, "text", value)
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise _wrong(where, "true or false", value)
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _wrong(where, "a whole number", value)
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _wrong(where, "a number", value)
        if not math.isfinite(value):
            raise ValueError(f"{where}: {value} is not a finite number")
        return value
    if origin in (tuple, list):  # a JSON list; left out, empty
        if value is None:
            return () if origin is tuple else []
        if not isinstance(value, list):
            raise _wrong(where, "a list", value)
        items = [read_value(item, args[0], f"{where}[{index}]") for index, item in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin in (Mapping, dict):  # an object by name; left out, empty
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise _wrong(where, "an object", value)
        return {str(key): read_value(item, args[1], f"{where}.{key}") for key, item in value.items()}
    if isinstance(hint, type) and hasattr(hint, "from_json"):
        return hint.from_json(value, where)
    if isinstance(hint, type) and is_dataclass(hint):
        return read_dataclass(hint, value, where)
    raise TypeError(f"{where}: no reader for {hint!r}")  # a record declared with a type JSON has not
